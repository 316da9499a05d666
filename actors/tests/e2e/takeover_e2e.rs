//! Taking over from kube-controller-manager over HTTP: a StatefulSet and a DaemonSet seeded
//! exactly as KCM leaves them (its ControllerRevisions, named by its own hashes and recording the
//! template in its key order with `$patch: replace`; Pods labelled with them; a settled status).
//! Tidemark starts, reconciles every set and writes nothing: no Pod created or deleted, no new
//! revision. Then `kubectl set image` rolls each set as upstream would. A DaemonSet created again
//! over the revision and Pods its predecessor orphaned adopts them and rolls nothing.

use crate::common::{until, with_runtime};
use serde_json::{Value, json};
use std::time::Duration;
use tidemark_actors::embedded::{DEMO_NAMESPACE, client_for, start_server};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_loadgen::{ApiServer, Resource, ServerConfig, Verb};

const NS: &str = DEMO_NAMESPACE;
const STS_REVISION: &str = "db-5d8f9c7b6";
const DS_HASH: &str = "6b8f7c9d5";
const NODES: usize = 3;

fn template(app: &str) -> Value {
    json!({
        "metadata": {"creationTimestamp": null, "labels": {"app": app}},
        "spec": {"containers": [{"name": app, "image": "registry.k8s.io/pause:3.10"}]}
    })
}

/// The revision as KCM writes it: its `getPatch` (the template, keys as Go orders them, with
/// `$patch: replace`), its hash label, its controller reference.
fn kcm_revision(owner: &Value, name: &str, hash: &str) -> Value {
    let kind = owner["kind"].as_str().unwrap_or_default();
    let app = owner["metadata"]["name"].as_str().unwrap_or_default();
    json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": name,
            "labels": {"app": app, "controller-revision-hash": hash},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": kind, "name": app,
                "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "data": {"spec": {"template": {
            "$patch": "replace",
            "spec": {"containers": [{"image": "registry.k8s.io/pause:3.10", "name": app}]},
            "metadata": {"labels": {"app": app}, "creationTimestamp": null},
        }}},
        "revision": 1,
    })
}

