//! CustomResourceDefinitions: a CRD is validated and established, and its resource is then
//! served like a built-in (discovery, CRUD, list and watch, patches, the status subresource,
//! deletion and garbage collection, RBAC), namespaced or cluster-scoped.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams, Preconditions, WatchEvent, WatchParams,
};
use kube::{Api, Client};
use serde_json::{Value, json};
use tidemark_loadgen::apiserver::kubeconfig::KubeconfigUser;
use tidemark_loadgen::crd::manifest;
use tidemark_loadgen::rbac::UserInfo;

use crate::common::*;

const GROUP: &str = "example.com";
const VERSION: &str = "v1alpha1";

fn widgets_crd() -> Value {
    manifest(GROUP, VERSION, "Widget", "widgets", true)
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, "Widget"), "widgets")
}

fn widgets(client: &Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &widget_resource())
}

fn widget(name: &str, size: i64) -> DynamicObject {
    typed(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": "Widget",
        "metadata": {"name": name, "labels": {"size": if size > 2 { "big" } else { "small" }}},
        "spec": {"size": size},
    }))
}

async fn define(client: &Client, crd: Value) -> Result<CustomResourceDefinition, kube::Error> {
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &typed(crd))
        .await
}

fn condition(crd: &CustomResourceDefinition, kind: &str) -> Option<String> {
    crd.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
        .map(|c| c.status.clone())
}

