//! Leader election I/O around the sans-IO [`Elector`]: read the Lease live (never from a cache),
//! write what the elector decides with the observed resourceVersion, keep the write fence and
//! the shards in step with the outcome, and release the Lease at shutdown.

use crate::fence::Fence;
use crate::shard_actor::{Follow, Lead, LeadCluster, ShardActor};
use actix::Addr;
use kube::Client;
use kube::core::Request;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tidemark_engine::{
    Elector, ElectorConfig, LeaderChange, LeaseRecord, LeaseStep, ResourceVersion,
};
use tokio::sync::watch;

/// Where the Lease lives and how the election runs.
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    /// `--leader-elect-resource-namespace` (default `kube-system`).
    pub namespace: String,
    /// `--leader-elect-resource-name` (default `tidemark`).
    pub name: String,
    /// Identity and timings.
    pub elector: ElectorConfig,
    /// Writers check the fence before every write (on by default). Off only to show two
    /// leaders writing at once.
    pub fencing: bool,
}

impl LeaderElectionConfig {
    /// The kube-controller-manager defaults for `identity`.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            namespace: "kube-system".into(),
            name: "tidemark".into(),
            elector: ElectorConfig::new(identity),
            fencing: true,
        }
    }
}

/// What the election loop shares with metrics and readiness.
#[derive(Debug, Default)]
pub struct LeaderState {
    /// Leader election is on.
    pub enabled: bool,
    /// This process is leader now.
    pub leader: AtomicBool,
    /// Times it became leader.
    pub acquired: AtomicU64,
    /// Times it stopped being leader.
    pub lost: AtomicU64,
    /// This process's identity, when election is on.
    pub identity: String,
    /// The Lease's name (`leader_election_master_status{name}`), when election is on.
    pub lease: String,
}

impl LeaderState {
    /// The state of a process without leader election: always acting.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// Whether this process may act (leader, or election off).
    pub fn acting(&self) -> bool {
        !self.enabled || self.leader.load(Ordering::Relaxed)
    }
}

/// A default identity: the host name and a random suffix, as client-go does.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "tidemark".into());
    format!("{host}_{:016x}", fastrand::u64(..))
}

fn wall_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    tidemark_engine::time::format_micro_time(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
}

pub use crate::lease_write::LeaseError;

/// The election of one process.
pub struct LeaderElection {
    client: Client,
    config: LeaderElectionConfig,
    elector: Elector,
    fence: Arc<Fence>,
    shards: Vec<Addr<ShardActor>>,
    state: Arc<LeaderState>,
    last_written: Option<ResourceVersion>,
    /// Under scale-out the ranges decide the shards' leadership; this election decides only
    /// who reconciles cluster-scoped keys.
    cluster_scoped_only: bool,
}

impl LeaderElection {
    /// An election writing through `client`, opening `fence` while leader and telling `shards`.
    pub fn new(
        client: Client,
        config: LeaderElectionConfig,
        fence: Arc<Fence>,
        shards: Vec<Addr<ShardActor>>,
        state: Arc<LeaderState>,
    ) -> Self {
        Self {
            client,
            elector: Elector::new(config.elector.clone()),
            config,
            fence,
            shards,
            state,
            last_written: None,
            cluster_scoped_only: false,
        }
    }

    /// Under scale-out: the shards hear only [`LeadCluster`], and the fence this election keeps
    /// guards only cluster-scoped writes (the ranges guard the rest).
    pub fn cluster_scoped_only(mut self) -> Self {
        self.cluster_scoped_only = true;
        self
    }

