//! End to end over HTTP: the simulated API server on loopback, the real runtime (shard actors,
//! informers, writers) and kube-rs, with a Pod watch delay that makes the cache lag.

use crate::common::{http_get, until, with_runtime};
use std::time::Duration;
use tidemark_actors::embedded::{
    DEMO_NAMESPACE, client_for, converged, replicaset_manifest, start_server,
};
use tidemark_actors::informer::backoff::ReflectorBackoff;
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;
use tidemark_loadgen::{ApiServer, Resource, ServerConfig};
use tokio::time::Instant;

const REPLICASETS: usize = 20;

fn names() -> Vec<String> {
    (0..REPLICASETS).map(|i| format!("rs-{i}")).collect()
}

async fn setup(
    io: &tokio::runtime::Handle,
    pod_delay: Duration,
    consistency: bool,
    replicas: i32,
) -> (ApiServer, Manager) {
    setup_with(io, pod_delay, consistency, replicas, |_| {}).await
}

/// Like [`setup`], with `seed` run against the server before the manager starts.
async fn setup_with(
    io: &tokio::runtime::Handle,
    pod_delay: Duration,
    consistency: bool,
    replicas: i32,
    seed: impl FnOnce(&ApiServer),
) -> (ApiServer, Manager) {
    let server = start_server(
        io,
        ServerConfig {
            watch_delays: vec![(Resource::Pods, pod_delay)],
            kubelet_ready_after: Duration::from_millis(100),
            bookmark_interval: Duration::from_millis(500),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server starts");
    for name in names() {
        server
            .create(
                Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest(&name, replicas),
            )
            .expect("seed");
    }
    seed(&server);
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
    let client = client_for(&server, io).await.expect("client");
    let manager = Manager::start(&config, client, io).expect("manager starts");
    (server, manager)
}

async fn wait_converged(server: &ApiServer, within: Duration) -> bool {
    until(within, || converged(&server.replicaset_truth())).await
}

/// Scales every ReplicaSet 0 -> 5 -> 2 -> 8 -> 3 under a 2 s Pod watch delay; returns whether
/// each step converged.
async fn scale_through_steps(server: &ApiServer, per_step: Duration) -> Vec<bool> {
    let mut converged_steps = Vec::new();
    for replicas in [5, 2, 8, 3] {
        for name in names() {
            server
                .scale_replicaset(DEMO_NAMESPACE, &name, replicas)
                .expect("scale");
        }
        converged_steps.push(wait_converged(server, per_step).await);
    }
    converged_steps
}

#[test]
fn with_the_gate_on_lagging_pods_cause_no_violation_and_every_replicaset_converges() {
    with_runtime(|io| async move {
        let (server, manager) = setup(&io, Duration::from_secs(2), true, 0).await;
        let steps = scale_through_steps(&server, Duration::from_secs(30)).await;
        let stats = manager.stats().await;
        let violations = server.violations();
        manager.stop();
        server.shutdown().await;
        assert_eq!(steps, [true; 4], "every step converges");
        assert!(violations.is_empty(), "oracle found {violations:#?}");
        assert!(
            stats.stale_sync_skips() > 0,
            "the lag was real: keys were skipped"
        );
    });
}

#[test]
fn with_the_gate_off_the_oracle_catches_over_creation() {
    with_runtime(|io| async move {
        let (server, manager) = setup(&io, Duration::from_secs(2), false, 0).await;
        // The naive controller may not settle between steps; give each a fixed window.
        let _ = scale_through_steps(&server, Duration::from_secs(5)).await;
        let stats = manager.stats().await;
        let violations = server.violations();
        manager.stop();
        server.shutdown().await;
        assert!(
            violations
                .iter()
                .any(|v| v.kind == tidemark_loadgen::ViolationKind::OverCreate),
            "the naive controller must over-create under a lagging Pod cache: {violations:?}"
        );
        assert_eq!(stats.stale_sync_skips(), 0);
        assert!(stats.controllers[0].stale_reconciles > 0);
    });
}

#[test]
fn one_parked_replicaset_does_not_slow_the_others() {
    with_runtime(|io| async move {
        let (server, manager) = setup(&io, Duration::ZERO, true, 3).await;
        assert!(
            wait_converged(&server, Duration::from_secs(20)).await,
            "initial convergence"
        );
        let delay = Duration::from_secs(5);
        server.faults().set_watch_delay(Resource::Pods, delay);
        let hot = "rs-0";
        server
            .scale_replicaset(DEMO_NAMESPACE, hot, 6)
            .expect("scale hot");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        for name in names().iter().filter(|n| *n != hot) {
            server
                .update_with(Resource::ReplicaSets, DEMO_NAMESPACE, name, |rs| {
                    rs["spec"]["minReadySeconds"] = serde_json::json!(1);
                })
                .expect("bump generation");
        }
        let all_observed = |server: &ApiServer| {
            server
                .replicaset_truth()
                .iter()
                .filter(|t| t.name != hot)
                .all(|t| t.observed_generation == t.generation)
        };
        while !all_observed(&server) && started.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let others_latency = started.elapsed();
        let hot_truth = server
            .replicaset_truth()
            .into_iter()
            .find(|t| t.name == hot)
            .expect("hot exists");
        let parked_meanwhile = manager.stats().await.parked();
        assert!(
            wait_converged(&server, Duration::from_secs(20)).await,
            "hot converges once its pods arrive"
        );
        manager.stop();
        server.shutdown().await;
        assert!(
            others_latency < Duration::from_secs(2),
            "19 reconciles took {others_latency:?} while one key was parked"
        );
        assert!(
            hot_truth.status_replicas < 6,
            "hot was still waiting for its pods: {hot_truth:?}"
        );
        assert!(
            parked_meanwhile >= 1,
            "hot was parked, not spinning or blocking"
        );
    });
}

#[test]
fn a_pod_with_a_malformed_field_is_kept_and_its_replicaset_takes_no_action() {
    with_runtime(|io| async move {
        // rs-0 wants one Pod and has one, whose status has a field of the wrong type. The
        // manager starts after, so its first list meets the odd Pod.
        let (server, manager) = setup_with(&io, Duration::ZERO, true, 0, |server| {
            server.scale_replicaset(DEMO_NAMESPACE, "rs-0", 1).expect("scale");
            let owner = server.get(Resource::ReplicaSets, DEMO_NAMESPACE, "rs-0").expect("rs-0");
            let odd = serde_json::json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "rs-0-odd", "namespace": DEMO_NAMESPACE, "labels": {"app": "rs-0"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs-0",
                        "uid": owner["metadata"]["uid"], "controller": true}]},
                "spec": {"containers": [{"name": "web", "image": "pause"}]},
            });
            server.create(Resource::Pods, DEMO_NAMESPACE, odd).expect("create odd pod");
            server
                .update_with(Resource::Pods, DEMO_NAMESPACE, "rs-0-odd", |pod| {
                    pod["status"] = serde_json::json!({"phase": "Running",
                        "containerStatuses": [{"name": "web", "restartCount": "two"}]});
                })
                .expect("odd status");
        })
        .await;
        // Every other ReplicaSet converges; rs-0 is left exactly as it is.
        let others = until(Duration::from_secs(20), || {
            let truth = server.replicaset_truth();
            converged(
                &truth
                    .into_iter()
                    .filter(|t| t.name != "rs-0")
                    .collect::<Vec<_>>(),
            )
        })
        .await;
        let warned = until(Duration::from_secs(10), || {
            server.list(Resource::Events).iter().any(|e| {
                e["reason"] == tidemark_engine::MALFORMED_REASON
                    && e["involvedObject"]["name"] == "rs-0-odd"
            })
        })
        .await;
        let malformed = manager
            .informers()
            .iter()
            .map(|(_, s)| s.lenient.load(std::sync::atomic::Ordering::Relaxed))
            .sum::<u64>();
        let odd_still_there = server
            .get(Resource::Pods, DEMO_NAMESPACE, "rs-0-odd")
            .is_some();
        let rs0_pods = server
            .list(Resource::Pods)
            .iter()
            .filter(|p| p["metadata"]["labels"]["app"] == "rs-0")
            .count();
        // The test itself creates the odd pod while rs-0 wants none; only the manager's writes count.
        let violations: Vec<_> = server
            .violations()
            .into_iter()
            .filter(|v| v.user_agent.as_deref() != Some("loadgen"))
            .collect();
        manager.stop();
        server.shutdown().await;
        assert!(others, "the other ReplicaSets converge");
        assert!(
            malformed > 0,
            "the odd pod was counted as malformed, not dropped"
        );
        assert!(odd_still_there, "the odd pod is kept");
        assert_eq!(rs0_pods, 1, "and not replaced");
        assert!(warned, "a Warning Event names the malformed Pod");
        assert!(violations.is_empty(), "{violations:?}");
    });
}

