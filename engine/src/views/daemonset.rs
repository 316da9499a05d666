//! The DaemonSet projection: its Pod template and scheduling constraints (node selector,
//! required node affinity, tolerations), its update strategy and its status, all checked.

use crate::key::{ObjectKey, Uid};
use crate::labels::LabelSelector;
use crate::pod_template::{PodTemplate, template_object};
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::views::checked::{Checker, Field, IntOrPercent};
use crate::views::malformed::Malformed;
use crate::views::malformed::projection;
use crate::views::meta::{DecodeError, read_meta};
use crate::views::nodes::{NodeView, TAINT_EFFECTS, Taint};
use crate::views::owner_json::OwnerJson;
use crate::views::without_managed_fields::parse_owner_json;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One toleration of the Pod template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    /// The taint key it tolerates (empty: every key, with `Exists`).
    pub key: String,
    /// `Exists` (any value) rather than `Equal`.
    pub exists: bool,
    /// The value for `Equal`.
    pub value: String,
    /// The effect it tolerates (empty: every effect).
    pub effect: String,
}

impl Toleration {
    fn tolerates(&self, taint: &Taint) -> bool {
        (self.effect.is_empty() || self.effect == taint.effect)
            && (self.key.is_empty() || self.key == taint.key)
            && (self.exists || Some(self.value.as_str()) == taint.value.as_deref().or(Some("")))
    }
}

/// One requirement of a node selector term.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRequirement {
    /// The label (or, for a field requirement, `metadata.name`).
    pub key: String,
    /// `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt` or `Lt`.
    pub operator: String,
    /// The values.
    pub values: Vec<String>,
}

impl NodeRequirement {
    fn matches(&self, value: Option<&str>) -> bool {
        let number = |s: &str| s.parse::<i64>().ok();
        match self.operator.as_str() {
            "In" => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            "NotIn" => value.is_none_or(|v| self.values.iter().all(|x| x != v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            "Gt" | "Lt" => {
                let (Some(have), Some(bound)) = (
                    value.and_then(number),
                    self.values.first().and_then(|b| number(b)),
                ) else {
                    return false;
                };
                if self.operator == "Gt" {
                    have > bound
                } else {
                    have < bound
                }
            }
            _ => false,
        }
    }
}

/// A term of `requiredDuringSchedulingIgnoredDuringExecution`: every requirement holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    /// Requirements on the Node's labels.
    pub match_expressions: Vec<NodeRequirement>,
    /// Requirements on the Node's fields (only `metadata.name`, as upstream).
    pub match_fields: Vec<NodeRequirement>,
}

/// A rolling update's budgets against the eligible Nodes (see
/// [`DaemonSetView::rollout_budgets`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RolloutBudgets {
    /// Nodes that may be without an available Pod.
    pub max_unavailable: usize,
    /// Nodes that may run an updated Pod beside the old one; 0: no surge.
    pub max_surge: usize,
}

/// The DaemonSet status the controller writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DaemonSetStatus {
    /// status.desiredNumberScheduled.
    pub desired_number_scheduled: i32,
    /// status.currentNumberScheduled.
    pub current_number_scheduled: i32,
    /// status.numberReady.
    pub number_ready: i32,
    /// status.numberAvailable.
    pub number_available: i32,
    /// status.numberUnavailable.
    pub number_unavailable: i32,
    /// status.updatedNumberScheduled.
    pub updated_number_scheduled: i32,
    /// status.numberMisscheduled.
    pub number_misscheduled: i32,
    /// status.observedGeneration.
    pub observed_generation: i64,
}

