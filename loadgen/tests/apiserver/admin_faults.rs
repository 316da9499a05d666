//! Every fault can be changed at run time over the loopback admin endpoint.

use crate::common::{plain_client, quiet_config};
use http::Request;
use std::time::Duration;
use tidemark_loadgen::{Resource, ServerConfig};

async fn put(admin: &kube::Client, path: &str, body: &str) -> String {
    let req = Request::put(path)
        .header("content-type", "application/json")
        .body(body.as_bytes().to_vec())
        .expect("request");
    admin
        .request_text(req)
        .await
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn each_fault_is_set_over_the_admin_endpoint_and_shows_in_its_summary() {
    let server = tidemark_loadgen::start(ServerConfig {
        kubelet_enabled: true,
        ..quiet_config()
    })
    .await
    .expect("server");
    let admin = plain_client(&format!("http://{}", server.admin_addr())).expect("admin client");
    let faults = server.faults();

    put(
        &admin,
        "/faults/watch-stall",
        r#"{"resource":"pods","stalled":true}"#,
    )
    .await;
    assert!(faults.is_stalled(Resource::Pods));
    put(
        &admin,
        "/faults/expire-watches",
        r#"{"resource":"pods","count":2}"#,
    )
    .await;
    assert!(faults.take_forced_expiry(Resource::Pods));
    put(
        &admin,
        "/faults/drop-watches-after",
        r#"{"resource":"pods","events":7}"#,
    )
    .await;
    assert_eq!(faults.drop_watches_after(Resource::Pods), 7);
    put(
        &admin,
        "/faults/lagging-replica",
        r#"{"resource":"pods","millis":1500}"#,
    )
    .await;
    assert_eq!(
        faults.lagging_replica(Resource::Pods),
        Duration::from_millis(1500)
    );
    put(
        &admin,
        "/faults/watch-jitter",
        r#"{"resource":"pods","millis":80}"#,
    )
    .await;
    put(
        &admin,
        "/faults/object-watch-delay",
        r#"{"resource":"pods","label":"app","value":"hot","millis":900}"#,
    )
    .await;
    let hot = serde_json::json!({"metadata": {"labels": {"app": "hot"}}});
    assert!(faults.event_delay(Resource::Pods, 3, &hot) >= Duration::from_millis(1500));
    let summary = put(
        &admin,
        "/faults/requests",
        r#"{"errors":[{"verb":"create","resource":"pods","fraction":0.5,"code":503,"retry_after_seconds":1}],
            "latency":[{"millis":5}],"loseWriteResponses":0.1}"#,
    )
    .await;
    let summary: serde_json::Value = serde_json::from_str(&summary).expect("json");
    assert_eq!(summary["watchStalled"]["pods"], true);
    assert_eq!(summary["laggingReplicaMillis"]["pods"], 1500);
    assert_eq!(summary["dropWatchesAfterEvents"]["pods"], 7);
    assert_eq!(summary["requests"]["errors"][0]["code"], 503);
    assert_eq!(summary["objectWatchDelays"][0]["value"], "hot");
    put(
        &admin,
        "/faults/lease-renewal",
        r#"{"nodes":["node-0"],"renew":false}"#,
    )
    .await;
    let drop_epoch = faults.drop_epoch();
    let req = Request::post("/faults/drop-watches")
        .body(Vec::new())
        .expect("request");
    admin.request_text(req).await.expect("drop");
    assert_eq!(faults.drop_epoch(), drop_epoch + 1);
    let bad = Request::put("/faults/watch-stall")
        .body(b"{}".to_vec())
        .expect("request");
    assert!(
        admin.request_text(bad).await.is_err(),
        "a malformed body is a 400, not a crash"
    );
    server.shutdown().await;
}
