//! The Pod projection, decoded straight from JSON: a fast typed decode that skips every field
//! no controller reads, and, when that decode finds anything unusual, a checked read of the
//! parsed object that records each unusable field (the Pod stays visible, marked malformed, so
//! its owner neither creates a replacement nor acts on a guess).

use crate::intern;
use crate::key::{ObjectKey, Uid};
use crate::labels::Labels;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::time::parse_rfc3339;
use crate::views::checked::{Checker, Field};
use crate::views::malformed::Malformed;
use crate::views::malformed::projection;
use crate::views::meta::{DecodeError, OwnerRef, read_meta};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A Pod phase.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodPhase {
    /// Accepted, not all containers running.
    Pending,
    /// The node lost contact.
    Unknown,
    /// Bound to a node, containers started.
    Running,
    /// All containers exited with success.
    Succeeded,
    /// All containers exited, at least one failed.
    Failed,
}

const PHASES: [&str; 5] = ["Pending", "Running", "Succeeded", "Failed", "Unknown"];

fn phase_of(text: Option<&str>) -> Option<PodPhase> {
    Some(match text {
        None | Some("Pending") => PodPhase::Pending,
        Some("Running") => PodPhase::Running,
        Some("Succeeded") => PodPhase::Succeeded,
        Some("Failed") => PodPhase::Failed,
        Some("Unknown") => PodPhase::Unknown,
        Some(_) => return None,
    })
}

/// The part of a Pod the onboarded controllers read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.labels.
    pub labels: Labels,
    /// The ownerReference with `controller: true`.
    pub controller: Option<OwnerRef>,
    /// spec.nodeName.
    pub node_name: Option<Arc<str>>,
    /// status.phase.
    pub phase: PodPhase,
    /// The Ready condition is True.
    pub ready: bool,
    /// When the Ready condition last changed to its current value (Unix seconds).
    pub ready_since: Option<i64>,
    /// Sum of container restart counts.
    pub restarts: i32,
    /// metadata.creationTimestamp (Unix seconds, 0 if absent).
    pub created: i64,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// It carries the Job controller's `batch.kubernetes.io/job-tracking` finalizer.
    pub job_tracking: bool,
    /// Its `batch.kubernetes.io/job-completion-index` annotation, for Indexed Jobs.
    pub completion_index: Option<u32>,
    /// The failures of its index before it, from the annotations of a Job with
    /// `backoffLimitPerIndex`.
    pub index_failures: IndexFailures,
    /// Why its owner must not act on it, if a field it reads is unusable.
    pub malformed: Option<Arc<Malformed>>,
    /// For a Pod in phase `Failed`: how it failed, as a Job's `podFailurePolicy` reads it.
    pub failure: Option<Box<PodFailure>>,
}

/// How a failed Pod failed: what a Job's `podFailurePolicy` rules match on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodFailure {
    /// Containers (init containers after the others) that terminated with a non-zero exit
    /// code, by name.
    pub exit_codes: Vec<(String, i32)>,
    /// The Pod's conditions, `(type, status)`.
    pub conditions: Vec<(String, String)>,
    /// When its last container finished (Unix seconds), if every container reports when it
    /// did: upstream's `getFinishTimeFromContainers`, which a Job's per-index backoff counts from.
    pub finished_at: Option<i64>,
}

/// An Indexed Job Pod's `batch.kubernetes.io/job-index-failure-count` and
/// `...-ignored-failure-count` annotations: how often its index failed before it was created,
/// counted and ignored. A value that is not a number from 0 to 2^31-1 reads as 0, as upstream's
/// `parseInt32` (the annotations are the user's to edit, so a bad one is no corruption).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexFailures {
    /// Failures that counted towards `backoffLimitPerIndex`.
    pub counted: u32,
    /// Failures a podFailurePolicy `Ignore` rule let go.
    pub ignored: u32,
}

/// The annotation counting an index's failures that counted.
pub const INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// The annotation counting an index's ignored failures.
pub const INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";

impl IndexFailures {
    fn read(annotations: &BTreeMap<String, String>) -> Self {
        let count = |name: &str| {
            annotations
                .get(name)
                .and_then(|text| text.parse::<i64>().ok())
                .and_then(|n| i32::try_from(n).ok())
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(0)
        };
        IndexFailures {
            counted: count(INDEX_FAILURE_COUNT_ANNOTATION),
            ignored: count(INDEX_IGNORED_FAILURE_COUNT_ANNOTATION),
        }
    }

