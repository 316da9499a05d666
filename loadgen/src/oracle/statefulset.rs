//! The StatefulSet invariants: under OrderedReady no ordinal is created before its predecessor is
//! Running and Ready; a scale-down deletes only ordinals at or above `spec.replicas`; a rolling
//! update deletes a wanted ordinal only if its Pod is of an older template, it is at or above the
//! partition, and fewer than `maxUnavailable` wanted Pods are unavailable; all judged at the
//! request's arrival. Two live Pods with one ordinal cannot
//! exist: a StatefulSet Pod's name is its ordinal, and names are unique.

use crate::oracle::in_flight::{Decision, InFlight};
use crate::oracle::knowable::Desired;
use crate::oracle::template_mark::{TemplateMark, mark_of};
use crate::oracle::{Violation, ViolationKind, desired_replicas, pod_is_live};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

#[derive(Debug)]
struct SetInfo {
    namespace: String,
    name: String,
    desired: Desired,
    parallel: bool,
    /// The template's mark (which template a Pod was made from).
    mark: TemplateMark,
    /// How a changed template reaches the Pods: `Some((partition, maxUnavailable))` for
    /// `RollingUpdate`, `None` for `OnDelete`.
    rolling: Option<(i64, i64)>,
}

/// What the checker knows of one ordinal's live Pod.
#[derive(Debug, Clone)]
struct Slot {
    running_and_ready: bool,
    mark: TemplateMark,
}

/// `spec.updateStrategy` as `(partition, maxUnavailable)`, `None` for `OnDelete`; the API's
/// defaults (partition 0, one unavailable; a percentage of `spec.replicas`, rounded up).
fn rolling_of(set: &Value, replicas: i64) -> Option<(i64, i64)> {
    let strategy = &set["spec"]["updateStrategy"];
    if strategy["type"] == "OnDelete" {
        return None;
    }
    let rolling = &strategy["rollingUpdate"];
    let partition = rolling["partition"].as_i64().unwrap_or(0);
    let max = match &rolling["maxUnavailable"] {
        Value::String(p) => p
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .map_or(1, |p| (replicas * p + 99) / 100),
        v => v.as_i64().unwrap_or(1),
    };
    Some((partition, max.max(1)))
}

/// What the checker knows about every StatefulSet and its live Pods.
#[derive(Debug, Default)]
pub struct StatefulSetOracle {
    sets: HashMap<String, SetInfo>,
    /// (set uid, ordinal) -> its live Pod.
    live: HashMap<(String, usize), Slot>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

fn controller(pod: &Value) -> Option<(&str, &str)> {
    pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)
        .and_then(|o| Some((o["kind"].as_str()?, o["uid"].as_str()?)))
}

fn running_and_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

impl StatefulSetOracle {
    /// A StatefulSet was written at `at` (`new` absent: deleted).
    pub fn record_set(&mut self, prev: Option<&Value>, new: Option<&Value>, at: Instant) {
        let Some(obj) = new.or(prev) else { return };
        let uid = meta(obj, "uid").to_string();
        match new {
            Some(set) => {
                let terminating = !set["metadata"]["deletionTimestamp"].is_null();
                let size = if terminating {
                    0
                } else {
                    desired_replicas(set)
                };
                let desired = Desired::follow(self.sets.get(&uid).map(|k| k.desired), size, at);
                self.sets.insert(
                    uid,
                    SetInfo {
                        namespace: meta(set, "namespace").to_string(),
                        name: meta(set, "name").to_string(),
                        desired,
                        parallel: set["spec"]["podManagementPolicy"] == "Parallel",
                        mark: mark_of(&set["spec"]["template"]),
                        rolling: rolling_of(set, size),
                    },
                );
            }
            None => {
                self.sets.remove(&uid);
            }
        }
    }

