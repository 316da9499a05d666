//! A [`LeaseRecord`] as the `coordination.k8s.io/v1` Lease object the API server stores: what the
//! election's I/O shell writes and reads, in one place for every shell (the runtime's and the
//! simulation's).

use crate::leader_election::LeaseRecord;
use serde_json::{Value, json};

/// Why a Lease read from the server is not a record the election can use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseDecodeError {
    /// Without a resourceVersion, a takeover or renewal could not carry the version it observed.
    #[error("the Lease has no metadata.resourceVersion")]
    NoResourceVersion,
}

impl LeaseRecord {
    /// The Lease `namespace/name` holding this record (with its resourceVersion, when it has
    /// one, so the write is refused with `409` if someone wrote since).
    pub fn to_lease(&self, namespace: &str, name: &str) -> Value {
        let mut spec = json!({
            "leaseDurationSeconds": self.lease_duration_seconds,
            "leaseTransitions": self.transitions,
        });
        if let Some(holder) = &self.holder {
            spec["holderIdentity"] = json!(holder);
        }
        if let Some(t) = &self.acquire_time {
            spec["acquireTime"] = json!(t);
        }
        if let Some(t) = &self.renew_time {
            spec["renewTime"] = json!(t);
        }
        let mut metadata = json!({"name": name, "namespace": namespace});
        if !self.resource_version.is_empty() {
            metadata["resourceVersion"] = json!(self.resource_version);
        }
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": metadata,
            "spec": spec,
        })
    }

    /// The record a Lease holds. Fields of the wrong type read as absent (an empty holder as
    /// none); only a missing resourceVersion is refused.
    pub fn from_lease(lease: &Value) -> Result<LeaseRecord, LeaseDecodeError> {
        let version = lease["metadata"]["resourceVersion"]
            .as_str()
            .filter(|v| !v.is_empty())
            .ok_or(LeaseDecodeError::NoResourceVersion)?;
        let spec = &lease["spec"];
        let text = |field: &str| spec[field].as_str().map(str::to_string);
        let int = |field: &str| {
            spec[field]
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .unwrap_or(0)
        };
        Ok(LeaseRecord {
            holder: text("holderIdentity").filter(|h| !h.is_empty()),
            lease_duration_seconds: int("leaseDurationSeconds"),
            acquire_time: text("acquireTime"),
            renew_time: text("renewTime"),
            transitions: int("leaseTransitions"),
            resource_version: version.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written_once_the_server_gives_it_a_version() {
        let record = LeaseRecord {
            holder: Some("a".into()),
            lease_duration_seconds: 15,
            acquire_time: Some("2026-01-01T00:00:00.000000Z".into()),
            renew_time: Some("2026-01-01T00:00:02.000000Z".into()),
            transitions: 3,
            resource_version: String::new(),
        };
        let mut lease = record.to_lease("kube-system", "tidemark");
        assert!(lease["metadata"].get("resourceVersion").is_none());
        assert_eq!(
            LeaseRecord::from_lease(&lease),
            Err(LeaseDecodeError::NoResourceVersion)
        );
        lease["metadata"]["resourceVersion"] = json!("42");
        let read = LeaseRecord::from_lease(&lease).expect("a record");
        assert_eq!(
            read,
            LeaseRecord {
                resource_version: "42".into(),
                ..record
            }
        );
    }

    #[test]
    fn an_empty_holder_is_no_holder_and_odd_fields_read_as_absent() {
        let lease = json!({"metadata": {"resourceVersion": "7"},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": "15", "leaseTransitions": 1e20}});
        let read = LeaseRecord::from_lease(&lease).expect("a record");
        assert_eq!(read.holder, None);
        assert_eq!(read.lease_duration_seconds, 0);
        assert_eq!(read.transitions, 0);
    }
}
