//! Node lifecycle over HTTP: the node Lease watch lags past the grace period while the Leases are
//! renewed. With the gate on no live Node is marked and a Node that really went silent is; with
//! the controller's own gate off the lag marks live Nodes. With `--node-selector`, a silent Node
//! outside the selected pool is left alone.

use crate::common::with_runtime;
use std::sync::Arc;
use std::time::Duration;
use tidemark_actors::embedded::{client_for, start_server};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;
use tidemark_engine::labels::LabelSelector;
use tidemark_loadgen::node_oracle::live_nodes_marked;
use tidemark_loadgen::oracle::node_is_marked;
use tidemark_loadgen::{Resource, ServerConfig};

const GRACE: Duration = Duration::from_secs(2);

struct Outcome {
    wrongly_marked: usize,
    silent_node_marked: bool,
    live_reads: u64,
}

async fn lagging_lease_watch(io: &tokio::runtime::Handle, gates: &str) -> Outcome {
    let server = start_server(
        io,
        ServerConfig {
            node_count: 4,
            lease_renew_interval: Duration::from_millis(300),
            bookmark_interval: Duration::from_millis(200),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server");
    let config = ManagerConfig {
        shards: 2,
        controllers: vec!["nodelifecycle".into()],
        gates: FeatureGates::parse(gates, &["ReplicaSet", "NodeLifecycle"]).expect("gates"),
        node_monitor_grace_period: GRACE,
        ..ManagerConfig::default()
    };
    let manager = Manager::start(&config, client_for(&server, io).await.expect("client"), io)
        .expect("manager");
    tokio::time::sleep(Duration::from_secs(1)).await;
    server.stop_lease_renewal("node-3");
    server
        .faults()
        .set_watch_delay(Resource::Leases, Duration::from_secs(5));
    tokio::time::sleep(Duration::from_secs(6)).await;
    server
        .faults()
        .set_watch_delay(Resource::Leases, Duration::ZERO);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let stats = manager.stats().await;
    manager.stop();
    let silent_node_marked = server
        .get(Resource::Nodes, "", "node-3")
        .is_some_and(|n| node_is_marked(&n));
    let wrongly_marked = live_nodes_marked(&server.writes(), GRACE).len();
    server.shutdown().await;
    Outcome {
        wrongly_marked,
        silent_node_marked,
        live_reads: stats.live_reads(),
    }
}

#[test]
fn a_lagging_lease_watch_marks_no_live_node_and_the_silent_one_is_marked() {
    with_runtime(|io| async move {
        let outcome = lagging_lease_watch(&io, "").await;
        assert_eq!(
            outcome.wrongly_marked, 0,
            "no Node renewed within the grace period is marked"
        );
        assert!(
            outcome.silent_node_marked,
            "the Node whose kubelet stopped is marked"
        );
        assert!(
            outcome.live_reads > 0,
            "each marking decision waited for a barrier"
        );
    });
}

#[test]
fn with_the_node_lifecycle_gate_off_the_lag_marks_live_nodes() {
    with_runtime(|io| async move {
        let outcome =
            lagging_lease_watch(&io, "StaleControllerConsistencyNodeLifecycle=false").await;
        assert!(
            outcome.wrongly_marked > 0,
            "the naive controller trusts the lagging cache"
        );
    });
}

#[test]
fn with_a_node_selector_only_the_silent_node_of_the_selected_pool_is_marked() {
    with_runtime(|io| async move {
        let server = start_server(
            &io,
            ServerConfig {
                node_count: 4,
                lease_renew_interval: Duration::from_millis(300),
                bookmark_interval: Duration::from_millis(200),
                ..ServerConfig::default()
            },
        )
        .await
        .expect("server");
        tidemark_loadgen::scenario::user::label_nodes(&server, "pool", &["node-3".into()], 1)
            .expect("label node-3");
        let config = ManagerConfig {
            shards: 2,
            controllers: vec!["nodelifecycle".into()],
            node_monitor_grace_period: GRACE,
            node_selector: Arc::new(LabelSelector::parse("pool=true").expect("selector")),
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        tokio::time::sleep(Duration::from_secs(1)).await;
        server.stop_lease_renewal("node-2");
        server.stop_lease_renewal("node-3");
        tokio::time::sleep(Duration::from_secs(5)).await;
        manager.stop();
        let marked = |name| {
            server
                .get(Resource::Nodes, "", name)
                .is_some_and(|n| node_is_marked(&n))
        };
        assert!(
            marked("node-3"),
            "the silent Node of the selected pool is marked"
        );
        assert!(
            !marked("node-2"),
            "the silent Node outside the pool is another manager's"
        );
        server.shutdown().await;
    });
}