    fn path(&self) -> String {
        format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
            self.config.namespace
        )
    }

    fn timeout(&self) -> Duration {
        self.config.elector.retry_period
    }

    async fn read(&self) -> Result<Option<LeaseRecord>, LeaseError> {
        let request = Request::new(self.path())
            .get(&self.config.name, &Default::default())
            .map_err(|e| LeaseError::Failed(e.to_string()))?;
        match tokio::time::timeout(self.timeout(), self.client.request::<Value>(request)).await {
            Err(_) => Err(LeaseError::Failed("Lease read timed out".into())),
            Ok(Err(kube::Error::Api(status))) if status.code == 404 => Ok(None),
            Ok(Err(e)) => Err(LeaseError::Failed(e.to_string())),
            Ok(Ok(body)) => decode(&body).map(Some),
        }
    }

    async fn write(&self, record: &LeaseRecord, create: bool) -> Result<String, LeaseError> {
        crate::lease_write::write_lease(
            &self.client,
            &self.config.namespace,
            &self.config.name,
            record,
            create,
            self.timeout(),
        )
        .await
    }

    /// One round: read, decide, write; then align the fence and the shards.
    pub async fn round(&mut self) {
        let sent_at = Instant::now();
        match self.read().await {
            Err(e) => tracing::warn!(error = %e, lease = %self.config.name, "Lease read failed"),
            Ok(current) => {
                let step = self.elector.observe(current, sent_at, &wall_now());
                let (record, create, takeover) = match step {
                    LeaseStep::Create(record) => (Some(record), true, true),
                    LeaseStep::Update { record, takeover } => (Some(record), false, takeover),
                    LeaseStep::Wait { holder, expires_in } => {
                        tracing::debug!(%holder, expires_in_ms = expires_in.as_millis() as u64, "Lease held by another");
                        (None, false, false)
                    }
                };
                if let Some(record) = record {
                    match self.write(&record, create).await {
                        Ok(version) => {
                            if takeover {
                                tracing::info!(identity = %self.config.elector.identity, resource_version = %version, "Lease acquired");
                            }
                            self.last_written = ResourceVersion::parse(&version).ok();
                            self.elector.written(record, version, sent_at);
                        }
                        Err(LeaseError::Conflict(why)) => {
                            tracing::info!(reason = %why, "Lease write lost a race (409): reading again");
                            self.elector.conflicted();
                        }
                        Err(e) => tracing::warn!(error = %e, "Lease write failed"),
                    }
                }
            }
        }
        self.align();
    }

    /// Opens or closes the fence and tells the shards about a change of leadership. A process
    /// that starts leading (even on a record that already names it, after a restart) holds its
    /// shards until their caches reach its Lease write, which follows every write of whoever
    /// led before.
    fn align(&mut self) {
        let takeover_revision = self.last_written;
        if self.config.fencing {
            match self.elector.fence_until() {
                Some(until) => self.fence.open_until(until),
                None => self.fence.close(),
            }
        }
        match self.elector.poll_change(Instant::now()) {
            Some(LeaderChange::Started) => {
                self.state.leader.store(true, Ordering::Relaxed);
                self.state.acquired.fetch_add(1, Ordering::Relaxed);
                tracing::info!(identity = %self.config.elector.identity, revision = ?takeover_revision.map(|v| v.get()), "became leader");
                // The previous leader's writes sent before its fence closed commit within their
                // deadline or never; destructive work waits that long after the takeover.
                let destructive_from = self
                    .config
                    .fencing
                    .then(|| Instant::now() + self.config.elector.write_deadline());
                for shard in &self.shards {
                    if self.cluster_scoped_only {
                        shard.do_send(LeadCluster { leading: true });
                    } else {
                        shard.do_send(Lead {
                            revision: takeover_revision,
                            destructive_from,
                        });
                    }
                }
            }
            Some(LeaderChange::Stopped) => {
                self.state.leader.store(false, Ordering::Relaxed);
                self.state.lost.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(identity = %self.config.elector.identity, "stopped leading: writes fenced, caches kept warm");
                for shard in &self.shards {
                    if self.cluster_scoped_only {
                        shard.do_send(LeadCluster { leading: false });
                    } else {
                        shard.do_send(Follow);
                    }
                }
            }
            None => {}
        }
    }

    /// Runs rounds every retry period until `shutdown` turns true; returns itself so the
    /// manager can [`release`](Self::release) after the writes in flight are answered.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Self {
        loop {
            if *shutdown.borrow() {
                return self;
            }
            self.round().await;
            let next = self.config.elector.retry_period;
            // Between rounds the fence closes on its own clock; the shards hear of it as soon as
            // the deadline passes, not at the next round.
            let fence_ends = self
                .elector
                .fence_until()
                .map(|t| t.saturating_duration_since(Instant::now()))
                .filter(|d| *d < next);
            let wait = fence_ends.map_or(next, |d| d + Duration::from_millis(1));
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => {}
            }
            if fence_ends.is_some() {
                self.align();
            }
        }
    }

    /// Gives the Lease up (holder cleared) so a successor need not wait for it to expire. The
    /// fence closes first: no write of ours can follow the release.
    pub async fn release(mut self) -> bool {
        self.fence.close();
        self.state.leader.store(false, Ordering::Relaxed);
        let Some(record) = self.elector.release(&wall_now()) else {
            return false;
        };
        match self.write(&record, false).await {
            Ok(_) => {
                tracing::info!(identity = %self.config.elector.identity, "Lease released");
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "Lease release failed; it will expire on its own");
                false
            }
        }
    }
}

fn decode(body: &Value) -> Result<LeaseRecord, LeaseError> {
    LeaseRecord::from_lease(body).map_err(|e| LeaseError::Failed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(config: &LeaderElectionConfig, record: &LeaseRecord) -> Value {
        record.to_lease(&config.namespace, &config.name)
    }

    #[test]
    fn a_lease_round_trips_through_its_json() {
        let config = LeaderElectionConfig::new("me");
        let record = LeaseRecord {
            holder: Some("me".into()),
            lease_duration_seconds: 15,
            acquire_time: Some(wall_now()),
            renew_time: Some(wall_now()),
            transitions: 2,
            resource_version: "42".into(),
        };
        let body = encode(&config, &record);
        assert_eq!(body["metadata"]["namespace"], "kube-system");
        assert_eq!(decode(&body).expect("decodes"), record);
    }

    #[test]
    fn a_released_lease_has_no_holder_and_a_lease_without_version_is_an_error() {
        let config = LeaderElectionConfig::new("me");
        let released = LeaseRecord {
            holder: None,
            lease_duration_seconds: 1,
            resource_version: "7".into(),
            ..LeaseRecord::default()
        };
        let body = encode(&config, &released);
        assert!(body["spec"].get("holderIdentity").is_none());
        assert_eq!(decode(&body).expect("decodes").holder, None);
        let mut body = body;
        body["metadata"]["resourceVersion"] = Value::from("");
        assert!(matches!(decode(&body), Err(LeaseError::Failed(_))));
    }

    #[test]
    fn wall_timestamps_carry_microseconds() {
        let t = wall_now();
        assert!(
            t.ends_with('Z') && t.len() == "2026-12-02T10:00:00.000000Z".len(),
            "{t}"
        );
        assert!(tidemark_engine::time::parse_rfc3339(&t).is_some(), "{t}");
    }
}
