//! A write the API server applied but whose response was lost (`504`, "may still be processing
//! the request") must not be repeated blindly: the key waits for a barrier, so its next decision
//! sees the Pod that did land. With the gate off the same run double-creates.

use crate::common::with_runtime;
use std::time::{Duration, Instant};
use tidemark_actors::embedded::{
    DEMO_NAMESPACE, client_for, converged, replicaset_manifest, start_server,
};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;
use tidemark_loadgen::{Resource, ServerConfig, Violation, ViolationKind};

/// Scales 6 ReplicaSets up while 40% of write responses are lost and Pods show up 800 ms late;
/// returns the over-creations the manager caused and whether it converged afterwards.
async fn scale_up_losing_responses(
    io: &tokio::runtime::Handle,
    consistency: bool,
) -> (Vec<Violation>, bool) {
    let server = start_server(
        io,
        ServerConfig {
            watch_delays: vec![(Resource::Pods, Duration::from_millis(800))],
            kubelet_ready_after: Duration::from_millis(100),
            bookmark_interval: Duration::from_millis(300),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server");
    server.faults().requests().seed(7);
    let names: Vec<String> = (0..6).map(|i| format!("rs-{i}")).collect();
    for name in &names {
        server
            .create(
                Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest(name, 0),
            )
            .expect("seed");
    }
    let gates = if consistency {
        ""
    } else {
        "StaleControllerConsistency=false"
    };
    let config = ManagerConfig {
        shards: 2,
        gates: FeatureGates::parse(gates, &["ReplicaSet"]).expect("gates"),
        qps: 500.0,
        burst: 500,
        ..ManagerConfig::default()
    };
    let manager = Manager::start(&config, client_for(&server, io).await.expect("client"), io)
        .expect("manager");
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.faults().requests().lose_write_responses(0.4);
    for name in &names {
        server
            .scale_replicaset(DEMO_NAMESPACE, name, 4)
            .expect("scale");
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
    server.faults().requests().clear();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut settled = false;
    while Instant::now() < deadline && !settled {
        settled = converged(&server.replicaset_truth());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let over: Vec<Violation> = server
        .violations()
        .into_iter()
        .filter(|v| v.kind == ViolationKind::OverCreate)
        .collect();
    manager.stop();
    server.shutdown().await;
    (over, settled)
}

#[test]
fn a_create_whose_response_was_lost_is_not_repeated() {
    with_runtime(|io| async move {
        let (over, settled) = scale_up_losing_responses(&io, true).await;
        assert!(over.is_empty(), "{over:#?}");
        assert!(settled, "converges once responses come back");
    });
}

#[test]
fn with_the_gate_off_a_lost_response_means_a_second_pod() {
    with_runtime(|io| async move {
        let (over, _) = scale_up_losing_responses(&io, false).await;
        assert!(
            !over.is_empty(),
            "the naive controller re-creates what had landed"
        );
    });
}
