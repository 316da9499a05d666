//! A Pod template's revision hash: FNV-1a over its JSON (object keys sorted), so the same template
//! gives the same `controller-revision-hash` in every process.

use serde_json::Value;

/// Ten hex digits naming `template`'s revision.
pub fn template_hash(template: Option<&Value>) -> String {
    let text = template.map(Value::to_string).unwrap_or_default();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{:010x}", hash & 0xff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_templates_hash_alike_and_a_change_changes_the_hash() {
        let a = json!({"spec": {"containers": [{"image": "a"}]}});
        let b = json!({"spec": {"containers": [{"image": "b"}]}});
        assert_eq!(template_hash(Some(&a)), template_hash(Some(&a.clone())));
        assert_ne!(template_hash(Some(&a)), template_hash(Some(&b)));
        assert_eq!(template_hash(Some(&a)).len(), 10);
    }
}
