//! The StatefulSet controller's decisions, one situation a test: ordinals, updates, claims.

use super::*;
use crate::key::Uid;
use crate::labels::Labels;
use crate::object::OwnerRef;
use std::time::Instant;

#[path = "adoption_tests.rs"]
mod adoption;

fn set(replicas: i32, parallel: bool) -> StatefulSetView {
    StatefulSetView::from_value(json!({
        "metadata": {"name": "db", "namespace": "ns", "uid": "uid-db", "resourceVersion": "4", "generation": 1},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "podManagementPolicy": if parallel { "Parallel" } else { "OrderedReady" },
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "db"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
        },
    }))
    .expect("set")
}

/// A Pod of `set` at its update revision.
fn pod(set: &StatefulSetView, ordinal: usize, ready: bool, terminating: bool) -> PodView {
    pod_at(set, ordinal, ready, terminating, &revision_name(set))
}

fn pod_at(
    set: &StatefulSetView,
    ordinal: usize,
    ready: bool,
    terminating: bool,
    revision: &str,
) -> PodView {
    PodView {
        key: ObjectKey::new("ns", format!("db-{ordinal}")),
        uid: Uid::new(format!("uid-db-{ordinal}")),
        resource_version: None,
        labels: Labels::from_map(BTreeMap::from([
            (REVISION_LABEL.to_string(), revision.to_string()),
            ("app".to_string(), "db".to_string()),
        ])),
        controller: Some(OwnerRef {
            kind: "StatefulSet".into(),
            name: "db".into(),
            uid: set.uid.clone(),
        }),
        node_name: None,
        phase: if ready {
            PodPhase::Running
        } else {
            PodPhase::Pending
        },
        ready,
        ready_since: None,
        restarts: 0,
        created: 0,
        terminating,
        job_tracking: false,
        completion_index: None,
        index_failures: Default::default(),
        failure: None,
        malformed: None,
    }
}

