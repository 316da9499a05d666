//! The PodSet operator end to end: the simulated API server serves its CustomResourceDefinition
//! over HTTPS, the Pod watch lags two seconds, and the example's invariant watches every commit.
//! With the engine's protection on, no PodSet ever has more Pods than it asked for and every
//! one converges; with it off, the same run creates Pods twice.

use serde_json::{Value, json};
use std::time::Duration;
use tidemark_actors::Manager;
use tidemark_actors::builder::with_runtimes;
use tidemark_actors::embedded::{DEMO_NAMESPACE, client_for, start_server};
use tidemark_engine::FeatureGates;
use tidemark_example_podset::{CRD_YAML, NoExcessPods, registration};
use tidemark_loadgen::store::{EventType, LogRead};
use tidemark_loadgen::{ApiServer, Resource, ServerConfig};
use tokio::time::Instant;

const PODSETS: usize = 6;
const STEPS: [u32; 3] = [2, 4, 7];

fn podset(name: &str, replicas: u32) -> Value {
    json!({
        "apiVersion": "examples.tidemark.dev/v1", "kind": "PodSet",
        "metadata": {"name": name, "namespace": DEMO_NAMESPACE},
        "spec": {"replicas": replicas, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    })
}

/// Feeds every commit since `pos` to the invariant; returns the new position.
fn observe(server: &ApiServer, podsets: Resource, check: &mut NoExcessPods, mut pos: u64) -> u64 {
    loop {
        let (events, read_to) = match server.commits_after(pos) {
            LogRead::Events(events, read_to) => (events, read_to),
            LogRead::Compacted(at) => panic!("commits after {pos} were compacted (at {at})"),
        };
        for event in &events {
            let deleted = event.kind == EventType::Deleted;
            if event.resource == podsets && !deleted {
                check.podset(&event.object.value);
            } else if event.resource == Resource::Pods {
                check.pod(&event.object.value, deleted, event.rev);
            }
        }
        if read_to == pos {
            break;
        }
        pos = read_to;
    }
    pos
}

/// Each PodSet has `replicas` live Pods and says so in its status.
fn converged(server: &ApiServer, podsets: Resource, replicas: u32) -> bool {
    let pods = server.list(Resource::Pods);
    server.list(podsets).iter().all(|set| {
        let uid = &set["metadata"]["uid"];
        let live = pods
            .iter()
            .filter(|p| p["metadata"]["ownerReferences"][0]["uid"] == *uid)
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .count();
        live == replicas as usize && set["status"]["replicas"] == json!(replicas)
    })
}

/// Runs the steps with the PodSet gate `on`; returns the invariant's checker, whether every
/// step converged, and the stale-sync skips.
async fn run(io: &tokio::runtime::Handle, on: bool) -> (NoExcessPods, bool, u64) {
    let server = start_server(
        io,
        ServerConfig {
            watch_delays: vec![(Resource::Pods, Duration::from_secs(2))],
            kubelet_ready_after: Duration::from_millis(100),
            bookmark_interval: Duration::from_millis(500),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server starts");
    let crd: Value = serde_saphyr::from_str(CRD_YAML).expect("crd.yaml parses");
    let podsets = server.define(&crd).expect("the CRD is served");
    let gates = if on {
        FeatureGates::default()
    } else {
        FeatureGates::parse("StaleControllerConsistencyPodSet=false", &["PodSet"]).expect("gate")
    };
    let client = client_for(&server, io).await.expect("client");
    let manager = Manager::builder()
        .controller(registration().expect("PodSets register"))
        .shards(2)
        .gates(gates)
        .start(client, io)
        .expect("manager starts");
    let (mut check, mut all_converged) = (NoExcessPods::default(), true);
    let mut pos = server.current_revision();
    for (step, replicas) in STEPS.into_iter().enumerate() {
        for i in 0..PODSETS {
            let name = format!("web-{i}");
            if step == 0 {
                server
                    .create(podsets, DEMO_NAMESPACE, podset(&name, replicas))
                    .expect("create");
            } else {
                server
                    .update_with(podsets, DEMO_NAMESPACE, &name, |set| {
                        set["spec"]["replicas"] = json!(replicas);
                    })
                    .expect("scale");
            }
        }
        let deadline = Instant::now() + Duration::from_secs(if on { 25 } else { 6 });
        let mut done = false;
        while Instant::now() < deadline && !done {
            tokio::time::sleep(Duration::from_millis(10)).await;
            pos = observe(&server, podsets, &mut check, pos);
            done = on && converged(&server, podsets, replicas);
        }
        all_converged &= done || converged(&server, podsets, replicas);
    }
    let skips = manager.stats().await.stale_sync_skips();
    manager.stop();
    server.shutdown().await;
    (check, all_converged, skips)
}

#[test]
fn with_the_gate_on_no_podset_ever_has_more_pods_than_it_asked_for_and_all_converge() {
    with_runtimes(|io| async move {
        let (check, converged, skips) = run(&io, true).await;
        assert!(
            check.breaches().is_empty(),
            "the invariant holds: {:?}",
            check.breaches()
        );
        assert!(converged, "every PodSet reached each step's replicas");
        assert!(skips > 0, "the lagging Pod cache parked keys");
    })
    .expect("I/O runtime");
}

#[test]
fn with_the_gate_off_the_lagging_pod_cache_creates_pods_twice() {
    with_runtimes(|io| async move {
        let (check, _, skips) = run(&io, false).await;
        eprintln!(
            "gate off: {} breaches, the first {:?}",
            check.breaches().len(),
            check.breaches().first()
        );
        assert!(
            !check.breaches().is_empty(),
            "the naive controller must over-create under a lagging Pod cache"
        );
        assert_eq!(skips, 0, "nothing parks with the gate off");
    })
    .expect("I/O runtime");
}
