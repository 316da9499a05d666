//! Graceful deletion of Pods, finalizers, propagation policies and garbage collection.

use crate::common::replicaset_uid;
use std::time::{Duration, Instant};

use crate::common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use tidemark_loadgen::Resource;

/// Waits until `f` holds, or fails after 5 s.
async fn eventually<F: AsyncFnMut() -> bool>(what: &str, mut f: F) -> TestResult {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f().await {
        if Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn bound_pod(name: &str) -> k8s_openapi::api::core::v1::Pod {
    let mut p = pod(name);
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = Some("node-0".into());
    }
    p
}

#[tokio::test]
async fn graceful_pod_delete_sets_deletion_timestamp_then_removes() -> TestResult {
    let (server, client) = start(kubelet_config()).await?;
    let api = pods(&client, "default");
    let created = api.create(&PostParams::default(), &bound_pod("a")).await?;
    let from = created
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let mut events = api
        .watch(&WatchParams::default().timeout(10), &from)
        .await?
        .boxed();
    let started = Instant::now();
    let pending = api
        .delete("a", &DeleteParams::default())
        .await?
        .left()
        .ok_or("a graceful delete returns the object")?;
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert_eq!(pending.metadata.deletion_grace_period_seconds, Some(30));
    assert!(api.get("a").await.is_ok(), "still there while terminating");
    let mut seen = Vec::new();
    while let Some(ev) = events.try_next().await? {
        match ev {
            WatchEvent::Modified(p) if p.metadata.deletion_timestamp.is_some() => {
                seen.push("MODIFIED terminating")
            }
            WatchEvent::Deleted(_) => {
                seen.push("DELETED");
                break;
            }
            _ => {}
        }
    }
    assert_eq!(seen.first(), Some(&"MODIFIED terminating"));
    assert_eq!(seen.last(), Some(&"DELETED"));
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "removed after the kubelet's delay"
    );
    assert_eq!(
        api_code(&api.get("a").await.err().ok_or("pod kept")?),
        Some(404)
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_zero_grace_period_deletes_a_bound_pod_at_once() -> TestResult {
    let (server, client) = start(kubelet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &bound_pod("a")).await?;
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    api.delete("a", &dp).await?;
    assert_eq!(
        api_code(&api.get("a").await.err().ok_or("pod kept")?),
        Some(404)
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_finalizer_holds_an_object_until_an_update_removes_it() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let p = pod_json(json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}));
    api.create(&PostParams::default(), &p).await?;
    api.delete("held", &DeleteParams::default()).await?;
    let held = api.get("held").await?;
    assert!(held.metadata.deletion_timestamp.is_some());
    let pp = PatchParams::default();
    api.patch(
        "held",
        &pp,
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    assert_eq!(
        api_code(&api.get("held").await.err().ok_or("pod kept")?),
        Some(404)
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn orphan_propagation_keeps_dependents_without_their_owner_reference() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let uid = replicaset_uid(&client, "web", 1).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &owned_pod("web-1", "web", &uid))
        .await?;
    replicasets(&client, "default")
        .delete("web", &DeleteParams::orphan())
        .await?;
    let kept = api.get("web-1").await?;
    assert!(
        kept.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn foreground_propagation_removes_the_owner_after_its_dependents() -> TestResult {
    let (server, client) = start(kubelet_config()).await?;
    let rs_api = replicasets(&client, "default");
    let rs = rs_api
        .create(&PostParams::default(), &replicaset("web", 1))
        .await?;
    let uid = rs.metadata.uid.clone().unwrap_or_default();
    let api = pods(&client, "default");
    let mut p = owned_pod("web-1", "web", &uid);
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = Some("node-0".into());
    }
    api.create(&PostParams::default(), &p).await?;
    rs_api.delete("web", &DeleteParams::foreground()).await?;
    let owner = rs_api.get("web").await?;
    assert!(owner.metadata.deletion_timestamp.is_some());
    assert!(
        owner
            .metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"foregroundDeletion".to_string())
    );
    assert!(
        api.get("web-1")
            .await?
            .metadata
            .deletion_timestamp
            .is_some()
    );
    eventually("the owner to go", async || rs_api.get("web").await.is_err()).await?;
    assert!(api.get("web-1").await.is_err(), "the dependent went first");
    let revisions: Vec<_> = server
        .writes()
        .into_iter()
        .filter(|w| w.name == "web" || w.name == "web-1")
        .map(|w| (w.resource, w.revision))
        .collect();
    let last_pod = revisions
        .iter()
        .filter(|(r, _)| *r == Resource::Pods)
        .map(|(_, v)| *v)
        .max();
    let last_rs = revisions
        .iter()
        .filter(|(r, _)| *r == Resource::ReplicaSets)
        .map(|(_, v)| *v)
        .max();
    assert!(last_pod < last_rs, "{revisions:?}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn garbage_collection_follows_controller_references_of_any_kind() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job = jobs
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "once"}, "spec": {"template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]},
            }}})),
        )
        .await?;
    let job_uid = job.metadata.uid.clone().unwrap_or_default();
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let sts = sets
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "db"}, "spec": {
                "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": template("db")}})),
        )
        .await?;
    let sts_uid = sts.metadata.uid.clone().unwrap_or_default();
    let owner = |kind: &str, name: &str, uid: &str, api_version: &str| json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": true}]);
    pods(&client, "default")
        .create(
            &PostParams::default(),
            &pod_json(json!({"metadata": {"name": "once-x", "ownerReferences": owner("Job", "once", &job_uid, "batch/v1")}})),
        )
        .await?;
    let revs: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    revs.create(
        &PostParams::default(),
        &typed(json!({"metadata": {"name": "db-1", "ownerReferences": owner("StatefulSet", "db", &sts_uid, "apps/v1")}, "revision": 1})),
    )
    .await?;
    jobs.delete("once", &DeleteParams::background()).await?;
    sets.delete("db", &DeleteParams::default()).await?;
    assert!(pods(&client, "default").get("once-x").await.is_err());
    assert!(revs.get("db-1").await.is_err());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_terminating_pod_no_longer_counts_as_live() -> TestResult {
    let (server, client) = start(kubelet_config()).await?;
    let uid = replicaset_uid(&client, "web", 2).await?;
    let api = pods(&client, "default");
    for n in ["web-1", "web-2"] {
        let mut p = owned_pod(n, "web", &uid);
        if let Some(spec) = p.spec.as_mut() {
            spec.node_name = Some("node-0".into());
        }
        api.create(&PostParams::default(), &p).await?;
    }
    replicasets(&client, "default")
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 1}})),
        )
        .await?;
    api.delete("web-2", &DeleteParams::default()).await?;
    assert!(
        api.get("web-2")
            .await?
            .metadata
            .deletion_timestamp
            .is_some()
    );
    let truth = server.replicaset_truth();
    assert_eq!(truth[0].live_pods, 1, "terminating pods are not live");
    assert!(server.violations().is_empty(), "{:?}", server.violations());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn gracefully_deleting_a_wanted_pod_is_a_violation_at_its_deletion_timestamp_revision()