fn plan(set: &StatefulSetView, pods: Vec<PodView>) -> Plan {
    let mut cache = ShardCache::default();
    cache.apply(Object::StatefulSet(set.clone()));
    for p in pods {
        cache.apply(Object::Pod(p));
    }
    let ctx = Context {
        now: Instant::now(),
        unix_secs: 0,
    };
    StatefulSetController
        .reconcile(&set.key, &cache, &ctx)
        .expect("plan")
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

fn deleted(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Delete { key, .. } => Some(key.name().to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn ordered_ready_creates_the_first_missing_ordinal_with_its_claim_and_waits() {
    let s = set(3, false);
    let p = plan(&s, vec![pod(&s, 0, true, false)]);
    assert_eq!(created_pods(&p), vec!["db-1"]);
    let claim = p.steps.iter().flatten().find_map(|a| match a {
        Action::Create {
            resource: Resource::PersistentVolumeClaims,
            body,
            ..
        } => Some(body["metadata"]["name"].clone()),
        _ => None,
    });
    assert_eq!(claim, Some(json!("data-db-1")));
    let body = p.steps.iter().flatten().find_map(|a| match a {
        Action::Create {
            resource: Resource::Pods,
            body,
            ..
        } => Some(body.clone()),
        _ => None,
    });
    let body = body.expect("pod");
    assert_eq!(
        body["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "data-db-1"
    );
    assert_eq!(body["metadata"]["ownerReferences"][0]["controller"], true);
}

#[test]
fn ordered_ready_creates_nothing_while_a_predecessor_is_not_ready() {
    let s = set(3, false);
    let p = plan(&s, vec![pod(&s, 0, true, false), pod(&s, 1, false, false)]);
    assert!(created_pods(&p).is_empty(), "{p:?}");
}

#[test]
fn parallel_creates_every_missing_ordinal_at_once() {
    let s = set(4, true);
    let p = plan(&s, vec![pod(&s, 1, false, false)]);
    assert_eq!(created_pods(&p), vec!["db-0", "db-2", "db-3"]);
}

#[test]
fn scale_down_removes_the_highest_ordinal_first_one_at_a_time() {
    let s = set(2, false);
    let pods = (0..5).map(|i| pod(&s, i, true, false)).collect();
    let p = plan(&s, pods);
    assert_eq!(deleted(&p), vec!["db-4"]);
    assert!(p.is_destructive());
    let waiting = plan(
        &s,
        vec![
            pod(&s, 0, true, false),
            pod(&s, 1, true, false),
            pod(&s, 2, true, false),
            pod(&s, 3, true, true),
        ],
    );
    assert!(deleted(&waiting).is_empty(), "one termination at a time");
}

#[test]
fn a_template_spec_that_is_not_an_object_is_malformed_not_a_panic() {
    let s = StatefulSetView::from_value(json!({
        "metadata": {"name": "db", "namespace": "ns", "uid": "uid-db", "resourceVersion": "4"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "db"}},
                 "template": {"spec": "not-an-object"}},
    }))
    .expect("identity");
    let mut cache = ShardCache::default();
    cache.apply(Object::StatefulSet(s.clone()));
    let ctx = Context {
        now: Instant::now(),
        unix_secs: 0,
    };
    let result = StatefulSetController.reconcile(&s.key, &cache, &ctx);
    assert!(
        matches!(result, Err(ReconcileError::Malformed { .. })),
        "{result:?}"
    );
}

#[test]
fn a_start_ordinal_shifts_the_wanted_pods_and_keeps_them() {
    let mut value = set(3, true).raw.to_value().expect("the kept object parses");
    value["spec"]["ordinals"] = json!({"start": 5});
    let s = StatefulSetView::from_value(value).expect("set");
    let pods = (5..8).map(|i| pod(&s, i, true, false)).collect();
    let p = plan(&s, pods);
    assert!(deleted(&p).is_empty(), "{p:?}");
    assert!(created_pods(&p).is_empty(), "{p:?}");
    let below = plan(&s, vec![pod(&s, 0, true, false)]);
    assert_eq!(deleted(&below), vec!["db-0"]);
    assert_eq!(created_pods(&below), vec!["db-5", "db-6", "db-7"]);
}

#[test]
fn a_huge_parallel_set_creates_a_bounded_burst() {
    let mut value = set(1, true).raw.to_value().expect("the kept object parses");
    value["spec"]["replicas"] = json!(i32::MAX);
    let s = StatefulSetView::from_value(value).expect("set");
    let p = plan(&s, vec![]);
    assert_eq!(created_pods(&p).len(), BURST_REPLICAS);
}

#[test]
fn the_update_revision_is_a_controller_revision_named_after_the_template() {
    let s = set(1, false);
    let p = plan(&s, vec![pod(&s, 0, true, false)]);
    let revision = p.steps.iter().flatten().find_map(|a| match a {
        Action::Create {
            resource: Resource::ControllerRevisions,
            body,
            ..
        } => body["metadata"]["name"].as_str().map(str::to_string),
        _ => None,
    });
    assert_eq!(revision, Some(revision_name(&s)));
    assert_eq!(revision_name(&s), revision_name(&set(1, false)), "stable");
    assert!(revision_name(&s).starts_with("db-"));
}

/// `set` with `strategy` as its `spec.updateStrategy`, its status naming `current` as the
/// current revision.
fn rolling(
    replicas: i32,
    parallel: bool,
    strategy: serde_json::Value,
    current: &str,
) -> StatefulSetView {
    let mut value = set(replicas, parallel)
        .raw
        .to_value()
        .expect("the kept object parses");
    value["spec"]["updateStrategy"] = strategy;
    value["status"] = json!({"currentRevision": current, "updateRevision": current});
    StatefulSetView::from_value(value).expect("set")
}

const OLD: &str = "db-old";

#[test]
fn a_template_change_replaces_the_highest_outdated_pod_first_and_one_at_a_time() {
    let s = rolling(3, false, json!({"type": "RollingUpdate"}), OLD);
    let pods = (0..3).map(|i| pod_at(&s, i, true, false, OLD)).collect();
    let p = plan(&s, pods);
    assert_eq!(deleted(&p), vec!["db-2"]);
    let waiting = plan(
        &s,
        vec![
            pod_at(&s, 0, true, false, OLD),
            pod_at(&s, 1, true, false, OLD),
            pod_at(&s, 2, true, true, OLD),
        ],
    );
    assert!(
        deleted(&waiting).is_empty(),
        "waits for db-2 to go: {waiting:?}"
    );
    let recreated = plan(
        &s,
        vec![
            pod_at(&s, 0, true, false, OLD),
            pod_at(&s, 1, true, false, OLD),
        ],
    );
    assert_eq!(created_pods(&recreated), vec!["db-2"]);
    let next = plan(
        &s,
        vec![
            pod_at(&s, 0, true, false, OLD),
            pod_at(&s, 1, true, false, OLD),
            pod(&s, 2, true, false),
        ],
    );
    assert_eq!(deleted(&next), vec!["db-1"]);
}

#[test]
fn pods_below_the_partition_keep_their_revision() {
    let s = rolling(
        3,
        false,
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
        OLD,
    );
    let p = plan(
        &s,
        vec![
            pod_at(&s, 0, true, false, OLD),
            pod_at(&s, 1, true, false, OLD),
            pod(&s, 2, true, false),
        ],
    );
    assert!(deleted(&p).is_empty(), "{p:?}");
}

#[test]
fn max_unavailable_replaces_that_many_at_once_counting_the_unavailable() {
    let s = rolling(
        4,
        true,
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}),
        OLD,
    );
    let all_ready = (0..4).map(|i| pod_at(&s, i, true, false, OLD)).collect();
    assert_eq!(deleted(&plan(&s, all_ready)), vec!["db-3", "db-2"]);
    let one_down = vec![
        pod_at(&s, 0, true, false, OLD),
        pod_at(&s, 1, true, false, OLD),
        pod_at(&s, 2, false, false, OLD),
        pod(&s, 3, true, false),
    ];
    assert_eq!(deleted(&plan(&s, one_down)), vec!["db-2"]);
}

