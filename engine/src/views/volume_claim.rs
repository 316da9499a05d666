//! A cached PersistentVolumeClaim's projection: every ownerReference it carries, whole, since
//! a StatefulSet's retention policy is a statement about them (which of the set and its Pod own
//! the claim) and rewriting them must keep the references others put there.

use serde::{Deserialize, Serialize};

/// What the engine keeps of a PersistentVolumeClaim besides its metadata.
#[derive(Debug, Default, Deserialize)]
pub struct VolumeClaim {
    #[serde(default)]
    metadata: ClaimMetadata,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaimMetadata {
    #[serde(default)]
    owner_references: Option<Vec<OwnerReference>>,
}

/// One `metadata.ownerReferences` entry, every field of the API's type, so a patch that writes
/// the list back loses nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's apiVersion (`apps/v1`).
    pub api_version: String,
    /// The owner's kind (`StatefulSet`).
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's UID.
    pub uid: String,
    /// `controller`, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// `blockOwnerDeletion`, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    /// A reference with `controller` and `blockOwnerDeletion` set, as upstream's
    /// `metav1.NewControllerRef` makes it.
    pub fn controller_to(api_version: &str, kind: &str, name: &str, uid: &str) -> Self {
        Self {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// Whether it names the object `name` of `api_version` and `kind`, whatever the UID
    /// (upstream's `matchesRef`).
    pub fn names(&self, api_version: &str, kind: &str, name: &str) -> bool {
        self.api_version == api_version && self.kind == kind && self.name == name
    }

    /// Whether it is the controlling reference.
    pub fn is_controller(&self) -> bool {
        self.controller == Some(true)
    }
}

impl VolumeClaim {
    /// `metadata.ownerReferences`, in order.
    pub fn owner_references(&self) -> &[OwnerReference] {
        self.metadata.owner_references.as_deref().unwrap_or(&[])
    }

    /// The name of the StatefulSet a reference says this claim is for: a StatefulSet's own, or
    /// the set a referenced Pod's name (`<set>-<ordinal>`, upstream's `getParentName`) names.
    /// A claim that references neither (a `Retain` policy's) says nothing; only its name does.
    pub fn statefulset_name(&self) -> Option<&str> {
        let refs = self.owner_references();
        refs.iter()
            .find(|r| r.api_version == "apps/v1" && r.kind == "StatefulSet")
            .map(|r| r.name.as_str())
            .or_else(|| {
                refs.iter()
                    .filter(|r| r.api_version == "v1" && r.kind == "Pod")
                    .find_map(|r| parent_of_pod(&r.name))
            })
    }
}

/// `<set>` of a Pod named `<set>-<digits>`.
fn parent_of_pod(pod: &str) -> Option<&str> {
    let (set, ordinal) = pod.rsplit_once('-')?;
    (!set.is_empty() && !ordinal.is_empty() && ordinal.bytes().all(|b| b.is_ascii_digit()))
        .then_some(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claim_keeps_every_owner_reference_as_written() {
        let claim: VolumeClaim = serde_json::from_value(json!({"metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s1",
             "controller": true, "blockOwnerDeletion": true},
            {"apiVersion": "example.com/v1", "kind": "Backup", "name": "b", "uid": "b1"},
        ]}}))
        .expect("a claim");
        let refs = claim.owner_references();
        assert_eq!(refs.len(), 2);
        assert!(refs[0].is_controller() && refs[0].names("apps/v1", "StatefulSet", "db"));
        assert_eq!(
            serde_json::to_value(&refs[1]).expect("json"),
            json!({"apiVersion": "example.com/v1", "kind": "Backup", "name": "b", "uid": "b1"}),
            "absent fields stay absent"
        );
    }

    #[test]
    fn a_claim_without_owners_has_none_and_names_no_set() {
        let claim: VolumeClaim = serde_json::from_value(json!({"metadata": {}})).expect("a claim");
        assert!(claim.owner_references().is_empty());
        assert_eq!(claim.statefulset_name(), None);
    }

    #[test]
    fn a_claim_names_its_set_by_the_set_or_by_the_pod_that_owns_it() {
        let owned_by = |refs: serde_json::Value| -> VolumeClaim {
            serde_json::from_value(json!({"metadata": {"ownerReferences": refs}})).expect("claim")
        };
        let by_set = owned_by(json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
                                      "name": "my-db", "uid": "s1"}]));
        assert_eq!(by_set.statefulset_name(), Some("my-db"));
        let by_pod = owned_by(json!([{"apiVersion": "v1", "kind": "Pod",
                                      "name": "my-db-12", "uid": "p1"}]));
        assert_eq!(by_pod.statefulset_name(), Some("my-db"));
        let by_other = owned_by(json!([{"apiVersion": "v1", "kind": "Pod",
                                        "name": "loose", "uid": "p2"}]));
        assert_eq!(by_other.statefulset_name(), None);
    }
}
