//! Scale-out's range ownership I/O around the sans-IO [`RangeElection`]: list the namespace's
//! Leases live every retry period, write what the election decides, and keep the fence's
//! ranges, the shards and the informers in step with the ranges held; at shutdown, give every
//! range back.
//!
//! A range gained is started as a takeover: its caches are relisted with the new
//! `shardSelector`, and until they land the shards hold every decision that reads them; proofs
//! are revoked, so destructive work waits for a barrier; and nothing destructive goes out before
//! the previous holder's writes can no longer commit (the write deadline).

use crate::fence::Fence;
use crate::lease_write::LeaseError;
use crate::shard_actor::{Follow, Lead, Relisting, ShardActor};
use actix::Addr;
use futures::future::join_all;
use kube::Client;
use kube::api::ListParams;
use kube::core::Request;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tidemark_engine::ranges::{
    LeaseWrite, RANGES, RangeElection, RangeId, WritePurpose, shard_selector,
};
use tidemark_engine::{ElectorConfig, LeaseRecord, Resource, ResourceVersion};
use tokio::sync::watch;

/// Where the range Leases live and how their elections run.
#[derive(Clone, Debug)]
pub struct RangeConfig {
    /// The Leases' namespace (`--scale-out-lease-namespace`).
    pub namespace: String,
    /// Their names' prefix (`--leader-elect-resource-name`): `<prefix>-range-NN` and
    /// `<prefix>-member-NN` (16 membership slots).
    pub prefix: String,
    /// Identity and timings, as leader election's.
    pub elector: ElectorConfig,
    /// Writes check their range's fence (off only to show two replicas writing for one range).
    pub fencing: bool,
}

/// What the range loop shares with metrics and readiness.
#[derive(Debug, Default)]
pub struct RangeState {
    /// Ranges whose writes may go out now.
    pub held: Mutex<Vec<RangeId>>,
    /// Ranges gained.
    pub acquired: AtomicU64,
    /// Ranges given back to another replica.
    pub released: AtomicU64,
    /// Ranges lost without giving them back (a renewal missed its deadline, or another took it).
    pub lost: AtomicU64,
    /// Why the last round failed, if it did.
    pub last_failure: Mutex<Option<String>>,
}

/// The ranges a replica's informers list and watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeldRanges {
    /// The ranges, ascending.
    pub ranges: Vec<RangeId>,
    /// Their `shardSelector` (`None`: no range).
    pub selector: Option<String>,
    bits: u64,
}

impl HeldRanges {
    /// The set of `ranges`.
    pub fn new(mut ranges: Vec<RangeId>) -> Self {
        ranges.sort();
        ranges.dedup();
        let bits = ranges.iter().fold(0u64, |bits, r| bits | (1u64 << r.0));
        Self {
            selector: shard_selector(&ranges),
            ranges,
            bits,
        }
    }

    /// Whether an object of `namespace` falls in these ranges.
    pub fn contains_namespace(&self, namespace: &str) -> bool {
        self.bits & (1u64 << RangeId::of_namespace(namespace).0) != 0
    }
}

/// Whether `resource` is split by range: namespaced objects are, except Leases (the node
/// Leases node lifecycle reads are a cluster-wide input, like Nodes).
pub fn sharded(resource: Resource) -> bool {
    resource.namespaced() && resource != Resource::Leases
}

/// The range loop of one replica.
pub struct RangeLeases {
    client: Client,
    config: RangeConfig,
    election: RangeElection,
    fence: Arc<Fence>,
    shards: Vec<Addr<ShardActor>>,
    state: Arc<RangeState>,
    held: watch::Sender<HeldRanges>,
    /// The resources whose informers follow the ranges.
    sharded: Vec<Resource>,
}

fn wall_now() -> String {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    tidemark_engine::time::format_micro_time(i64::try_from(since.as_micros()).unwrap_or(i64::MAX))
}

