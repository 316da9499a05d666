//! The Pod projection read from protobuf (`k8s.io.api.core.v1.Pod`, field numbers of its
//! `generated.proto`): the fields [`PodWire`] keeps are read from the borrowed message and every
//! other one is stepped over by its length, managedFields and the spec's containers included.
//! A Pod the fast path will not take (failed, or with an unusual field) is read a second time
//! into the JSON the checked read takes, so both wire formats give one answer.

use super::{
    ConditionWire, ContainerStatusWire, MapOnly, MetaWire, OwnerRefWire, PodSpecWire,
    PodStatusWire, PodView, PodWire, Stamp,
};
use crate::proto::ProtoError;
use crate::proto::wire::{Fields, Value};
use crate::views::meta::DecodeError;
use serde_json::{Map, json};
use std::collections::BTreeMap;

/// Go's zero `time.Time` in Unix seconds: what an unset, non-pointer `metav1.Time` (a
/// creationTimestamp never set) is written as. JSON writes it as `null`.
const GO_ZERO_TIME: i64 = -62_135_596_800;

impl PodView {
    /// Decodes a Pod from its protobuf message (a list item, or the `raw` of a watch event's
    /// `runtime.Unknown`); the flag as for [`PodView::decode`]. The two decodes agree: a Pod
    /// read from protobuf is the Pod read from its JSON.
    pub fn from_protobuf(bytes: &[u8]) -> Result<(Self, bool), DecodeError> {
        let (wire, complete) = read_pod(bytes).map_err(malformed)?;
        if complete && let Some(pod) = wire.into_view() {
            return Ok((pod, false));
        }
        let (wire, _) = read_pod(bytes).map_err(malformed)?;
        let pod = Self::from_value(&wire.to_value())?;
        let flagged = pod.malformed.is_some();
        Ok((pod, flagged))
    }
}

fn malformed(e: ProtoError) -> DecodeError {
    DecodeError::Malformed(e.to_string())
}

/// A string field, `None` when empty: Go writes an unset string as `""`, JSON leaves it out.
fn text(value: Value<'_>) -> Result<Option<String>, ProtoError> {
    match value.str() {
        Some(t) => Ok(Some(t).filter(|t| !t.is_empty()).map(str::to_string)),
        None => Err(ProtoError::NotAString {
            message: "Pod",
            field: "a string field",
        }),
    }
}

fn stamp(value: Value<'_>) -> Result<Option<Stamp>, ProtoError> {
    let mut seconds = None;
    for field in Fields::new(value.bytes().unwrap_or_default()) {
        if let (1, v) = field? {
            seconds = v.int64();
        }
    }
    Ok(seconds.filter(|s| *s != GO_ZERO_TIME).map(Stamp::Unix))
}

fn map_entry(
    value: Value<'_>,
    into: &mut Option<BTreeMap<String, String>>,
) -> Result<(), ProtoError> {
    let (mut key, mut val) = (String::new(), String::new());
    for field in Fields::new(value.bytes().unwrap_or_default()) {
        match field? {
            (1, v) => key = text(v)?.unwrap_or_default(),
            (2, v) => val = text(v)?.unwrap_or_default(),
            _ => {}
        }
    }
    into.get_or_insert_default().insert(key, val);
    Ok(())
}

/// Reads the fields [`PodWire`] keeps; false when one the fast path needs whole is not (an
/// ownerReference or condition missing a required field).
fn read_pod(bytes: &[u8]) -> Result<(PodWire, bool), ProtoError> {
    let mut complete = true;
    let mut meta = MetaWire::default();
    let mut spec = PodSpecWire::default();
    let mut status = PodStatusWire::default();
    let (mut has_meta, mut has_spec, mut has_status) = (false, false, false);
    for field in Fields::new(bytes) {
        match field? {
            (1, Value::Bytes(m)) => {
                has_meta = true;
                complete &= read_meta(m, &mut meta)?;
            }
            (2, Value::Bytes(s)) => {
                has_spec = true;
                for field in Fields::new(s) {
                    if let (10, v) = field? {
                        spec.node_name = text(v)?;
                    }
                }
            }
            (3, Value::Bytes(s)) => {
                has_status = true;
                complete &= read_status(s, &mut status)?;
            }
            _ => {}
        }
    }
    let wire = PodWire {
        metadata: has_meta.then_some(MapOnly(meta)),
        spec: has_spec.then_some(MapOnly(spec)),
        status: has_status.then_some(MapOnly(status)),
    };
    Ok((wire, complete))
}

