//! Validation (422 Invalid with causes), dry run, field validation and field selectors.

use crate::common::*;
use futures::{StreamExt, TryStreamExt};
use http::Request;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

/// The `details.causes[].field` of a 422 response to a raw request.
async fn causes_of(
    client: &kube::Client,
    path: &str,
    body: Value,
) -> Result<(u16, Vec<String>), Box<dyn std::error::Error + Send + Sync>> {
    let req = Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body)?)?;
    let resp = client.send(req.map(kube::client::Body::from)).await?;
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect_bytes().await?;
    let v: Value = serde_json::from_slice(&bytes)?;
    let fields = v["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["field"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    Ok((code, fields))
}

#[tokio::test]
async fn an_invalid_pod_name_is_422_with_a_cause_on_metadata_name() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let e = pods(&client, "default")
        .create(&PostParams::default(), &pod("Not_Valid"))
        .await
        .err()
        .ok_or("created")?;
    assert_eq!(api_code(&e), Some(422));
    assert_eq!(api_reason(&e).as_deref(), Some("Invalid"));
    let (code, fields) = causes_of(
        &client,
        "/api/v1/namespaces/default/pods",
        json!({
        "metadata": {"name": "Bad"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
    .await?;
    assert_eq!((code, fields), (422, vec!["metadata.name".to_string()]));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_namespace_name_must_be_a_dns_label() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api: Api<Namespace> = Api::all(client.clone());
    let e = api
        .create(
            &PostParams::default(),
            &typed(json!({"metadata": {"name": "a.b"}})),
        )
        .await
        .err()
        .ok_or("created")?;
    assert_eq!(api_code(&e), Some(422));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_pod_without_containers_or_images_is_invalid_with_one_cause_per_field() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let (code, fields) = causes_of(
        &client,
        "/api/v1/namespaces/default/pods",
        json!({
        "metadata": {"name": "p", "labels": {"bad key!": "v", "ok": "not valid!"}},
        "spec": {"containers": [{"name": "c"}]}}),
    )
    .await?;
    assert_eq!(code, 422);
    assert_eq!(
        fields,
        [
            "metadata.labels",
            "metadata.labels[ok]",
            "spec.containers[0].image"
        ]
    );
    let (code, fields) = causes_of(
        &client,
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "p"}}),
    )
    .await?;
    assert_eq!((code, fields), (422, vec!["spec.containers".to_string()]));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_replicaset_whose_selector_misses_its_template_labels_is_invalid() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let path = "/apis/apps/v1/namespaces/default/replicasets";
    let (code, fields) = causes_of(
        &client,
        path,
        json!({"metadata": {"name": "r"}, "spec": {
        "selector": {"matchLabels": {"app": "x"}}, "template": template("y")}}),
    )
    .await?;
    assert_eq!(
        (code, fields),
        (422, vec!["spec.template.metadata.labels".to_string()])
    );
    let (code, fields) = causes_of(
        &client,
        path,
        json!({"metadata": {"name": "r"}, "spec": {}}),
    )
    .await?;
    assert_eq!(
        (code, fields),
        (
            422,
            vec!["spec.selector".to_string(), "spec.template".to_string()]
        )
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn negative_replicas_are_invalid_on_create_and_update() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = replicasets(&client, "default");
    let e = api
        .create(&PostParams::default(), &replicaset("web", -1))
        .await
        .err()
        .ok_or("created")?;
    assert_eq!(api_code(&e), Some(422));
    api.create(&PostParams::default(), &replicaset("web", 1))
        .await?;
    let e = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": -2}})),
        )
        .await
        .err()
        .ok_or("patched")?;
    assert_eq!(api_code(&e), Some(422));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn dry_run_writes_validate_and_answer_without_storing_or_taking_a_revision() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    let before = server.current_revision();
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let answered = api.create(&dry, &pod("a")).await?;
    assert_eq!(answered.metadata.name.as_deref(), Some("a"));
    assert!(api.get("a").await.is_err());
    assert_eq!(server.current_revision(), before);
    let e = api
        .create(&dry, &pod("BAD"))
        .await
        .err()
        .ok_or("dry run skipped validation")?;
    assert_eq!(api_code(&e), Some(422));
    api.create(&PostParams::default(), &pod("a")).await?;
    let rev = server.current_revision();
    let patched = api
        .patch(
            "a",
            &PatchParams {
                dry_run: true,
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await?;
    assert!(
        patched
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("x")
    );
    api.delete(
        "a",
        &DeleteParams {
            dry_run: true,
            ..DeleteParams::default()
        },
    )
    .await?;
    assert!(api.get("a").await?.metadata.labels.is_none());
    assert_eq!(server.current_revision(), rev);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn strict_field_validation_rejects_unknown_top_level_fields_and_warn_drops_them() -> TestResult
{
    let (server, client) = start(quiet_config()).await?;
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "bogus": 1,
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let send = async |query: &str| -> Result<
        http::Response<kube::client::Body>,
        Box<dyn std::error::Error + Send + Sync>,
    > {
        let req = Request::post(format!("/api/v1/namespaces/default/pods{query}"))
            .header("content-type", "application/json")
            .body(kube::client::Body::from(serde_json::to_vec(&body)?))?;
        Ok(client.send(req).await?)
    };
    let strict = send("?fieldValidation=Strict").await?;
    assert_eq!(strict.status().as_u16(), 400);
    let warned = send("").await?;
    assert_eq!(warned.status().as_u16(), 201);
    let warning = warned
        .headers()
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(
        warning.contains("unknown field") && warning.contains("bogus"),
        "{warning}"
    );
    let stored = server
        .get(tidemark_loadgen::Resource::Pods, "default", "a")
        .ok_or("not stored")?;
    assert!(stored.get("bogus").is_none(), "unknown fields are dropped");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn field_selectors_filter_pods_by_node_and_phase_on_list_and_watch() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    for (name, node) in [("a", "n1"), ("b", "n2")] {
        let mut p = pod(name);
        if let Some(spec) = p.spec.as_mut() {
            spec.node_name = Some(node.into());
        }
        api.create(&PostParams::default(), &p).await?;
    }
    let on_n1 = api
        .list(&ListParams::default().fields("spec.nodeName=n1"))
        .await?;
    let names: Vec<_> = on_n1
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    assert_eq!(names, ["a"]);
    let pending = api
        .list(&ListParams::default().fields("status.phase=Pending,spec.nodeName!=n1"))
        .await?;
    assert_eq!(pending.items.len(), 1);
    let from = on_n1.metadata.resource_version.unwrap_or_default();
    let mut watch = api
        .watch(
            &WatchParams::default().fields("spec.nodeName=n2").timeout(5),
            &from,
        )
        .await?
        .boxed();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await?;
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "1"}}})),
    )
    .await?;
    match watch.try_next().await?.ok_or("watch ended")? {
        WatchEvent::Modified(p) => assert_eq!(p.metadata.name.as_deref(), Some("b")),
        other => return Err(format!("unexpected {other:?}").into()),
    }
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=b"))
        .await?;
    assert_eq!(by_name.items.len(), 1);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn strict_field_validation_applies_to_merge_patch_bodies_too() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    let strict = PatchParams {
        field_validation: Some(kube::api::ValidationDirective::Strict),
        ..PatchParams::default()
    };
    let e = api
        .patch("a", &strict, &Patch::Merge(json!({"bogus": 1})))
        .await
        .err()
        .ok_or("an unknown field was accepted")?;
    assert_eq!(api_code(&e), Some(400));
    let lenient = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"bogus": 1, "metadata": {"labels": {"k": "v"}}})),
        )
        .await?;
    assert!(
        lenient
            .metadata
            .labels
            .unwrap_or_default()
            .contains_key("k")
    );
    let stored = server
        .get(tidemark_loadgen::Resource::Pods, "default", "a")
        .ok_or("gone")?;
    assert!(stored.get("bogus").is_none());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_finalizer_that_is_not_a_qualified_name_is_invalid() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let (code, fields) = causes_of(
        &client,
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "p", "finalizers": ["example.com/ok", "not ok"]},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}),
    )
    .await?;
    assert_eq!(
        (code, fields),
        (422, vec!["metadata.finalizers[1]".to_string()])
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_replicaset_selector_is_immutable() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = replicasets(&client, "default");
    api.create(&PostParams::default(), &replicaset("web", 1))
        .await?;
    let change = json!({"spec": {"selector": {"matchLabels": {"app": "web", "tier": "x"}},
        "template": {"metadata": {"labels": {"app": "web", "tier": "x"}}}}});
    let e = api
        .patch("web", &PatchParams::default(), &Patch::Merge(change))
        .await
        .err()
        .ok_or("selector changed")?;
    assert_eq!(api_code(&e), Some(422));
    assert!(e.to_string().contains("field is immutable"), "{e}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_pod_update_may_change_an_image_but_not_the_node() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    let pp = PatchParams::default();
    let image =
        json!({"spec": {"containers": [{"name": "app", "image": "registry.invalid/app:2"}]}});
    api.patch("a", &pp, &Patch::Strategic(image)).await?;
    let node = json!({"spec": {"nodeName": "node-9"}});
    let e = api
        .patch("a", &pp, &Patch::Merge(node))
        .await
        .err()
        .ok_or("pod spec changed")?;
    assert_eq!(api_code(&e), Some(422));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn events_are_selected_by_involved_object_as_kubectl_describe_asks() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    for (name, about) in [("e1", "a"), ("e2", "b")] {
        let ev = typed(json!({"metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": about, "uid": format!("uid-{about}")},
            "reason": "Started", "message": "m", "type": "Normal"}));
        api.create(&PostParams::default(), &ev).await?;
    }
    let lp = ListParams::default().fields(
        "involvedObject.name=a,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=uid-a",
    );
    let found = api.list(&lp).await?;
    let names: Vec<_> = found
        .items
        .iter()
        .filter_map(|e| e.metadata.name.clone())
        .collect();
    assert_eq!(names, ["e1"]);
    server.shutdown().await;
    Ok(())
}