    /// Counted and ignored failures together (upstream's `getIndexAbsoluteFailureCount`).
    pub fn total(&self) -> u32 {
        self.counted.saturating_add(self.ignored)
    }
}

/// The finalizer that keeps a finished Job Pod until its Job has counted it.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The annotation naming an Indexed Job Pod's completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";

/// A completion index as upstream writes it: a decimal int32 without sign or leading zeros.
fn completion_index(text: &str) -> Option<u32> {
    let canonical = text == "0"
        || (!text.is_empty()
            && !text.starts_with('0')
            && text.len() <= 10
            && text.bytes().all(|b| b.is_ascii_digit()));
    canonical
        .then(|| text.parse::<i32>().ok())
        .flatten()
        .and_then(|n| u32::try_from(n).ok())
}

impl PodView {
    /// Whether `other` is this Pod with nothing but its resourceVersion changed: no controller
    /// reads anything else of a Pod, so such an event (a container's state, an annotation,
    /// managedFields) cannot change any decision.
    pub fn same_except_version(&self, other: &PodView) -> bool {
        let PodView {
            key,
            uid,
            resource_version: _,
            labels,
            controller,
            node_name,
            phase,
            ready,
            ready_since,
            restarts,
            created,
            terminating,
            job_tracking,
            completion_index,
            index_failures,
            malformed,
            failure,
        } = self;
        *key == other.key
            && *uid == other.uid
            && *labels == other.labels
            && *controller == other.controller
            && *node_name == other.node_name
            && *phase == other.phase
            && *ready == other.ready
            && *ready_since == other.ready_since
            && *restarts == other.restarts
            && *created == other.created
            && *terminating == other.terminating
            && *job_tracking == other.job_tracking
            && *completion_index == other.completion_index
            && *index_failures == other.index_failures
            && *malformed == other.malformed
            && *failure == other.failure
    }

    /// The key of this Pod's controlling owner, if it is of `kind` (owners of namespaced
    /// dependents live in the same namespace): the key a controller of `kind` reconciles.
    pub fn owner_key(&self, kind: &str) -> Option<ObjectKey> {
        self.controller
            .as_ref()
            .filter(|o| &*o.kind == kind)
            .map(|o| ObjectKey::new(self.key.namespace_arc().clone(), o.name.clone()))
    }

    /// Active as the ReplicaSet controller counts it: not terminal, not being deleted.
    pub fn is_active(&self) -> bool {
        !self.terminating && !matches!(self.phase, PodPhase::Succeeded | PodPhase::Failed)
    }