fn owned_pod(owner: &Value, name: &str, labels: Value, node: Option<String>) -> Value {
    let kind = owner["kind"].as_str().unwrap_or_default();
    let app = owner["metadata"]["name"].as_str().unwrap_or_default();
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": kind, "name": app,
                "uid": owner["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {"containers": [{"name": app, "image": "registry.k8s.io/pause:3.10"}]},
    });
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// A simulated cluster of [`NODES`] Nodes whose kubelet starts Pods within 100 ms.
async fn cluster(io: &tokio::runtime::Handle) -> ApiServer {
    start_server(
        io,
        ServerConfig {
            node_count: NODES,
            kubelet_ready_after: Duration::from_millis(100),
            bookmark_interval: Duration::from_millis(300),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server")
}

/// Seeds what KCM leaves behind; returns once every Pod is Running and Ready.
async fn seed_as_kcm_leaves_it(server: &ApiServer) {
    let sts = server
        .create(
            Resource::StatefulSets,
            NS,
            json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "db"},
                "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": template("db")},
            }),
        )
        .expect("statefulset");
    let ds = server
        .create(
            Resource::DaemonSets,
            NS,
            json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")},
            }),
        )
        .expect("daemonset");
    let sts_hash = STS_REVISION.trim_start_matches("db-");
    server
        .create(
            Resource::ControllerRevisions,
            NS,
            kcm_revision(&sts, STS_REVISION, sts_hash),
        )
        .expect("statefulset revision");
    server
        .create(
            Resource::ControllerRevisions,
            NS,
            kcm_revision(&ds, &format!("agent-{DS_HASH}"), DS_HASH),
        )
        .expect("daemonset revision");
    for ordinal in 0..3 {
        let name = format!("db-{ordinal}");
        let labels = json!({
            "app": "db", "controller-revision-hash": STS_REVISION,
            "statefulset.kubernetes.io/pod-name": name, "apps.kubernetes.io/pod-index": ordinal.to_string(),
        });
        server
            .create(Resource::Pods, NS, owned_pod(&sts, &name, labels, None))
            .expect("statefulset pod");
        // In order, each once its predecessor is Ready, as KCM made them.
        let ready = until(Duration::from_secs(10), || {
            server
                .get(Resource::Pods, NS, &name)
                .is_some_and(|p| is_ready(&p))
        })
        .await;
        assert!(ready, "{name} runs");
    }
    for node in server.list(Resource::Nodes) {
        let node = node["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let labels = json!({"app": "agent", "controller-revision-hash": DS_HASH, "pod-template-generation": "1"});
        server
            .create(
                Resource::Pods,
                NS,
                owned_pod(&ds, &format!("agent-{node}"), labels, Some(node)),
            )
            .expect("daemonset pod");
    }
    let ready = until(Duration::from_secs(10), || {
        let pods = server.list(Resource::Pods);
        pods.len() == 3 + NODES
            && pods.iter().all(|p| {
                p["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
    })
    .await;
    assert!(ready, "the kubelet runs every seeded Pod");
    server
        .update_with(Resource::StatefulSets, NS, "db", |s| {
            s["status"] = json!({
                "replicas": 3, "readyReplicas": 3, "currentReplicas": 3, "updatedReplicas": 3,
                "availableReplicas": 3, "observedGeneration": 1, "collisionCount": 0,
                "currentRevision": STS_REVISION, "updateRevision": STS_REVISION,
            });
        })
        .expect("statefulset status");
    let nodes = NODES as i64;
    server
        .update_with(Resource::DaemonSets, NS, "agent", |d| {
            d["status"] = json!({
                "desiredNumberScheduled": nodes, "currentNumberScheduled": nodes,
                "numberReady": nodes, "numberAvailable": nodes, "numberUnavailable": 0,
                "updatedNumberScheduled": nodes, "numberMisscheduled": 0, "observedGeneration": 1,
            });
        })
        .expect("daemonset status");
}

/// Pod creates and deletes, and revision creates, the manager committed.
fn disruptions(server: &ApiServer) -> Vec<String> {
    server
        .writes()
        .into_iter()
        .filter(|w| {
            w.user_agent
                .as_deref()
                .is_some_and(|ua| ua.starts_with("tidemark"))
        })
        .filter(|w| {
            matches!(
                (w.resource, w.verb),
                (Resource::Pods, Verb::Create | Verb::Delete) | (Resource::ControllerRevisions, _)
            )
        })
        .map(|w| format!("{:?} {}/{}", w.verb, w.resource, w.name))
        .collect()
}

fn images_and_revisions(server: &ApiServer) -> Vec<(String, String, String)> {
    server
        .list(Resource::Pods)
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                s(&p["metadata"]["name"]),
                s(&p["spec"]["containers"][0]["image"]),
                s(&p["metadata"]["labels"]["controller-revision-hash"]),
            )
        })
        .collect()
}