#[tokio::test]
async fn a_created_crd_is_established_and_its_resource_appears_in_discovery() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let crd = define(&client, widgets_crd()).await?;
    assert_eq!(condition(&crd, "Established").as_deref(), Some("True"));
    assert_eq!(condition(&crd, "NamesAccepted").as_deref(), Some("True"));
    let accepted = crd
        .status
        .and_then(|s| s.accepted_names)
        .ok_or("no acceptedNames")?;
    assert_eq!(accepted.kind, "Widget");

    let groups = client.list_api_groups().await?;
    let group = groups
        .groups
        .iter()
        .find(|g| g.name == GROUP)
        .ok_or("the group is not listed in /apis")?;
    assert_eq!(group.versions[0].group_version, "example.com/v1alpha1");
    let resources = client
        .list_api_group_resources("example.com/v1alpha1")
        .await?;
    let names: Vec<&str> = resources
        .resources
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["widgets", "widgets/status"]);
    assert!(resources.resources[0].namespaced);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_invalid_crd_is_refused_with_422_naming_each_field_at_fault() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let mut crd = widgets_crd();
    crd["metadata"]["name"] = json!("gadgets.example.com");
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["names"]["kind"] = json!("");
    let e = define(&client, crd)
        .await
        .err()
        .ok_or("an invalid CRD was stored")?;
    assert_eq!(api_code(&e), Some(422), "{e}");
    assert_eq!(api_reason(&e).as_deref(), Some("Invalid"));
    let message = e.to_string();
    for field in ["metadata.name", "spec.names.kind", "spec.versions"] {
        assert!(message.contains(field), "{message}");
    }
    assert!(server.resource(GROUP, "widgets").is_none());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn custom_objects_are_created_got_listed_by_label_and_paged() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    let api = widgets(&client, "default");
    for (name, size) in [("a", 1), ("b", 3), ("c", 5)] {
        api.create(&PostParams::default(), &widget(name, size))
            .await?;
    }
    let a = api.get("a").await?;
    assert_eq!(a.metadata.generation, Some(1));
    assert_eq!(a.data["spec"]["size"], 1);

    let big = api.list(&ListParams::default().labels("size=big")).await?;
    let names: Vec<_> = big
        .items
        .iter()
        .filter_map(|w| w.metadata.name.clone())
        .collect();
    assert_eq!(names, ["b", "c"]);

    let first = api.list(&ListParams::default().limit(2)).await?;
    assert_eq!(first.items.len(), 2);
    let token = first
        .metadata
        .continue_
        .clone()
        .ok_or("no continue token")?;
    let rest = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await?;
    assert_eq!(rest.items.len(), 1);
    assert_eq!(
        rest.metadata.resource_version,
        first.metadata.resource_version
    );

    let wrong_kind =
        json!({"apiVersion": "example.com/v1alpha1", "kind": "Gadget", "metadata": {"name": "x"}});
    let e = api
        .create(&PostParams::default(), &typed(wrong_kind))
        .await
        .err()
        .ok_or("a Gadget was stored as a Widget")?;
    assert_eq!(api_code(&e), Some(400), "{e}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_watch_of_custom_objects_sees_changes_bookmarks_and_a_forced_410() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    let api = widgets(&client, "default");
    let from = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version;
    let from = from.ok_or("no list resourceVersion")?;
    let stream = api.watch(&WatchParams::default().timeout(2), &from).await?;
    api.create(&PostParams::default(), &widget("a", 1)).await?;
    api.delete("a", &DeleteParams::default()).await?;
    let events: Vec<WatchEvent<DynamicObject>> = stream.try_collect().await?;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        })
        .filter(|k| *k != "BOOKMARK")
        .collect();
    assert_eq!(kinds, ["ADDED", "DELETED"]);
    assert!(events.iter().any(|e| matches!(e, WatchEvent::Bookmark(_))));

    let resource = server
        .resource(GROUP, "widgets")
        .ok_or("widgets not served")?;
    server.faults().expire_next_watches(resource, 1);
    let mut expired = Box::pin(api.watch(&WatchParams::default().timeout(2), &from).await?);
    match expired.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410),
        other => return Err(format!("expected a 410 event, got {other:?}").into()),
    }
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_update_ignores_status_and_the_status_subresource_writes_only_status() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    let api = widgets(&client, "default");
    let mut w = widget("a", 1);
    w.data["status"] = json!({"ready": true});
    let created = api.create(&PostParams::default(), &w).await?;
    assert!(
        created.data["status"].is_null(),
        "status is dropped on create"
    );

    let mut changed = created.clone();
    changed.data["spec"]["size"] = json!(2);
    changed.data["status"] = json!({"ready": true});
    let updated = api.replace("a", &PostParams::default(), &changed).await?;
    assert_eq!(updated.data["spec"]["size"], 2);
    assert!(
        updated.data["status"].is_null(),
        "the main resource ignores status"
    );
    assert_eq!(updated.metadata.generation, Some(2));

    let mut status = updated.clone();
    status.data["spec"]["size"] = json!(9);
    status.data["status"] = json!({"ready": true});
    let after = api
        .replace_status("a", &PostParams::default(), &status)
        .await?;
    assert_eq!(after.data["status"]["ready"], true);
    assert_eq!(
        after.data["spec"]["size"], 2,
        "the status subresource ignores spec"
    );
    assert_eq!(
        after.metadata.generation,
        Some(2),
        "a status write keeps the generation"
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn merge_and_json_patches_apply_and_a_strategic_merge_patch_is_415() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    let api = widgets(&client, "default");
    api.create(&PostParams::default(), &widget("a", 1)).await?;
    let pp = PatchParams::default();
    let merged = api
        .patch("a", &pp, &Patch::Merge(json!({"spec": {"color": "red"}})))
        .await?;
    assert_eq!(merged.data["spec"], json!({"size": 1, "color": "red"}));
    let ops = json!([{"op": "replace", "path": "/spec/size", "value": 4}]);
    let req = http::Request::patch("/apis/example.com/v1alpha1/namespaces/default/widgets/a")
        .header("content-type", "application/json-patch+json")
        .body(serde_json::to_vec(&ops)?)?;
    let patched: DynamicObject = client.request(req).await?;
    assert_eq!(patched.data["spec"]["size"], 4);
    assert_eq!(patched.metadata.generation, Some(3));
    let e = api
        .patch("a", &pp, &Patch::Strategic(json!({"spec": {"size": 5}})))
        .await
        .err()
        .ok_or("a strategic merge patch of a custom object was applied")?;
    assert_eq!(api_code(&e), Some(415), "{e}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn deleting_a_custom_object_checks_its_uid_and_collects_the_pods_it_owns() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    let api = widgets(&client, "default");
    let owner = api.create(&PostParams::default(), &widget("a", 1)).await?;
    let uid = owner.metadata.uid.clone().ok_or("no uid")?;
    let owned = pod_json(json!({"metadata": {"name": "p", "ownerReferences": [{
        "apiVersion": "example.com/v1alpha1", "kind": "Widget", "name": "a", "uid": uid,
        "controller": true,
    }]}}));
    pods(&client, "default")
        .create(&PostParams::default(), &owned)
        .await?;

    let stale = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("another-uid".into()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    let e = api
        .delete("a", &stale)
        .await
        .err()
        .ok_or("deleted despite the uid")?;
    assert_eq!(api_code(&e), Some(409), "{e}");

    api.delete("a", &DeleteParams::default()).await?;
    assert!(api.get_opt("a").await?.is_none());
    assert!(
        Api::<Pod>::namespaced(client.clone(), "default")
            .get_opt("p")
            .await?
            .is_none(),
        "the owned Pod is collected with its Widget"
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_role_naming_the_custom_group_allows_it_and_no_role_is_403() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    server.apply(&[
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "widget-editor"},
            "rules": [{"apiGroups": [GROUP], "resources": ["widgets", "widgets/status"],
                "verbs": ["create", "get", "list", "update"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "alice-edits-widgets"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widget-editor"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
    ])?;
    let as_user = |name: &str| {
        let token = server.issue_token(UserInfo::user(name, &[]), None);
        server.kubeconfig_for(&KubeconfigUser::Token(token))
    };
    let alice = widgets(&client_with(&as_user("alice")).await?, "default");
    let created = alice
        .create(&PostParams::default(), &widget("a", 1))
        .await?;
    let mut status = created.clone();
    status.data["status"] = json!({"ready": true});
    alice
        .replace_status("a", &PostParams::default(), &status)
        .await?;
    assert_eq!(alice.list(&ListParams::default()).await?.items.len(), 1);
    let e = alice
        .delete("a", &DeleteParams::default())
        .await
        .err()
        .ok_or("alice may not delete")?;
    assert_eq!(api_code(&e), Some(403), "{e}");

    let bob = widgets(&client_with(&as_user("bob")).await?, "default");
    let e = bob
        .list(&ListParams::default())
        .await
        .err()
        .ok_or("bob has no role")?;
    assert_eq!(api_code(&e), Some(403), "{e}");
    assert!(e.to_string().contains("widgets.example.com"), "{e}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_cluster_scoped_crd_serves_objects_without_a_namespace() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let crd = manifest("infra.example.com", "v1", "Zone", "zones", false);
    define(&client, crd).await?;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("infra.example.com", "v1", "Zone"),
        "zones",
    );
    let zones: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let zone =
        json!({"apiVersion": "infra.example.com/v1", "kind": "Zone", "metadata": {"name": "eu"}});
    let created = zones.create(&PostParams::default(), &typed(zone)).await?;
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(zones.list(&ListParams::default()).await?.items.len(), 1);
    let namespaced: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let e = namespaced
        .get("eu")
        .await
        .err()
        .ok_or("a cluster-scoped object was found in a namespace")?;
    assert_eq!(api_code(&e), Some(404), "{e}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_established_crd_keeps_its_definition_but_takes_new_labels() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let pp = PatchParams::default();
    let labelled = Patch::Merge(json!({"metadata": {"labels": {"team": "infra"}}}));
    crds.patch("widgets.example.com", &pp, &labelled).await?;
    let renamed = Patch::Merge(json!({"spec": {"names": {"shortNames": ["wd"]}}}));
    let e = crds
        .patch("widgets.example.com", &pp, &renamed)
        .await
        .err()
        .ok_or("the served definition changed")?;
    assert_eq!(api_code(&e), Some(422), "{e}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn deleting_the_crd_removes_its_objects_and_stops_serving_it() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    define(&client, widgets_crd()).await?;
    let api = widgets(&client, "default");
    api.create(&PostParams::default(), &widget("a", 1)).await?;
    Api::<CustomResourceDefinition>::all(client.clone())
        .delete("widgets.example.com", &DeleteParams::default())
        .await?;
    let e = api
        .list(&ListParams::default())
        .await
        .err()
        .ok_or("widgets are still served")?;
    assert_eq!(api_code(&e), Some(404), "{e}");
    define(&client, widgets_crd()).await?;
    assert!(api.list(&ListParams::default()).await?.items.is_empty());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn an_in_process_definition_serves_objects_applied_after_it() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let resource = server.define(&widgets_crd())?;
    server.apply(&[serde_json::to_value(widget("a", 1))?])?;
    assert_eq!(server.list(resource).len(), 1);
    let a = widgets(&client, "default").get("a").await?;
    assert_eq!(a.data["spec"]["size"], 1);
    tokio::time::timeout(Duration::from_secs(5), server.shutdown()).await?;
    Ok(())
}
