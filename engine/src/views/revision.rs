//! A cached ControllerRevision's projection: the revision number and the Pod template it records,
//! so a StatefulSet's or DaemonSet's revision is found again by what it records (as upstream's
//! `history.FindEqualRevisions`), whoever made it.

use serde::Deserialize;
use serde_json::Value;

/// What the engine keeps of a ControllerRevision besides its metadata.
#[derive(Debug, Default, Deserialize)]
pub struct Revision {
    /// `revision`: its place in the owner's history (higher is newer).
    #[serde(default)]
    pub revision: i64,
    #[serde(default)]
    data: Option<RevisionData>,
}

#[derive(Debug, Deserialize)]
struct RevisionData {
    #[serde(default)]
    spec: Option<RevisionSpec>,
}

#[derive(Debug, Deserialize)]
struct RevisionSpec {
    #[serde(default)]
    template: Option<Value>,
}

/// The strategic-merge directive upstream's `getPatch` puts in the recorded template.
pub const PATCH_DIRECTIVE: &str = "$patch";

impl Revision {
    /// The Pod template recorded in `data.spec.template`.
    pub fn template(&self) -> Option<&Value> {
        self.data.as_ref()?.spec.as_ref()?.template.as_ref()
    }

    /// Whether this revision records `template`. Upstream compares the recorded bytes with its
    /// own encoding of the owner's template; the engine compares the JSON values (the
    /// `$patch: replace` directive aside), which is the same question without depending on
    /// Go's field order.
    pub fn records(&self, template: &Value) -> bool {
        match (self.template(), template) {
            (Some(recorded @ Value::Object(_)), Value::Object(_)) => same(recorded, template),
            _ => false,
        }
    }
}

/// Equal as a typed decoder reads them: a member whose value is `null` is absent (Go writes a
/// zero `creationTimestamp` as `null`, other encoders leave it out), and the `$patch`
/// directive is not part of the template.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let present = |m: &'_ serde_json::Map<String, Value>| {
                m.iter()
                    .filter(|(k, v)| !v.is_null() && *k != PATCH_DIRECTIVE)
                    .count()
            };
            present(a) == present(b)
                && a.iter()
                    .filter(|(k, v)| !v.is_null() && *k != PATCH_DIRECTIVE)
                    .all(|(k, v)| b.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn revision(data: Value) -> Revision {
        serde_json::from_value(json!({"revision": 3, "data": data})).expect("a revision")
    }

    #[test]
    fn a_revision_records_the_template_it_holds_whatever_the_patch_directive_or_key_order() {
        let template = json!({"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "db:1"}]}});
        let written_by_kcm = revision(json!({"spec": {"template": {
            "spec": {"containers": [{"image": "db:1", "name": "c"}]},
            "$patch": "replace",
            "metadata": {"labels": {"app": "db"}},
        }}}));
        assert!(written_by_kcm.records(&template));
        assert_eq!(written_by_kcm.revision, 3);
    }

    #[test]
    fn a_null_member_is_an_absent_one_at_any_depth() {
        let template =
            json!({"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c"}]}});
        let go = revision(json!({"spec": {"template": {
            "$patch": "replace",
            "metadata": {"creationTimestamp": null, "labels": {"app": "db"}},
            "spec": {"containers": [{"name": "c", "resources": null}]},
        }}}));
        assert!(go.records(&template));
    }

    #[test]
    fn another_template_or_no_data_is_not_recorded() {
        let template = json!({"spec": {"containers": [{"name": "c", "image": "db:2"}]}});
        let old = revision(
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "db:1"}]}, "$patch": "replace"}}}),
        );
        assert!(!old.records(&template));
        assert!(!Revision::default().records(&template));
        let more =
            revision(json!({"spec": {"template": {"spec": template["spec"], "metadata": {}}}}));
        assert!(!more.records(&template));
    }
}
