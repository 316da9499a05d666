//! The `Suspended` condition and what suspending and resuming do.

use super::*;

#[test]
fn a_suspended_job_has_the_suspended_condition() {
    let j = job(
        json!({"parallelism": 1, "completions": 1, "suspend": true}),
        json!({}),
    );
    let p = plan(&j, vec![]);
    let s = status(&p).expect("status");
    let suspended = condition(s, "Suspended");
    assert_eq!(suspended["status"], "True");
    assert_eq!(suspended["reason"], "JobSuspended");
    assert_eq!(suspended["message"], "Job suspended");
    assert!(s["startTime"].is_null(), "its clock has not started");
}

#[test]
fn suspending_lets_go_of_the_running_pods_before_deleting_them() {
    let j = job(
        json!({"parallelism": 1, "completions": 1, "suspend": true}),
        json!({}),
    );
    let p = plan(&j, vec![pod("a", PodPhase::Running, true, None)]);
    let release = p
        .steps
        .iter()
        .position(|s| s.iter().any(|a| matches!(a, Action::StrategicPatch { .. })));
    let removal = p
        .steps
        .iter()
        .position(|s| s.iter().any(|a| matches!(a, Action::Delete { .. })));
    assert!(release.is_some() && release < removal, "{p:?}");
}

#[test]
fn a_resumed_job_has_the_condition_false_and_its_clock_restarted() {
    let j = job(
        json!({"parallelism": 1, "completions": 1, "activeDeadlineSeconds": 60}),
        json!({"startTime": "1970-01-01T00:00:00Z", "conditions": [{"type": "Suspended",
            "status": "True", "reason": "JobSuspended", "message": "Job suspended"}]}),
    );
    let p = plan(&j, vec![]);
    let s = status(&p).expect("status");
    let resumed = condition(s, "Suspended");
    assert_eq!(resumed["status"], "False");
    assert_eq!(resumed["reason"], "JobResumed");
    assert_eq!(resumed["message"], "Job resumed");
    assert_eq!(s["startTime"], "1970-01-01T00:16:40Z");
    assert_eq!(creates(&p), 1, "not past its deadline: the clock restarted");
}

#[test]
fn a_job_never_suspended_has_no_suspended_condition() {
    let j = job(json!({"parallelism": 1, "completions": 1}), json!({}));
    let p = plan(&j, vec![]);
    assert!(kinds(status(&p).expect("status")).is_empty());
}

#[test]
fn suspending_a_running_job_clears_its_clock() {
    let j = job(
        json!({"parallelism": 1, "completions": 1, "suspend": true, "activeDeadlineSeconds": 60}),
        json!({"startTime": "1970-01-01T00:00:00Z", "active": 1}),
    );
    let p = plan(&j, vec![pod("a", PodPhase::Running, true, None)]);
    let s = status(&p).expect("status");
    assert!(s.get("startTime").is_none(), "{s}");
    assert!(
        kinds(s).iter().all(|k| *k != "FailureTarget"),
        "no deadline while suspended"
    );
    assert_eq!(p.requeue_after, None);
}
