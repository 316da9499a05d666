//! Scale-out end to end: replicas split the namespaces' 64 ranges through Leases, each lists and
//! watches only its own (with KEP-5866's `shardSelector`, or filtering on its side when the
//! server ignores it), and together they converge every ReplicaSet, each Pod cached once.

use crate::common::{until, with_runtime};
use std::time::Duration;
use tidemark_actors::embedded::{client_for, converged, start_server};
use tidemark_actors::leader::LeaderElectionConfig;
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::Resource as Cached;
use tidemark_engine::ranges::{RANGES, RangeId};
use tidemark_loadgen::{ApiServer, Resource, ServerConfig};

const NAMESPACES: usize = 24;
const REPLICAS: i32 = 2;

/// Namespace `i`. FNV-1a barely moves the top bits for a change in a name's last characters
/// (`team-0` to `team-23` all fall in ranges 16 and 55), so the number leads and the names
/// spread over 17 ranges, as the share scenarios' `0-share` to `511-share` do.
fn namespace(i: usize) -> String {
    format!("{i}-team")
}

async fn seeded(io: &tokio::runtime::Handle, sharded: bool) -> ApiServer {
    let server = start_server(
        io,
        ServerConfig {
            kubelet_ready_after: Duration::from_millis(100),
            bookmark_interval: Duration::from_millis(300),
            sharded_list_and_watch: sharded,
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server starts");
    for i in 0..NAMESPACES {
        let namespace = namespace(i);
        server
            .create(
                Resource::ReplicaSets,
                &namespace,
                tidemark_loadgen::workload::replicaset_manifest(&namespace, "web", REPLICAS),
            )
            .expect("seed");
    }
    server
}

async fn replica(identity: &str, server: &ApiServer, io: &tokio::runtime::Handle) -> Manager {
    let mut election = LeaderElectionConfig::new(identity);
    election.elector.lease_duration = Duration::from_secs(4);
    election.elector.renew_deadline = Duration::from_secs(3);
    election.elector.retry_period = Duration::from_millis(500);
    let config = ManagerConfig {
        shards: 1,
        controllers: vec!["replicaset".into()],
        leader_election: Some(election),
        scale_out: true,
        ..ManagerConfig::default()
    };
    Manager::start(&config, client_for(server, io).await.expect("client"), io)
        .expect("manager starts")
}

fn ranges_held(manager: &Manager) -> usize {
    manager.source().ranges().map_or(0, |r| r.held.lock().len())
}

/// How many Pods belong to `manager`: those of the namespaces whose ranges it holds.
fn pods_owed(manager: &Manager) -> usize {
    let held: Vec<RangeId> = manager
        .source()
        .ranges()
        .map_or_else(Vec::new, |r| r.held.lock().clone());
    (0..NAMESPACES)
        .filter(|i| held.contains(&RangeId::of_namespace(&namespace(*i))))
        .count()
        * REPLICAS as usize
}

async fn cached_pods(manager: &Manager) -> usize {
    manager
        .stats()
        .await
        .shards
        .iter()
        .flat_map(|s| &s.resources)
        .filter(|(r, ..)| *r == Cached::Pods)
        .map(|(.., objects)| objects)
        .sum()
}

fn fell_back(manager: &Manager) -> bool {
    manager
        .informers()
        .iter()
        .find(|(r, _)| *r == Cached::Pods)
        .is_some_and(|(_, s)| {
            s.selector_fallback
                .load(std::sync::atomic::Ordering::Relaxed)
        })
}

/// Two replicas against `server`: they split the ranges evenly, converge every ReplicaSet, and
/// cache each Pod in exactly one of them. Returns whether each fell back to filtering itself.
async fn two_replicas_split_the_work(server: &ApiServer, io: &tokio::runtime::Handle) -> [bool; 2] {
    let a = replica("replica-a", server, io).await;
    let b = replica("replica-b", server, io).await;
    let total = NAMESPACES * REPLICAS as usize;
    let split = until(Duration::from_secs(40), || {
        ranges_held(&a) == usize::from(RANGES) / 2
            && ranges_held(&b) == usize::from(RANGES) / 2
            && converged(&server.replicaset_truth())
    })
    .await;
    let mut cached = (0, 0);
    let mut owed = (0, 0);
    for _ in 0..40 {
        cached = (cached_pods(&a).await, cached_pods(&b).await);
        owed = (pods_owed(&a), pods_owed(&b));
        // A replica that lost ranges keeps their Pods until its relist lands.
        if cached == owed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let fallback = [fell_back(&a), fell_back(&b)];
    let held = (ranges_held(&a), ranges_held(&b));
    a.stop();
    b.stop();
    assert!(
        split,
        "each holds half the ranges ({held:?}) and every ReplicaSet converged: {:?}",
        server.replicaset_truth()
    );
    assert_eq!(
        owed.0 + owed.1,
        total,
        "every namespace's range is held by one replica"
    );
    assert!(owed.0 > 0 && owed.1 > 0, "both hold Pods: {owed:?}");
    assert_eq!(
        cached, owed,
        "each replica caches the Pods of its ranges and no other"
    );
    fallback
}

#[test]
fn two_replicas_split_the_ranges_and_together_converge_every_replicaset() {
    with_runtime(|io| async move {
        let server = seeded(&io, true).await;
        let fallback = two_replicas_split_the_work(&server, &io).await;
        server.shutdown().await;
        assert_eq!(fallback, [false, false], "the server honoured the selector");
    });
}

#[test]
fn against_a_server_without_sharded_watches_each_replica_filters_on_its_side() {
    with_runtime(|io| async move {
        let server = seeded(&io, false).await;
        let fallback = two_replicas_split_the_work(&server, &io).await;
        server.shutdown().await;
        assert_eq!(fallback, [true, true], "each says it fell back");
    });
}