    /// Decodes a Pod from JSON bytes, skipping fields no controller reads.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        Self::decode(bytes).map(|(pod, _)| pod)
    }

    /// Decodes a Pod; the flag is true when it is malformed (see [`PodView::malformed`]). Only a
    /// Pod without a readable identity (name, uid, resourceVersion) is an error: one odd field
    /// must not hide a live Pod from its controller, which would then create a replacement.
    pub fn decode(bytes: &[u8]) -> Result<(Self, bool), DecodeError> {
        if let Some(pod) = serde_json::from_slice::<PodWire>(bytes)
            .ok()
            .and_then(PodWire::into_view)
        {
            return Ok((pod, false));
        }
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        let pod = Self::from_value(&value)?;
        let malformed = pod.malformed.is_some();
        Ok((pod, malformed))
    }

    /// Reads a Pod from a parsed object, every field it keeps checked.
    pub fn from_value(value: &serde_json::Value) -> Result<Self, DecodeError> {
        let mut c = Checker::default();
        let root = Field::root(value);
        let meta = read_meta(value, &mut c)?;
        let resource_version_text = meta
            .resource_version_text
            .as_deref()
            .ok_or(DecodeError::Missing("metadata.resourceVersion"))?;
        let labels = root.get(&mut c, "metadata.labels").string_map(&mut c);
        let controller = crate::views::meta::controller_ref(&root, &mut c);
        let finalizers = root.get(&mut c, "metadata.finalizers").strings(&mut c);
        let annotations = root.get(&mut c, "metadata.annotations").string_map(&mut c);
        let index_field = root.get(&mut c, "metadata.annotations");
        let completion = match annotations.get(COMPLETION_INDEX_ANNOTATION) {
            None => None,
            Some(text) => {
                let parsed = completion_index(text);
                if parsed.is_none() {
                    c.record(
                        &format!("{}[{COMPLETION_INDEX_ANNOTATION}]", index_field.path()),
                        format!("{text:?}: not a completion index"),
                    );
                }
                parsed
            }
        };
        let node_name = root.get(&mut c, "spec.nodeName").string(&mut c);
        let phase_field = root.get(&mut c, "status.phase");
        let phase = c
            .one_of(&phase_field, &PHASES)
            .and_then(|p| phase_of(Some(p)))
            .unwrap_or(PodPhase::Pending);
        let mut ready = false;
        let mut ready_since = None;
        let mut seen_ready = false;
        let mut failure = PodFailure::default();
        for condition in root.get(&mut c, "status.conditions").items(&mut c) {
            c.object(&condition);
            let kind = condition.get(&mut c, "type").string(&mut c);
            let status_field = condition.get(&mut c, "status");
            let status = c.string(&status_field);
            if let (Some(kind), Some(status)) = (kind, status) {
                failure
                    .conditions
                    .push((kind.to_string(), status.to_string()));
            }
            let since = condition
                .get(&mut c, "lastTransitionTime")
                .timestamp(&mut c);
            if kind == Some("Ready") && !seen_ready {
                seen_ready = true;
                if let Some(s) = status
                    && !matches!(s, "True" | "False" | "Unknown")
                {
                    c.record(status_field.path(), format!("unsupported value {s:?}"));
                }
                ready = status == Some("True");
                ready_since = since;
            }
        }
        let mut restarts = 0i32;
        for status in root.get(&mut c, "status.containerStatuses").items(&mut c) {
            c.object(&status);
            let count = status
                .get(&mut c, "restartCount")
                .int32(&mut c, 0)
                .unwrap_or(0);
            restarts = restarts.saturating_add(count);
        }
        if phase == PodPhase::Failed {
            let (mut latest, mut all_finished) = (None::<i64>, true);
            for list in ["status.containerStatuses", "status.initContainerStatuses"] {
                for status in root.get(&mut c, list).items(&mut c) {
                    let name = status.get(&mut c, "name").string(&mut c).unwrap_or("");
                    let code = status
                        .get(&mut c, "state.terminated.exitCode")
                        .int32(&mut c, i32::MIN);
                    if let Some(code) = code.filter(|code| *code != 0) {
                        failure.exit_codes.push((name.to_string(), code));
                    }
                    if list == "status.containerStatuses" {
                        let at = status
                            .get(&mut c, "state.terminated.finishedAt")
                            .timestamp(&mut c);
                        match at {
                            Some(at) => latest = Some(latest.map_or(at, |l| l.max(at))),
                            None => all_finished = false,
                        }
                    }
                }
            }
            failure.finished_at = latest.filter(|_| all_finished);
        }
        let created = root
            .get(&mut c, "metadata.creationTimestamp")
            .timestamp(&mut c)
            .unwrap_or(0);
        let resource_version = ResourceVersion::parse(resource_version_text).ok();
        Ok(PodView {
            key: meta.key,
            uid: meta.uid,
            resource_version,
            labels: Labels::from_map(labels),
            controller,
            node_name: node_name.filter(|n| !n.is_empty()).map(intern::string),
            phase,
            ready,
            ready_since,
            restarts,
            created,
            terminating: meta.terminating,
            job_tracking: finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER),
            completion_index: completion,
            index_failures: IndexFailures::read(&annotations),
            malformed: c.finish(),
            failure: (phase == PodPhase::Failed).then(|| Box::new(failure)),
        })
    }
}

projection!(PodView, Resource::Pods);

// ---- the fast path: only what the projection keeps; serde skips every other field ----

/// A struct read from a JSON object only: serde's derived impls also accept a struct as an
/// array of its fields in order, which no API server sends and the checked read refuses.
struct MapOnly<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOnly<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = MapOnly<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MapOnly)
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct MetaWire {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    owner_references: Option<Vec<MapOnly<OwnerRefWire>>>,
    finalizers: Option<Vec<String>>,
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Stamp>,
    deletion_timestamp: Option<Stamp>,
    generation: Option<i64>,
}

/// A timestamp as the wire carries it: RFC 3339 text in JSON, seconds in protobuf.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stamp {
    Text(String),
    Unix(i64),
}

impl Stamp {
    fn unix(&self) -> Option<i64> {
        match self {
            Stamp::Text(text) => parse_rfc3339(text),
            Stamp::Unix(seconds) => Some(*seconds),
        }
    }

    fn text(&self) -> String {
        match self {
            Stamp::Text(text) => text.clone(),
            Stamp::Unix(seconds) => crate::time::format_rfc3339(*seconds),
        }
    }
}

