//! KEP-5866 over HTTP: `shardSelector` on lists and watches, the `shardInfo` echo, the 400 for
//! a malformed selector, the per-selector watch traffic, and a server without the feature.

use std::time::Duration;

use crate::common::*;
use kube::api::{ListParams, PostParams};
use tidemark_loadgen::ServerConfig;

const LOW: &str = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
const HIGH: &str = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";

/// Every byte but the unreserved ones percent-encoded.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn get(client: &kube::Client, path: &str) -> Result<serde_json::Value, kube::Error> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    let text = client.request_text(request).await?;
    Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
}

fn names(list: &serde_json::Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

async fn twenty_pods(client: &kube::Client) -> TestResult {
    let api = pods(client, "default");
    for i in 0..20 {
        api.create(&PostParams::default(), &pod(&format!("p-{i:02}")))
            .await?;
    }
    Ok(())
}

#[tokio::test]
async fn two_halves_of_the_ring_list_every_pod_once_and_echo_their_selector() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    twenty_pods(&client).await?;
    let mut seen = Vec::new();
    for half in [LOW, HIGH] {
        let list = get(
            &client,
            &format!(
                "/api/v1/namespaces/default/pods?shardSelector={}",
                encoded(half)
            ),
        )
        .await?;
        assert_eq!(list["metadata"]["shardInfo"]["selector"], half);
        let got = names(&list);
        assert!(!got.is_empty() && got.len() < 20, "{half}: {got:?}");
        seen.extend(got);
    }
    seen.sort();
    let all: Vec<String> = (0..20).map(|i| format!("p-{i:02}")).collect();
    assert_eq!(seen, all, "each Pod in exactly one half");
    let plain = pods(&client, "default")
        .list(&ListParams::default())
        .await?;
    assert_eq!(plain.items.len(), 20, "no selector, no filter");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_sharded_watch_sends_its_half_and_the_server_counts_what_each_selector_got() -> TestResult
{
    let (server, client) = start(quiet_config()).await?;
    let start_rv = server.current_revision();
    twenty_pods(&client).await?;
    let mut events = 0;
    for half in [LOW, HIGH] {
        let path = format!(
            "/api/v1/namespaces/default/pods?watch=true&resourceVersion={start_rv}&timeoutSeconds=1&shardSelector={}",
            encoded(half)
        );
        let request = http::Request::get(path).body(Vec::new())?;
        let body =
            tokio::time::timeout(Duration::from_secs(10), client.request_text(request)).await??;
        events += body.lines().filter(|l| l.contains("\"ADDED\"")).count();
    }
    assert_eq!(
        events, 20,
        "the two halves' watches together sent every create once"
    );
    let traffic = server.watch_traffic();
    let sent = |selector: &str| {
        traffic
            .iter()
            .find(|f| f.shard_selector == selector)
            .map_or(0, |f| f.events)
    };
    assert_eq!(sent(LOW) + sent(HIGH), 20, "{traffic:?}");
    assert!(sent(LOW) > 0 && sent(HIGH) > 0, "{traffic:?}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_malformed_shard_selector_is_a_400_status_naming_the_parameter() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let bad = "shardRange(object.metadata.name, '0x0', '0x1')";
    let error = get(
        &client,
        &format!("/api/v1/pods?shardSelector={}", encoded(bad)),
    )
    .await
    .expect_err("refused");
    assert_eq!(api_code(&error), Some(400), "{error}");
    assert!(error.to_string().contains("shardSelector"), "{error}");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn without_the_feature_the_selector_is_ignored_and_no_shard_info_says_so() -> TestResult {
    let (server, client) = start(ServerConfig {
        sharded_list_and_watch: false,
        ..quiet_config()
    })
    .await?;
    twenty_pods(&client).await?;
    let list = get(
        &client,
        &format!(
            "/api/v1/namespaces/default/pods?shardSelector={}",
            encoded(LOW)
        ),
    )
    .await?;
    assert!(
        list["metadata"].get("shardInfo").is_none(),
        "{}",
        list["metadata"]
    );
    assert_eq!(
        names(&list).len(),
        20,
        "the whole list, as an old server sends"
    );
    server.shutdown().await;
    Ok(())
}