#[test]
fn on_delete_replaces_nothing_by_itself() {
    let s = rolling(2, false, json!({"type": "OnDelete"}), OLD);
    let pods = (0..2).map(|i| pod_at(&s, i, true, false, OLD)).collect();
    let p = plan(&s, pods);
    assert!(deleted(&p).is_empty(), "{p:?}");
}

#[test]
fn status_reports_the_rollout_and_completes_it_when_every_pod_is_updated_and_ready() {
    let s = rolling(2, false, json!({"type": "RollingUpdate"}), OLD);
    let status = |p: &Plan| {
        p.steps
            .iter()
            .flatten()
            .find_map(|a| match a {
                Action::UpdateStatus { body, .. } => Some(body["status"].clone()),
                _ => None,
            })
            .expect("a status write")
    };
    let midway = plan(
        &s,
        vec![pod_at(&s, 0, true, false, OLD), pod(&s, 1, true, false)],
    );
    let st = status(&midway);
    assert_eq!(st["currentRevision"], OLD);
    assert_eq!(st["updateRevision"], revision_name(&s).as_str());
    assert_eq!(
        (st["currentReplicas"].clone(), st["updatedReplicas"].clone()),
        (json!(1), json!(1))
    );
    let done = plan(&s, vec![pod(&s, 0, true, false), pod(&s, 1, true, false)]);
    let st = status(&done);
    assert_eq!(st["currentRevision"], revision_name(&s).as_str());
    assert_eq!(st["currentReplicas"], 2);
}

#[test]
fn a_failed_pod_is_deleted_to_be_created_again() {
    let s = set(2, false);
    let mut failed = pod(&s, 1, false, false);
    failed.phase = PodPhase::Failed;
    let p = plan(&s, vec![pod(&s, 0, true, false), failed]);
    assert_eq!(deleted(&p), vec!["db-1"]);
}

/// A ControllerRevision of `set` named `name`, as kube-controller-manager writes one: the
/// template with `$patch: replace`, keys in its own order, its hash label.
fn kcm_revision(set: &StatefulSetView, name: &str, number: i64, template: Value) -> Object {
    let mut recorded = template;
    recorded["$patch"] = json!("replace");
    let hash = name.trim_start_matches("db-");
    let body = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "3",
            "labels": {"app": "db", REVISION_LABEL: hash},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": set.uid.text(), "controller": true}]},
        "data": {"spec": {"template": recorded}},
        "revision": number,
    });
    let bytes = serde_json::to_vec(&body).expect("json");
    Object::decode(Resource::ControllerRevisions, &bytes)
        .expect("a revision")
        .0
}

fn plan_with_revisions(set: &StatefulSetView, pods: Vec<PodView>, revisions: Vec<Object>) -> Plan {
    let mut cache = ShardCache::default();
    cache.apply(Object::StatefulSet(set.clone()));
    for p in pods {
        cache.apply(Object::Pod(p));
    }
    for r in revisions {
        cache.apply(r);
    }
    let ctx = Context {
        now: Instant::now(),
        unix_secs: 0,
    };
    StatefulSetController
        .reconcile(&set.key, &cache, &ctx)
        .expect("plan")
}

const KCM: &str = "db-5d8f9c7b6";

/// A set as kube-controller-manager leaves it: a rolling update strategy, its status naming
/// KCM's revision, every Pod labelled with it.
fn left_by_kcm() -> (StatefulSetView, Vec<PodView>) {
    let mut value = rolling(3, false, json!({"type": "RollingUpdate"}), KCM)
        .raw
        .to_value()
        .expect("the kept object parses");
    value["status"] = json!({
        "replicas": 3, "readyReplicas": 3, "currentReplicas": 3, "updatedReplicas": 3,
        "availableReplicas": 3, "observedGeneration": 1,
        "currentRevision": KCM, "updateRevision": KCM,
    });
    let s = StatefulSetView::from_value(value).expect("set");
    let pods = (0..3).map(|i| pod_at(&s, i, true, false, KCM)).collect();
    (s, pods)
}

