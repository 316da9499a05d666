//! The Job projection (batch/v1): what the Job controller reads, and the whole object for its
//! status writes.

use crate::key::{ObjectKey, Uid};
use crate::object::DecodeError;
use crate::rv::ResourceVersion;
use std::sync::Arc;

/// A Job's status as the controller tracks it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobStatus {
    /// status.active.
    pub active: i32,
    /// status.succeeded (counted: the Pods' finalizers are gone).
    pub succeeded: i32,
    /// status.failed (counted).
    pub failed: i32,
    /// status.uncountedTerminatedPods.succeeded: finished, recorded, finalizer not yet removed.
    pub uncounted_succeeded: Vec<String>,
    /// status.uncountedTerminatedPods.failed.
    pub uncounted_failed: Vec<String>,
    /// status.completedIndexes, for Indexed Jobs (as a sorted list of indexes).
    pub completed_indexes: Vec<u32>,
    /// status.startTime (Unix seconds).
    pub start_time: Option<i64>,
    /// status.completionTime is set.
    pub completed: bool,
    /// A `Failed` condition is True.
    pub failed_condition: bool,
}

/// A Job.
#[derive(Clone, Debug, PartialEq)]
pub struct JobView {
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// spec.parallelism (default 1).
    pub parallelism: i32,
    /// spec.completions (`None`: a work queue, done when one Pod succeeds).
    pub completions: Option<i32>,
    /// spec.backoffLimit (default 6).
    pub backoff_limit: i32,
    /// spec.activeDeadlineSeconds.
    pub active_deadline_seconds: Option<i64>,
    /// spec.completionMode is `Indexed`.
    pub indexed: bool,
    /// spec.suspend.
    pub suspended: bool,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// The status.
    pub status: JobStatus,
    /// The whole object as last observed.
    pub raw: Arc<serde_json::Value>,
}

/// Parses `1,3-5` into `[1, 3, 4, 5]`; malformed parts are skipped.
pub fn parse_indexes(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b.min(a.saturating_add(100_000)));
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Formats sorted indexes as `1,3-5`.
pub fn format_indexes(indexes: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < indexes.len() {
        let start = indexes[i];
        let mut end = start;
        while i + 1 < indexes.len() && indexes[i + 1] == end + 1 {
            i += 1;
            end = indexes[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

impl JobView {
    /// Decodes a Job from JSON bytes.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DecodeError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|e| DecodeError::Malformed(e.to_string()))?;
        Self::from_value(value)
    }

    /// Decodes a Job from a parsed object.
    pub fn from_value(value: serde_json::Value) -> Result<Self, DecodeError> {
        let meta = value
            .get("metadata")
            .ok_or(DecodeError::Missing("metadata"))?;
        let text = |field: &'static str| meta.get(field).and_then(serde_json::Value::as_str);
        let name = text("name").ok_or(DecodeError::Missing("metadata.name"))?;
        let uid = text("uid").ok_or(DecodeError::Missing("metadata.uid"))?;
        if value.pointer("/spec/template").is_none() {
            return Err(DecodeError::Missing("spec.template"));
        }
        let int = |path: &str| value.pointer(path).and_then(serde_json::Value::as_i64);
        let narrow = |n: i64| i32::try_from(n).unwrap_or(i32::MAX);
        let uids = |path: &str| -> Vec<String> {
            value
                .pointer(path)
                .and_then(serde_json::Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|u| u.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let condition = |kind: &str| {
            value
                .pointer("/status/conditions")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == kind && c["status"] == "True")
                })
        };
        Ok(JobView {
            key: ObjectKey::new(text("namespace").unwrap_or(""), name),
            uid: Uid::new(uid),
            resource_version: text("resourceVersion").and_then(|v| ResourceVersion::parse(v).ok()),
            parallelism: int("/spec/parallelism").map_or(1, narrow),
            completions: int("/spec/completions").map(narrow),
            backoff_limit: int("/spec/backoffLimit").map_or(6, narrow),
            active_deadline_seconds: int("/spec/activeDeadlineSeconds"),
            indexed: value.pointer("/spec/completionMode") == Some(&"Indexed".into()),
            suspended: value.pointer("/spec/suspend") == Some(&true.into()),
            terminating: meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()),
            status: JobStatus {
                active: int("/status/active").map_or(0, narrow),
                succeeded: int("/status/succeeded").map_or(0, narrow),
                failed: int("/status/failed").map_or(0, narrow),
                uncounted_succeeded: uids("/status/uncountedTerminatedPods/succeeded"),
                uncounted_failed: uids("/status/uncountedTerminatedPods/failed"),
                completed_indexes: value
                    .pointer("/status/completedIndexes")
                    .and_then(serde_json::Value::as_str)
                    .map(parse_indexes)
                    .unwrap_or_default(),
                start_time: value
                    .pointer("/status/startTime")
                    .and_then(serde_json::Value::as_str)
                    .and_then(crate::time::parse_rfc3339),
                completed: condition("Complete"),
                failed_condition: condition("Failed"),
            },
            raw: Arc::new(value),
        })
    }

    /// The Job is finished (Complete or Failed).
    pub fn finished(&self) -> bool {
        self.status.completed || self.status.failed_condition
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_round_trip_through_their_compact_form() {
        let indexes = parse_indexes("0,2-4,7");
        assert_eq!(indexes, vec![0, 2, 3, 4, 7]);
        assert_eq!(format_indexes(&indexes), "0,2-4,7");
        assert_eq!(parse_indexes("x,1"), vec![1]);
        assert_eq!(format_indexes(&[]), "");
    }
}
