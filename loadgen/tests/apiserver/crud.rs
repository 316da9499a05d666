//! Create, get, update, status and delete over HTTP with kube-rs, and malformed requests.

use crate::common::replicaset_uid;
use crate::common::*;
use http::Request;
use kube::api::{DeleteParams, PostParams, Preconditions};
use serde_json::json;
use tidemark_loadgen::Resource;

#[tokio::test]
async fn generate_name_creates_distinct_names() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..20 {
        let p = pod_json(json!({"metadata": {"generateName": "web-"}}));
        let created = api.create(&PostParams::default(), &p).await?;
        let name = created.metadata.name.unwrap_or_default();
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        assert!(created.metadata.uid.is_some());
        assert!(created.metadata.creation_timestamp.is_some());
        assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
        names.insert(name);
    }
    assert_eq!(names.len(), 20);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn creating_an_existing_name_is_already_exists_and_no_name_is_invalid() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    let e = api.create(&PostParams::default(), &pod("a")).await.err();
    let e = e.ok_or("second create succeeded")?;
    assert_eq!(api_code(&e), Some(409));
    assert_eq!(api_reason(&e).as_deref(), Some("AlreadyExists"));
    let e = api
        .create(&PostParams::default(), &pod_json(json!({"metadata": {}})))
        .await
        .err();
    assert_eq!(e.as_ref().and_then(api_code), Some(422));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_update_with_a_stale_resource_version_gets_409_conflict() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = replicasets(&client, "default");
    let v1 = api
        .create(&PostParams::default(), &replicaset("web", 2))
        .await?;
    assert_eq!(v1.metadata.generation, Some(1));
    let mut v2 = v1.clone();
    v2.spec.replicas = Some(3);
    let v2 = api.replace("web", &PostParams::default(), &v2).await?;
    assert!(rv_of(&v2.metadata) > rv_of(&v1.metadata));
    assert_eq!(v2.metadata.generation, Some(2));
    let mut stale = v1.clone();
    stale.spec.replicas = Some(5);
    let e = api
        .replace("web", &PostParams::default(), &stale)
        .await
        .err()
        .ok_or("stale update succeeded")?;
    assert_eq!(api_code(&e), Some(409));
    assert_eq!(api_reason(&e).as_deref(), Some("Conflict"));
    assert!(
        e.to_string().contains("the object has been modified"),
        "{e}"
    );
    // An empty resourceVersion is an unconditional update.
    stale.metadata.resource_version = None;
    let v3 = api.replace("web", &PostParams::default(), &stale).await?;
    assert_eq!(v3.spec.replicas, Some(5));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_status_subresource_changes_only_status() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = replicasets(&client, "default");
    let created = api
        .create(&PostParams::default(), &replicaset("web", 2))
        .await?;
    let mut body = serde_json::to_value(&created)?;
    body["spec"]["replicas"] = json!(9);
    body["status"] = json!({"replicas": 2, "readyReplicas": 1, "observedGeneration": 1});
    let body: k8s_openapi::api::apps::v1::ReplicaSet = serde_json::from_value(body)?;
    let updated = api
        .replace_status("web", &PostParams::default(), &body)
        .await?;
    assert_eq!(updated.spec.replicas, Some(2));
    assert_eq!(updated.status.as_ref().map(|s| s.replicas), Some(2));
    assert_eq!(
        updated.status.as_ref().and_then(|s| s.ready_replicas),
        Some(1)
    );
    assert_eq!(updated.metadata.generation, Some(1));
    // And the main resource ignores status.
    let mut main = serde_json::to_value(&updated)?;
    main["status"] = json!({"replicas": 7});
    let main: k8s_openapi::api::apps::v1::ReplicaSet = serde_json::from_value(main)?;
    let after = api.replace("web", &PostParams::default(), &main).await?;
    assert_eq!(after.status.map(|s| s.replicas), Some(2));
    let truth = server.replicaset_truth();
    assert_eq!(truth[0].status_ready_replicas, 1);
    assert_eq!(truth[0].observed_generation, 1);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn delete_checks_preconditions_and_returns_the_object() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let created = api.create(&PostParams::default(), &pod("a")).await?;
    let wrong = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("not-it".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let e = api
        .delete("a", &wrong)
        .await
        .err()
        .ok_or("delete with a wrong uid succeeded")?;
    assert_eq!(api_code(&e), Some(409));
    let right = DeleteParams {
        preconditions: Some(Preconditions {
            uid: created.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let deleted = api.delete("a", &right).await?;
    let deleted = deleted
        .left()
        .ok_or("delete returned a Status, not the object")?;
    assert!(rv_of(&deleted.metadata) > rv_of(&created.metadata));
    let e = api.get("a").await.err().ok_or("deleted pod still there")?;
    assert_eq!(api_code(&e), Some(404));
    let pod_writes = server
        .writes()
        .iter()
        .filter(|w| w.resource == Resource::Pods)
        .count();
    assert_eq!(pod_writes, 2);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn deleting_a_replicaset_garbage_collects_its_pods() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let uid = replicaset_uid(&client, "web", 1).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &owned_pod("web-1", "web", &uid))
        .await?;
    api.create(&PostParams::default(), &pod("loner")).await?;
    replicasets(&client, "default")
        .delete("web", &DeleteParams::default())
        .await?;
    assert!(server.get(Resource::Pods, "default", "web-1").is_none());
    assert!(server.get(Resource::Pods, "default", "loner").is_some());
    assert!(server.violations().is_empty());
    server.shutdown().await;
    Ok(())
}

async fn raw(
    client: &kube::Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<String, kube::Error> {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(body)
        .map_err(kube::Error::HttpError)?;
    client.request_text(req).await
}

#[tokio::test]
async fn malformed_bodies_give_400_status_not_a_crash() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let path = "/api/v1/namespaces/default/pods";
    let cases: Vec<(&str, &str, &str, Vec<u8>, u16)> = vec![
        ("POST", path, "application/json", b"{nope".to_vec(), 400),
        ("POST", path, "application/json", b"[1,2]".to_vec(), 400),
        (
            "POST",
            path,
            "application/json",
            b"{\"metadata\": 5}".to_vec(),
            400,
        ),
        (
            "POST",
            path,
            "application/json",
            b"{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"x\"}}".to_vec(),
            400,
        ),
        (
            "POST",
            path,
            "application/yaml",
            b"metadata: {}".to_vec(),
            415,
        ),
        (
            "POST",
            path,
            "application/json",
            vec![b' '; 4 * 1024 * 1024],
            413,
        ),
        (
            "PUT",
            "/api/v1/namespaces/default/pods/x",
            "application/json",
            b"\xff\xfe".to_vec(),
            400,
        ),
        (
            "DELETE",
            "/api/v1/namespaces/default/pods/x",
            "application/json",
            b"{".to_vec(),
            400,
        ),
        (
            "GET",
            "/api/v1/pods?labelSelector=a%20in%20b",
            "application/json",
            Vec::new(),
            400,
        ),
        (
            "GET",
            "/apis/apps/v1/replicasets?fieldSelector=spec.nodeName%3Dx",
            "application/json",
            Vec::new(),
            400,
        ),
        (
            "GET",
            "/api/v1/pods?continue=garbage",
            "application/json",
            Vec::new(),
            400,
        ),
        (
            "GET",
            "/api/v1/pods?limit=-1",
            "application/json",
            Vec::new(),
            400,
        ),
        ("PUT", path, "application/json", b"{}".to_vec(), 405),
        (
            "GET",
            "/api/v1/namespaces/default/widgets",
            "application/json",
            Vec::new(),
            404,
        ),
        ("GET", "/nothing/here", "application/json", Vec::new(), 404),
    ];
    for (method, uri, ct, body, code) in cases {
        let e = raw(&client, method, uri, ct, body).await.err();
        assert_eq!(
            e.as_ref().and_then(api_code),
            Some(code),
            "{method} {uri}: {e:?}"
        );
    }
    // Still serving.
    pods(&client, "default")
        .create(&PostParams::default(), &pod("fine"))
        .await?;
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_merge_patch_changes_labels() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    let patched = api
        .patch(
            "a",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await?;
    assert_eq!(
        patched
            .metadata
            .labels
            .and_then(|l| l.get("x").cloned())
            .as_deref(),
        Some("y")
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_scale_subresource_reads_and_sets_replicas() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = replicasets(&client, "default");
    api.create(&PostParams::default(), &replicaset("web", 2))
        .await?;
    let scale = api.get_scale("web").await?;
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
    assert_eq!(
        scale.status.map(|s| s.selector),
        Some(Some("app=web".to_string()))
    );
    let patch = kube::api::Patch::Merge(json!({"spec": {"replicas": 4}}));
    let scaled = api
        .patch_scale("web", &kube::api::PatchParams::default(), &patch)
        .await?;
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(4));
    assert_eq!(server.replicaset_truth()[0].spec_replicas, 4);
    assert_eq!(server.replicaset_truth()[0].generation, 2);
    server.shutdown().await;
    Ok(())
}
