//! The StatefulSet's controller references: an orphan named after the set takes its ordinal,
//! one named otherwise stays an orphan, and a Pod that stops matching is released.

use super::*;

fn patched(plan: &Plan) -> Vec<(String, Value)> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::StrategicPatch { key, patch, .. } => {
                Some((key.name().to_string(), patch.clone()))
            }
            _ => None,
        })
        .collect()
}

fn created_pods(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Create {
                resource: Resource::Pods,
                body,
                ..
            } => body["metadata"]["name"].as_str().map(str::to_string),
            _ => None,
        })
        .collect()
}

fn orphan(set: &StatefulSetView, name: &str) -> PodView {
    let mut p = pod(set, 0, true, false);
    p.key = ObjectKey::new("ns", name);
    p.uid = Uid::new(format!("uid-{name}"));
    p.controller = None;
    p
}

#[test]
fn an_orphan_named_after_the_set_is_adopted_into_its_ordinal() {
    let s = set(2, true);
    let p = plan(&s, vec![orphan(&s, "db-0")]);
    assert!(p.adopts);
    let patches = patched(&p);
    assert_eq!(patches.len(), 1);
    assert_eq!(patches[0].0, "db-0");
    assert_eq!(
        patches[0].1["metadata"]["ownerReferences"][0]["kind"],
        "StatefulSet"
    );
    assert_eq!(
        created_pods(&p),
        ["db-1"],
        "ordinal 0 is the adopted Pod, not created again"
    );
}

#[test]
fn an_orphan_named_otherwise_stays_an_orphan() {
    let s = set(1, true);
    let p = plan(&s, vec![orphan(&s, "cache-0")]);
    assert!(!p.adopts);
    assert!(patched(&p).is_empty());
    assert_eq!(created_pods(&p), ["db-0"]);
}

#[test]
fn a_set_being_deleted_adopts_nothing() {
    let mut s = set(1, true);
    s.terminating = true;
    let p = plan(&s, vec![orphan(&s, "db-0")]);
    assert!(!p.adopts);
    assert!(patched(&p).is_empty());
}

#[test]
fn a_pod_that_stops_matching_is_released() {
    let s = set(1, true);
    let mut moved = pod(&s, 0, true, false);
    moved.labels = Labels::from_map(BTreeMap::from([("app".to_string(), "debug".to_string())]));
    let p = plan(&s, vec![moved]);
    let patches = patched(&p);
    assert_eq!(patches.len(), 1);
    assert_eq!(
        patches[0].1["metadata"]["ownerReferences"][0]["$patch"],
        "delete"
    );
}
