//! The Job controller's decisions, one situation a test: parallelism, tracking, failures.

use super::*;
use crate::key::Uid;
use crate::labels::Labels;
use crate::object::{COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER, OwnerRef, PodPhase};
use serde_json::{Value, json};
use std::time::Instant;

mod indexes;
mod replacement;
mod success;
mod suspend;

fn job(spec: Value, status: Value) -> JobView {
    let mut spec = spec;
    spec["template"] =
        json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}});
    JobView::from_value(json!({
        "metadata": {"name": "pi", "namespace": "ns", "uid": "uid-pi", "resourceVersion": "5"},
        "spec": spec,
        "status": status,
    }))
    .expect("job")
}

fn pod(name: &str, phase: PodPhase, tracking: bool, index: Option<u32>) -> PodView {
    PodView {
        key: ObjectKey::new("ns", name),
        uid: Uid::new(format!("uid-{name}")),
        resource_version: None,
        labels: Labels::default(),
        controller: Some(OwnerRef {
            kind: "Job".into(),
            name: "pi".into(),
            uid: Uid::new("uid-pi"),
        }),
        node_name: None,
        phase,
        ready: phase == PodPhase::Running,
        ready_since: None,
        restarts: 0,
        created: 0,
        terminating: false,
        job_tracking: tracking,
        completion_index: index,
        index_failures: Default::default(),
        failure: None,
        malformed: None,
    }
}

fn plan(job: &JobView, pods: Vec<PodView>) -> Plan {
    let mut cache = ShardCache::default();
    cache.apply(Object::Job(job.clone()));
    for p in pods {
        cache.apply(Object::Pod(p));
    }
    let ctx = Context {
        now: Instant::now(),
        unix_secs: 1_000,
    };
    JobController
        .reconcile(&job.key, &cache, &ctx)
        .expect("plan")
}

fn actions(plan: &Plan) -> Vec<&Action> {
    plan.steps.iter().flatten().collect()
}

fn creates(plan: &Plan) -> usize {
    actions(plan)
        .iter()
        .filter(|a| matches!(a, Action::Create { .. }))
        .count()
}

fn status(plan: &Plan) -> Option<&Value> {
    actions(plan).into_iter().find_map(|a| match a {
        Action::UpdateStatus { body, .. } => Some(&body["status"]),
        _ => None,
    })
}

/// The types of the written conditions, in order.
fn kinds(status: &Value) -> Vec<&str> {
    status["conditions"]
        .as_array()
        .map(|cs| cs.iter().filter_map(|c| c["type"].as_str()).collect())
        .unwrap_or_default()
}

/// The written condition of type `kind` (`null` if none).
fn condition<'a>(status: &'a Value, kind: &str) -> &'a Value {
    status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind))
        .unwrap_or(&Value::Null)
}

