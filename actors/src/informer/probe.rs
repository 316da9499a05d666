//! The informer's answer to a parked key's probe: one cheap consistent read of the current
//! revision, to tell a stalled watch from a quiet one.

use super::{Informer, PROBE_BODY_LIMIT, STALLED_AFTER, version_of};
use crate::client::response::{fetch, json_error_site};
use crate::paths::collection;
use crate::shard_actor::ProbeRequest;
use kube::api::ListParams;
use kube::core::Request;
use std::sync::atomic::Ordering;
use tokio::time::Instant;

impl Informer {
    /// A cheap consistent read (`limit=1`) of the current revision. Returns true when the watch
    /// looks stalled: the server is past the probe's target and no progress came for a while.
    pub(super) async fn answer_probe(&self, probe: ProbeRequest, last_progress: Instant) -> bool {
        #[derive(serde::Deserialize)]
        struct ListMeta {
            #[serde(default)]
            metadata: Version,
        }
        #[derive(serde::Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Version {
            #[serde(default)]
            resource_version: Option<String>,
        }
        self.state.probes.fetch_add(1, Ordering::Relaxed);
        let params = ListParams {
            limit: Some(1),
            ..ListParams::default()
        };
        let Ok(request) = Request::new(collection(self.resource, None)).list(&params) else {
            return false;
        };
        self.limiter.acquire().await;
        let current = match fetch(&self.client, request, PROBE_BODY_LIMIT).await {
            Ok(body) => match serde_json::from_slice::<ListMeta>(&body) {
                Ok(list) => version_of(list.metadata.resource_version.as_deref()),
                Err(e) => {
                    tracing::warn!(resource = %self.resource, error = %json_error_site(&e), "probe answer does not decode");
                    return false;
                }
            },
            Err(e) => {
                tracing::warn!(resource = %self.resource, error = %e, "probe read failed");
                return false;
            }
        };
        if let Some(current) = current {
            self.server_revision.learn(current);
        }
        let stalled =
            current.is_some_and(|c| c >= probe.target) && last_progress.elapsed() >= STALLED_AFTER;
        tracing::warn!(resource = %self.resource, target = %probe.target, watermark = ?probe.watermark.map(|w| w.get()),
            current = ?current.map(|c| c.get()), stalled, "probe");
        stalled
    }
}
