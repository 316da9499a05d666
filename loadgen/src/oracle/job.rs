//! The Job invariants: a Pod is never created while its Job already runs `parallelism` active
//! Pods (judged at the request's arrival, with the Job's creates in flight), and at every commit:
//! an Indexed Job never runs two active Pods for one index, and a Job never counts more
//! successes than `completions`.

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
}

/// What the checker knows about every Job and its active Pods.
#[derive(Debug, Default)]
pub struct JobOracle {
    jobs: HashMap<String, JobInfo>,
    /// Job uid -> active Pod uid -> completion index.
    active: HashMap<String, HashMap<String, Option<String>>>,
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
            return None;
        };
        let info = JobInfo {
            namespace: meta(job, "namespace").to_string(),
            name: meta(job, "name").to_string(),
            parallelism: job["spec"]["parallelism"].as_i64().unwrap_or(1),
            completions: job["spec"]["completions"].as_i64(),
        };
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

    /// What `decision` breaks, judged against the state now and the writes `in_flight`.
    pub fn judge(&self, decision: Decision<'_>, in_flight: &InFlight) -> Option<Violation> {
        let Decision::Create(pod) = decision else {
            return None;
        };
        let job_uid = job_of(pod)?;
        let job = self.jobs.get(job_uid)?;
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
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        assert!(o.judge(Decision::Create(&first), &none).is_none());
        assert!(o.record_pod(Verb::Create, None, Some(&first)).is_none());
        let dup = o.record_pod(Verb::Create, None, Some(&pod("b", Some("0"))));
        assert_eq!(dup.map(|v| v.kind), Some(ViolationKind::JobDuplicateIndex));
        let over = o.judge(Decision::Create(&pod("c", Some("1"))), &none);
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
        assert!(o.judge(Decision::Create(&body), &in_flight).is_none());
        in_flight.arrive("ns", Decision::Create(&body), vec![]);
        assert_eq!(
            o.judge(Decision::Create(&body), &in_flight)
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
}