fn read_meta(bytes: &[u8], meta: &mut MetaWire) -> Result<bool, ProtoError> {
    let mut complete = true;
    for field in Fields::new(bytes) {
        match field? {
            (1, v) => meta.name = text(v)?,
            (3, v) => meta.namespace = text(v)?,
            (5, v) => meta.uid = text(v)?,
            (6, v) => meta.resource_version = text(v)?,
            (7, v) => meta.generation = v.int64().filter(|g| *g != 0),
            (8, v) => meta.creation_timestamp = stamp(v)?,
            (9, v) => meta.deletion_timestamp = stamp(v)?,
            (11, v) => map_entry(v, &mut meta.labels)?,
            (12, v) => map_entry(v, &mut meta.annotations)?,
            (13, v) => {
                let (mut kind, mut name, mut uid, mut controller) = (None, None, None, None);
                for field in Fields::new(v.bytes().unwrap_or_default()) {
                    match field? {
                        (1, v) => kind = text(v)?,
                        (3, v) => name = text(v)?,
                        (4, v) => uid = text(v)?,
                        (6, v) => controller = v.bool(),
                        _ => {}
                    }
                }
                match (kind, name, uid) {
                    (Some(kind), Some(name), Some(uid)) => meta
                        .owner_references
                        .get_or_insert_default()
                        .push(MapOnly(OwnerRefWire {
                            kind,
                            name,
                            uid,
                            controller,
                        })),
                    _ => complete = false,
                }
            }
            (14, v) => {
                if let Some(f) = text(v)? {
                    meta.finalizers.get_or_insert_default().push(f);
                }
            }
            _ => {}
        }
    }
    Ok(complete)
}

fn read_container_status(bytes: &[u8]) -> Result<ContainerStatusWire, ProtoError> {
    let mut status = ContainerStatusWire::default();
    for field in Fields::new(bytes) {
        match field? {
            (1, v) => status.name = text(v)?,
            (2, v) => {
                for field in Fields::new(v.bytes().unwrap_or_default()) {
                    if let (3, Value::Bytes(terminated)) = field? {
                        status.exit_code = Some(0);
                        for field in Fields::new(terminated) {
                            match field? {
                                (1, v) => status.exit_code = v.int32(),
                                (6, v) => status.finished_at = stamp(v)?,
                                _ => {}
                            }
                        }
                    }
                }
            }
            (5, v) => status.restart_count = v.int32(),
            _ => {}
        }
    }
    Ok(status)
}

fn read_status(bytes: &[u8], status: &mut PodStatusWire) -> Result<bool, ProtoError> {
    let mut complete = true;
    for field in Fields::new(bytes) {
        match field? {
            (1, v) => status.phase = text(v)?,
            (2, v) => {
                let (mut type_, mut state, mut since) = (None, None, None);
                for field in Fields::new(v.bytes().unwrap_or_default()) {
                    match field? {
                        (1, v) => type_ = text(v)?,
                        (2, v) => state = text(v)?,
                        (4, v) => since = stamp(v)?,
                        _ => {}
                    }
                }
                match (type_, state) {
                    (Some(type_), Some(status_text)) => status
                        .conditions
                        .get_or_insert_default()
                        .push(MapOnly(ConditionWire {
                            type_,
                            status: status_text,
                            last_transition_time: since,
                        })),
                    _ => complete = false,
                }
            }
            (8, v) => status
                .container_statuses
                .get_or_insert_default()
                .push(MapOnly(read_container_status(
                    v.bytes().unwrap_or_default(),
                )?)),
            (10, v) => status
                .init_container_statuses
                .get_or_insert_default()
                .push(MapOnly(read_container_status(
                    v.bytes().unwrap_or_default(),
                )?)),
            _ => {}
        }
    }
    Ok(complete)
}