/// A DaemonSet.
#[derive(Clone, Debug, PartialEq)]
pub struct DaemonSetView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.generation.
    pub generation: i64,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// spec.selector.
    pub selector: LabelSelector,
    /// spec.template.
    pub template: Arc<PodTemplate>,
    /// spec.template.spec.nodeSelector.
    pub node_selector: BTreeMap<String, String>,
    /// The required node affinity's terms (`None`: no required affinity).
    pub affinity: Option<Vec<NodeSelectorTerm>>,
    /// spec.template.spec.tolerations.
    pub tolerations: Vec<Toleration>,
    /// spec.updateStrategy.type is `OnDelete`: old Pods are replaced only when deleted by hand.
    pub on_delete: bool,
    /// spec.updateStrategy.rollingUpdate.maxUnavailable (default 1).
    pub max_unavailable: IntOrPercent,
    /// spec.updateStrategy.rollingUpdate.maxSurge (0 when absent).
    pub max_surge: IntOrPercent,
    /// spec.revisionHistoryLimit: old ControllerRevisions kept (10 when absent).
    pub revision_history_limit: usize,
    /// The current status.
    pub status: DaemonSetStatus,
    /// Why the controller must not act on it, if a field it reads is unusable.
    pub malformed: Option<Arc<Malformed>>,
    /// The `deprecated.daemonset.template.generation` annotation the API server keeps, if it is
    /// a string.
    pub template_generation: Option<Arc<str>>,
    /// spec.template as observed (an empty object when absent).
    pub pod_template: Arc<Value>,
    /// The object as last observed, without managedFields, for status writes.
    pub raw: OwnerJson,
}

/// The annotation the API server keeps a DaemonSet's template generation in.
pub const TEMPLATE_GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

const NODE_OPERATORS: [&str; 6] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"];

fn requirements(f: &Field<'_>, c: &mut Checker) -> Vec<NodeRequirement> {
    let mut out = Vec::new();
    for r in f.items(c) {
        c.object(&r);
        let key = r.get(c, "key").string(c);
        let operator = r.get(c, "operator").one_of(c, &NODE_OPERATORS);
        let values = r.get(c, "values").strings(c);
        if let (Some(key), Some(operator)) = (key, operator) {
            out.push(NodeRequirement {
                key: key.to_string(),
                operator: operator.to_string(),
                values,
            });
        } else if r.is_present() {
            c.record(r.path(), "Required value: key and operator".into());
        }
    }
    out
}