impl RangeLeases {
    /// A loop writing through `client`, opening `fence`'s ranges and telling `shards`; the
    /// informers of `sharded` resources follow [`held`](Self::held).
    pub fn new(
        client: Client,
        config: RangeConfig,
        fence: Arc<Fence>,
        shards: Vec<Addr<ShardActor>>,
        sharded: Vec<Resource>,
    ) -> Self {
        let (held, _) = watch::channel(HeldRanges::default());
        Self {
            client,
            election: RangeElection::new(config.elector.clone(), config.prefix.clone()),
            config,
            fence,
            shards,
            state: Arc::default(),
            held,
            sharded,
        }
    }

    /// The ranges held, for the informers: they relist when it changes.
    pub fn held(&self) -> watch::Receiver<HeldRanges> {
        self.held.subscribe()
    }

    /// The loop's state, shared.
    pub fn state(&self) -> Arc<RangeState> {
        self.state.clone()
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

    /// Every range and membership Lease of the namespace, read live.
    async fn list(&self) -> Result<BTreeMap<String, LeaseRecord>, LeaseError> {
        let request = Request::new(self.path())
            .list(&ListParams::default())
            .map_err(|e| LeaseError::Failed(e.to_string()))?;
        let body = match tokio::time::timeout(self.timeout(), self.client.request::<Value>(request))
            .await
        {
            Err(_) => return Err(LeaseError::Failed("listing the Leases timed out".into())),
            Ok(Err(e)) => return Err(LeaseError::Failed(e.to_string())),
            Ok(Ok(body)) => body,
        };
        let Some(items) = body["items"].as_array() else {
            return Err(LeaseError::Failed("the Lease list has no items".into()));
        };
        let ours = format!("{}-", self.config.prefix);
        let mut leases = BTreeMap::new();
        for item in items {
            let Some(name) = item["metadata"]["name"].as_str() else {
                continue;
            };
            if !name.starts_with(&ours) {
                continue;
            }
            match LeaseRecord::from_lease(item) {
                Ok(record) => {
                    leases.insert(name.to_string(), record);
                }
                Err(e) => {
                    tracing::warn!(lease = name, error = %e, "a range Lease does not decode; it counts as absent");
                }
            }
        }
        Ok(leases)
    }

    async fn write(&self, write: &LeaseWrite) -> Result<String, LeaseError> {
        crate::lease_write::write_lease(
            &self.client,
            &self.config.namespace,
            &write.name,
            &write.record,
            write.create,
            self.timeout(),
        )
        .await
    }

    /// One round: list, decide, write (all at once), then align fences, shards and informers.
    pub async fn round(&mut self) {
        let sent_at = Instant::now();
        let leases = match self.list().await {
            Ok(leases) => leases,
            Err(e) => {
                tracing::warn!(error = %e, "listing the range Leases failed");
                *self.state.last_failure.lock() = Some(format!("listing the range Leases: {e}"));
                self.align(None);
                return;
            }
        };
        let writes = self.election.observe(&leases, sent_at, &wall_now());
        let results = join_all(writes.iter().map(|w| self.write(w))).await;
        let mut takeover: Option<ResourceVersion> = None;
        let mut failure = None;
        for (write, result) in writes.iter().zip(results) {
            match result {
                Ok(version) => {
                    // A range can be gained by a renewal too (its fence had run out while no
                    // one took it): any range write this round may start a takeover.
                    if let WritePurpose::Acquire(_) | WritePurpose::Renew(_) = write.purpose
                        && let Ok(v) = ResourceVersion::parse(&version)
                    {
                        takeover = Some(takeover.map_or(v, |t| t.max(v)));
                    }
                    if let WritePurpose::Release(range) = write.purpose {
                        self.state.released.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(range = range.0, "range given back");
                    }
                    self.election.written(write, version, sent_at);
                }
                Err(LeaseError::Conflict(_)) => self.election.conflicted(write),
                Err(e) => {
                    tracing::warn!(lease = %write.name, error = %e, "range Lease write failed");
                    failure = Some(format!("writing {}: {e}", write.name));
                }
            }
        }
        *self.state.last_failure.lock() = failure;
        self.align(takeover);
    }

    /// Opens or closes each range's fence, and tells the shards and informers about ranges
    /// gained or lost. A gain is a takeover of those ranges: every sharded cache is held for its
    /// relist (before any informer can relist), proofs are revoked, and the shards lead again
    /// from `takeover` (the revision of the Lease writes that took the ranges).
    fn align(&mut self, takeover: Option<ResourceVersion>) {
        let now = Instant::now();
        if self.config.fencing {
            for r in 0..RANGES {
                let range = RangeId(r);
                match self.election.fence_until(range) {
                    Some(until) => self.fence.open_range_until(range, until),
                    None => self.fence.close_range(range),
                }
            }
        }
        let changes = self.election.poll_changes(now);
        if changes.is_empty() {
            return;
        }
        let held = self.election.held(now);
        self.state
            .acquired
            .fetch_add(changes.gained.len() as u64, Ordering::Relaxed);
        let given_back = changes
            .lost
            .iter()
            .filter(|r| self.election.is_draining(**r))
            .count();
        self.state.lost.fetch_add(
            changes.lost.len().saturating_sub(given_back) as u64,
            Ordering::Relaxed,
        );
        tracing::info!(
            gained = ?changes.gained.iter().map(|r| r.0).collect::<Vec<_>>(),
            lost = ?changes.lost.iter().map(|r| r.0).collect::<Vec<_>>(),
            held = held.len(),
            revision = ?takeover.map(|v| v.get()),
            "ranges changed"
        );
        if !changes.gained.is_empty() {
            let destructive_from = self
                .config
                .fencing
                .then(|| now + self.config.elector.write_deadline());
            for shard in &self.shards {
                for resource in &self.sharded {
                    shard.do_send(Relisting {
                        resource: *resource,
                    });
                }
                shard.do_send(Follow);
                shard.do_send(Lead {
                    revision: takeover,
                    destructive_from,
                });
            }
        } else if held.is_empty() {
            for shard in &self.shards {
                shard.do_send(Follow);
            }
        }
        *self.state.held.lock() = held.clone();
        self.held.send_replace(HeldRanges::new(held));
    }

    /// Runs rounds every retry period until `shutdown` turns true, waking early when a fence
    /// closes or a drained range may be given back; returns itself so the manager can
    /// [`release`](Self::release) once the writes in flight are answered.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Self {
        loop {
            if *shutdown.borrow() {
                return self;
            }
            let started = Instant::now();
            self.round().await;
            let next_round = started + self.config.elector.retry_period;
            loop {
                let now = Instant::now();
                let wake = self
                    .election
                    .next_deadline(now)
                    .filter(|t| *t < next_round)
                    .unwrap_or(next_round);
                tokio::select! {
                    _ = tokio::time::sleep(wake.saturating_duration_since(now) + Duration::from_millis(1)) => {}
                    _ = shutdown.changed() => return self,
                }
                self.align(None);
                if Instant::now() >= next_round {
                    break;
                }
            }
        }
    }

