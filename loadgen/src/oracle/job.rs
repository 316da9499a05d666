//! The Job invariants: a Pod is never created while its Job already runs `parallelism` active
//! Pods, nor while the Job is suspended (judged at the request's arrival, with the Job's creates
//! in flight and, for a suspension, the delivery allowance), and at every commit: an Indexed Job
//! never runs two active Pods for one index, a Job never counts more successes than
//! `completions`, and a Job does not fail for its backoff limit while the failures its
//! `podFailurePolicy` does not ignore are within it (the `Ignore` rules on exit codes).

use crate::oracle::in_flight::{Decision, InFlight};
use crate::oracle::{Verb, Violation, ViolationKind};
use serde_json::Value;
use std::collections::HashMap;

#[derive(Debug)]
struct JobInfo {
    namespace: String,
    name: String,
    parallelism: i64,
    completions: Option<i64>,
    /// `spec.suspend`, and since when (monotonic).
    suspended: Option<std::time::Instant>,
    backoff_limit: i64,
    /// Exit codes an `Ignore` rule of `podFailurePolicy` matches in any container.
    ignored_codes: Vec<i64>,
}

/// The exit codes `Ignore` rules match in any container (`onExitCodes`, operator `In`, no
/// container name): the rules the oracle checks.
fn ignored_codes(job: &Value) -> Vec<i64> {
    let rules = job["spec"]["podFailurePolicy"]["rules"].as_array();
    rules
        .into_iter()
        .flatten()
        .filter(|r| {
            r["action"] == "Ignore"
                && r["onExitCodes"]["operator"] == "In"
                && r["onExitCodes"]["containerName"].is_null()
        })
        .flat_map(|r| {
            r["onExitCodes"]["values"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|v| v.as_i64())
        .collect()
}

/// The non-zero exit codes of a Pod's containers.
fn exit_codes(pod: &Value) -> Vec<i64> {
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .filter_map(|list| pod["status"][list].as_array())
        .flatten()
        .filter_map(|c| c["state"]["terminated"]["exitCode"].as_i64())
        .filter(|code| *code != 0)
        .collect()
}

/// What the checker knows about every Job and its active Pods.
#[derive(Debug, Default)]
pub struct JobOracle {
    jobs: HashMap<String, JobInfo>,
    /// Job uid -> active Pod uid -> completion index.
    active: HashMap<String, HashMap<String, Option<String>>>,
    /// Job uid -> failed Pods: uid -> whether the Job's podFailurePolicy ignores the failure.
    failed: HashMap<String, HashMap<String, bool>>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

fn job_of(pod: &Value) -> Option<&str> {
    pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true && o["kind"] == "Job")
        .and_then(|o| o["uid"].as_str())
}

fn active(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && !matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
}

fn index(pod: &Value) -> Option<String> {
    pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        .as_str()
        .map(str::to_string)
}

impl JobOracle {
    /// A Job was written (`new` absent: deleted); returns the violation its status is, if any.
    pub fn record_job(
        &mut self,
        revision: u64,
        prev: Option<&Value>,
        new: Option<&Value>,
        user_agent: Option<&str>,
    ) -> Option<Violation> {
        let obj = new.or(prev)?;
        let uid = meta(obj, "uid").to_string();
        let Some(job) = new else {
            self.jobs.remove(&uid);
            self.active.remove(&uid);
            self.failed.remove(&uid);
            return None;
        };
        let was_suspended = self.jobs.get(&uid).and_then(|j| j.suspended);
        let info = JobInfo {
            namespace: meta(job, "namespace").to_string(),
            name: meta(job, "name").to_string(),
            parallelism: job["spec"]["parallelism"].as_i64().unwrap_or(1),
            completions: job["spec"]["completions"].as_i64(),
            suspended: (job["spec"]["suspend"] == true)
                .then(|| was_suspended.unwrap_or_else(crate::clock::monotonic_now)),
            backoff_limit: job["spec"]["backoffLimit"].as_i64().unwrap_or(6),
            ignored_codes: ignored_codes(job),
        };
        let counted_failures = self.failed.get(&uid).map_or(0, |f| {
            f.values().filter(|ignored| !**ignored).count() as i64
        });
        let failed_for_backoff = |v: &Value| {
            v["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "Failed"
                        && c["status"] == "True"
                        && c["reason"] == "BackoffLimitExceeded"
                })
            })
        };
        if !info.ignored_codes.is_empty()
            && failed_for_backoff(job)
            && !prev.is_some_and(failed_for_backoff)
            && counted_failures <= info.backoff_limit
        {
            let v = Violation {
                kind: ViolationKind::JobFailedDespiteIgnoredFailures,
                revision,
                namespace: info.namespace.clone(),
                replicaset: info.name.clone(),
                live: counted_failures,
                in_flight: 0,
                desired: info.backoff_limit,
                pod: String::new(),
                user_agent: user_agent.map(str::to_string),
                at_arrival: false,
            };
            self.jobs.insert(uid, info);
            return Some(v);
        }
        let succeeded = job["status"]["succeeded"].as_i64().unwrap_or(0);
        let over = info
            .completions
            .filter(|c| succeeded > *c)
            .map(|c| Violation {
                kind: ViolationKind::JobOverCounted,
                revision,
                namespace: info.namespace.clone(),
                replicaset: info.name.clone(),
                live: succeeded,
                in_flight: 0,
                desired: c,
                pod: String::new(),
                user_agent: user_agent.map(str::to_string),
                at_arrival: false,
            });
        self.jobs.insert(uid, info);
        over
    }

    /// What `decision` breaks, judged against the state now and the writes `in_flight`; a
    /// suspension younger than `allowance` at `at` may not have reached the controller yet.
    pub fn judge(
        &self,
        decision: Decision<'_>,
        in_flight: &InFlight,
        allowance: std::time::Duration,
        at: std::time::Instant,
    ) -> Option<Violation> {
        let Decision::Create(pod) = decision else {
            return None;
        };
        let job_uid = job_of(pod)?;
        let job = self.jobs.get(job_uid)?;
        if let Some(since) = job.suspended
            && at.saturating_duration_since(since) >= allowance
        {
            return Some(Violation {
                kind: ViolationKind::JobPodWhileSuspended,
                revision: 0,
                namespace: job.namespace.clone(),
                replicaset: job.name.clone(),
                live: self.active.get(job_uid).map_or(0, |r| r.len() as i64),
                in_flight: in_flight.net_creates(job_uid),
                desired: 0,
                pod: meta(pod, "name").to_string(),
                user_agent: None,
                at_arrival: false,
            });
        }
        let running = self.active.get(job_uid).map_or(0, |r| r.len() as i64);
        let coming = in_flight.net_creates(job_uid);
        (running + coming >= job.parallelism).then(|| Violation {
            kind: ViolationKind::JobOverParallelism,
            revision: 0,
            namespace: job.namespace.clone(),
            replicaset: job.name.clone(),
            live: running,
            in_flight: coming,
            desired: job.parallelism,
            pod: meta(pod, "name").to_string(),
            user_agent: None,
            at_arrival: false,
        })
    }

    /// A Pod was written; returns the violation its commit is (a second active Pod for an
    /// index), if any.
    pub fn record_pod(
        &mut self,
        verb: Verb,
        prev: Option<&Value>,
        new: Option<&Value>,
    ) -> Option<Violation> {
        let obj = new.or(prev)?;
        let job_uid = job_of(obj)?.to_string();
        let pod_uid = meta(obj, "uid").to_string();
        let running = self.active.entry(job_uid.clone()).or_default();
        let mut found = None;
        let new_index = new.and_then(index);
        if verb == Verb::Create
            && new.is_some_and(active)
            && new_index.is_some()
            && running.values().any(|i| *i == new_index)
            && let Some(job) = self.jobs.get(&job_uid)
        {
            found = Some(Violation {
                kind: ViolationKind::JobDuplicateIndex,
                revision: 0,
                namespace: job.namespace.clone(),
                replicaset: job.name.clone(),
                live: running.len() as i64,
                in_flight: 0,
                desired: job.parallelism,
                pod: meta(obj, "name").to_string(),
                user_agent: None,
                at_arrival: false,
            });
        }
        match new.filter(|p| active(p)) {
            Some(pod) => {
                running.insert(pod_uid, index(pod));
            }
            None => {
                running.remove(&pod_uid);
            }
        }
        if let Some(pod) = new.filter(|p| p["status"]["phase"] == "Failed")
            && let Some(job) = self.jobs.get(&job_uid)
        {
            let ignored = exit_codes(pod)
                .iter()
                .any(|code| job.ignored_codes.contains(code));
            self.failed
                .entry(job_uid)
                .or_default()
                .insert(meta(pod, "uid").to_string(), ignored);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NO_ALLOWANCE: std::time::Duration = std::time::Duration::ZERO;

    fn job(parallelism: i64, succeeded: i64) -> Value {
        json!({"metadata": {"name": "pi", "namespace": "ns", "uid": "j1"},
            "spec": {"parallelism": parallelism, "completions": 3},
            "status": {"succeeded": succeeded}})
    }

    fn pod(name: &str, index: Option<&str>) -> Value {
        let mut p = json!({"metadata": {"name": name, "uid": format!("u-{name}"),
            "ownerReferences": [{"kind": "Job", "uid": "j1", "controller": true}]},
            "status": {"phase": "Pending"}});
        if let Some(i) = index {
            p["metadata"]["annotations"] = json!({"batch.kubernetes.io/job-completion-index": i});
        }
        p
    }

    #[test]
    fn a_create_beyond_parallelism_or_for_a_running_index_is_caught() {
        let mut o = JobOracle::default();
        let none = InFlight::default();
        o.record_job(1, None, Some(&job(2, 0)), None);
        let first = pod("a", Some("0"));
        assert!(
            o.judge(
                Decision::Create(&first),
                &none,
                NO_ALLOWANCE,
                std::time::Instant::now()
            )
            .is_none()
        );
        assert!(o.record_pod(Verb::Create, None, Some(&first)).is_none());
        let dup = o.record_pod(Verb::Create, None, Some(&pod("b", Some("0"))));
        assert_eq!(dup.map(|v| v.kind), Some(ViolationKind::JobDuplicateIndex));
        let over = o.judge(
            Decision::Create(&pod("c", Some("1"))),
            &none,
            NO_ALLOWANCE,
            std::time::Instant::now(),
        );
        assert_eq!(
            over.map(|v| v.kind),
            Some(ViolationKind::JobOverParallelism)
        );
    }

    #[test]
    fn creates_already_in_flight_count_against_parallelism() {
        let mut o = JobOracle::default();
        o.record_job(1, None, Some(&job(2, 0)), None);
        let mut in_flight = InFlight::default();
        let body = pod("", None);
        in_flight.arrive("ns", Decision::Create(&body), vec![]);
        assert!(
            o.judge(
                Decision::Create(&body),
                &in_flight,
                NO_ALLOWANCE,
                std::time::Instant::now()
            )
            .is_none()
        );
        in_flight.arrive("ns", Decision::Create(&body), vec![]);
        assert_eq!(
            o.judge(
                Decision::Create(&body),
                &in_flight,
                NO_ALLOWANCE,
                std::time::Instant::now()
            )
            .map(|v| v.in_flight),
            Some(2)
        );
    }

    #[test]
    fn counting_more_successes_than_completions_is_caught() {
        let mut o = JobOracle::default();
        assert!(o.record_job(1, None, Some(&job(1, 3)), None).is_none());
        let over = o.record_job(2, Some(&job(1, 3)), Some(&job(1, 4)), None);
        assert_eq!(over.map(|v| v.kind), Some(ViolationKind::JobOverCounted));
    }

    fn suspended_job() -> Value {
        json!({"metadata": {"name": "pi", "namespace": "ns", "uid": "j1"},
            "spec": {"parallelism": 2, "completions": 3, "suspend": true, "backoffLimit": 0,
                "podFailurePolicy": {"rules": [{"action": "Ignore", "onExitCodes": {"operator": "In", "values": [137]}}]}}})
    }

    #[test]
    fn a_pod_created_while_its_job_is_suspended_is_caught_after_the_allowance() {
        let start = std::time::Instant::now();
        crate::clock::set_monotonic_clock(Some(start));
        let mut o = JobOracle::default();
        o.record_job(1, None, Some(&suspended_job()), None);
        let allowance = std::time::Duration::from_millis(100);
        let create = |o: &JobOracle, at| {
            o.judge(
                Decision::Create(&pod("a", None)),
                &InFlight::default(),
                allowance,
                at,
            )
            .map(|v| v.kind)
        };
        assert_eq!(
            create(&o, start),
            None,
            "decided before the suspension could be known"
        );
        assert_eq!(
            create(&o, start + std::time::Duration::from_secs(1)),
            Some(ViolationKind::JobPodWhileSuspended)
        );
        crate::clock::set_monotonic_clock(None);
    }

    #[test]
    fn a_job_failed_for_its_backoff_limit_by_ignored_failures_is_caught() {
        let mut o = JobOracle::default();
        let job = suspended_job();
        o.record_job(1, None, Some(&job), None);
        let mut failed = pod("a", None);
        failed["status"] = json!({"phase": "Failed",
            "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 137}}}]});
        o.record_pod(Verb::UpdateStatus, Some(&pod("a", None)), Some(&failed));
        let mut gave_up = job.clone();
        gave_up["status"] = json!({"failed": 1, "conditions": [
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]});
        assert_eq!(
            o.record_job(2, Some(&job), Some(&gave_up), None)
                .map(|v| v.kind),
            Some(ViolationKind::JobFailedDespiteIgnoredFailures)
        );
        let mut other = pod("b", None);
        other["status"] = json!({"phase": "Failed",
            "containerStatuses": [{"name": "c", "state": {"terminated": {"exitCode": 1}}}]});
        let mut o = JobOracle::default();
        o.record_job(1, None, Some(&job), None);
        o.record_pod(Verb::UpdateStatus, Some(&pod("b", None)), Some(&other));
        assert_eq!(
            o.record_job(2, Some(&job), Some(&gave_up), None),
            None,
            "a failure no rule ignores counts"
        );
    }
}
