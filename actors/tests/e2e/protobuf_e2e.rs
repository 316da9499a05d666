//! Protobuf end to end: the manager asks the simulated API server for Pods in protobuf first,
//! as kube-controller-manager does, lists and watches them so, and converges every ReplicaSet
//! through scale-ups and scale-downs; asked for JSON, it reads nothing in protobuf.

use crate::common::{until, with_runtime};
use std::sync::atomic::Ordering;
use std::time::Duration;
use tidemark_actors::embedded::{
    DEMO_NAMESPACE, client_for, converged, replicaset_manifest, start_server,
};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::Resource as Cached;
use tidemark_loadgen::{Resource, ServerConfig};

const REPLICASETS: usize = 8;

fn pods_read_in_protobuf(manager: &Manager) -> u64 {
    manager
        .informers()
        .iter()
        .find(|(r, _)| *r == Cached::Pods)
        .map_or(0, |(_, s)| s.protobuf_reads.load(Ordering::Relaxed))
}

/// Seeds ReplicaSets, starts a manager with `protobuf`, converges, scales each up and down,
/// converges again; returns how many Pod objects and events it read in protobuf.
fn converge_through_scaling(protobuf: bool) -> u64 {
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let read_here = read.clone();
    with_runtime(|io| async move {
        let server = start_server(
            &io,
            ServerConfig {
                kubelet_ready_after: Duration::from_millis(100),
                bookmark_interval: Duration::from_millis(300),
                ..ServerConfig::default()
            },
        )
        .await
        .expect("server starts");
        for i in 0..REPLICASETS {
            server
                .create(
                    Resource::ReplicaSets,
                    DEMO_NAMESPACE,
                    replicaset_manifest(&format!("rs-{i}"), 3),
                )
                .expect("seed");
        }
        let config = ManagerConfig {
            shards: 2,
            qps: 500.0,
            burst: 500,
            protobuf,
            ..ManagerConfig::default()
        };
        let client = client_for(&server, &io).await.expect("client");
        let manager = Manager::start(&config, client, &io).expect("manager starts");
        let first = until(Duration::from_secs(30), || {
            converged(&server.replicaset_truth())
        })
        .await;
        for (i, replicas) in (0..REPLICASETS).zip([6, 1, 4, 0, 5, 2, 7, 3]) {
            server
                .scale_replicaset(DEMO_NAMESPACE, &format!("rs-{i}"), replicas)
                .expect("scale");
        }
        let second = until(Duration::from_secs(30), || {
            converged(&server.replicaset_truth())
        })
        .await;
        read_here.store(pods_read_in_protobuf(&manager), Ordering::Relaxed);
        manager.stop();
        let truth = server.replicaset_truth();
        server.shutdown().await;
        assert!(first && second, "every ReplicaSet converged: {truth:?}");
    });
    read.load(Ordering::Relaxed)
}

#[test]
fn pods_are_listed_and_watched_in_protobuf_and_every_replicaset_converges() {
    let read = converge_through_scaling(true);
    // The first list has no Pods yet; every Pod after it arrives on the watch, in protobuf.
    assert!(
        read >= 24,
        "Pod objects and events read in protobuf: {read}"
    );
}

#[test]
fn asked_for_json_the_manager_reads_nothing_in_protobuf() {
    assert_eq!(converge_through_scaling(false), 0);
}