    /// Gives every range and the membership back (holders cleared) so the other replicas need
    /// not wait for the Leases to expire; the fences close first. Returns how many were given.
    pub async fn release(mut self) -> usize {
        for r in 0..RANGES {
            self.fence.close_range(RangeId(r));
        }
        let writes = self.election.release_all(&wall_now());
        let results = join_all(writes.iter().map(|w| self.write(w))).await;
        let released = results.iter().filter(|r| r.is_ok()).count();
        tracing::info!(released, of = writes.len(), "range Leases given back");
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_ranges_know_their_namespaces_and_ask_for_them_by_selector() {
        let team = RangeId::of_namespace("team-a");
        let held = HeldRanges::new(vec![team, team]);
        assert_eq!(held.ranges, [team]);
        assert!(held.contains_namespace("team-a"));
        let other = (0..RANGES)
            .map(|i| format!("ns-{i}"))
            .find(|ns| RangeId::of_namespace(ns) != team)
            .expect("another range");
        assert!(!held.contains_namespace(&other));
        assert!(held.selector.is_some());
        assert_eq!(HeldRanges::new(Vec::new()).selector, None);
    }

    #[test]
    fn namespaced_workloads_are_split_and_cluster_wide_inputs_are_not() {
        assert!(sharded(Resource::Pods));
        assert!(sharded(Resource::ReplicaSets));
        assert!(!sharded(Resource::Nodes));
        assert!(!sharded(Resource::Leases));
    }
}
