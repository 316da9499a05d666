//! Request faults seen by a kube-rs client: errors with Retry-After, latency, lost responses.

use crate::common::slow;
use crate::common::{client_without_retries, pod, pods, quiet_config};
use kube::api::PostParams;
use std::time::{Duration, Instant};
use tidemark_loadgen::Resource;
use tidemark_loadgen::faults::request_faults::{ErrorRule, Match};

fn api_code(err: kube::Error) -> (u16, String) {
    match err {
        kube::Error::Api(s) => (s.code, s.reason),
        other => panic!("expected an API error, got {other}"),
    }
}

#[tokio::test]
async fn a_429_rule_fails_matching_creates_with_retry_after_and_spares_the_rest() {
    let server = tidemark_loadgen::start(quiet_config())
        .await
        .expect("server");
    let client = client_without_retries(&server).await.expect("client");
    server.faults().requests().add_error(ErrorRule {
        matching: Match {
            verb: Some("create".into()),
            resource: Some("pods".into()),
        },
        fraction: 1.0,
        code: 429,
        retry_after_seconds: 2,
    });
    let err = pods(&client, "ns")
        .create(&PostParams::default(), &pod("a"))
        .await
        .expect_err("429");
    assert_eq!(api_code(err), (429, "TooManyRequests".to_string()));
    assert!(
        pods(&client, "ns").list(&Default::default()).await.is_ok(),
        "lists are not matched"
    );
    server.faults().requests().clear();
    pods(&client, "ns")
        .create(&PostParams::default(), &pod("a"))
        .await
        .expect("cleared");
    server.shutdown().await;
}

#[tokio::test]
async fn latency_delays_matching_requests() {
    let server = tidemark_loadgen::start(quiet_config())
        .await
        .expect("server");
    let client = client_without_retries(&server).await.expect("client");
    server
        .faults()
        .requests()
        .add_latency(slow("list", None, 150));
    let started = Instant::now();
    pods(&client, "ns")
        .list(&Default::default())
        .await
        .expect("list");
    assert!(started.elapsed() >= Duration::from_millis(150));
    server.shutdown().await;
}

#[tokio::test]
async fn a_write_whose_timeout_passes_while_it_waits_is_a_504_and_not_applied() {
    let server = tidemark_loadgen::start(quiet_config())
        .await
        .expect("server");
    let client = client_without_retries(&server).await.expect("client");
    server
        .faults()
        .requests()
        .add_latency(slow("create", Some("pods"), 400));
    let body = serde_json::to_vec(&pod("late")).expect("json");
    let post = |query: &str| {
        http::Request::post(format!("/api/v1/namespaces/ns/pods{query}"))
            .header("content-type", "application/json")
            .body(body.clone())
            .expect("request")
    };
    let started = Instant::now();
    let err = client
        .request::<serde_json::Value>(post("?timeout=100ms"))
        .await
        .expect_err("504");
    assert_eq!(api_code(err).0, 504);
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "answered at the deadline"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        server.get(Resource::Pods, "ns", "late").is_none(),
        "never applied"
    );
    client
        .request::<serde_json::Value>(post("?timeout=2s"))
        .await
        .expect("a deadline longer than the wait changes nothing");
    assert!(server.get(Resource::Pods, "ns", "late").is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn a_lost_write_response_is_a_504_though_the_write_was_applied() {
    let server = tidemark_loadgen::start(quiet_config())
        .await
        .expect("server");
    let client = client_without_retries(&server).await.expect("client");
    server.faults().requests().lose_write_responses(1.0);
    let err = pods(&client, "ns")
        .create(&PostParams::default(), &pod("ghost"))
        .await
        .expect_err("504");
    assert_eq!(api_code(err).0, 504);
    assert!(
        server.get(Resource::Pods, "ns", "ghost").is_some(),
        "the create happened"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_lagging_replica_serves_old_lists_unless_asked_not_older_than() {
    use kube::api::{ListParams, VersionMatch};
    let server = tidemark_loadgen::start(quiet_config())
        .await
        .expect("server");
    let client = client_without_retries(&server).await.expect("client");
    let api = pods(&client, "ns");
    api.create(&PostParams::default(), &pod("old"))
        .await
        .expect("old");
    tokio::time::sleep(Duration::from_millis(400)).await;
    api.create(&PostParams::default(), &pod("new"))
        .await
        .expect("new");
    let newest = server.current_revision();
    server
        .faults()
        .set_lagging_replica(Resource::Pods, Duration::from_millis(250));
    let names = |list: kube::core::ObjectList<k8s_openapi::api::core::v1::Pod>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|p| p.metadata.name)
            .collect()
    };
    let lagged = api.list(&ListParams::default()).await.expect("list");
    assert_eq!(
        names(lagged),
        ["old"],
        "the lagging cache has not seen the newer pod"
    );
    let fresh = api
        .list(&ListParams {
            resource_version: Some(newest.to_string()),
            version_match: Some(VersionMatch::NotOlderThan),
            ..ListParams::default()
        })
        .await
        .expect("list not older than");
    assert_eq!(names(fresh), ["new", "old"]);
    server
        .faults()
        .set_lagging_replica(Resource::Pods, Duration::ZERO);
    server.shutdown().await;
}

/// A create sent with `?timeout=` (as the manager's writer sends every write).
async fn create_with_timeout(
    client: &kube::Client,
    name: &str,
    timeout: &str,
) -> Result<k8s_openapi::api::core::v1::Pod, kube::Error> {
    let body = serde_json::to_vec(&pod(name)).expect("a Pod serialises");
    let mut request = kube::core::Request::new("/api/v1/namespaces/ns/pods")
        .create(&PostParams::default(), body)
        .expect("request");
    let uri = format!("{}&timeout={timeout}", request.uri());
    *request.uri_mut() = uri.parse().expect("uri");
    client.request(request).await
}

#[tokio::test]
async fn a_write_slower_than_its_timeout_is_refused_and_never_commits() {
    let server = tidemark_loadgen::start(quiet_config())
        .await
        .expect("server");
    let client = client_without_retries(&server).await.expect("client");
    server
        .faults()
        .requests()
        .add_latency(slow("create", Some("pods"), 400));
    let err = create_with_timeout(&client, "late", "100ms")
        .await
        .expect_err("past its deadline");
    assert_eq!(api_code(err), (504, "Timeout".to_string()));
    create_with_timeout(&client, "in-time", "2s")
        .await
        .expect("within its deadline");
    let names: Vec<String> = pods(&client, "ns")
        .list(&Default::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(
        names,
        vec!["in-time".to_string()],
        "the late create never committed"
    );
    server.shutdown().await;
}
