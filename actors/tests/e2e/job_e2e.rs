//! Jobs over HTTP under a Pod watch delay: never more active Pods than `parallelism`, one active
//! Pod per index in Indexed mode, each finished Pod counted exactly once, every Job Complete with
//! exactly `completions` successes. With the Job gate off the lagging cache over-runs parallelism.

use crate::common::with_runtime;
use std::time::{Duration, Instant};
use tidemark_actors::embedded::{DEMO_NAMESPACE, client_for, start_server};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::FeatureGates;
use tidemark_loadgen::{ApiServer, Resource, ServerConfig, Violation};

fn job(name: &str, indexed: bool) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": DEMO_NAMESPACE},
        "spec": {
            "parallelism": 3,
            "completions": 8,
            "backoffLimit": 6,
            "completionMode": if indexed { "Indexed" } else { "NonIndexed" },
            "template": {
                "metadata": {"labels": {"job": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    })
}

fn all_complete(server: &ApiServer) -> bool {
    server.list(Resource::Jobs).iter().all(|j| {
        j["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Complete"))
    })
}

async fn run_jobs(io: &tokio::runtime::Handle, gates: &str) -> (Vec<Violation>, bool, Vec<i64>) {
    let server = start_server(
        io,
        ServerConfig {
            watch_delays: vec![(Resource::Pods, Duration::from_millis(1500))],
            kubelet_ready_after: Duration::from_millis(100),
            job_pod_runtime: Duration::from_millis(700),
            bookmark_interval: Duration::from_millis(300),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server");
    for (name, indexed) in [
        ("count-a", false),
        ("count-b", false),
        ("index-a", true),
        ("index-b", true),
    ] {
        server
            .create(Resource::Jobs, DEMO_NAMESPACE, job(name, indexed))
            .expect("seed");
    }
    let config = ManagerConfig {
        shards: 2,
        controllers: vec!["job".into()],
        gates: FeatureGates::parse(gates, &["Job"]).expect("gates"),
        qps: 500.0,
        burst: 500,
        ..ManagerConfig::default()
    };
    let manager = Manager::start(&config, client_for(&server, io).await.expect("client"), io)
        .expect("manager");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut complete = false;
    while Instant::now() < deadline && !complete {
        complete = all_complete(&server);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let succeeded = server
        .list(Resource::Jobs)
        .iter()
        .map(|j| j["status"]["succeeded"].as_i64().unwrap_or(-1))
        .collect();
    let violations = server.violations();
    manager.stop();
    server.shutdown().await;
    (violations, complete, succeeded)
}

#[test]
fn jobs_complete_within_parallelism_counting_each_pod_once() {
    with_runtime(|io| async move {
        let (violations, complete, succeeded) = run_jobs(&io, "").await;
        assert!(violations.is_empty(), "{violations:#?}");
        assert!(complete, "every Job completes");
        assert!(
            succeeded.iter().all(|s| *s == 8),
            "exactly completions counted: {succeeded:?}"
        );
    });
}

#[test]
fn with_the_job_gate_off_the_lagging_cache_over_runs_parallelism() {
    with_runtime(|io| async move {
        let (violations, _, _) = run_jobs(&io, "StaleControllerConsistencyJob=false").await;
        assert!(
            !violations.is_empty(),
            "the naive controller creates past parallelism"
        );
    });
}

/// A finalizer another controller put on the Job's Pods.
const OTHER_FINALIZER: &str = "example.com/keep";

#[test]
fn removing_the_tracking_finalizer_keeps_every_other_finalizer_on_the_pod() {
    with_runtime(|io| async move {
        let server = start_server(
            &io,
            ServerConfig {
                kubelet_ready_after: Duration::from_millis(100),
                job_pod_runtime: Duration::from_millis(700),
                ..ServerConfig::default()
            },
        )
        .await
        .expect("server");
        let mut spec = job("keep", false);
        spec["spec"]["completions"] = serde_json::json!(3);
        server
            .create(Resource::Jobs, DEMO_NAMESPACE, spec)
            .expect("seed");
        let config = ManagerConfig {
            shards: 1,
            controllers: vec!["job".into()],
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        // Another controller adds its finalizer to each Pod long before the Pod finishes.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && !all_complete(&server) {
            for pod in server.list(Resource::Pods) {
                let name = pod["metadata"]["name"].as_str().unwrap_or_default();
                let has = |p: &serde_json::Value| {
                    p["metadata"]["finalizers"]
                        .as_array()
                        .is_some_and(|f| f.iter().any(|f| f == OTHER_FINALIZER))
                };
                if !has(&pod) {
                    let _ = server.update_with(Resource::Pods, DEMO_NAMESPACE, name, |p| {
                        let list = p["metadata"]["finalizers"]
                            .as_array()
                            .cloned()
                            .unwrap_or_default();
                        let mut list = list;
                        list.push(serde_json::json!(OTHER_FINALIZER));
                        p["metadata"]["finalizers"] = serde_json::Value::Array(list);
                    });
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let complete = all_complete(&server);
        let finalizers: Vec<serde_json::Value> = server
            .list(Resource::Pods)
            .iter()
            .map(|p| p["metadata"]["finalizers"].clone())
            .collect();
        manager.stop();
        server.shutdown().await;
        assert!(complete, "the Job completes");
        assert_eq!(finalizers.len(), 3, "{finalizers:?}");
        for f in finalizers {
            assert_eq!(
                f,
                serde_json::json!([OTHER_FINALIZER]),
                "the Job's finalizer is gone and the other one stays"
            );
        }
    });
}
