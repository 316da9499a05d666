//! Kubelet emulation: Job Pods complete, Node objects and node Leases that renew unless stopped.

use std::time::{Duration, Instant};

use crate::common::*;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use tidemark_loadgen::ServerConfig;

fn fast_kubelet() -> ServerConfig {
    ServerConfig {
        job_pod_runtime: Duration::from_millis(150),
        lease_renew_interval: Duration::from_millis(100),
        node_count: 2,
        ..kubelet_config()
    }
}

async fn phase_of(api: &Api<k8s_openapi::api::core::v1::Pod>, name: &str) -> String {
    api.get(name)
        .await
        .ok()
        .and_then(|p| p.status)
        .and_then(|s| s.phase)
        .unwrap_or_default()
}

#[tokio::test]
async fn pods_of_a_job_succeed_after_the_runtime_or_fail_when_annotated() -> TestResult {
    let (server, client) = start(fast_kubelet()).await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job = jobs
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "once"}, "spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]},
            }}})),
        )
        .await?;
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let api = pods(&client, "default");
    for (name, fail) in [("ok", false), ("bad", true)] {
        let mut meta = json!({"name": name, "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": "once", "uid": uid, "controller": true,
        }]});
        if fail {
            meta["annotations"] = json!({"loadgen.tidemark.dev/fail": "true"});
        }
        api.create(&PostParams::default(), &pod_json(json!({"metadata": meta})))
            .await?;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen_running = false;
    loop {
        let (ok, bad) = (phase_of(&api, "ok").await, phase_of(&api, "bad").await);
        seen_running |= ok == "Running";
        if ok == "Succeeded" && bad == "Failed" {
            break;
        }
        assert!(Instant::now() < deadline, "phases {ok} {bad}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen_running, "a Job's Pod runs before it completes");
    api.create(&PostParams::default(), &pod("plain")).await?;
    while phase_of(&api, "plain").await != "Running" {
        assert!(
            Instant::now() < deadline + Duration::from_secs(5),
            "plain pod never ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(
        phase_of(&api, "plain").await,
        "Running",
        "a Pod no Job owns keeps running"
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn every_fake_node_has_a_ready_node_object_and_a_node_lease() -> TestResult {
    let (server, client) = start(fast_kubelet()).await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let list = nodes.list(&ListParams::default()).await?;
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert_eq!(names, ["node-0", "node-1"]);
    for n in &list.items {
        let conditions = n
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        );
    }
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let lease = leases.get("node-1").await?;
    let spec = lease.spec.ok_or("no spec")?;
    assert_eq!(spec.holder_identity.as_deref(), Some("node-1"));
    assert_eq!(spec.lease_duration_seconds, Some(40));
    assert!(spec.renew_time.is_some());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn node_leases_renew_until_renewal_is_stopped_and_again_when_resumed() -> TestResult {
    let (server, client) = start(fast_kubelet()).await?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let renew = async |name: &str| -> Result<String, kube::Error> {
        let l = leases.get(name).await?;
        Ok(l.spec
            .and_then(|s| s.renew_time)
            .map(|t| format!("{:?}", t.0))
            .unwrap_or_default())
    };
    let first = renew("node-0").await?;
    tokio::time::sleep(Duration::from_millis(350)).await;
    let second = renew("node-0").await?;
    assert_ne!(first, second, "renewed every interval");
    server.stop_lease_renewal("node-0");
    tokio::time::sleep(Duration::from_millis(150)).await;
    let stopped = renew("node-0").await?;
    let other = renew("node-1").await?;
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(renew("node-0").await?, stopped, "not renewed while stopped");
    assert_ne!(renew("node-1").await?, other, "other nodes still renew");
    server.resume_lease_renewal("node-0");
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_ne!(
        renew("node-0").await?,
        stopped,
        "renewed again after resume"
    );
    server.shutdown().await;
    Ok(())
}