-> TestResult {
    let (server, client) = start(kubelet_config()).await?;
    let uid = replicaset_uid(&client, "web", 1).await?;
    let api = pods(&client, "default");
    let mut p = owned_pod("web-1", "web", &uid);
    if let Some(spec) = p.spec.as_mut() {
        spec.node_name = Some("node-0".into());
    }
    api.create(&PostParams::default(), &p).await?;
    let marked = api
        .delete("web-1", &DeleteParams::default())
        .await?
        .left()
        .ok_or("no object")?;
    let violations = server.violations();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(
        violations[0].kind,
        tidemark_loadgen::ViolationKind::WantedPodDeleted
    );
    assert_eq!(violations[0].revision, rv_of(&marked.metadata));
    eventually("the kubelet to remove it", async || {
        api.get("web-1").await.is_err()
    })
    .await?;
    assert_eq!(
        server.violations().len(),
        1,
        "the removal is not a second violation"
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn delete_collection_deletes_only_what_the_selector_matches() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let p = pod_json(json!({"metadata": {"name": name, "labels": {"app": app}}}));
        api.create(&PostParams::default(), &p).await?;
    }
    let lp = kube::api::ListParams::default().labels("app=web");
    let deleted = api
        .delete_collection(&DeleteParams::default(), &lp)
        .await?
        .left()
        .ok_or("no list")?;
    let mut names: Vec<_> = deleted
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    let left = api.list(&kube::api::ListParams::default()).await?;
    assert_eq!(left.items.len(), 1);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn evicting_a_bound_pod_deletes_it_gracefully() -> TestResult {
    let (server, client) = start(kubelet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &bound_pod("a")).await?;
    api.evict("a", &kube::api::EvictParams::default()).await?;
    let terminating = api.get("a").await?;
    assert!(terminating.metadata.deletion_timestamp.is_some());
    eventually("the kubelet to remove it", async || {
        api.get("a").await.is_err()
    })
    .await?;
    let e = api
        .evict("a", &kube::api::EvictParams::default())
        .await
        .err()
        .ok_or("evicted a missing pod")?;
    assert_eq!(api_code(&e), Some(404));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn no_finalizer_can_be_added_to_an_object_being_deleted() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let p = pod_json(json!({"metadata": {"name": "held", "finalizers": ["example.com/a"]}}));
    api.create(&PostParams::default(), &p).await?;
    api.delete("held", &DeleteParams::default()).await?;
    let more = json!({"metadata": {"finalizers": ["example.com/a", "example.com/b"]}});
    let e = api
        .patch("held", &PatchParams::default(), &Patch::Merge(more))
        .await
        .err()
        .ok_or("a finalizer was added")?;
    assert_eq!(api_code(&e), Some(422));
    server.shutdown().await;
    Ok(())
}
