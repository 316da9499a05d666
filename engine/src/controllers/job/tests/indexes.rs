//! `backoffLimitPerIndex`, `maxFailedIndexes` and the `FailIndex` rule.

use super::*;
use crate::object::{INDEX_FAILURE_COUNT_ANNOTATION, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION};

fn per_index(limit: i32, extra: Value) -> Value {
    let mut spec = json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3,
        "backoffLimitPerIndex": limit});
    if let (Some(spec), Value::Object(extra)) = (spec.as_object_mut(), extra) {
        spec.extend(extra);
    }
    spec
}

/// A failed Pod of `index`, which failed with `code` after `counted` failures of its index.
fn failed_at(name: &str, index: u32, code: i32, counted: u32) -> PodView {
    let mut p = failed_with(name, code);
    p.completion_index = Some(index);
    p.index_failures.counted = counted;
    p
}

fn running_at(name: &str, index: u32) -> PodView {
    pod(name, PodPhase::Running, true, Some(index))
}

#[test]
fn a_failed_index_past_its_backoff_limit_is_recorded_and_not_retried() {
    let j = job(per_index(1, json!({})), json!({}));
    let p = plan(
        &j,
        vec![
            failed_at("pi-0-a", 0, 1, 1),
            running_at("pi-1-a", 1),
            running_at("pi-2-a", 2),
        ],
    );
    let s = status(&p).expect("status");
    assert_eq!(s["failedIndexes"], "0");
    assert_eq!(
        s["uncountedTerminatedPods"]["failed"],
        json!(["uid-pi-0-a"])
    );
    assert_eq!(creates(&p), 0, "index 0 is not retried");
    assert!(kinds(s).is_empty(), "two indexes still run: {s}");
}

#[test]
fn a_failed_pod_is_held_until_its_replacement_carries_the_failure_count() {
    let j = job(per_index(2, json!({})), json!({}));
    let failed = failed_at("pi-0-a", 0, 1, 0);
    let first = plan(
        &j,
        vec![
            failed.clone(),
            running_at("pi-1-a", 1),
            running_at("pi-2-a", 2),
        ],
    );
    let annotations = created_annotations(&first);
    assert_eq!(annotations.len(), 1);
    assert_eq!(annotations[0][COMPLETION_INDEX_ANNOTATION], "0");
    assert_eq!(annotations[0][INDEX_FAILURE_COUNT_ANNOTATION], "1");
    assert!(annotations[0][INDEX_IGNORED_FAILURE_COUNT_ANNOTATION].is_null());
    assert!(
        unfinalized(&first).is_empty(),
        "its finalizer is kept while the replacement is made"
    );
    assert!(status(&first).is_none_or(|s| s["uncountedTerminatedPods"]["failed"] == json!([])));

    let mut replacement = running_at("pi-0-b", 0);
    replacement.index_failures.counted = 1;
    let second = plan(
        &j,
        vec![
            failed,
            replacement,
            running_at("pi-1-a", 1),
            running_at("pi-2-a", 2),
        ],
    );
    let s = status(&second).expect("status");
    assert_eq!(
        s["uncountedTerminatedPods"]["failed"],
        json!(["uid-pi-0-a"])
    );
    assert_eq!(s["failedIndexes"], "", "one failure of two allowed");
    assert_eq!(creates(&second), 0);
}

#[test]
fn a_fail_index_rule_fails_the_index_at_once() {
    let spec = per_index(
        5,
        json!({"podFailurePolicy": {"rules": [
            {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]}}),
    );
    let j = job(spec, json!({}));
    let p = plan(
        &j,
        vec![running_at("pi-0-a", 0), failed_at("pi-1-a", 1, 3, 0)],
    );
    let s = status(&p).expect("status");
    assert_eq!(s["failedIndexes"], "1");
    let indexes: Vec<&Value> = created_annotations(&p)
        .into_iter()
        .map(|a| &a[COMPLETION_INDEX_ANNOTATION])
        .collect();
    assert_eq!(indexes, [&json!("2")], "index 1 is not replaced");
}

#[test]
fn an_ignored_failure_is_carried_in_the_ignored_count() {
    let spec = per_index(
        0,
        json!({"podFailurePolicy": {"rules": [
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}}]}}),
    );
    let j = job(spec, json!({}));
    let p = plan(
        &j,
        vec![
            failed_at("pi-0-a", 0, 137, 0),
            running_at("pi-1-a", 1),
            running_at("pi-2-a", 2),
        ],
    );
    let annotations = created_annotations(&p);
    assert_eq!(
        annotations.len(),
        1,
        "backoffLimitPerIndex 0 notwithstanding"
    );
    assert_eq!(annotations[0][INDEX_FAILURE_COUNT_ANNOTATION], "0");
    assert_eq!(annotations[0][INDEX_IGNORED_FAILURE_COUNT_ANNOTATION], "1");
}

