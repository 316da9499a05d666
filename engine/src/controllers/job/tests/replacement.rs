//! `podReplacementPolicy`: whether a terminating Pod is replaced before it has failed.

use super::*;

fn terminating(name: &str, index: Option<u32>) -> PodView {
    let mut p = pod(name, PodPhase::Running, true, index);
    p.terminating = true;
    p
}

#[test]
fn with_replacement_policy_failed_a_terminating_pod_is_not_replaced() {
    let j = job(
        json!({"parallelism": 2, "completions": 4, "podReplacementPolicy": "Failed"}),
        json!({}),
    );
    let p = plan(
        &j,
        vec![
            pod("a", PodPhase::Running, true, None),
            terminating("b", None),
        ],
    );
    assert_eq!(creates(&p), 0);
    let s = status(&p).expect("status");
    assert_eq!(s["terminating"], 1);
    assert_eq!(s["active"], 1);
    assert_eq!(
        s["uncountedTerminatedPods"]["failed"],
        json!([]),
        "not failed yet"
    );

    let mut failed = terminating("b", None);
    failed.phase = PodPhase::Failed;
    let p = plan(&j, vec![pod("a", PodPhase::Running, true, None), failed]);
    assert_eq!(creates(&p), 1, "replaced once it has failed");
    assert_eq!(status(&p).expect("status")["terminating"], 0);
}

#[test]
fn by_default_a_terminating_pod_is_counted_failed_and_replaced() {
    let j = job(json!({"parallelism": 2, "completions": 4}), json!({}));
    let p = plan(
        &j,
        vec![
            pod("a", PodPhase::Running, true, None),
            terminating("b", None),
        ],
    );
    assert_eq!(creates(&p), 1);
    let s = status(&p).expect("status");
    assert_eq!(s["terminating"], 1);
    assert_eq!(s["uncountedTerminatedPods"]["failed"], json!(["uid-b"]));
}

#[test]
fn with_replacement_policy_failed_a_terminating_index_is_not_run_twice() {
    let j = job(
        json!({"completionMode": "Indexed", "completions": 3, "parallelism": 3,
            "podReplacementPolicy": "Failed"}),
        json!({}),
    );
    let p = plan(
        &j,
        vec![
            pod("pi-0-a", PodPhase::Running, true, Some(0)),
            terminating("pi-1-a", Some(1)),
        ],
    );
    let indexes: Vec<&Value> = created_annotations(&p)
        .into_iter()
        .map(|a| &a[COMPLETION_INDEX_ANNOTATION])
        .collect();
    assert_eq!(indexes, [&json!("2")]);
}

#[test]
fn a_pod_failure_policy_makes_failed_the_default() {
    let j = job(with_policy(), json!({}));
    assert!(j.only_replace_failed);
    let p = plan(
        &j,
        vec![
            pod("a", PodPhase::Running, true, None),
            terminating("b", None),
        ],
    );
    assert_eq!(creates(&p), 0);
}

#[test]
fn a_finished_job_lets_go_of_its_deleted_pods_that_never_failed() {
    let j = job(
        json!({"parallelism": 2, "completions": 2, "podReplacementPolicy": "Failed"}),
        json!({"succeeded": 2, "conditions": [{"type": "Complete", "status": "True"}]}),
    );
    let p = plan(&j, vec![terminating("c", None)]);
    assert_eq!(unfinalized(&p), ["c"]);
    assert!(
        status(&p).is_none_or(|s| s["uncountedTerminatedPods"]["failed"] == json!([])),
        "not counted"
    );
}

#[test]
fn pods_beyond_a_lowered_parallelism_are_let_go_then_deleted_newest_first() {
    let j = job(json!({"parallelism": 1, "completions": 4}), json!({}));
    let mut newer = pod("b", PodPhase::Running, true, None);
    newer.created = 5;
    let p = plan(&j, vec![pod("a", PodPhase::Running, true, None), newer]);
    assert_eq!(unfinalized(&p), ["b"]);
    assert_eq!(deleted(&p), ["b"]);
    assert_eq!(creates(&p), 0);
}
