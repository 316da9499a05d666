//! The StatefulSet claims at the end of a run against their sets' retention policy
//! (`spec.persistentVolumeClaimRetentionPolicy`), as upstream v1.36 keeps it: a wanted
//! ordinal's claim is owned by the set (a controller reference with its UID) exactly when
//! `whenDeleted: Delete`, and by no Pod; a scaled-down ordinal's claim is gone under
//! `whenScaled: Delete` (its Pod owned it, and the server's garbage collector deleted it with the
//! Pod), and otherwise kept as a wanted one would be. A claim whose Pod is still there while its
//! ordinal is scaled away is in the middle of that, and not judged.

use serde_json::Value;
use std::collections::{HashMap, HashSet};

use crate::resource::Resource;
use crate::store::Store;

/// A claim whose ownerReferences say something else than its set's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimOutOfPolicy {
    /// The namespace.
    pub namespace: String,
    /// The set.
    pub set: String,
    /// The claim.
    pub claim: String,
    /// What is wrong.
    pub detail: String,
}

struct Set<'a> {
    uid: &'a str,
    templates: Vec<&'a str>,
    wanted: std::ops::Range<i64>,
    scaled_deletes: bool,
    deleted_deletes: bool,
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn set_of(v: &Value) -> Set<'_> {
    let start = v["spec"]["ordinals"]["start"].as_i64().unwrap_or(0);
    let replicas = v["spec"]["replicas"].as_i64().unwrap_or(1);
    let policy = &v["spec"]["persistentVolumeClaimRetentionPolicy"];
    Set {
        uid: text(v, "/metadata/uid"),
        templates: v["spec"]["volumeClaimTemplates"]
            .as_array()
            .map(|ts| ts.iter().map(|t| text(t, "/metadata/name")).collect())
            .unwrap_or_default(),
        wanted: start..start + replicas,
        scaled_deletes: policy["whenScaled"] == "Delete",
        deleted_deletes: policy["whenDeleted"] == "Delete",
    }
}

/// Whether `refs` holds a controller reference to `kind` `name` with `uid`, and whether it
/// holds any reference naming `kind` `name`.
fn reference(refs: &[Value], api_version: &str, kind: &str, name: &str, uid: &str) -> (bool, bool) {
    let naming: Vec<&Value> = refs
        .iter()
        .filter(|r| r["apiVersion"] == api_version && r["kind"] == kind && r["name"] == name)
        .collect();
    let controls = naming
        .iter()
        .any(|r| r["uid"] == uid && r["controller"] == true);
    (controls, !naming.is_empty())
}

