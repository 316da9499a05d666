//! The DaemonSet invariants: never two live Pods of one DaemonSet on one Node (checked at every
//! commit), and no Pod deleted from a Node that still needs it: the DaemonSet's only live Pod
//! there, on a Node that exists and matches the DaemonSet's `nodeSelector` (judged at the
//! request's arrival), unless it is made from an older template and a rolling update may replace
//! it: fewer than `maxUnavailable` needed Nodes are without a live Pod, deletes in flight
//! counted. With `maxSurge`, an updated Pod may run beside an older one on at most that many
//! Nodes at once, and beside an older one that is not Ready on any (upstream replaces those at
//! once). The second check is skipped for DaemonSets with a node affinity.

use crate::oracle::in_flight::{Decision, InFlight};
use crate::oracle::template_mark::{TemplateMark, mark_of};
use crate::oracle::{Verb, Violation, ViolationKind, pod_is_live};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

type Labels = BTreeMap<String, String>;

#[derive(Debug)]
struct DsInfo {
    namespace: String,
    name: String,
    /// `nodeSelector`; `None` when a node affinity makes the Nodes it wants unknown here.
    selector: Option<Labels>,
    /// The template's mark: a Pod of another was made from an older template.
    mark: TemplateMark,
    /// `maxUnavailable` of a rolling update; `None` for `OnDelete`.
    max_unavailable: Option<Value>,
    /// `maxSurge` of a rolling update (absent: no surge).
    max_surge: Value,
}

/// `maxUnavailable` or `maxSurge` as a count of `needed` Nodes: a number, or a percentage
/// rounded up (as upstream scales them for DaemonSets); `absent` when unset or unreadable.
fn scaled(value: &Value, needed: usize, absent: usize) -> usize {
    match value {
        Value::Number(n) => n.as_u64().map_or(absent, |n| n as usize),
        Value::String(p) => p
            .strip_suffix('%')
            .and_then(|p| p.parse::<usize>().ok())
            .map_or(absent, |p| (p * needed).div_ceil(100)),
        _ => absent,
    }
}

impl DsInfo {
    /// Nodes that may be without a Pod, and Nodes that may run two, during a rolling update of
    /// `needed` Nodes (upstream's `updatedDesiredNodeCounts`: one unavailable when both are 0).
    fn budgets(&self, needed: usize) -> (usize, usize) {
        let surge = scaled(&self.max_surge, needed, 0);
        let unavailable = self
            .max_unavailable
            .as_ref()
            .map_or(0, |m| scaled(m, needed, 1));
        match (unavailable, surge) {
            (0, 0) => (1, 0),
            budgets => budgets,
        }
    }
}

/// A live Pod on a Node: its template, and since when it has been Ready.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Placed {
    mark: TemplateMark,
    ready_since: Option<std::time::Instant>,
}

/// How long after an old Pod turned Ready a surge may still take it for not ready. The surge
/// budget bounds capacity, not safety: a controller whose cache shows the readiness a watch
/// delay late replaces the Pod at once, as upstream does, and that is not counted while the
/// delay is within the lag a cache may have unnoticed (the engine's lag threshold).
const READINESS_ALLOWANCE: std::time::Duration = std::time::Duration::from_secs(2);

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// What the checker knows about DaemonSets, their live Pods and the Nodes.
#[derive(Debug, Default)]
pub struct DaemonSetOracle {
    sets: HashMap<String, DsInfo>,
    /// (DaemonSet uid, node) -> live Pod uids.
    placed: HashMap<(String, String), HashMap<String, Placed>>,
    /// Existing Nodes and their labels.
    nodes: HashMap<String, Labels>,
}

fn meta<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj["metadata"][field].as_str().unwrap_or("")
}

