//! One Lease write as leader election and scale-out's ranges both make it: a create or a
//! replace carrying the resourceVersion read (a compare-and-swap), bounded by a timeout, a `409`
//! told apart from every other failure.

use kube::Client;
use kube::api::PostParams;
use kube::core::Request;
use serde_json::Value;
use std::time::Duration;
use tidemark_engine::LeaseRecord;

/// Why a Lease read or write failed.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Someone else wrote first (`409`), or the Lease was created meanwhile.
    #[error("conflict: {0}")]
    Conflict(String),
    /// Any other failure (transport, 5xx, timeout, a Lease we cannot read).
    #[error("{0}")]
    Failed(String),
}

/// Writes `record` as the Lease `namespace/name` (created when `create`), within `timeout`;
/// the stored Lease's resourceVersion.
pub async fn write_lease(
    client: &Client,
    namespace: &str,
    name: &str,
    record: &LeaseRecord,
    create: bool,
    timeout: Duration,
) -> Result<String, LeaseError> {
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases");
    let body = record.to_lease(namespace, name);
    let bytes = serde_json::to_vec(&body).map_err(|e| LeaseError::Failed(e.to_string()))?;
    let request = if create {
        Request::new(path).create(&PostParams::default(), bytes)
    } else {
        Request::new(path).replace(name, &PostParams::default(), bytes)
    }
    .map_err(|e| LeaseError::Failed(e.to_string()))?;
    match tokio::time::timeout(timeout, client.request::<Value>(request)).await {
        Err(_) => Err(LeaseError::Failed("Lease write timed out".into())),
        Ok(Err(kube::Error::Api(status))) if status.code == 409 => {
            Err(LeaseError::Conflict(status.message))
        }
        Ok(Err(e)) => Err(LeaseError::Failed(e.to_string())),
        Ok(Ok(body)) => body["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| LeaseError::Failed("the stored Lease has no resourceVersion".into())),
    }
}