#[test]
fn once_every_index_has_succeeded_or_failed_the_job_fails_for_failed_indexes() {
    let j = job(
        per_index(1, json!({"completions": 2, "parallelism": 2})),
        json!({"completedIndexes": "0", "failedIndexes": "1", "startTime": "1970-01-01T00:00:00Z"}),
    );
    let p = plan(&j, vec![]);
    let s = status(&p).expect("status");
    assert_eq!(kinds(s), ["FailureTarget", "Failed"]);
    assert_eq!(condition(s, "Failed")["reason"], "FailedIndexes");
    assert_eq!(condition(s, "Failed")["message"], "Job has failed indexes");
}

#[test]
fn past_max_failed_indexes_the_job_fails_and_its_pods_go() {
    let j = job(
        per_index(
            1,
            json!({"completions": 4, "parallelism": 4, "maxFailedIndexes": 1}),
        ),
        json!({"failedIndexes": "0,1"}),
    );
    let p = plan(&j, vec![running_at("pi-2-a", 2)]);
    let s = status(&p).expect("status");
    assert_eq!(kinds(s), ["FailureTarget"], "final once its Pod is gone");
    assert_eq!(
        condition(s, "FailureTarget")["reason"],
        "MaxFailedIndexesExceeded"
    );
    assert_eq!(
        condition(s, "FailureTarget")["message"],
        "Job has exceeded the specified maximal number of failed indexes"
    );
    assert_eq!(deleted(&p), ["pi-2-a"]);
    assert_eq!(creates(&p), 0);
}

#[test]
fn backoff_limit_per_index_lifts_the_default_backoff_limit() {
    let j = job(per_index(1, json!({})), json!({"failed": 100}));
    assert_eq!(j.backoff_limit, i32::MAX);
    let p = plan(&j, vec![]);
    assert_eq!(creates(&p), 3);
}

#[test]
fn a_failing_job_lets_go_of_a_pod_held_for_its_replacement() {
    let j = job(
        per_index(2, json!({"backoffLimit": 0})),
        json!({"failed": 1}),
    );
    let held = failed_at("pi-0-a", 0, 1, 0);
    let p = plan(&j, vec![held]);
    let s = status(&p).expect("status");
    assert_eq!(
        condition(s, "FailureTarget")["reason"],
        "BackoffLimitExceeded"
    );
    assert_eq!(
        s["uncountedTerminatedPods"]["failed"],
        json!(["uid-pi-0-a"])
    );
    assert_eq!(creates(&p), 0);
}

#[test]
fn a_replacement_waits_out_its_index_backoff() {
    let j = job(per_index(5, json!({})), json!({}));
    let mut failed = failed_at("pi-0-a", 0, 1, 2);
    if let Some(f) = failed.failure.as_mut() {
        // Its index's third failure, 10 s ago: 40 s of backoff, 30 s left.
        f.finished_at = Some(990);
    }
    let p = plan(
        &j,
        vec![failed, running_at("pi-1-a", 1), running_at("pi-2-a", 2)],
    );
    assert_eq!(creates(&p), 0);
    assert_eq!(p.requeue_after, Some(std::time::Duration::from_secs(30)));
    assert!(unfinalized(&p).is_empty(), "still held for the replacement");
}

#[test]
fn a_fail_job_rule_fails_a_job_with_per_index_limits_too() {
    let spec = per_index(
        5,
        json!({"podFailurePolicy": {"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}}),
    );
    let j = job(spec, json!({}));
    let p = plan(
        &j,
        vec![failed_at("pi-0-a", 0, 42, 0), running_at("pi-1-a", 1)],
    );
    let s = status(&p).expect("status");
    assert_eq!(condition(s, "FailureTarget")["reason"], "PodFailurePolicy");
    assert_eq!(
        s["uncountedTerminatedPods"]["failed"],
        json!(["uid-pi-0-a"])
    );
    assert_eq!(creates(&p), 0);
    assert_eq!(deleted(&p), ["pi-1-a"]);
}