#[test]
fn a_410_on_reconnect_relists_atomically_and_nothing_is_lost() {
    with_runtime(|io| async move {
        let (server, manager) = setup(&io, Duration::ZERO, true, 3).await;
        assert!(
            wait_converged(&server, Duration::from_secs(20)).await,
            "initial convergence"
        );
        let pod_lists = |m: &Manager| {
            m.informers()
                .iter()
                .find(|(r, _)| *r == tidemark_engine::Resource::Pods)
                .map(|(_, s)| s.lists.load(std::sync::atomic::Ordering::Relaxed))
                .unwrap_or(0)
        };
        assert_eq!(pod_lists(&manager), 1);
        // The watch breaks and its version has been compacted when it comes back; meanwhile
        // someone deletes Pods. Only a relist can show those deletions.
        server.faults().expire_next_watches(Resource::Pods, 1);
        server.faults().drop_watches();
        let victims: Vec<String> = server
            .list(Resource::Pods)
            .iter()
            .filter(|p| {
                p["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("rs-1-"))
            })
            .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
            .take(2)
            .collect();
        for name in &victims {
            server
                .delete(Resource::Pods, DEMO_NAMESPACE, name)
                .expect("delete");
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while pod_lists(&manager) < 2 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let relisted = pod_lists(&manager);
        let settled = wait_converged(&server, Duration::from_secs(20)).await;
        let violations: Vec<_> = server
            .violations()
            .into_iter()
            .filter(|v| v.user_agent.as_deref() != Some("loadgen"))
            .collect();
        manager.stop();
        server.shutdown().await;
        assert_eq!(victims.len(), 2);
        assert!(relisted >= 2, "the 410 led to a relist");
        assert!(settled, "rs-1 got its Pods back");
        assert!(violations.is_empty(), "{violations:?}");
    });
}

fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn metrics_show_the_workqueue_and_the_stale_skips_operators_watch() {
    with_runtime(|io| async move {
        let (server, manager) = setup(&io, Duration::from_secs(1), true, 0).await;
        let addr = tidemark_actors::startup::start_metrics(
            &io,
            "127.0.0.1:0".parse().expect("addr"),
            &manager,
        )
        .await
        .expect("metrics endpoint");
        for name in names() {
            server
                .scale_replicaset(DEMO_NAMESPACE, &name, 3)
                .expect("scale");
        }
        assert!(wait_converged(&server, Duration::from_secs(30)).await);
        let (code, text) = http_get(addr, "/metrics").await;
        let (ready, detail) = http_get(addr, "/readyz").await;
        let (healthy, _) = http_get(addr, "/healthz").await;
        manager.stop();
        server.shutdown().await;
        assert_eq!(code, 200, "{text}");
        assert_eq!((ready, healthy), (200, 200), "{detail}");
        assert!(detail.contains("[+] informer pods synced"), "{detail}");
        assert_eq!(
            metric(&text, r#"workqueue_depth{name="replicaset"}"#),
            Some(0.0),
            "{text}"
        );
        assert!(metric(&text, r#"workqueue_adds_total{name="replicaset"}"#) > Some(0.0));
        let skips =
            r#"tidemark_stale_sync_skips_total{controller="replicaset",group="",resource="pods"}"#;
        assert!(
            metric(&text, skips) > Some(0.0),
            "the lagging Pod cache shows: {text}"
        );
        let store_rv = metric(
            &text,
            r#"tidemark_store_resource_version{group="",resource="pods"}"#,
        );
        assert!(store_rv > Some(1.0));
        assert!(
            text.contains(
                r#"workqueue_queue_duration_seconds_bucket{le="0.001",name="replicaset"}"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"tidemark_reconcile_total{controller="replicaset",result="success"}"#)
        );
        assert!(
            !text.contains("# EOF") && text.contains("# TYPE tidemark_reconcile_total counter"),
            "the text format 0.0.4 unless a scraper asks for OpenMetrics"
        );
    });
}

/// The time-travel fault: mid-run the Pod watch breaks, comes back to a 410 and lands on a
/// replica whose Pod cache lags 4 s. Returns the violations the manager's writes caused. The
/// relist backoff is zero: the scenario needs the lagging list in the cache before the
/// scale-down is reconciled (with any backoff the scale-down comes first, asks a barrier and
/// parks its key until the cache reaches it, which hides the time travel).
async fn time_travel(
    io: &tokio::runtime::Handle,
    consistent_relists: bool,
) -> Vec<tidemark_loadgen::Violation> {
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
    for name in names() {
        server
            .create(
                Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest(&name, 1),
            )
            .expect("seed");
    }
    let config = ManagerConfig {
        shards: 2,
        qps: 500.0,
        burst: 500,
        consistent_relists,
        relist_backoff: ReflectorBackoff::new(Duration::ZERO, Duration::ZERO, Duration::ZERO),
        ..ManagerConfig::default()
    };
    let manager = Manager::start(&config, client_for(&server, io).await.expect("client"), io)
        .expect("manager");
    assert!(
        wait_converged(&server, Duration::from_secs(20)).await,
        "initial convergence"
    );
    for (step, replicas) in [6, 2, 7, 3, 5].into_iter().enumerate() {
        for name in names() {
            server
                .scale_replicaset(DEMO_NAMESPACE, &name, replicas)
                .expect("scale");
        }
        if step == 1 {
            server.faults().expire_next_watches(Resource::Pods, 1);
            server
                .faults()
                .set_lagging_replica(Resource::Pods, Duration::from_secs(4));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    server
        .faults()
        .set_lagging_replica(Resource::Pods, Duration::ZERO);
    let settled = wait_converged(&server, Duration::from_secs(30)).await;
    let violations = server
        .violations()
        .into_iter()
        .filter(|v| {
            v.user_agent
                .as_deref()
                .is_some_and(|a| a.starts_with("tidemark"))
        })
        .collect();
    manager.stop();
    server.shutdown().await;
    assert!(settled, "converges once the replica catches up");
    violations
}

#[test]
fn relists_never_move_the_cache_back_in_time() {
    with_runtime(|io| async move {
        let violations = time_travel(&io, true).await;
        assert!(violations.is_empty(), "{violations:#?}");
    });
}

#[test]
fn without_not_older_than_relists_the_gate_alone_lets_time_travel_through() {
    with_runtime(|io| async move {
        let violations = time_travel(&io, false).await;
        assert!(
            !violations.is_empty(),
            "a relist from the lagging replica must show its damage"
        );
    });
}