impl DaemonSetView {
    /// Decodes a DaemonSet from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::from_value(parse_owner_json(bytes)?)
    }

    /// Decodes a DaemonSet from a parsed object, every field the controller reads checked.
    pub fn from_value(value: Value) -> Result<Self, DecodeError> {
        let mut c = Checker::default();
        let meta = read_meta(&value, &mut c)?;
        let root = Field::root(&value);
        let spec = root.get(&mut c, "spec");
        let selector = LabelSelector::read(&spec.get(&mut c, "selector"), &mut c);
        let template = PodTemplate::read(&root, &mut c);
        let pod_spec = spec.get(&mut c, "template.spec");
        let node_selector = pod_spec.get(&mut c, "nodeSelector").string_map(&mut c);
        let required = pod_spec.get(
            &mut c,
            "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        );
        let affinity = required.is_present().then(|| {
            required
                .get(&mut c, "nodeSelectorTerms")
                .items(&mut c)
                .into_iter()
                .map(|t| {
                    c.object(&t);
                    NodeSelectorTerm {
                        match_expressions: requirements(&t.get(&mut c, "matchExpressions"), &mut c),
                        match_fields: requirements(&t.get(&mut c, "matchFields"), &mut c),
                    }
                })
                .collect()
        });
        let mut tolerations = Vec::new();
        for t in pod_spec.get(&mut c, "tolerations").items(&mut c) {
            c.object(&t);
            let operator = t
                .get(&mut c, "operator")
                .one_of(&mut c, &["Exists", "Equal", ""]);
            let mut effects = vec![""];
            effects.extend(TAINT_EFFECTS);
            let effect = t.get(&mut c, "effect").one_of(&mut c, &effects);
            t.get(&mut c, "tolerationSeconds").int64(&mut c, i64::MIN);
            tolerations.push(Toleration {
                key: t
                    .get(&mut c, "key")
                    .string(&mut c)
                    .unwrap_or("")
                    .to_string(),
                exists: operator == Some("Exists"),
                value: t
                    .get(&mut c, "value")
                    .string(&mut c)
                    .unwrap_or("")
                    .to_string(),
                effect: effect.unwrap_or("").to_string(),
            });
        }
        let strategy = spec.get(&mut c, "updateStrategy");
        let on_delete = strategy
            .get(&mut c, "type")
            .one_of(&mut c, &["RollingUpdate", "OnDelete"])
            == Some("OnDelete");
        let max_unavailable = strategy
            .get(&mut c, "rollingUpdate.maxUnavailable")
            .int_or_percent(&mut c)
            .unwrap_or(IntOrPercent::Int(1));
        let max_surge = strategy
            .get(&mut c, "rollingUpdate.maxSurge")
            .int_or_percent(&mut c)
            .unwrap_or(IntOrPercent::Int(0));
        spec.get(&mut c, "minReadySeconds").int32(&mut c, 0);
        let status = root.get(&mut c, "status");
        let mut count = |name: &str| status.get(&mut c, name).int32(&mut c, 0).unwrap_or(0);
        let status = DaemonSetStatus {
            desired_number_scheduled: count("desiredNumberScheduled"),
            current_number_scheduled: count("currentNumberScheduled"),
            number_ready: count("numberReady"),
            number_available: count("numberAvailable"),
            number_unavailable: count("numberUnavailable"),
            updated_number_scheduled: count("updatedNumberScheduled"),
            number_misscheduled: count("numberMisscheduled"),
            observed_generation: status
                .get(&mut c, "observedGeneration")
                .int64(&mut c, 0)
                .unwrap_or(0),
        };
        let revision_history_limit = spec
            .get(&mut c, "revisionHistoryLimit")
            .int32(&mut c, 0)
            .map_or(10, |n| usize::try_from(n).unwrap_or(0));
        Ok(DaemonSetView {
            key: meta.key,
            uid: meta.uid,
            resource_version: meta.resource_version,
            generation: meta.generation,
            terminating: meta.terminating,
            selector,
            template: Arc::new(template),
            node_selector,
            affinity,
            tolerations,
            on_delete,
            max_unavailable,
            max_surge,
            revision_history_limit,
            status,
            malformed: c.finish(),
            template_generation: value
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(TEMPLATE_GENERATION_ANNOTATION))
                .and_then(Value::as_str)
                .map(Arc::from),
            pod_template: template_object(&value),
            raw: OwnerJson::keep(value),
        })
    }

    /// How many eligible Nodes may be without a ready Pod during a rollout, against `nodes`
    /// eligible Nodes (a percentage rounded up), and how many may run a second, updated Pod
    /// beside the old one: upstream's `updatedDesiredNodeCounts`, which takes one unavailable
    /// Node when both come to 0.
    pub fn rollout_budgets(&self, nodes: usize) -> RolloutBudgets {
        let max_unavailable = self.max_unavailable.scaled(nodes);
        let max_surge = self.max_surge.scaled(nodes);
        RolloutBudgets {
            max_unavailable: if max_unavailable == 0 && max_surge == 0 {
                1
            } else {
                max_unavailable
            },
            max_surge,
        }
    }

    /// Whether `node` runs this DaemonSet's Pod: the node selector matches, a term of the
    /// required node affinity (if any) matches, and every NoSchedule/NoExecute taint is
    /// tolerated (DaemonSet Pods tolerate not-ready and unreachable, as upstream adds).
    pub fn wants(&self, node: &NodeView) -> bool {
        let selector_ok = self
            .node_selector
            .iter()
            .all(|(k, v)| node.labels.get(k) == Some(v.as_str()));
        let affinity_ok = self.affinity.as_ref().is_none_or(|terms| {
            terms.iter().any(|t| {
                (!t.match_expressions.is_empty() || !t.match_fields.is_empty())
                    && t.match_expressions
                        .iter()
                        .all(|r| r.matches(node.labels.get(&r.key)))
                    && t.match_fields
                        .iter()
                        .all(|r| r.key == "metadata.name" && r.matches(Some(node.key.name())))
            })
        });
        let taints_ok = node
            .taints
            .iter()
            .filter(|t| matches!(t.effect.as_str(), "NoSchedule" | "NoExecute"))
            .all(|taint| {
                matches!(
                    taint.key.as_str(),
                    "node.kubernetes.io/not-ready" | "node.kubernetes.io/unreachable"
                ) || self.tolerations.iter().any(|t| t.tolerates(taint))
            });
        selector_ok && affinity_ok && taints_ok
    }
}

projection!(DaemonSetView, Resource::DaemonSets);

#[cfg(test)]
#[path = "daemonset_tests.rs"]
mod tests;
