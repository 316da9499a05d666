//! DaemonSets over HTTP under a Pod watch delay: one Pod per Node, on every Node (Nodes reach
//! every shard), never two on one Node and none deleted from a Node that needs it; a new Node
//! gets its Pod. With the DaemonSet gate off the lagging cache puts a second Pod on Nodes.

use crate::common::with_runtime;
use std::time::{Duration, Instant};
use tidemark_actors::embedded::{DEMO_NAMESPACE, client_for, start_server};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;
use tidemark_loadgen::{ApiServer, Resource, ServerConfig, Violation, ViolationKind};

fn daemonset(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": DEMO_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "agent", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    })
}

/// Live Pods per (DaemonSet, Node).
fn placement(server: &ApiServer) -> Vec<usize> {
    let pods = server.list(Resource::Pods);
    let mut counts = std::collections::BTreeMap::new();
    for ds in ["agent-a", "agent-b", "agent-c"] {
        for node in server.list(Resource::Nodes) {
            let name = node["metadata"]["name"].as_str().unwrap_or("").to_string();
            counts.insert((ds, name), 0);
        }
    }
    for p in pods
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
    {
        let ds = p["metadata"]["ownerReferences"][0]["name"]
            .as_str()
            .unwrap_or("");
        let node = p["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        if let Some(n) = counts.iter_mut().find(|((d, n), _)| *d == ds && *n == node) {
            *n.1 += 1;
        }
    }
    counts.into_values().collect()
}

async fn run(io: &tokio::runtime::Handle, gates: &str) -> (Vec<Violation>, bool) {
    let server = start_server(
        io,
        ServerConfig {
            node_count: 5,
            watch_delays: vec![(Resource::Pods, Duration::from_millis(1500))],
            kubelet_ready_after: Duration::from_millis(200),
            bookmark_interval: Duration::from_millis(300),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server");
    for name in ["agent-a", "agent-b", "agent-c"] {
        server
            .create(Resource::DaemonSets, DEMO_NAMESPACE, daemonset(name))
            .expect("seed");
    }
    let config = ManagerConfig {
        shards: 2,
        controllers: vec!["daemonset".into()],
        gates: FeatureGates::parse(gates, &["DaemonSet"]).expect("gates"),
        qps: 500.0,
        burst: 500,
        ..ManagerConfig::default()
    };
    let manager = Manager::start(&config, client_for(&server, io).await.expect("client"), io)
        .expect("manager");
    tokio::time::sleep(Duration::from_secs(4)).await;
    server
        .create(
            Resource::Nodes,
            "",
            serde_json::json!({"metadata": {"name": "node-late"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        )
        .expect("a new Node");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut placed = false;
    while Instant::now() < deadline && !placed {
        tokio::time::sleep(Duration::from_millis(200)).await;
        placed = placement(&server).iter().all(|n| *n == 1);
    }
    let violations = server.violations();
    manager.stop();
    server.shutdown().await;
    (violations, placed)
}

#[test]
fn every_node_runs_exactly_one_pod_of_each_daemonset() {
    with_runtime(|io| async move {
        let (violations, placed) = run(&io, "").await;
        assert!(violations.is_empty(), "{violations:#?}");
        assert!(
            placed,
            "one Pod per DaemonSet on every Node, the late one included"
        );
    });
}

#[test]
fn with_the_daemonset_gate_off_nodes_get_a_second_pod() {
    with_runtime(|io| async move {
        let (violations, _) = run(&io, "StaleControllerConsistencyDaemonSet=false").await;
        assert!(
            violations
                .iter()
                .any(|v| v.kind == ViolationKind::DaemonSetTwoPodsOnANode),
            "{violations:#?}"
        );
    });
}