#[test]
fn taking_over_from_kcm_disrupts_nothing_and_a_template_change_then_rolls() {
    with_runtime(|io| async move {
        let server = cluster(&io).await;
        seed_as_kcm_leaves_it(&server).await;
        let config = ManagerConfig {
            shards: 2,
            controllers: vec!["statefulset".into(), "daemonset".into()],
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        let mut reconciled = false;
        for _ in 0..100 {
            let stats = manager.stats().await;
            if stats.reconciles() >= 2 && stats.parked() == 0 {
                reconciled = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Longer than a resync of a parked key and the shards' slowest timer, so a late write
        // would have come.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let after_takeover = disruptions(&server);
        for (resource, name, image) in [
            (Resource::StatefulSets, "db", "registry.k8s.io/pause:3.11"),
            (Resource::DaemonSets, "agent", "registry.k8s.io/pause:3.11"),
        ] {
            server
                .update_with(resource, NS, name, |s| {
                    s["spec"]["template"]["spec"]["containers"][0]["image"] = json!(image);
                })
                .expect("set image");
        }
        let rolled = until(Duration::from_secs(60), || {
            let pods = images_and_revisions(&server);
            pods.len() == 3 + NODES
                && pods.iter().all(|(_, image, revision)| {
                    image == "registry.k8s.io/pause:3.11"
                        && revision != STS_REVISION
                        && revision != DS_HASH
                })
        })
        .await;
        let set = server.get(Resource::StatefulSets, NS, "db").expect("set");
        let pods = images_and_revisions(&server);
        let violations = server.violations();
        manager.stop();
        server.shutdown().await;
        assert!(reconciled, "the manager reconciled both sets");
        assert_eq!(after_takeover, Vec::<String>::new(), "nothing disrupted");
        assert!(rolled, "every Pod rolled: {pods:?}");
        assert_eq!(
            set["status"]["currentRevision"],
            set["status"]["updateRevision"]
        );
        assert_ne!(set["status"]["updateRevision"], STS_REVISION);
        assert!(violations.is_empty(), "{violations:#?}");
    });
}

/// What a DaemonSet deleted with `propagationPolicy: Orphan` leaves: its revision and Pods, each
/// without an owner.
async fn seed_orphans_of_a_deleted_daemonset(server: &ApiServer) -> Value {
    let ds = server
        .create(
            Resource::DaemonSets,
            NS,
            json!({
                "apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "agent"},
                "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")},
            }),
        )
        .expect("daemonset");
    let mut revision = kcm_revision(&ds, &format!("agent-{DS_HASH}"), DS_HASH);
    revision["metadata"]
        .as_object_mut()
        .map(|m| m.remove("ownerReferences"));
    server
        .create(Resource::ControllerRevisions, NS, revision)
        .expect("orphan revision");
    for node in server.list(Resource::Nodes) {
        let node = node["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let labels = json!({"app": "agent", "controller-revision-hash": DS_HASH, "pod-template-generation": "1"});
        let mut pod = owned_pod(&ds, &format!("agent-{node}"), labels, Some(node));
        pod["metadata"]
            .as_object_mut()
            .map(|m| m.remove("ownerReferences"));
        server.create(Resource::Pods, NS, pod).expect("orphan pod");
    }
    let ready = until(Duration::from_secs(10), || {
        let pods = server.list(Resource::Pods);
        pods.len() == NODES && pods.iter().all(is_ready)
    })
    .await;
    assert!(ready, "the kubelet runs every orphan");
    ds
}

#[test]
fn a_daemonset_created_again_adopts_its_orphaned_history_and_pods_and_rolls_nothing() {
    with_runtime(|io| async move {
        let server = cluster(&io).await;
        let ds = seed_orphans_of_a_deleted_daemonset(&server).await;
        let config = ManagerConfig {
            shards: 2,
            controllers: vec!["daemonset".into()],
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        let owned_by_the_set =
            |v: &Value| v["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"];
        let adopted = until(Duration::from_secs(20), || {
            server
                .get(
                    Resource::ControllerRevisions,
                    NS,
                    &format!("agent-{DS_HASH}"),
                )
                .is_some_and(|r| owned_by_the_set(&r))
                && server.list(Resource::Pods).iter().all(owned_by_the_set)
        })
        .await;
        // Longer than the shards' slowest timer, so a late write would have come.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rolled: Vec<String> = server
            .writes()
            .into_iter()
            .filter(|w| {
                w.user_agent
                    .as_deref()
                    .is_some_and(|ua| ua.starts_with("tidemark"))
            })
            .filter(|w| matches!(w.verb, Verb::Create | Verb::Delete))
            .map(|w| format!("{:?} {}/{}", w.verb, w.resource, w.name))
            .collect();
        let violations = server.violations();
        manager.stop();
        server.shutdown().await;
        assert!(adopted, "the revision and every Pod adopted");
        assert_eq!(
            rolled,
            Vec::<String>::new(),
            "no Pod or revision created or deleted"
        );
        assert!(violations.is_empty(), "{violations:#?}");
    });
}