/// Pods deleted by the plan, by name in order.
fn deleted(plan: &Plan) -> Vec<String> {
    actions(plan)
        .into_iter()
        .filter_map(|a| match a {
            Action::Delete { key, .. } => Some(key.name().to_string()),
            _ => None,
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The annotations of the Pods the plan creates.
fn created_annotations(plan: &Plan) -> Vec<&Value> {
    actions(plan)
        .into_iter()
        .filter_map(|a| match a {
            Action::Create { body, .. } => Some(&body["metadata"]["annotations"]),
            _ => None,
        })
        .collect()
}

#[test]
fn a_null_conditions_list_gets_the_finished_condition() {
    let j = job(
        json!({"completions": 1, "parallelism": 1}),
        json!({"succeeded": 1, "conditions": null, "startTime": "2026-01-01T00:00:00Z"}),
    );
    let p = plan(&j, vec![]);
    let status = p.steps.iter().flatten().find_map(|a| match a {
        Action::UpdateStatus { body, .. } => Some(body["status"].clone()),
        _ => None,
    });
    let status = status.expect("status");
    assert_eq!(kinds(&status), ["SuccessCriteriaMet", "Complete"]);
    assert_eq!(
        condition(&status, "Complete")["reason"],
        "CompletionsReached"
    );
    assert_eq!(
        condition(&status, "Complete")["message"],
        "Reached expected number of succeeded pods"
    );
}

#[test]
fn it_runs_at_most_parallelism_pods_with_the_tracking_finalizer() {
    let j = job(json!({"parallelism": 3, "completions": 10}), json!({}));
    let p = plan(&j, vec![pod("a", PodPhase::Running, true, None)]);
    assert_eq!(creates(&p), 2);
    let body = actions(&p).into_iter().find_map(|a| match a {
        Action::Create { body, .. } => Some(body),
        _ => None,
    });
    assert_eq!(
        body.expect("create")["metadata"]["finalizers"][0],
        JOB_TRACKING_FINALIZER
    );
}

#[test]
fn status_ready_counts_the_active_pods_that_are_ready_and_a_change_of_it_is_written() {
    let j = job(
        json!({"parallelism": 2, "completions": 2}),
        json!({"active": 2, "ready": 2, "terminating": 0, "startTime": "1970-01-01T00:00:00Z"}),
    );
    let mut starting = pod("b", PodPhase::Running, true, None);
    starting.ready = false;
    let p = plan(
        &j,
        vec![pod("a", PodPhase::Running, true, None), starting.clone()],
    );
    assert_eq!(status(&p).expect("a status write")["ready"], 1);

    let settled = job(
        json!({"parallelism": 2, "completions": 2}),
        json!({"active": 2, "ready": 1, "terminating": 0, "startTime": "1970-01-01T00:00:00Z"}),
    );
    let p = plan(
        &settled,
        vec![pod("a", PodPhase::Running, true, None), starting],
    );
    assert!(status(&p).is_none(), "nothing changed: {p:?}");
}

#[test]
fn a_finished_pod_is_recorded_then_unfinalized_then_counted_once() {
    let j = job(json!({"parallelism": 1, "completions": 2}), json!({}));
    let done = pod("a", PodPhase::Succeeded, true, None);
    let first = plan(&j, vec![done.clone()]);
    let s = status(&first).expect("status");
    assert_eq!(s["uncountedTerminatedPods"]["succeeded"], json!(["uid-a"]));
    assert_eq!(
        s["succeeded"], 0,
        "not counted before its finalizer is gone"
    );
    assert!(
        !actions(&first)
            .iter()
            .any(|a| matches!(a, Action::StrategicPatch { .. })),
        "the finalizer stays until the status records the Pod"
    );
    let recorded = job(
        json!({"parallelism": 1, "completions": 2}),
        json!({"uncountedTerminatedPods": {"succeeded": ["uid-a"]}, "startTime": "1970-01-01T00:16:40Z", "active": 1}),
    );
    let second = plan(
        &recorded,
        vec![done, pod("b", PodPhase::Running, true, None)],
    );
    let removal = actions(&second).into_iter().find_map(|a| match a {
        Action::StrategicPatch { key, patch, .. } if key.name() == "a" => Some(patch.clone()),
        _ => None,
    });
    assert_eq!(
        removal,
        Some(
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}})
        ),
        "only the Job's own finalizer is removed, never the whole list"
    );
    let unfinalized = pod("a", PodPhase::Succeeded, false, None);
    let third = plan(
        &recorded,
        vec![unfinalized, pod("b", PodPhase::Running, true, None)],
    );
    let s = status(&third).expect("status");
    assert_eq!(s["succeeded"], 1);
    assert_eq!(s["uncountedTerminatedPods"]["succeeded"], json!([]));
}

#[test]
fn indexed_jobs_run_one_pod_per_pending_index() {
    let j = job(
        json!({"parallelism": 3, "completions": 4, "completionMode": "Indexed"}),
        json!({"completedIndexes": "0"}),
    );
    let p = plan(&j, vec![pod("pi-1-x", PodPhase::Running, true, Some(1))]);
    let indexes: Vec<String> = actions(&p)
        .into_iter()
        .filter_map(|a| match a {
            Action::Create { body, .. } => body["metadata"]["annotations"]
                [COMPLETION_INDEX_ANNOTATION]
                .as_str()
                .map(str::to_string),
            _ => None,
        })
        .collect();
    assert_eq!(indexes, vec!["2", "3"]);
}

#[test]
fn past_the_backoff_limit_the_job_fails_and_its_pods_go() {
    let j = job(
        json!({"parallelism": 2, "completions": 5, "backoffLimit": 1}),
        json!({"failed": 2}),
    );
    let p = plan(&j, vec![pod("a", PodPhase::Running, true, None)]);
    assert_eq!(creates(&p), 0);
    assert!(p.is_destructive(), "its Pods are deleted first");
    let p = plan(&j, vec![]);
    let s = status(&p).expect("status");
    assert_eq!(
        kinds(s),
        ["FailureTarget", "Failed"],
        "declared, then final with nothing left"
    );
    assert_eq!(condition(s, "Failed")["reason"], "BackoffLimitExceeded");
}

fn failed_with(name: &str, code: i32) -> PodView {
    let mut p = pod(name, PodPhase::Failed, true, None);
    p.failure = Some(Box::new(crate::views::pod::PodFailure {
        exit_codes: vec![("c".into(), code)],
        conditions: Vec::new(),
        finished_at: None,
    }));
    p
}

fn unfinalized(plan: &Plan) -> Vec<String> {
    actions(plan)
        .into_iter()
        .filter_map(|a| match a {
            Action::StrategicPatch { key, .. } => Some(key.name().to_string()),
            _ => None,
        })
        .collect()
}

fn with_policy() -> Value {
    json!({"parallelism": 2, "completions": 4, "backoffLimit": 0, "podFailurePolicy": {"rules": [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
    ]}})
}

