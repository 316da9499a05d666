//! Events against the simulated API server as client-go's recorder sends them: a repeat is a
//! PATCH of one Event's count, ten distinct messages of one reason become one combined Event,
//! and a storm about one object costs the API server at most the spam filter's burst of 25
//! writes. With kubectl installed, `kubectl describe rs` shows a ReplicaSet's
//! `SuccessfulCreate` Events.

use crate::common::{until, with_runtime};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tidemark_actors::embedded::{
    DEMO_NAMESPACE, client_for, converged, replicaset_manifest, start_server,
};
use tidemark_actors::events::correlator::{Event, EventType, ObjectRef};
use tidemark_actors::events::{EventOptions, EventRecorder};
use tidemark_actors::fence::Fence;
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_loadgen::{Resource, ServerConfig};

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn web() -> ObjectRef {
    ObjectRef {
        kind: "ReplicaSet",
        api_version: "apps/v1",
        namespace: DEMO_NAMESPACE.into(),
        name: "web".into(),
        uid: "uid-web".into(),
    }
}

fn event(reason: &str, message: &str) -> Event {
    Event::new(
        web(),
        "replicaset-controller",
        EventType::Normal,
        reason,
        message,
        now(),
    )
}

#[test]
fn a_storm_about_one_object_costs_at_most_the_spam_burst_in_writes() {
    with_runtime(|io| async move {
        let server = start_server(&io, ServerConfig::default())
            .await
            .expect("server");
        let client = client_for(&server, &io).await.expect("client");
        let recorder = EventRecorder::with_options(
            client,
            io.clone(),
            Arc::new(Fence::open()),
            EventOptions {
                qps: 1000.0,
                burst: 1000,
                ..EventOptions::default()
            },
        );
        let counts = recorder.counts();
        // The same Event three times: one object, counted.
        for _ in 0..3 {
            recorder.record(event("SuccessfulDelete", "Deleted pod: web-a"));
        }
        for i in 0..200 {
            recorder.record(event("SuccessfulCreate", &format!("Created pod: web-{i}")));
        }
        let settled = until(Duration::from_secs(10), || {
            let c = &counts;
            c.created.load(Ordering::Relaxed)
                + c.patched.load(Ordering::Relaxed)
                + c.filtered.load(Ordering::Relaxed)
                + c.failed.load(Ordering::Relaxed)
                == 203
        })
        .await;
        let events = server.list(Resource::Events);
        server.shutdown().await;
        assert!(settled, "every Event was handled: {counts:?}");
        let writes =
            counts.created.load(Ordering::Relaxed) + counts.patched.load(Ordering::Relaxed);
        assert_eq!(writes, 25, "the spam filter's burst: {counts:?}");
        assert_eq!(counts.failed.load(Ordering::Relaxed), 0);
        let deleted: Vec<_> = events
            .iter()
            .filter(|e| e["reason"] == "SuccessfulDelete")
            .collect();
        assert_eq!(deleted.len(), 1, "a repeat is the same Event");
        assert_eq!(deleted[0]["count"], 3);
        let combined: Vec<_> = events
            .iter()
            .filter(|e| {
                e["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("(combined from similar events): "))
            })
            .collect();
        assert_eq!(combined.len(), 1, "one combined Event for the rest");
        assert!(combined[0]["count"].as_i64() > Some(1), "{:?}", combined[0]);
        assert_eq!(
            events.len(),
            1 + 9 + 1,
            "the delete, nine creates on their own, one combined"
        );
    });
}

#[test]
fn a_replicaset_s_pods_are_recorded_as_kube_controller_manager_records_them() {
    with_runtime(|io| async move {
        let server = start_server(
            &io,
            ServerConfig {
                kubelet_ready_after: Duration::from_millis(100),
                ..ServerConfig::default()
            },
        )
        .await
        .expect("server");
        server
            .create(
                Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest("web", 3),
            )
            .expect("seed");
        let uid = server
            .get(Resource::ReplicaSets, DEMO_NAMESPACE, "web")
            .and_then(|rs| rs["metadata"]["uid"].as_str().map(String::from))
            .expect("uid");
        let config = ManagerConfig {
            shards: 1,
            controllers: vec!["replicaset".into()],
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        assert!(
            until(Duration::from_secs(20), || converged(
                &server.replicaset_truth()
            ))
            .await
        );
        server
            .scale_replicaset(DEMO_NAMESPACE, "web", 1)
            .expect("scale down");
        let recorded = |reason: &str, n: usize| {
            server
                .list(Resource::Events)
                .iter()
                .filter(|e| e["reason"] == reason && e["involvedObject"]["uid"] == uid.as_str())
                .count()
                >= n
        };
        let all = until(Duration::from_secs(20), || {
            recorded("SuccessfulCreate", 3) && recorded("SuccessfulDelete", 2)
        })
        .await;
        let events = server.list(Resource::Events);
        let describe = kubectl_describe(&server).await;
        manager.stop();
        server.shutdown().await;
        assert!(all, "{events:#?}");
        for e in &events {
            assert_eq!(e["source"]["component"], "replicaset-controller");
            assert_eq!(e["involvedObject"]["kind"], "ReplicaSet");
            assert_eq!(e["type"], "Normal");
            let message = e["message"].as_str().unwrap_or_default();
            assert!(
                message.starts_with("Created pod: web-")
                    || message.starts_with("Deleted pod: web-"),
                "{message}"
            );
        }
        if let Some(describe) = describe {
            assert!(describe.contains("SuccessfulCreate"), "{describe}");
            assert!(describe.contains("Created pod: web-"), "{describe}");
            assert!(describe.contains("replicaset-controller"), "{describe}");
        }
    });
}

/// `kubectl describe rs web`, when kubectl is installed.
async fn kubectl_describe(server: &tidemark_loadgen::ApiServer) -> Option<String> {
    let kubectl = ["/usr/bin/kubectl", "/usr/local/bin/kubectl"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())?;
    let kubeconfig = std::env::temp_dir().join(format!(
        "tidemark-events-{}-{}.kubeconfig",
        std::process::id(),
        now().as_nanos()
    ));
    server.write_kubeconfig(&kubeconfig).ok()?;
    // The server runs on the I/O runtime: blocking this thread for kubectl stalls nothing.
    let out = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["describe", "rs", "web", "-n", DEMO_NAMESPACE])
        .output()
        .ok()?;
    let _ = std::fs::remove_file(&kubeconfig);
    assert!(
        out.status.success(),
        "kubectl describe: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