impl<'de> Deserialize<'de> for Stamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Stamp::Text)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OwnerRefWire {
    kind: String,
    name: String,
    uid: String,
    controller: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodSpecWire {
    node_name: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConditionWire {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    last_transition_time: Option<Stamp>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ContainerStatusWire {
    restart_count: Option<i32>,
    /// Read from protobuf only (JSON reads a failed Pod through the checked path): what a
    /// failed Pod's checked read needs.
    #[serde(skip)]
    name: Option<String>,
    #[serde(skip)]
    exit_code: Option<i32>,
    #[serde(skip)]
    finished_at: Option<Stamp>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PodStatusWire {
    phase: Option<String>,
    conditions: Option<Vec<MapOnly<ConditionWire>>>,
    container_statuses: Option<Vec<MapOnly<ContainerStatusWire>>>,
    /// Read from protobuf only, as the extra fields of [`ContainerStatusWire`].
    #[serde(skip)]
    init_container_statuses: Option<Vec<MapOnly<ContainerStatusWire>>>,
}

/// The JSON shape of a well-formed Pod, as far as [`PodView`] needs it.
#[derive(Deserialize)]
struct PodWire {
    #[serde(default)]
    metadata: Option<MapOnly<MetaWire>>,
    #[serde(default)]
    spec: Option<MapOnly<PodSpecWire>>,
    #[serde(default)]
    status: Option<MapOnly<PodStatusWire>>,
}

impl PodWire {
    /// The view, if every kept field is well formed; `None` sends the bytes to the checked
    /// read, which says what is wrong (or that the identity is missing).
    fn into_view(self) -> Option<PodView> {
        let meta = self.metadata?.0;
        let (name, uid, rv) = (meta.name?, meta.uid?, meta.resource_version?);
        let time = |t: &Option<Stamp>| match t {
            None => Some(None),
            Some(t) => t.unix().map(Some),
        };
        let created = time(&meta.creation_timestamp)?.unwrap_or(0);
        if meta.generation.is_some_and(|g| g < 0) {
            return None;
        }
        let terminating = time(&meta.deletion_timestamp)?.is_some();
        let refs = meta.owner_references.unwrap_or_default();
        let mut controllers = refs
            .into_iter()
            .map(|o| o.0)
            .filter(|o| o.controller == Some(true));
        let controller = controllers.next().map(|o| OwnerRef {
            kind: intern::string(&o.kind),
            name: intern::string(&o.name),
            uid: Uid::new(o.uid),
        });
        if controllers.next().is_some() {
            return None;
        }
        let completion_index = match meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(COMPLETION_INDEX_ANNOTATION))
        {
            None => None,
            Some(text) => Some(completion_index(text)?),
        };
        let status = self.status.map(|s| s.0).unwrap_or_default();
        let phase = phase_of(status.phase.as_deref())?;
        if phase == PodPhase::Failed {
            // Rare, and read whole: how it failed is what a Job's podFailurePolicy decides on.
            return None;
        }
        let conditions: Vec<ConditionWire> = status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .map(|c| c.0)
            .collect();
        for c in &conditions {
            time(&c.last_transition_time)?;
        }
        let ready_condition = conditions.iter().find(|c| c.type_ == "Ready");
        if ready_condition
            .is_some_and(|c| !matches!(c.status.as_str(), "True" | "False" | "Unknown"))
        {
            return None;
        }
        let mut restarts = 0i32;
        for s in status.container_statuses.unwrap_or_default() {
            let count = s.0.restart_count.unwrap_or(0);
            if count < 0 {
                return None;
            }
            restarts = restarts.saturating_add(count);
        }
        Some(PodView {
            key: ObjectKey::new(
                intern::string(meta.namespace.as_deref().unwrap_or("")),
                name,
            ),
            uid: Uid::new(uid),
            resource_version: ResourceVersion::parse(&rv).ok(),
            labels: Labels::from_map(meta.labels.unwrap_or_default()),
            controller,
            node_name: self
                .spec
                .and_then(|s| s.0.node_name)
                .filter(|n| !n.is_empty())
                .map(|n| intern::string(&n)),
            phase,
            ready: ready_condition.is_some_and(|c| c.status == "True"),
            ready_since: ready_condition
                .and_then(|c| c.last_transition_time.as_ref())
                .and_then(Stamp::unix),
            restarts,
            created,
            terminating,
            job_tracking: meta
                .finalizers
                .as_ref()
                .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING_FINALIZER)),
            completion_index,
            index_failures: meta
                .annotations
                .as_ref()
                .map(IndexFailures::read)
                .unwrap_or_default(),
            malformed: None,
            failure: None,
        })
    }
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;

#[path = "pod_proto.rs"]
mod proto;
