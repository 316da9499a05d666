//! Bodies and queries kube-apiserver refuses are refused here too, in its words: a field of the
//! wrong type is a 400 decode error, a value out of range a 422 with causes, on create, update,
//! patch and the status subresource; `timeoutSeconds` beyond int64 is a 400, not a panic; the
//! hostile-server path stores what the API refuses, and the kubelet survives it.

use crate::common::*;
use http::Request;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use std::time::Duration;

/// Sends a raw request; returns the status code and the JSON body (Null if not JSON).
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Value,
) -> Result<(u16, Value), Box<dyn std::error::Error + Send + Sync>> {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(serde_json::to_vec(&body)?)?;
    let resp = client.send(req.map(kube::client::Body::from)).await?;
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect_bytes().await?;
    Ok((code, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

const RS_PATH: &str = "/apis/apps/v1/namespaces/default/replicasets";

fn rs_body(replicas: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                    "template": template("web")}})
}

fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["field"].as_str().unwrap_or("").to_string(),
                        c["message"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn replica_counts_of_the_wrong_type_are_decode_errors_and_negative_ones_invalid() -> TestResult
{
    let (server, client) = start(quiet_config()).await?;
    for (replicas, literal) in [
        (json!("five"), "string"),
        (json!(3.0), "number 3.0"),
        (json!("3"), "string"),
    ] {
        let (code, status) = send(
            &client,
            "POST",
            RS_PATH,
            "application/json",
            rs_body(replicas),
        )
        .await?;
        assert_eq!(code, 400, "{status}");
        assert_eq!(status["reason"], "BadRequest");
        assert_eq!(
            status["message"],
            format!(
                "ReplicaSet in version \"v1\" cannot be handled as a ReplicaSet: json: cannot unmarshal {literal} into Go struct field ReplicaSetSpec.spec.replicas of type int32"
            )
        );
    }
    let (code, status) = send(
        &client,
        "POST",
        RS_PATH,
        "application/json",
        rs_body(json!(-2)),
    )
    .await?;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        causes(&status),
        [(
            "spec.replicas".to_string(),
            "Invalid value: -2: must be greater than or equal to 0".to_string()
        )]
    );
    assert_eq!(
        status["message"],
        "ReplicaSet \"web\" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0"
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn updates_patches_and_status_writes_are_checked_like_creates() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let (code, _) = send(
        &client,
        "POST",
        RS_PATH,
        "application/json",
        rs_body(json!(2)),
    )
    .await?;
    assert_eq!(code, 201);
    let path = format!("{RS_PATH}/web");
    let (code, status) = send(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        json!({"spec": {"replicas": "five"}}),
    )
    .await?;
    assert_eq!(code, 422, "{status}");
    let found = causes(&status);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "patch");
    assert!(
        found[0].1.ends_with(
            "json: cannot unmarshal string into Go struct field ReplicaSetSpec.spec.replicas of type int32"
        ),
        "{found:?}"
    );
    let (_, mut current) = send(&client, "GET", &path, "application/json", Value::Null).await?;
    current["status"] = json!("lots");
    let (code, status) = send(
        &client,
        "PUT",
        &format!("{path}/status"),
        "application/json",
        current.clone(),
    )
    .await?;
    assert_eq!(code, 400, "a string status is refused: {status}");
    assert!(
        status["message"].as_str().is_some_and(
            |m| m.contains("Go struct field ReplicaSet.status of type v1.ReplicaSetStatus")
        ),
        "{status}"
    );
    current["status"] = json!({"replicas": 2, "readyReplicas": 3});
    let (code, status) = send(
        &client,
        "PUT",
        &format!("{path}/status"),
        "application/json",
        current,
    )
    .await?;
    assert_eq!(code, 422, "{status}");
    assert_eq!(causes(&status)[0].0, "status.readyReplicas");
    let (code, status) = send(
        &client,
        "PATCH",
        &format!("{path}/status"),
        "application/merge-patch+json",
        json!({"status": {"availableReplicas": -1}}),
    )
    .await?;
    assert_eq!(code, 422, "{status}");
    assert_eq!(causes(&status)[0].0, "status.availableReplicas");
    let (_, stored) = send(&client, "GET", &path, "application/json", Value::Null).await?;
    assert_eq!(stored["spec"]["replicas"], 2, "nothing refused was stored");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_fields_other_controllers_decide_on_are_checked_too() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let sts = json!({"metadata": {"name": "db"}, "spec": {"podManagementPolicy": "Whenever",
        "selector": {"matchLabels": {"app": "db"}}, "template": template("db")}});
    let (code, status) = send(
        &client,
        "POST",
        "/apis/apps/v1/namespaces/default/statefulsets",
        "application/json",
        sts,
    )
    .await?;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status),
        [(
            "spec.podManagementPolicy".to_string(),
            "Unsupported value: \"Whenever\": supported values: \"OrderedReady\", \"Parallel\""
                .to_string()
        )]
    );
    let ds = json!({"metadata": {"name": "agent"}, "spec": {"selector": {"matchLabels": {"app": "agent"}},
        "template": template("agent"), "updateStrategy": {"rollingUpdate": {"maxUnavailable": "50"}}}});
    let (code, status) = send(
        &client,
        "POST",
        "/apis/apps/v1/namespaces/default/daemonsets",
        "application/json",
        ds,
    )
    .await?;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        causes(&status)[0].0,
        "spec.updateStrategy.rollingUpdate.maxUnavailable"
    );
    let job = json!({"metadata": {"name": "pi"}, "spec": {"completionMode": "Indexed", "parallelism": 2, "template": template("pi")}});
    let (code, status) = send(
        &client,
        "POST",
        "/apis/batch/v1/namespaces/default/jobs",
        "application/json",
        job,
    )
    .await?;
    assert_eq!(code, 422, "{status}");
    assert_eq!(causes(&status)[0].0, "spec.completions");
    let node = json!({"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "Sometimes"}]}});
    let (code, status) = send(&client, "POST", "/api/v1/nodes", "application/json", node).await?;
    assert_eq!(code, 422, "{status}");
    assert_eq!(causes(&status)[0].0, "spec.taints[0].effect");
    let node = json!({"metadata": {"name": "n2"}, "status": "not-an-object"});
    let (code, status) = send(&client, "POST", "/api/v1/nodes", "application/json", node).await?;
    assert_eq!(code, 400, "{status}");
    let lease = json!({"metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1", "renewTime": "yesterday"}});
    let (code, status) = send(
        &client,
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        "application/json",
        lease,
    )
    .await?;
    assert_eq!(code, 400, "{status}");
    let pod = json!({"metadata": {"name": "p", "labels": {"app": 5}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let (code, status) = send(
        &client,
        "POST",
        "/api/v1/namespaces/default/pods",
        "application/json",
        pod,
    )
    .await?;
    assert_eq!(code, 400, "{status}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_watch_timeout_beyond_int64_is_a_bad_request_and_the_server_keeps_serving() -> TestResult
{
    let (server, client) = start(quiet_config()).await?;
    let (code, status) = send(
        &client,
        "GET",
        "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=18446744073709551615",
        "application/json",
        Value::Null,
    )
    .await?;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "strconv.ParseInt: parsing \"18446744073709551615\": value out of range"
    );
    // The largest int64 is accepted (capped), and the server still answers afterwards.
    let req = Request::get(
        "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=9223372036854775807",
    )
    .body(Vec::new())?;
    let resp = tokio::time::timeout(
        Duration::from_secs(5),
        client.send(req.map(kube::client::Body::from)),
    )
    .await??;
    assert_eq!(resp.status().as_u16(), 200);
    drop(resp);
    pods(&client, "default")
        .create(&PostParams::default(), &pod("after"))
        .await?;
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_hostile_server_path_stores_what_the_api_refuses_and_the_kubelet_survives_it()
-> TestResult {
    let (server, client) = start(kubelet_config()).await?;
    let admin = plain_client(&format!("http://{}", server.admin_addr()))?;
    for (path, body) in [
        (
            "/raw/replicasets/default/web",
            json!({"metadata": {"name": "web"}, "spec": {"replicas": "five"}}),
        ),
        (
            "/raw/nodes/-/n1",
            json!({"metadata": {"name": "n1"}, "status": "not-an-object"}),
        ),
        (
            "/raw/pods/default/odd",
            json!({"metadata": {"name": "odd"}, "spec": "not-an-object", "status": 7}),
        ),
        (
            "/raw/pods/default/odder",
            json!({"metadata": {"name": "odder"}, "spec": {"containers": "x"}}),
        ),
    ] {
        let (code, stored) = send(&admin, "PUT", path, "application/json", body).await?;
        assert_eq!(code, 200, "{path}: {stored}");
    }
    let (_, rs) = send(
        &client,
        "GET",
        &format!("{RS_PATH}/web"),
        "application/json",
        Value::Null,
    )
    .await?;
    assert_eq!(rs["spec"]["replicas"], "five");
    let (_, node) = send(
        &client,
        "GET",
        "/api/v1/nodes/n1",
        "application/json",
        Value::Null,
    )
    .await?;
    assert_eq!(node["status"], "not-an-object");
    // The kubelet met both odd Pods and still starts a well-formed one.
    let api: Api<Pod> = pods(&client, "default");
    api.create(&PostParams::default(), &pod("fine")).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let phase = api
            .get("fine")
            .await?
            .status
            .and_then(|s| s.phase)
            .unwrap_or_default();
        if phase == "Running" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the kubelet is gone"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.shutdown().await;
    Ok(())
}
