//! Writes that wait for the client-side rate limit when their plan is superseded: a ReplicaSet
//! scaled to 8 and back to 1 while its creates queue behind `--kube-api-qps 2`.

use crate::common::{until, with_runtime};
use std::time::Duration;
use tidemark_actors::embedded::{
    DEMO_NAMESPACE, client_for, converged, replicaset_manifest, start_server,
};
use tidemark_actors::manager::{Manager, ManagerConfig, ManagerStats};
use tidemark_engine::FeatureGates;
use tidemark_loadgen::rbac::Attributes;
use tidemark_loadgen::{ApiServer, ServerConfig, Violation};

/// Scales `web` from 0 to 8 under 2 requests a second, and to 1 as soon as the slow start's
/// first two batches (three Pods) are there: the third batch still waits for its tokens.
async fn scale_up_overtaken_by_a_scale_down(
    io: &tokio::runtime::Handle,
    consistency: bool,
) -> (Vec<Violation>, ManagerStats, bool) {
    let server = start_server(
        io,
        ServerConfig {
            kubelet_ready_after: Duration::from_millis(100),
            bookmark_interval: Duration::from_millis(500),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server starts");
    server
        .create(
            tidemark_loadgen::Resource::ReplicaSets,
            DEMO_NAMESPACE,
            replicaset_manifest("web", 0),
        )
        .expect("seed");
    let gates = if consistency {
        ""
    } else {
        "StaleControllerConsistency=false"
    };
    let config = ManagerConfig {
        shards: 1,
        gates: FeatureGates::parse(gates, &["ReplicaSet"]).expect("gates"),
        qps: 2.0,
        burst: 1,
        ..ManagerConfig::default()
    };
    let client = client_for(&server, io).await.expect("client");
    let manager = Manager::start(&config, client, io).expect("manager starts");
    // The informers' lists and watches take their tokens too: scale once both watches run.
    let watching = until(Duration::from_secs(30), || {
        ["replicasets", "pods"]
            .iter()
            .all(|resource| watches(&server, resource))
    })
    .await;
    assert!(watching, "the ReplicaSet and Pod watches start");
    server
        .scale_replicaset(DEMO_NAMESPACE, "web", 8)
        .expect("scale up");
    let three = until(Duration::from_secs(20), || live_pods(&server) >= 3).await;
    assert!(three, "the first two batches arrive");
    server
        .scale_replicaset(DEMO_NAMESPACE, "web", 1)
        .expect("scale down");
    let settled = until(Duration::from_secs(30), || {
        converged(&server.replicaset_truth())
    })
    .await;
    let stats = manager.stats().await;
    let violations = server.violations();
    manager.stop();
    server.shutdown().await;
    (violations, stats, settled)
}

fn watches(server: &ApiServer, resource: &str) -> bool {
    server.request_log().iter().any(|entry| {
        matches!(&entry.request, Attributes::Resource(r) if r.verb == "watch" && r.resource == resource)
    })
}

fn live_pods(server: &ApiServer) -> i64 {
    server.replicaset_truth().iter().map(|t| t.live_pods).sum()
}

#[test]
fn with_the_gate_on_creates_overtaken_by_a_scale_down_are_withdrawn_before_they_leave() {
    with_runtime(|io| async move {
        let (violations, stats, settled) = scale_up_overtaken_by_a_scale_down(&io, true).await;
        assert!(violations.is_empty(), "oracle found {violations:#?}");
        assert!(settled, "the set converges at 1");
        assert!(
            stats.controllers[0].writes_withdrawn > 0,
            "the third batch waited for tokens and was withdrawn"
        );
    });
}

#[test]
fn with_the_gate_off_the_queued_creates_land_after_the_scale_down() {
    with_runtime(|io| async move {
        let (violations, stats, _) = scale_up_overtaken_by_a_scale_down(&io, false).await;
        assert!(
            violations
                .iter()
                .any(|v| v.kind == tidemark_loadgen::ViolationKind::OverCreate),
            "a naive controller sends what it decided for 8: {violations:?}"
        );
        assert_eq!(stats.controllers[0].writes_withdrawn, 0);
    });
}