#[test]
fn a_set_taken_over_from_kcm_keeps_its_pods_when_its_revision_records_the_template() {
    let (s, pods) = left_by_kcm();
    let template = (*s.pod_template).clone();
    let p = plan_with_revisions(&s, pods, vec![kcm_revision(&s, KCM, 1, template)]);
    assert!(deleted(&p).is_empty(), "{p:?}");
    assert!(
        p.steps
            .iter()
            .flatten()
            .all(|a| !matches!(a, Action::Create { .. } | Action::UpdateStatus { .. })),
        "no new revision, no status change: {p:?}"
    );
}

#[test]
fn without_kcm_s_revision_in_the_cache_the_same_set_would_roll_every_pod() {
    let (s, pods) = left_by_kcm();
    let p = plan_with_revisions(&s, pods, Vec::new());
    assert_eq!(
        deleted(&p),
        vec!["db-2"],
        "the rollout a takeover must not start"
    );
}

#[test]
fn a_changed_template_gets_a_new_revision_numbered_after_the_newest_and_rolls() {
    let (s, pods) = left_by_kcm();
    let old_template = json!({"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "db:0"}]}});
    let p = plan_with_revisions(&s, pods, vec![kcm_revision(&s, KCM, 4, old_template)]);
    let created: Vec<&Value> = p
        .steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Create {
                resource: Resource::ControllerRevisions,
                body,
                ..
            } => Some(body),
            _ => None,
        })
        .collect();
    assert_eq!(created.len(), 1, "{p:?}");
    assert_eq!(created[0]["revision"], 5);
    assert_eq!(created[0]["metadata"]["name"], revision_name(&s).as_str());
    assert_eq!(created[0]["data"]["spec"]["template"]["$patch"], "replace");
    assert_eq!(deleted(&p), vec!["db-2"]);
}

#[test]
fn an_ordinal_below_the_partition_comes_back_from_the_current_revision_s_template() {
    let s = rolling(
        2,
        false,
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}),
        KCM,
    );
    let old_template = json!({"metadata": {"labels": {"app": "db", "tier": "old"}}, "spec": {"containers": [{"name": "db", "image": "db:0"}]}});
    let p = plan_with_revisions(
        &s,
        vec![pod(&s, 1, true, false)],
        vec![kcm_revision(&s, KCM, 1, old_template)],
    );
    let pod = p
        .steps
        .iter()
        .flatten()
        .find_map(|a| match a {
            Action::Create {
                resource: Resource::Pods,
                body,
                ..
            } => Some(body),
            _ => None,
        })
        .expect("db-0 created");
    assert_eq!(pod["metadata"]["name"], "db-0");
    assert_eq!(pod["metadata"]["labels"][REVISION_LABEL], KCM);
    assert_eq!(pod["metadata"]["labels"]["tier"], "old");
    assert_eq!(pod["spec"]["containers"][0]["image"], "db:0");
}

fn deleted_revisions(plan: &Plan) -> Vec<String> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::Delete {
                resource: Resource::ControllerRevisions,
                key,
                ..
            } => Some(key.name().to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn revisions_beyond_the_history_limit_go_oldest_first_and_never_a_live_one() {
    let (s, pods) = left_by_kcm();
    let mut value = s.raw.to_value().expect("the kept object parses");
    value["spec"]["revisionHistoryLimit"] = json!(1);
    let s = StatefulSetView::from_value(value).expect("set");
    let template = (*s.pod_template).clone();
    let other = |image: &str| json!({"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": image}]}});
    let mut pods = pods;
    pods[0] = pod_at(&s, 0, true, false, "db-second");
    let revisions = vec![
        kcm_revision(&s, "db-first", 1, other("db:1")),
        kcm_revision(&s, "db-second", 2, other("db:2")),
        kcm_revision(&s, "db-third", 3, other("db:3")),
        kcm_revision(&s, "db-fourth", 4, other("db:4")),
        kcm_revision(&s, KCM, 5, template),
    ];
    let p = plan_with_revisions(&s, pods, revisions);
    assert_eq!(
        deleted_revisions(&p),
        vec!["db-first", "db-third"],
        "db-second is a Pod's, the newest old one is kept, the current one is live"
    );
}
