//! How a Job succeeds: its completions reached, or a `successPolicy` met before all its indexes
//! are.

use super::*;

fn with_success_policy() -> Value {
    json!({"completionMode": "Indexed", "completions": 5, "parallelism": 5,
        "successPolicy": {"rules": [{"succeededCount": 4}, {"succeededIndexes": "0-1"}]}})
}

#[test]
fn a_success_policy_met_completes_the_job_and_deletes_the_rest() {
    let j = job(with_success_policy(), json!({"completedIndexes": "1"}));
    let p = plan(
        &j,
        vec![
            pod("pi-0-a", PodPhase::Succeeded, true, Some(0)),
            pod("pi-2-a", PodPhase::Running, true, Some(2)),
            pod("pi-3-a", PodPhase::Running, true, Some(3)),
        ],
    );
    let s = status(&p).expect("status");
    assert_eq!(kinds(s), ["SuccessCriteriaMet"]);
    assert_eq!(
        condition(s, "SuccessCriteriaMet")["reason"],
        "SuccessPolicy"
    );
    assert_eq!(
        condition(s, "SuccessCriteriaMet")["message"],
        "Matched rules at index 1"
    );
    assert_eq!(deleted(&p), ["pi-2-a", "pi-3-a"]);
    assert_eq!(creates(&p), 0);

    let met = job(
        with_success_policy(),
        json!({"completedIndexes": "0,1", "succeeded": 2, "conditions": [{"type": "SuccessCriteriaMet",
            "status": "True", "reason": "SuccessPolicy", "message": "Matched rules at index 1"}]}),
    );
    let mut going = pod("pi-2-a", PodPhase::Running, true, Some(2));
    going.terminating = true;
    let p = plan(&met, vec![going]);
    let s = status(&p).expect("status");
    assert_eq!(
        s["uncountedTerminatedPods"]["failed"],
        json!(["uid-pi-2-a"]),
        "deleted before it succeeded, it failed (upstream's isPodFailed)"
    );
    assert!(
        kinds(s).iter().all(|k| *k != "Complete"),
        "a Pod is still terminating"
    );

    let p = plan(&met, vec![]);
    let s = status(&p).expect("status");
    let complete = condition(s, "Complete");
    assert_eq!(complete["reason"], "SuccessPolicy");
    assert_eq!(complete["message"], "Matched rules at index 1");
    assert!(s["completionTime"].is_string());
}

#[test]
fn an_unmet_success_policy_lets_the_job_run_on() {
    let j = job(with_success_policy(), json!({"completedIndexes": "1,2"}));
    let p = plan(&j, vec![]);
    assert_eq!(creates(&p), 3);
    assert!(kinds(status(&p).expect("status")).is_empty());
}

#[test]
fn with_replacement_policy_failed_a_met_policy_lets_terminating_pods_go_uncounted() {
    let mut spec = with_success_policy();
    spec["podReplacementPolicy"] = json!("Failed");
    let met = job(
        spec,
        json!({"completedIndexes": "0,1", "succeeded": 2, "conditions": [{"type": "SuccessCriteriaMet",
            "status": "True", "reason": "SuccessPolicy", "message": "Matched rules at index 1"}]}),
    );
    let mut going = pod("pi-2-a", PodPhase::Running, true, Some(2));
    going.terminating = true;
    let p = plan(&met, vec![going]);
    assert_eq!(unfinalized(&p), ["pi-2-a"]);
    let s = status(&p).expect("status");
    assert_eq!(s["uncountedTerminatedPods"]["failed"], json!([]));
    assert_eq!(s["terminating"], 1);
}

#[test]
fn pods_beyond_the_completions_reached_are_let_go_not_counted_failed() {
    let j = job(
        json!({"parallelism": 2, "completions": 2}),
        json!({"succeeded": 2}),
    );
    let p = plan(&j, vec![pod("c", PodPhase::Running, true, None)]);
    let s = status(&p).expect("status");
    assert_eq!(kinds(s), ["SuccessCriteriaMet"]);
    assert_eq!(unfinalized(&p), ["c"]);
    assert_eq!(deleted(&p), ["c"]);
}