fn labels(map: &Value) -> Labels {
    map.as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The DaemonSet uid and the Node of one of its Pods.
fn placement(pod: &Value) -> Option<(&str, &str)> {
    let owner = pod["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true && o["kind"] == "DaemonSet")?;
    Some((owner["uid"].as_str()?, pod["spec"]["nodeName"].as_str()?))
}

impl DaemonSetOracle {
    /// A DaemonSet was written (`new` absent: deleted).
    pub fn record_set(&mut self, prev: Option<&Value>, new: Option<&Value>) {
        let Some(obj) = new.or(prev) else { return };
        let uid = meta(obj, "uid").to_string();
        match new.filter(|d| d["metadata"]["deletionTimestamp"].is_null()) {
            Some(ds) => {
                let spec = &ds["spec"]["template"]["spec"];
                self.sets.insert(
                    uid,
                    DsInfo {
                        namespace: meta(ds, "namespace").to_string(),
                        name: meta(ds, "name").to_string(),
                        selector: spec["affinity"]
                            .is_null()
                            .then(|| labels(&spec["nodeSelector"])),
                        mark: mark_of(&ds["spec"]["template"]),
                        max_unavailable: match ds["spec"]["updateStrategy"]["type"].as_str() {
                            Some("OnDelete") => None,
                            _ => Some(
                                ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"]
                                    .clone(),
                            ),
                        },
                        max_surge: ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"]
                            .clone(),
                    },
                );
            }
            None => {
                self.sets.remove(&uid);
            }
        }
    }

    /// A Node was written (`new` absent: deleted).
    pub fn record_node(&mut self, prev: Option<&Value>, new: Option<&Value>) {
        let Some(obj) = new.or(prev) else { return };
        let name = meta(obj, "name").to_string();
        match new.filter(|n| n["metadata"]["deletionTimestamp"].is_null()) {
            Some(node) => {
                self.nodes.insert(name, labels(&node["metadata"]["labels"]));
            }
            None => {
                self.nodes.remove(&name);
            }
        }
    }

    /// Whether the DaemonSet wants a Pod on `node` (unknown: no).
    fn needs(&self, set: &DsInfo, node: &str) -> bool {
        let (Some(selector), Some(labels)) = (&set.selector, self.nodes.get(node)) else {
            return false;
        };
        selector.iter().all(|(k, v)| labels.get(k) == Some(v))
    }

    /// What `decision` breaks, judged against the state now.
    pub fn judge(&self, decision: Decision<'_>, in_flight: &InFlight) -> Option<Violation> {
        let Decision::Delete(pod) = decision else {
            return None;
        };
        let (ds_uid, node) = placement(pod)?;
        let set = self.sets.get(ds_uid)?;
        let here = self.placed.get(&(ds_uid.to_string(), node.to_string()))?;
        let only = here.len() == 1 && here.contains_key(meta(pod, "uid"));
        let replaceable = match &set.max_unavailable {
            Some(_) if mark_of(pod) != set.mark => {
                let needed: Vec<&String> =
                    self.nodes.keys().filter(|n| self.needs(set, n)).collect();
                let without = needed
                    .iter()
                    .filter(|n| {
                        self.placed
                            .get(&(ds_uid.to_string(), n.to_string()))
                            .is_none_or(HashMap::is_empty)
                    })
                    .count();
                let deleting = usize::try_from(-in_flight.net_creates(ds_uid).min(0)).unwrap_or(0);
                without + deleting < set.budgets(needed.len()).0
            }
            _ => false,
        };
        (only && !replaceable && self.needs(set, node)).then(|| Violation {
            kind: ViolationKind::DaemonSetNeededPodDeleted,
            revision: 0,
            namespace: set.namespace.clone(),
            replicaset: set.name.clone(),
            live: 1,
            in_flight: 0,
            desired: 1,
            pod: format!("{} on {node}", meta(pod, "name")),
            user_agent: None,
            at_arrival: false,
        })
    }

    /// A Pod was written; returns the violation its commit is (a second Pod on a Node), if any.
    pub fn record_pod(
        &mut self,
        verb: Verb,
        prev: Option<&Value>,
        new: Option<&Value>,
    ) -> Option<Violation> {
        let obj = new.or(prev)?;
        let (ds_uid, node) = placement(obj)?;
        let pod_uid = meta(obj, "uid").to_string();
        let set = self.sets.get(ds_uid);
        let here = self
            .placed
            .entry((ds_uid.to_string(), node.to_string()))
            .or_default();
        let is = new.is_some_and(pod_is_live);
        let mark = mark_of(obj);
        let second = verb == Verb::Create && is && !here.is_empty();
        // A surge may run an updated Pod beside Pods of older templates, on at most maxSurge
        // Nodes at once; anything else is a second Pod on the Node.
        let surged = second
            && set.is_some_and(|set| set.mark == mark)
            && here.values().all(|p| p.mark != mark);
        // Upstream replaces an old Pod that is not ready at once, outside the surge budget.
        let now = crate::clock::monotonic_now();
        let replaces_unready = surged
            && here.values().any(|p| {
                p.ready_since
                    .is_none_or(|since| now.duration_since(since) < READINESS_ALLOWANCE)
            });
        if is {
            let ready_since = match (new.is_some_and(is_ready), here.get(&pod_uid)) {
                (false, _) => None,
                (
                    true,
                    Some(Placed {
                        ready_since: Some(since),
                        ..
                    }),
                ) => Some(*since),
                (true, _) => Some(now),
            };
            here.insert(pod_uid, Placed { mark, ready_since });
        } else {
            here.remove(&pod_uid);
        }
        set.filter(|_| second).and_then(|set| {
            let live = self
                .placed
                .get(&(ds_uid.to_string(), node.to_string()))
                .map_or(0, HashMap::len);
            if replaces_unready {
                return None;
            }
            if surged {
                let needed = self.nodes.keys().filter(|n| self.needs(set, n)).count();
                let doubled = self
                    .placed
                    .iter()
                    .filter(|((uid, _), pods)| uid == ds_uid && pods.len() > 1)
                    .count();
                if doubled <= set.budgets(needed).1 {
                    return None;
                }
            }
            Some(Violation {
                kind: ViolationKind::DaemonSetTwoPodsOnANode,
                revision: 0,
                namespace: set.namespace.clone(),
                replicaset: set.name.clone(),
                live: live as i64,
                in_flight: 0,
                desired: 1,
                pod: format!("{} on {node}", meta(obj, "name")),
                user_agent: None,
                at_arrival: false,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str) -> Value {
        json!({"metadata": {"name": name, "uid": format!("u-{name}"),
            "ownerReferences": [{"kind": "DaemonSet", "uid": "d1", "controller": true}]},
            "spec": {"nodeName": node}})
    }

    fn oracle(node_selector: Value) -> DaemonSetOracle {
        let mut o = DaemonSetOracle::default();
        o.record_set(
            None,
            Some(
                &json!({"metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
                "spec": {"template": {"spec": {"nodeSelector": node_selector}}}}),
            ),
        );
        o.record_node(
            None,
            Some(&json!({"metadata": {"name": "n1", "labels": {"role": "agent"}}})),
        );
        o
    }

    fn judged(o: &DaemonSetOracle, name: &str) -> Option<ViolationKind> {
        o.judge(Decision::Delete(&pod(name, "n1")), &InFlight::default())
            .map(|v| v.kind)
    }

    #[test]
    fn a_second_pod_on_a_node_is_caught() {
        let mut o = oracle(Value::Null);
        assert!(
            o.record_pod(Verb::Create, None, Some(&pod("a", "n1")))
                .is_none()
        );
        let twice = o.record_pod(Verb::Create, None, Some(&pod("b", "n1")));
        assert_eq!(
            twice.map(|v| v.kind),
            Some(ViolationKind::DaemonSetTwoPodsOnANode)
        );
        assert_eq!(judged(&o, "b"), None, "a duplicate may go");
    }

    #[test]
    fn deleting_the_only_pod_of_a_node_that_still_exists_is_caught() {
        let mut o = oracle(Value::Null);
        o.record_pod(Verb::Create, None, Some(&pod("a", "n1")));
        assert_eq!(
            judged(&o, "a"),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
        o.record_node(Some(&json!({"metadata": {"name": "n1"}})), None);
        assert_eq!(judged(&o, "a"), None, "its Node is gone");
    }

    #[test]
    fn a_pod_is_needed_only_on_nodes_its_selector_matches() {
        let mut o = oracle(json!({"role": "agent"}));
        o.record_pod(Verb::Create, None, Some(&pod("a", "n1")));
        assert_eq!(
            judged(&o, "a"),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
        o.record_node(
            None,
            Some(&json!({"metadata": {"name": "n1", "labels": {"role": "none"}}})),
        );
        assert_eq!(judged(&o, "a"), None, "the Node no longer matches");
    }

    /// A Ready Pod of the older template.
    fn old_pod(name: &str, node: &str) -> Value {
        let mut p = pod(name, node);
        p["spec"]["containers"] = json!([{"name": "a", "image": "agent:old"}]);
        p["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        p
    }

    /// Three Nodes, each running an outdated Pod of a DaemonSet with `strategy`.
    fn rolling(strategy: Value) -> DaemonSetOracle {
        let mut o = DaemonSetOracle::default();
        o.record_set(
            None,
            Some(
                &json!({"metadata": {"name": "agent", "namespace": "ns", "uid": "d1"},
                "spec": {"updateStrategy": strategy,
                    "template": {"spec": {"containers": [{"name": "a", "image": "agent:new"}]}}}}),
            ),
        );
        for n in ["n1", "n2", "n3"] {
            o.record_node(None, Some(&json!({"metadata": {"name": n}})));
            let p = old_pod(&format!("p-{n}"), n);
            o.record_pod(Verb::Create, None, Some(&p));
        }
        o
    }

    fn judged_old(
        o: &DaemonSetOracle,
        name: &str,
        node: &str,
        f: &InFlight,
    ) -> Option<ViolationKind> {
        o.judge(Decision::Delete(&old_pod(name, node)), f)
            .map(|v| v.kind)
    }

    #[test]
    fn a_rolling_update_may_replace_an_outdated_pod_within_max_unavailable() {
        let mut o = rolling(json!({"type": "RollingUpdate"}));
        let none = InFlight::default();
        assert_eq!(
            judged_old(&o, "p-n1", "n1", &none),
            None,
            "one of three may go"
        );
        o.record_pod(Verb::Delete, Some(&old_pod("p-n1", "n1")), None);
        assert_eq!(
            judged_old(&o, "p-n2", "n2", &none),
            Some(ViolationKind::DaemonSetNeededPodDeleted),
            "n1 is still without its Pod"
        );
        let mut deleting = InFlight::default();
        let mut o = rolling(json!({"type": "RollingUpdate"}));
        deleting.arrive("ns", Decision::Delete(&old_pod("p-n1", "n1")), Vec::new());
        assert_eq!(
            judged_old(&o, "p-n2", "n2", &deleting),
            Some(ViolationKind::DaemonSetNeededPodDeleted),
            "a delete in flight counts"
        );
        o.record_pod(Verb::Delete, Some(&old_pod("p-n1", "n1")), None);
        let wider =
            rolling(json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}}));
        let mut one_gone = wider;
        one_gone.record_pod(Verb::Delete, Some(&old_pod("p-n1", "n1")), None);
        assert_eq!(
            judged_old(&one_gone, "p-n2", "n2", &none),
            None,
            "50% of 3 is 2"
        );
    }

    #[test]
    fn on_delete_or_a_current_pod_is_never_replaced_by_the_controller() {
        let o = rolling(json!({"type": "OnDelete"}));
        assert_eq!(
            judged_old(&o, "p-n1", "n1", &InFlight::default()),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
        let mut current = oracle(Value::Null);
        current.record_pod(Verb::Create, None, Some(&pod("a", "n1")));
        assert_eq!(
            judged(&current, "a"),
            Some(ViolationKind::DaemonSetNeededPodDeleted)
        );
    }

    fn new_pod(name: &str, node: &str) -> Value {
        let mut p = pod(name, node);
        p["spec"]["containers"] = json!([{"name": "a", "image": "agent:new"}]);
        p
    }

    #[test]
    fn a_surge_may_double_up_as_many_nodes_as_max_surge_and_only_with_an_updated_pod() {
        // The old Pods turned Ready well before the surge (see READINESS_ALLOWANCE).
        let start = std::time::Instant::now();
        crate::clock::set_monotonic_clock(Some(start));
        let mut o = rolling(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
        );
        let create = |o: &mut DaemonSetOracle, p: Value| {
            crate::clock::set_monotonic_clock(Some(start + std::time::Duration::from_secs(3)));
            o.record_pod(Verb::Create, None, Some(&p)).map(|v| v.kind)
        };
        assert_eq!(
            create(&mut o, new_pod("new-n1", "n1")),
            None,
            "one Node surges"
        );
        assert_eq!(
            create(&mut o, new_pod("new-n2", "n2")),
            Some(ViolationKind::DaemonSetTwoPodsOnANode),
            "a second Node is beyond maxSurge"
        );
        assert_eq!(
            create(&mut o, new_pod("new-n1b", "n1")),
            Some(ViolationKind::DaemonSetTwoPodsOnANode),
            "two updated Pods on one Node"
        );
        crate::clock::set_monotonic_clock(Some(start));
        let mut plain = rolling(json!({"type": "RollingUpdate"}));
        assert_eq!(
            create(&mut plain, new_pod("new-n1", "n1")),
            Some(ViolationKind::DaemonSetTwoPodsOnANode),
            "no surge without maxSurge"
        );
        let zero = rolling(
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}),
        );
        assert_eq!(
            judged_old(&zero, "p-n1", "n1", &InFlight::default()),
            Some(ViolationKind::DaemonSetNeededPodDeleted),
            "maxUnavailable 0: an old Pod goes only beside its replacement"
        );
    }
}