/// Every claim of `claims` made from a template of one of `sets` whose ownerReferences break
/// the set's policy, judged with the `pods` that exist now.
pub fn claims_out_of_policy(
    sets: &[Value],
    pods: &[Value],
    claims: &[Value],
) -> Vec<ClaimOutOfPolicy> {
    let sets: HashMap<(&str, &str), Set<'_>> = sets
        .iter()
        .filter(|s| s["metadata"]["deletionTimestamp"].is_null())
        .map(|s| {
            (
                (text(s, "/metadata/namespace"), text(s, "/metadata/name")),
                set_of(s),
            )
        })
        .collect();
    let pods: HashSet<(&str, &str)> = pods
        .iter()
        .map(|p| (text(p, "/metadata/namespace"), text(p, "/metadata/name")))
        .collect();
    let mut found = Vec::new();
    for claim in claims {
        let (namespace, name) = (
            text(claim, "/metadata/namespace"),
            text(claim, "/metadata/name"),
        );
        let Some((stem, ordinal)) = name.rsplit_once('-') else {
            continue;
        };
        let Ok(ordinal) = ordinal.parse::<i64>() else {
            continue;
        };
        let owner = stem.match_indices('-').find_map(|(dash, _)| {
            let (template, set_name) = (&stem[..dash], &stem[dash + 1..]);
            sets.get(&(namespace, set_name))
                .filter(|s| s.templates.contains(&template))
                .map(|s| (set_name, s))
        });
        let Some((set_name, set)) = owner else {
            continue;
        };
        let pod = format!("{set_name}-{ordinal}");
        let wanted = set.wanted.contains(&ordinal);
        if !wanted && pods.contains(&(namespace, pod.as_str())) {
            continue;
        }
        let refs = claim["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let (set_controls, set_named) =
            reference(refs, "apps/v1", "StatefulSet", set_name, set.uid);
        let (_, pod_named) = reference(refs, "v1", "Pod", &pod, "");
        let problem = if !wanted && set.scaled_deletes {
            Some("outlived its scaled-down Pod under whenScaled: Delete".to_string())
        } else if pod_named {
            Some(format!(
                "references Pod {pod}, which does not own a kept claim"
            ))
        } else if set.deleted_deletes && !set_controls {
            Some("is not controlled by its set under whenDeleted: Delete".to_string())
        } else if !set.deleted_deletes && set_named {
            Some("references its set under whenDeleted: Retain".to_string())
        } else {
            None
        };
        if let Some(problem) = problem {
            found.push(ClaimOutOfPolicy {
                namespace: namespace.to_string(),
                set: set_name.to_string(),
                claim: name.to_string(),
                detail: format!("claim {name} (ordinal {ordinal}) {problem}"),
            });
        }
    }
    found
}

/// [`claims_out_of_policy`] over everything `store` holds now.
pub fn claims_out_of_policy_in(store: &Store) -> Vec<ClaimOutOfPolicy> {
    let all = |r: Resource| -> Vec<Value> {
        store
            .all(r, None)
            .0
            .into_iter()
            .map(|s| s.value.clone())
            .collect()
    };
    claims_out_of_policy(
        &all(Resource::StatefulSets),
        &all(Resource::Pods),
        &all(Resource::PersistentVolumeClaims),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(replicas: i64, when_scaled: &str, when_deleted: &str) -> Value {
        json!({"metadata": {"name": "db", "namespace": "ns", "uid": "s1"},
            "spec": {"replicas": replicas,
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}}],
                     "persistentVolumeClaimRetentionPolicy":
                        {"whenScaled": when_scaled, "whenDeleted": when_deleted}}})
    }

    fn pod(ordinal: i64) -> Value {
        json!({"metadata": {"name": format!("db-{ordinal}"), "namespace": "ns"}})
    }

    fn claim(ordinal: i64, refs: Value) -> Value {
        json!({"metadata": {"name": format!("data-db-{ordinal}"), "namespace": "ns",
                            "ownerReferences": refs}})
    }

    fn by_set() -> Value {
        json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s1",
                "controller": true, "blockOwnerDeletion": true}])
    }

    fn wrong(sets: &[Value], pods: &[Value], claims: &[Value]) -> Vec<String> {
        claims_out_of_policy(sets, pods, claims)
            .into_iter()
            .map(|c| c.claim)
            .collect()
    }

    #[test]
    fn claims_owned_as_each_policy_says_pass() {
        let pods = [pod(0), pod(1)];
        for (scaled, deleted) in [
            ("Retain", "Retain"),
            ("Retain", "Delete"),
            ("Delete", "Retain"),
            ("Delete", "Delete"),
        ] {
            let refs = if deleted == "Delete" {
                by_set()
            } else {
                json!([])
            };
            let mut claims = vec![claim(0, refs.clone()), claim(1, refs.clone())];
            if scaled == "Retain" {
                // Ordinal 2 was scaled away; its claim stays.
                claims.push(claim(2, refs));
            }
            assert!(
                wrong(&[set(2, scaled, deleted)], &pods, &claims).is_empty(),
                "{scaled}/{deleted}"
            );
        }
    }

    #[test]
    fn a_controller_that_ignores_the_policy_is_caught() {
        // What the controller did before it read the policy: every claim the set's, always.
        let pods = [pod(0)];
        let ignoring = [claim(0, by_set()), claim(1, by_set())];
        assert_eq!(
            wrong(&[set(1, "Retain", "Retain")], &pods, &ignoring),
            vec!["data-db-0", "data-db-1"]
        );
        assert_eq!(
            wrong(&[set(1, "Delete", "Delete")], &pods, &ignoring),
            vec!["data-db-1"],
            "the scaled-down claim was never handed to its Pod, so it outlived it"
        );
        let bare = [claim(0, json!([]))];
        assert_eq!(
            wrong(&[set(1, "Retain", "Delete")], &pods, &bare),
            vec!["data-db-0"]
        );
    }

    #[test]
    fn a_claim_whose_pod_is_still_being_scaled_away_is_not_judged_yet() {
        let pods = [pod(0), pod(1)];
        let claims = [claim(0, by_set()), claim(1, by_set())];
        assert!(wrong(&[set(1, "Delete", "Delete")], &pods, &claims).is_empty());
    }

    #[test]
    fn claims_of_no_set_and_a_set_s_reference_with_another_uid_are_told_apart() {
        let pods = [pod(0)];
        let stranger = json!({"metadata": {"name": "scratch", "namespace": "ns"}});
        let old_set = claim(
            0,
            json!([{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "s0",
                    "controller": true}]),
        );
        assert_eq!(
            wrong(&[set(1, "Retain", "Delete")], &pods, &[stranger, old_set]),
            vec!["data-db-0"]
        );
    }
}
