//! StatefulSet over HTTP under a Pod watch delay: scaled down and straight back up, an
//! OrderedReady set must recreate its ordinals in order (never one before its predecessor is
//! Running and Ready) and delete only those at or above `spec.replicas`. With the controller's
//! gate off, the lagging cache still shows a deleted predecessor Ready and the next ordinal is
//! created too early.

use crate::common::{until, with_runtime};
use std::time::{Duration, Instant};
use tidemark_actors::embedded::{DEMO_NAMESPACE, client_for, start_server};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;
use tidemark_loadgen::{ApiServer, Resource, ServerConfig, Violation, ViolationKind};

fn statefulset(name: &str, replicas: i32) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": DEMO_NAMESPACE},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "db", "image": "registry.k8s.io/pause:3.10"}]}
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
            }]
        }
    })
}

fn scale(server: &ApiServer, name: &str, replicas: i32) {
    server
        .update_with(Resource::StatefulSets, DEMO_NAMESPACE, name, |s| {
            s["spec"]["replicas"] = serde_json::json!(replicas);
        })
        .expect("scale");
}

/// The StatefulSet controller alone on two shards, with `gates`.
fn manager_config(gates: &str) -> ManagerConfig {
    ManagerConfig {
        shards: 2,
        controllers: vec!["statefulset".into()],
        gates: FeatureGates::parse(gates, &["StatefulSet"]).expect("gates"),
        qps: 500.0,
        burst: 500,
        ..ManagerConfig::default()
    }
}

async fn settle(server: &ApiServer, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if server.statefulset_truth().iter().all(|t| {
            t.live_pods == t.spec_replicas
                && t.status_ready_replicas == t.spec_replicas
                && t.observed_generation == t.generation
        }) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn down_and_up(io: &tokio::runtime::Handle, gates: &str) -> (Vec<Violation>, bool) {
    let server = start_server(
        io,
        ServerConfig {
            watch_delays: vec![(Resource::Pods, Duration::from_millis(1500))],
            kubelet_ready_after: Duration::from_millis(300),
            bookmark_interval: Duration::from_millis(300),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server");
    let names = ["db-a", "db-b", "db-c"];
    for name in names {
        server
            .create(Resource::StatefulSets, DEMO_NAMESPACE, statefulset(name, 3))
            .expect("seed");
    }
    let config = manager_config(gates);
    let manager = Manager::start(&config, client_for(&server, io).await.expect("client"), io)
        .expect("manager");
    let first = settle(&server, Duration::from_secs(40)).await;
    for round in 0..2 {
        for name in names {
            scale(&server, name, 1);
        }
        tokio::time::sleep(Duration::from_millis(2500 + round * 700)).await;
        for name in names {
            scale(&server, name, 3);
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let settled = first && settle(&server, Duration::from_secs(40)).await;
    let violations = server.violations();
    manager.stop();
    server.shutdown().await;
    (violations, settled)
}

#[test]
fn an_ordered_set_scaled_down_and_up_recreates_its_ordinals_in_order() {
    with_runtime(|io| async move {
        let (violations, settled) = down_and_up(&io, "").await;
        assert!(violations.is_empty(), "{violations:#?}");
        assert!(settled, "every set converges");
    });
}

#[test]
fn with_the_statefulset_gate_off_an_ordinal_comes_before_its_predecessor_is_ready() {
    with_runtime(|io| async move {
        let (violations, _) = down_and_up(&io, "StaleControllerConsistencyStatefulSet=false").await;
        assert!(
            violations.iter().any(|v| matches!(
                v.kind,
                ViolationKind::OrdinalBeforePredecessorReady | ViolationKind::WantedOrdinalDeleted
            )),
            "the lagging cache shows a deleted predecessor as Ready: {violations:#?}"
        );
    });
}

#[test]
fn a_template_change_rolls_every_pod_highest_ordinal_first_and_completes_the_status() {
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
        .expect("server");
        server
            .create(Resource::StatefulSets, DEMO_NAMESPACE, statefulset("db", 3))
            .expect("seed");
        let config = manager_config("");
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        assert!(
            settle(&server, Duration::from_secs(30)).await,
            "first settle"
        );
        let pod_uids = |server: &ApiServer| -> Vec<String> {
            (0..3)
                .map(|i| {
                    server
                        .get(Resource::Pods, DEMO_NAMESPACE, &format!("db-{i}"))
                        .map(|p| p["metadata"]["uid"].as_str().unwrap_or("").to_string())
                        .unwrap_or_default()
                })
                .collect()
        };
        let before = pod_uids(&server);
        server
            .update_with(Resource::StatefulSets, DEMO_NAMESPACE, "db", |s| {
                s["spec"]["template"]["spec"]["containers"][0]["image"] =
                    serde_json::json!("registry.k8s.io/pause:3.11");
            })
            .expect("set image");
        let done = until(Duration::from_secs(40), || {
            let Some(set) = server.get(Resource::StatefulSets, DEMO_NAMESPACE, "db") else {
                return false;
            };
            let status = &set["status"];
            status["currentRevision"] == status["updateRevision"]
                && status["updatedReplicas"] == 3
                && status["readyReplicas"] == 3
                && (0..3).all(|i| {
                    server
                        .get(Resource::Pods, DEMO_NAMESPACE, &format!("db-{i}"))
                        .is_some_and(|p| {
                            p["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.11"
                                && p["metadata"]["labels"]["controller-revision-hash"]
                                    == status["updateRevision"]
                        })
                })
        })
        .await;
        let after = pod_uids(&server);
        let violations = server.violations();
        manager.stop();
        server.shutdown().await;
        assert!(
            done,
            "every Pod at the update revision and the rollout complete"
        );
        assert!(
            before.iter().zip(&after).all(|(b, a)| b != a),
            "every Pod was replaced: {before:?} -> {after:?}"
        );
        assert!(violations.is_empty(), "{violations:#?}");
    });
}
