//! The Job invariants, checked at each write under the store's lock: a Pod is never created while
//! its Job already runs `parallelism` active Pods, an Indexed Job never runs two active Pods for one
//! index, and a Job never counts more successes than `completions`.

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
                desired: c,
                pod: String::new(),
                user_agent: user_agent.map(str::to_string),
            });
        self.jobs.insert(uid, info);
        over
    }

    /// A Pod was written; returns the violation it is, if any.
    pub fn record_pod(
        &mut self,
        revision: u64,
        verb: Verb,
        prev: Option<&Value>,
        new: Option<&Value>,
        user_agent: Option<&str>,
    ) -> Option<Violation> {
        let obj = new.or(prev)?;
        let job_uid = job_of(obj)?.to_string();
        let pod_uid = meta(obj, "uid").to_string();
        let running = self.active.entry(job_uid.clone()).or_default();
        let mut found = None;
        if verb == Verb::Create
            && new.is_some_and(active)
            && let Some(job) = self.jobs.get(&job_uid)
        {
            let violation = |kind| Violation {
                kind,
                revision,
                namespace: job.namespace.clone(),
                replicaset: job.name.clone(),
                live: running.len() as i64,
                desired: job.parallelism,
                pod: meta(obj, "name").to_string(),
                user_agent: user_agent.map(str::to_string),
            };
            let new_index = new.and_then(index);
            if running.len() as i64 >= job.parallelism {
                found = Some(violation(ViolationKind::JobOverParallelism));
            } else if new_index.is_some() && running.values().any(|i| *i == new_index) {
                found = Some(violation(ViolationKind::JobDuplicateIndex));
            }
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
        o.record_job(1, None, Some(&job(2, 0)), None);
        assert!(
            o.record_pod(2, Verb::Create, None, Some(&pod("a", Some("0"))), None)
                .is_none()
        );
        let dup = o.record_pod(3, Verb::Create, None, Some(&pod("b", Some("0"))), None);
        assert_eq!(dup.map(|v| v.kind), Some(ViolationKind::JobDuplicateIndex));
        let over = o.record_pod(4, Verb::Create, None, Some(&pod("c", Some("1"))), None);
        assert_eq!(
            over.map(|v| v.kind),
            Some(ViolationKind::JobOverParallelism)
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