    /// The Pod's set uid, the set, and its ordinal, if it is a StatefulSet's Pod.
    fn placed<'a>(&'a self, pod: &'a Value) -> Option<(&'a str, &'a SetInfo, usize)> {
        let (kind, uid) = controller(pod)?;
        if kind != "StatefulSet" {
            return None;
        }
        let set = self.sets.get(uid)?;
        let ordinal = meta(pod, "name")
            .strip_prefix(set.name.as_str())?
            .strip_prefix('-')?
            .parse()
            .ok()?;
        Some((uid, set, ordinal))
    }

    /// What `decision`, arriving at `at`, breaks, judged against the state now (and the size
    /// the set had until less than `allowance` ago).
    pub fn judge(
        &self,
        decision: Decision<'_>,
        _in_flight: &InFlight,
        allowance: Duration,
        at: Instant,
    ) -> Option<Violation> {
        let pod = decision.pod();
        let (uid, set, ordinal) = self.placed(pod)?;
        let live = self.live.keys().filter(|(u, _)| u == uid).count() as i64;
        let kind = match decision {
            Decision::Create(_) if !set.parallel && ordinal > 0 => {
                let predecessor = self
                    .live
                    .get(&(uid.to_string(), ordinal - 1))
                    .map(|slot| slot.running_and_ready);
                (predecessor != Some(true)).then_some(ViolationKind::OrdinalBeforePredecessorReady)
            }
            Decision::Create(_) => None,
            Decision::Delete(_) => {
                let (fewest, _) = set.desired.range(allowance, at);
                if let Some(ago) = set.desired.changed_within(allowance, at)
                    && (ordinal as i64) < set.desired.now
                    && (ordinal as i64) >= fewest
                {
                    tracing::info!(set = %set.name, ordinal, ago_ms = ago.as_millis() as u64, "a delete decided on the size the user changed moments before it arrived: a race no controller avoids, not counted");
                }
                if (ordinal as i64) >= fewest {
                    None
                } else {
                    self.judge_replacement(uid, set, ordinal, pod, fewest)
                }
            }
        }?;
        Some(Violation {
            kind,
            revision: 0,
            namespace: set.namespace.clone(),
            replicaset: set.name.clone(),
            live,
            in_flight: 0,
            desired: set.desired.now,
            pod: meta(pod, "name").to_string(),
            user_agent: None,
            at_arrival: false,
        })
    }

    /// A wanted ordinal's Pod is deleted: fine only as a rolling update's replacement of a Pod
    /// of an older template, at or above the partition, with fewer than `maxUnavailable` wanted
    /// Pods unavailable. Wanted are the ordinals below `wanted`: the fewest the set asked for
    /// within the delivery allowance, since a scale-up the decision could not have known of
    /// adds missing ordinals it could not have counted.
    fn judge_replacement(
        &self,
        uid: &str,
        set: &SetInfo,
        ordinal: usize,
        pod: &Value,
        wanted: i64,
    ) -> Option<ViolationKind> {
        let outdated = mark_of(pod) != set.mark;
        let Some((partition, max_unavailable)) = set.rolling.filter(|_| outdated) else {
            return Some(ViolationKind::WantedOrdinalDeleted);
        };
        if (ordinal as i64) < partition {
            return Some(ViolationKind::WantedOrdinalDeleted);
        }
        let unavailable = (0..usize::try_from(wanted).unwrap_or(0))
            .filter(|o| {
                self.live
                    .get(&(uid.to_string(), *o))
                    .is_none_or(|slot| !slot.running_and_ready)
            })
            .count() as i64;
        (unavailable >= max_unavailable).then_some(ViolationKind::RolloutBeyondMaxUnavailable)
    }

    /// How many live Pods of the set `uid` are of another template than the set's now (a
    /// rolling update that has not finished).
    pub fn outdated_pods(&self, uid: &str) -> i64 {
        let Some(set) = self.sets.get(uid) else {
            return 0;
        };
        self.live
            .iter()
            .filter(|((u, _), slot)| u == uid && slot.mark != set.mark)
            .count() as i64
    }

    /// A Pod was written: the ordinal's slot follows.
    pub fn record_pod(&mut self, prev: Option<&Value>, new: Option<&Value>) {
        let Some(obj) = new.or(prev) else { return };
        let Some((uid, _, ordinal)) = self.placed(obj) else {
            return;
        };
        let slot = (uid.to_string(), ordinal);
        match new.filter(|p| pod_is_live(p)) {
            Some(pod) => {
                self.live.insert(
                    slot,
                    Slot {
                        running_and_ready: running_and_ready(pod),
                        mark: mark_of(pod),
                    },
                );
            }
            None => {
                self.live.remove(&slot);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ROLLOUT_ANNOTATION;
    use serde_json::json;

    fn set(replicas: i64, parallel: bool) -> Value {
        json!({"metadata": {"name": "db", "namespace": "ns", "uid": "s1"},
            "spec": {"replicas": replicas, "podManagementPolicy": if parallel { "Parallel" } else { "OrderedReady" }}})
    }

    fn pod(ordinal: usize, ready: bool) -> Value {
        let status = if ready {
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
        } else {
            json!({"phase": "Pending"})
        };
        json!({"metadata": {"name": format!("db-{ordinal}"), "namespace": "ns",
            "ownerReferences": [{"kind": "StatefulSet", "uid": "s1", "controller": true}]},
            "status": status})
    }

    const ALLOWANCE: Duration = Duration::from_millis(100);

    fn kind_of(o: &StatefulSetOracle, d: Decision<'_>) -> Option<ViolationKind> {
        o.judge(d, &InFlight::default(), Duration::ZERO, Instant::now())
            .map(|v| v.kind)
    }

    fn kind_at(o: &StatefulSetOracle, d: Decision<'_>, at: Instant) -> Option<ViolationKind> {
        o.judge(d, &InFlight::default(), ALLOWANCE, at)
            .map(|v| v.kind)
    }

    #[test]
    fn an_ordinal_created_before_its_predecessor_is_ready_is_caught() {
        let mut o = StatefulSetOracle::default();
        o.record_set(None, Some(&set(3, false)), Instant::now());
        assert_eq!(kind_of(&o, Decision::Create(&pod(0, false))), None);
        o.record_pod(None, Some(&pod(0, false)));
        assert_eq!(
            kind_of(&o, Decision::Create(&pod(1, false))),
            Some(ViolationKind::OrdinalBeforePredecessorReady)
        );
        o.record_pod(Some(&pod(0, false)), Some(&pod(0, true)));
        assert_eq!(kind_of(&o, Decision::Create(&pod(1, false))), None);
    }

    #[test]
    fn parallel_sets_may_create_out_of_order_but_never_delete_a_wanted_ordinal() {
        let mut o = StatefulSetOracle::default();
        o.record_set(None, Some(&set(2, true)), Instant::now());
        assert_eq!(kind_of(&o, Decision::Create(&pod(1, false))), None);
        o.record_pod(None, Some(&pod(1, false)));
        o.record_pod(None, Some(&pod(2, true)));
        assert_eq!(kind_of(&o, Decision::Delete(&pod(2, true))), None);
        assert_eq!(
            kind_of(&o, Decision::Delete(&pod(1, false))),
            Some(ViolationKind::WantedOrdinalDeleted)
        );
    }

    #[test]
    fn a_delete_arriving_moments_after_the_user_scaled_up_is_a_race_not_counted() {
        let mut o = StatefulSetOracle::default();
        let t = Instant::now();
        o.record_set(None, Some(&set(1, false)), t);
        for ordinal in 0..3 {
            o.record_pod(None, Some(&pod(ordinal, true)));
        }
        o.record_set(Some(&set(1, false)), Some(&set(3, false)), t);
        let moments_later = t + Duration::from_millis(5);
        assert_eq!(
            kind_at(&o, Decision::Delete(&pod(2, true)), moments_later),
            None
        );
        assert_eq!(
            kind_at(&o, Decision::Delete(&pod(0, true)), moments_later),
            Some(ViolationKind::WantedOrdinalDeleted),
            "ordinal 0 was wanted before the change too"
        );
    }

    #[test]
    fn a_delete_arriving_long_after_the_user_scaled_up_is_counted() {
        let mut o = StatefulSetOracle::default();
        let t = Instant::now();
        o.record_set(None, Some(&set(1, false)), t);
        for ordinal in 0..3 {
            o.record_pod(None, Some(&pod(ordinal, true)));
        }
        o.record_set(Some(&set(1, false)), Some(&set(3, false)), t);
        assert_eq!(
            kind_at(
                &o,
                Decision::Delete(&pod(2, true)),
                t + Duration::from_secs(1)
            ),
            Some(ViolationKind::WantedOrdinalDeleted)
        );
    }

    fn rolled(replicas: i64, rollout: &str) -> Value {
        let mut s = set(replicas, false);
        s["spec"]["template"] = json!({"metadata": {"annotations": {ROLLOUT_ANNOTATION: rollout}}});
        s
    }

    fn pod_of(ordinal: usize, ready: bool, rollout: &str) -> Value {
        let mut p = pod(ordinal, ready);
        p["metadata"]["annotations"] = json!({ROLLOUT_ANNOTATION: rollout});
        p
    }

    #[test]
    fn a_rolling_update_may_replace_an_outdated_pod_while_all_are_available() {
        let mut o = StatefulSetOracle::default();
        o.record_set(None, Some(&rolled(3, "1")), Instant::now());
        for i in 0..3 {
            o.record_pod(None, Some(&pod_of(i, true, "1")));
        }
        o.record_set(Some(&rolled(3, "1")), Some(&rolled(3, "2")), Instant::now());
        assert_eq!(o.outdated_pods("s1"), 3);
        assert_eq!(kind_of(&o, Decision::Delete(&pod_of(2, true, "1"))), None);
        assert_eq!(
            kind_of(&o, Decision::Delete(&pod_of(2, true, "2"))),
            Some(ViolationKind::WantedOrdinalDeleted),
            "a Pod of the template now is not replaced"
        );
    }

    #[test]
    fn a_replacement_while_another_wanted_pod_is_down_exceeds_max_unavailable() {
        let mut o = StatefulSetOracle::default();
        o.record_set(None, Some(&rolled(3, "2")), Instant::now());
        o.record_pod(None, Some(&pod_of(0, true, "1")));
        o.record_pod(None, Some(&pod_of(1, true, "1")));
        o.record_pod(None, Some(&pod_of(2, false, "2")));
        assert_eq!(
            kind_of(&o, Decision::Delete(&pod_of(1, true, "1"))),
            Some(ViolationKind::RolloutBeyondMaxUnavailable)
        );
    }

    #[test]
    fn a_replacement_decided_before_a_scale_up_it_could_not_know_of_is_fair_within_the_allowance() {
        let mut o = StatefulSetOracle::default();
        let t = Instant::now();
        o.record_set(None, Some(&rolled(3, "2")), t);
        for i in 0..3 {
            o.record_pod(None, Some(&pod_of(i, true, "1")));
        }
        o.record_set(Some(&rolled(3, "2")), Some(&rolled(4, "2")), t);
        let replace = Decision::Delete(&pod_of(2, true, "1"));
        assert_eq!(
            kind_at(&o, replace, t + Duration::from_millis(5)),
            None,
            "ordinal 3, missing, was not wanted when the decision was made"
        );
        assert_eq!(
            kind_at(&o, replace, t + Duration::from_secs(1)),
            Some(ViolationKind::RolloutBeyondMaxUnavailable)
        );
    }
}
