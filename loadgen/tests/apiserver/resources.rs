//! The kinds beyond Pods and ReplicaSets: cluster-scoped Nodes and Namespaces, PVCs, Events,
//! DaemonSets, StatefulSets (scale), ControllerRevisions, Jobs, Leases; lists across namespaces.

use crate::common::*;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet, StatefulSet};
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, PersistentVolumeClaim, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn nodes_are_cluster_scoped_with_a_status_subresource() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let nodes: Api<Node> = Api::all(client.clone());
    let n = nodes
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4"}}})),
        )
        .await?;
    assert_eq!(n.metadata.namespace, None);
    let mut with_status = n.clone();
    with_status.status = Some(typed(
        json!({"conditions": [{"type": "Ready", "status": "True"}]}),
    ));
    with_status.metadata.labels = Some([("ignored".to_string(), "x".to_string())].into());
    let after = nodes
        .replace_status("n1", &PostParams::default(), &with_status)
        .await?;
    assert!(rv_of(&after.metadata) > rv_of(&n.metadata));
    let conditions = after.status.and_then(|s| s.conditions).unwrap_or_default();
    assert_eq!(conditions[0].type_, "Ready");
    assert_eq!(
        after.metadata.labels, None,
        "the status subresource writes status only"
    );
    assert_eq!(nodes.list(&ListParams::default()).await?.items.len(), 1);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn namespaces_are_cluster_scoped_active_and_labelled_with_their_name() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api: Api<Namespace> = Api::all(client.clone());
    let ns = api
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "team-a"}})),
        )
        .await?;
    assert_eq!(ns.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    let labels = ns.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels
            .get("kubernetes.io/metadata.name")
            .map(String::as_str),
        Some("team-a")
    );
    assert!(api.get("team-a").await.is_ok());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn deleting_a_namespace_deletes_the_objects_in_it() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api: Api<Namespace> = Api::all(client.clone());
    api.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "gone"}})),
    )
    .await?;
    pods(&client, "gone")
        .create(&PostParams::default(), &pod("a"))
        .await?;
    pods(&client, "kept")
        .create(&PostParams::default(), &pod("b"))
        .await?;
    api.delete("gone", &DeleteParams::default()).await?;
    assert_eq!(
        api_code(
            &pods(&client, "gone")
                .get("a")
                .await
                .err()
                .ok_or("pod kept")?
        ),
        Some(404)
    );
    assert!(pods(&client, "kept").get("b").await.is_ok());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn statefulsets_scale_through_the_scale_subresource() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let sts = api
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "db"}, "spec": {
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": template("db"),
            }})),
        )
        .await?;
    assert_eq!(sts.spec.replicas, Some(1));
    let scale: Scale = api
        .patch_scale(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        )
        .await?;
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(4));
    let after = api.get("db").await?;
    assert_eq!(after.spec.replicas, Some(4));
    assert_eq!(after.metadata.generation, Some(2));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_job_without_a_selector_gets_one_generated_from_its_uid() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api: Api<Job> = Api::namespaced(client.clone(), "default");
    let job = api
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "once"}, "spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]},
            }}})),
        )
        .await?;
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let spec = job.spec.ok_or("no spec")?;
    let selector = spec
        .selector
        .and_then(|s| s.match_labels)
        .unwrap_or_default();
    assert_eq!(
        selector.get("batch.kubernetes.io/controller-uid"),
        Some(&uid)
    );
    let labels = spec
        .template
        .metadata
        .and_then(|m| m.labels)
        .unwrap_or_default();
    assert_eq!(labels.get("job-name").map(String::as_str), Some("once"));
    assert_eq!(
        (spec.parallelism, spec.completions, spec.backoff_limit),
        (Some(1), Some(1), Some(6))
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn every_other_kind_is_created_read_listed_across_namespaces_and_deleted() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    for ns in ["a", "b"] {
        let pvc: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns);
        pvc.create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})),
        )
        .await?;
        let ev: Api<Event> = Api::namespaced(client.clone(), ns);
        ev.create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "message": "m"})),
        )
        .await?;
        let ds: Api<DaemonSet> = Api::namespaced(client.clone(), ns);
        ds.create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "agent"}, "spec": {
            "selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")}})),
        )
        .await?;
        let cr: Api<ControllerRevision> = Api::namespaced(client.clone(), ns);
        cr.create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "agent-1"}, "revision": 1})),
        )
        .await?;
        let lease: Api<Lease> = Api::namespaced(client.clone(), ns);
        lease
            .create(
                &PostParams::default(),
                &typed(json!({"metadata": {"name": "lock"},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}})),
            )
            .await?;
        pods(&client, ns)
            .create(&PostParams::default(), &pod("p"))
            .await?;
    }
    let lp = ListParams::default();
    assert_eq!(
        Api::<PersistentVolumeClaim>::all(client.clone())
            .list(&lp)
            .await?
            .items
            .len(),
        2
    );
    assert_eq!(
        Api::<Event>::all(client.clone())
            .list(&lp)
            .await?
            .items
            .len(),
        2
    );
    assert_eq!(
        Api::<DaemonSet>::all(client.clone())
            .list(&lp)
            .await?
            .items
            .len(),
        2
    );
    assert_eq!(
        Api::<ControllerRevision>::all(client.clone())
            .list(&lp)
            .await?
            .items
            .len(),
        2
    );
    assert_eq!(
        Api::<Lease>::all(client.clone())
            .list(&lp)
            .await?
            .items
            .len(),
        2
    );
    assert_eq!(
        Api::<Pod>::all(client.clone()).list(&lp).await?.items.len(),
        2
    );
    let pvc: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "a");
    let got = pvc.get("data").await?;
    assert_eq!(got.status.and_then(|s| s.phase).as_deref(), Some("Pending"));
    let lease: Api<Lease> = Api::namespaced(client.clone(), "b");
    assert_eq!(
        lease
            .get("lock")
            .await?
            .spec
            .and_then(|s| s.holder_identity)
            .as_deref(),
        Some("me")
    );
    lease.delete("lock", &DeleteParams::default()).await?;
    assert_eq!(
        api_code(&lease.get("lock").await.err().ok_or("lease kept")?),
        Some(404)
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn generation_bumps_on_spec_changes_only() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    api.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "agent"}}, "template": template("agent")}})),
    )
    .await?;
    let pp = PatchParams::default();
    let labelled = api
        .patch(
            "agent",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "x"}}})),
        )
        .await?;
    assert_eq!(labelled.metadata.generation, Some(1));
    let status = api
        .patch_status(
            "agent",
            &pp,
            &Patch::Merge(json!({"status": {"numberReady": 3}})),
        )
        .await?;
    assert_eq!(status.metadata.generation, Some(1));
    let changed = api
        .patch(
            "agent",
            &pp,
            &Patch::Merge(json!({"spec": {"minReadySeconds": 5}})),
        )
        .await?;
    assert_eq!(changed.metadata.generation, Some(2));
    server.shutdown().await;
    Ok(())
}