#[test]
fn a_failure_the_policy_ignores_is_let_go_uncounted_and_replaced() {
    let j = job(with_policy(), json!({}));
    let p = plan(
        &j,
        vec![
            failed_with("a", 137),
            pod("b", PodPhase::Running, true, None),
        ],
    );
    assert_eq!(
        unfinalized(&p),
        vec!["a"],
        "its finalizer goes without a record"
    );
    let s = status(&p).expect("status");
    assert_eq!(s["failed"], 0);
    assert_eq!(s["uncountedTerminatedPods"]["failed"], json!([]));
    assert_eq!(
        creates(&p),
        1,
        "a replacement, backoffLimit 0 notwithstanding"
    );
    assert!(s["conditions"].is_null(), "the Job goes on: {s}");
}

#[test]
fn a_fail_job_rule_marks_the_failure_target_then_fails_the_job_for_it() {
    let j = job(with_policy(), json!({}));
    let p = plan(
        &j,
        vec![
            failed_with("a", 42),
            pod("b", PodPhase::Running, true, None),
        ],
    );
    let s = status(&p).expect("status");
    assert_eq!(s["uncountedTerminatedPods"]["failed"], json!(["uid-a"]));
    assert_eq!(s["conditions"][0]["type"], "FailureTarget");
    assert_eq!(s["conditions"][0]["reason"], "PodFailurePolicy");
    assert_eq!(
        s["conditions"][0]["message"],
        "Container c for pod ns/a failed with exit code 42 matching FailJob rule at index 1"
    );
    assert_eq!(creates(&p), 0);
    assert!(p.is_destructive(), "the running Pod is deleted");

    let targeted = job(
        with_policy(),
        json!({"failed": 1, "conditions": [{"type": "FailureTarget", "status": "True",
            "reason": "PodFailurePolicy", "message": "Container c ... at index 1"}]}),
    );
    let p = plan(&targeted, vec![]);
    let s = status(&p).expect("status");
    let failed = &s["conditions"][1];
    assert_eq!(failed["type"], "Failed");
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert_eq!(failed["message"], "Container c ... at index 1");
}

#[test]
fn without_a_policy_the_same_failure_counts_against_the_backoff_limit() {
    let j = job(
        json!({"parallelism": 2, "completions": 4, "backoffLimit": 0}),
        json!({}),
    );
    let p = plan(&j, vec![failed_with("a", 137)]);
    let s = status(&p).expect("status");
    assert_eq!(s["uncountedTerminatedPods"]["failed"], json!(["uid-a"]));
    assert_eq!(creates(&p), 0, "one failure is past backoffLimit 0");
}

#[test]
fn a_suspended_job_creates_nothing_and_its_active_pods_go() {
    let j = job(
        json!({"parallelism": 2, "completions": 4, "suspend": true}),
        json!({}),
    );
    let p = plan(&j, vec![pod("a", PodPhase::Running, true, None)]);
    assert_eq!(creates(&p), 0);
    let deleted: Vec<&Action> = actions(&p)
        .into_iter()
        .filter(|a| matches!(a, Action::Delete { .. }))
        .collect();
    assert_eq!(deleted.len(), 1, "{p:?}");
}

fn with_selector() -> JobView {
    let mut value = job(json!({"parallelism": 2, "completions": 4}), json!({}))
        .raw
        .to_value()
        .expect("the kept object parses");
    value["spec"]["selector"] =
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "uid-pi"}});
    JobView::from_value(value).expect("job")
}

fn orphan(name: &str) -> PodView {
    let mut p = pod(name, PodPhase::Running, false, None);
    p.controller = None;
    p.labels = Labels::from_map(
        [(
            "batch.kubernetes.io/controller-uid".to_string(),
            "uid-pi".to_string(),
        )]
        .into(),
    );
    p
}

fn adoption_patches(plan: &Plan) -> Vec<Value> {
    plan.steps
        .iter()
        .flatten()
        .filter_map(|a| match a {
            Action::StrategicPatch { patch, .. }
                if patch["metadata"]["ownerReferences"][0]["controller"] == true =>
            {
                Some(patch.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn an_orphan_adopted_by_a_job_gets_the_tracking_finalizer_and_counts_as_active() {
    let j = with_selector();
    let p = plan(&j, vec![orphan("loose")]);
    assert!(p.adopts);
    let patches = adoption_patches(&p);
    assert_eq!(patches.len(), 1);
    assert_eq!(
        patches[0]["metadata"]["finalizers"],
        json!([JOB_TRACKING_FINALIZER])
    );
    let creates = p
        .steps
        .iter()
        .flatten()
        .filter(|a| matches!(a, Action::Create { .. }))
        .count();
    assert_eq!(creates, 1, "parallelism 2, one adopted: one more Pod");
}

#[test]
fn a_job_without_a_selector_adopts_nothing() {
    let j = job(json!({"parallelism": 1}), json!({}));
    let p = plan(&j, vec![orphan("loose")]);
    assert!(!p.adopts);
    assert!(adoption_patches(&p).is_empty());
}
