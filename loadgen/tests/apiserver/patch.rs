//! PATCH: JSON patch, strategic merge patch, server-side apply, resourceVersion preconditions.

use crate::common::*;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Sends a JSON patch (`application/json-patch+json`) to Pod `name` in `default`.
async fn json_patch(client: &kube::Client, name: &str, ops: Value) -> Result<Pod, kube::Error> {
    let req = http::Request::patch(format!("/api/v1/namespaces/default/pods/{name}"))
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&ops).unwrap_or_default())
        .map_err(kube::Error::HttpError)?;
    client.request::<Pod>(req).await
}

#[tokio::test]
async fn json_patch_operations_apply_and_a_failing_test_is_422() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    let ops = json!([
        {"op": "add", "path": "/metadata/labels", "value": {"tier": "web"}},
        {"op": "copy", "from": "/metadata/labels/tier", "path": "/metadata/labels/copy"},
        {"op": "replace", "path": "/spec/containers/0/image", "value": "registry.invalid/app:2"},
        {"op": "test", "path": "/metadata/name", "value": "a"},
    ]);
    let patched = json_patch(&client, "a", ops).await?;
    let labels = patched.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("copy").map(String::as_str), Some("web"));
    let image = patched
        .spec
        .and_then(|s| s.containers.into_iter().next())
        .and_then(|c| c.image);
    assert_eq!(image.as_deref(), Some("registry.invalid/app:2"));
    let failing = json!([
        {"op": "remove", "path": "/metadata/labels/copy"},
        {"op": "test", "path": "/metadata/name", "value": "b"},
    ]);
    let e = json_patch(&client, "a", failing)
        .await
        .err()
        .ok_or("patched")?;
    assert_eq!(api_code(&e), Some(422));
    let labels = api.get("a").await?.metadata.labels.unwrap_or_default();
    assert!(
        labels.contains_key("copy"),
        "a failed patch changes nothing"
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn strategic_merge_patch_merges_containers_by_name() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let p = pod_json(json!({"metadata": {"name": "a"}}));
    let mut p2 = p.clone();
    if let Some(spec) = p2.spec.as_mut() {
        let mut side = spec.containers[0].clone();
        side.name = "side".into();
        spec.containers.push(side);
    }
    api.create(&PostParams::default(), &p2).await?;
    let patch =
        json!({"spec": {"containers": [{"name": "side", "image": "registry.invalid/side:2"}]}});
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::Strategic(patch))
        .await?;
    let containers = patched.spec.map(|s| s.containers).unwrap_or_default();
    let images: Vec<_> = containers
        .iter()
        .map(|c| (c.name.clone(), c.image.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        images,
        [
            ("app".to_string(), "registry.invalid/app:1".to_string()),
            ("side".to_string(), "registry.invalid/side:2".to_string())
        ]
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn strategic_merge_patch_of_status_merges_conditions_by_type() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    let pp = PatchParams::default();
    let two = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}});
    api.patch_status("a", &pp, &Patch::Strategic(two)).await?;
    let one = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let patched = api.patch_status("a", &pp, &Patch::Strategic(one)).await?;
    let conditions = patched
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    let got: Vec<_> = conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str()))
        .collect();
    assert_eq!(got, [("Ready", "True"), ("PodScheduled", "True")]);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn server_side_apply_creates_then_merges_and_needs_a_field_manager() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = replicasets(&client, "default");
    let applied = replicaset("web", 2);
    let e = api
        .patch("web", &PatchParams::default(), &Patch::Apply(&applied))
        .await
        .err()
        .ok_or("applied without a field manager")?;
    assert_eq!(api_code(&e), Some(422));
    let pp = PatchParams::apply("tidemark-test");
    let created = api.patch("web", &pp, &Patch::Apply(&applied)).await?;
    assert_eq!(created.spec.replicas, Some(2));
    let mut again = applied.clone();
    again.spec.replicas = Some(3);
    let merged = api.patch("web", &pp, &Patch::Apply(&again)).await?;
    assert_eq!(merged.spec.replicas, Some(3));
    assert_eq!(merged.metadata.uid, created.metadata.uid);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_resource_version_inside_a_patch_is_a_precondition() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let created = api.create(&PostParams::default(), &pod("a")).await?;
    let old = created
        .metadata
        .resource_version
        .clone()
        .unwrap_or_default();
    let pp = PatchParams::default();
    api.patch(
        "a",
        &pp,
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await?;
    let stale = json!({"metadata": {"resourceVersion": old, "labels": {"x": "2"}}});
    let e = api
        .patch("a", &pp, &Patch::Merge(stale))
        .await
        .err()
        .ok_or("stale merge patch applied")?;
    assert_eq!(api_code(&e), Some(409));
    let ops = json!([
        {"op": "replace", "path": "/metadata/resourceVersion", "value": old},
        {"op": "add", "path": "/metadata/labels/y", "value": "1"},
    ]);
    let e = json_patch(&client, "a", ops)
        .await
        .err()
        .ok_or("stale JSON patch applied")?;
    assert_eq!(api_code(&e), Some(409));
    let current = api
        .get("a")
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let fresh = json!({"metadata": {"resourceVersion": current, "labels": {"x": "3"}}});
    api.patch("a", &pp, &Patch::Merge(fresh)).await?;
    server.shutdown().await;
    Ok(())
}

/// The patch upstream's `AdoptPod` sends: the owner as controller, and the Pod's UID.
fn adopt(owner: &str, pod_uid: &str) -> Value {
    json!({"metadata": {
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
            "uid": format!("uid-{owner}"), "controller": true, "blockOwnerDeletion": true}],
        "uid": pod_uid,
    }})
}

#[tokio::test]
async fn a_second_adoption_and_an_adoption_of_another_uid_are_422() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let created = api.create(&PostParams::default(), &pod("loose")).await?;
    let uid = created.metadata.uid.clone().unwrap_or_default();
    let strategic = |p: Value| Patch::Strategic(p);
    let stale = api
        .patch(
            "loose",
            &PatchParams::default(),
            &strategic(adopt("a", "not-this-pod")),
        )
        .await
        .err()
        .ok_or("a patch naming another UID applied")?;
    assert_eq!(api_code(&stale), Some(422));
    let adopted = api
        .patch(
            "loose",
            &PatchParams::default(),
            &strategic(adopt("a", &uid)),
        )
        .await?;
    assert_eq!(adopted.metadata.owner_references.map(|r| r.len()), Some(1));
    let second = api
        .patch(
            "loose",
            &PatchParams::default(),
            &strategic(adopt("b", &uid)),
        )
        .await
        .err()
        .ok_or("a second controller was accepted")?;
    assert_eq!(api_code(&second), Some(422));
    let release = json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "uid-a"}], "uid": uid}});
    let released = api
        .patch("loose", &PatchParams::default(), &strategic(release))
        .await?;
    assert!(
        released
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    server.shutdown().await;
    Ok(())
}