impl PodWire {
    /// The JSON of the fields read, for the checked read.
    fn to_value(&self) -> serde_json::Value {
        let mut root = Map::new();
        if let Some(MapOnly(m)) = &self.metadata {
            let mut meta = Map::new();
            let mut put = |k: &str, v: Option<serde_json::Value>| {
                if let Some(v) = v {
                    meta.insert(k.to_string(), v);
                }
            };
            put("name", m.name.clone().map(Into::into));
            put("namespace", m.namespace.clone().map(Into::into));
            put("uid", m.uid.clone().map(Into::into));
            put(
                "resourceVersion",
                m.resource_version.clone().map(Into::into),
            );
            put("generation", m.generation.map(Into::into));
            put(
                "creationTimestamp",
                m.creation_timestamp.as_ref().map(|t| t.text().into()),
            );
            put(
                "deletionTimestamp",
                m.deletion_timestamp.as_ref().map(|t| t.text().into()),
            );
            put("labels", m.labels.as_ref().map(|l| json!(l)));
            put("annotations", m.annotations.as_ref().map(|a| json!(a)));
            put("finalizers", m.finalizers.as_ref().map(|f| json!(f)));
            put(
                "ownerReferences",
                m.owner_references.as_ref().map(|refs| {
                    refs.iter()
                        .map(|MapOnly(o)| {
                            let mut r = json!({"kind": o.kind, "name": o.name, "uid": o.uid});
                            if let Some(c) = o.controller {
                                r["controller"] = c.into();
                            }
                            r
                        })
                        .collect()
                }),
            );
            root.insert("metadata".into(), meta.into());
        }
        if let Some(MapOnly(s)) = &self.spec {
            let mut spec = Map::new();
            if let Some(n) = &s.node_name {
                spec.insert("nodeName".into(), n.clone().into());
            }
            root.insert("spec".into(), spec.into());
        }
        if let Some(MapOnly(s)) = &self.status {
            let mut status = Map::new();
            if let Some(p) = &s.phase {
                status.insert("phase".into(), p.clone().into());
            }
            if let Some(conditions) = &s.conditions {
                let list = conditions.iter().map(|MapOnly(c)| {
                    let mut v = json!({"type": c.type_, "status": c.status});
                    if let Some(t) = &c.last_transition_time {
                        v["lastTransitionTime"] = t.text().into();
                    }
                    v
                });
                status.insert("conditions".into(), list.collect());
            }
            let containers = |list: &Vec<MapOnly<ContainerStatusWire>>| -> serde_json::Value {
                list.iter()
                    .map(|MapOnly(c)| {
                        let mut v = json!({"restartCount": c.restart_count.unwrap_or(0)});
                        if let Some(n) = &c.name {
                            v["name"] = n.clone().into();
                        }
                        if let Some(code) = c.exit_code {
                            let mut terminated = json!({"exitCode": code});
                            if let Some(t) = &c.finished_at {
                                terminated["finishedAt"] = t.text().into();
                            }
                            v["state"] = json!({"terminated": terminated});
                        }
                        v
                    })
                    .collect()
            };
            if let Some(list) = &s.container_statuses {
                status.insert("containerStatuses".into(), containers(list));
            }
            if let Some(list) = &s.init_container_statuses {
                status.insert("initContainerStatuses".into(), containers(list));
            }
            root.insert("status".into(), status.into());
        }
        root.into()
    }
}

#[cfg(test)]
#[path = "pod_proto_tests.rs"]
mod tests;
