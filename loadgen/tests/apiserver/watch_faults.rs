//! Each watch fault as a kube-rs watch stream sees it.

use crate::common::{client_without_retries, pod, pods, quiet_config};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{PostParams, WatchEvent, WatchParams};
use std::time::Duration;
use tidemark_loadgen::Resource;

/// A quiet server, a Pod API without client retries, and the revision to watch from.
async fn watching() -> (tidemark_loadgen::ApiServer, kube::Api<Pod>, String) {
    let server = tidemark_loadgen::start(quiet_config())
        .await
        .expect("server");
    let client = client_without_retries(&server).await.expect("client");
    let from = server.current_revision().to_string();
    (server, pods(&client, "ns"), from)
}

/// The names of Added events that arrive within `within`.
async fn added_within(api: &kube::Api<Pod>, from: &str, within: Duration) -> Vec<String> {
    let stream = api
        .watch(&WatchParams::default().timeout(5), from)
        .await
        .expect("watch");
    let mut stream = Box::pin(stream.into_stream());
    let mut names = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    while let Ok(Some(Ok(event))) = tokio::time::timeout_at(deadline, stream.next()).await {
        if let WatchEvent::Added(p) = event {
            names.extend(p.metadata.name);
        }
    }
    names
}

#[tokio::test]
async fn a_stalled_watch_sends_nothing_until_it_resumes() {
    let (server, api, from) = watching().await;
    server.faults().set_watch_stall(Resource::Pods, true);
    api.create(&PostParams::default(), &pod("a"))
        .await
        .expect("create");
    assert!(
        added_within(&api, &from, Duration::from_millis(300))
            .await
            .is_empty()
    );
    server.faults().set_watch_stall(Resource::Pods, false);
    assert_eq!(
        added_within(&api, &from, Duration::from_millis(500)).await,
        ["a"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn dropped_watches_end_the_stream_and_resume_from_the_last_version() {
    let (server, api, from) = watching().await;
    let stream = api
        .watch(&WatchParams::default().timeout(30), &from)
        .await
        .expect("watch");
    let mut stream = Box::pin(stream.into_stream());
    api.create(&PostParams::default(), &pod("a"))
        .await
        .expect("create");
    assert!(matches!(
        stream.next().await,
        Some(Ok(WatchEvent::Added(_)))
    ));
    server.faults().drop_watches();
    let end = tokio::time::timeout(Duration::from_secs(2), stream.next())
        .await
        .expect("ends promptly");
    assert!(end.is_none(), "the stream is closed");
    assert_eq!(
        added_within(&api, &from, Duration::from_millis(300)).await,
        ["a"],
        "a new watch replays"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_watch_closes_after_the_configured_number_of_events() {
    let (server, api, from) = watching().await;
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &pod(name))
            .await
            .expect("create");
    }
    server.faults().set_drop_watches_after(Resource::Pods, 2);
    let events: Vec<_> = api
        .watch(&WatchParams::default().timeout(5), &from)
        .await
        .expect("watch")
        .into_stream()
        .collect()
        .await;
    assert_eq!(events.len(), 2, "closed after two events");
    server.shutdown().await;
}

#[tokio::test]
async fn a_forced_expiry_answers_the_next_watch_with_410() {
    let (server, api, from) = watching().await;
    server.faults().expire_next_watches(Resource::Pods, 1);
    let first: Vec<_> = api
        .watch(&WatchParams::default().timeout(1), &from)
        .await
        .expect("watch")
        .into_stream()
        .collect()
        .await;
    assert!(
        matches!(first.first(), Some(Ok(WatchEvent::Error(s))) if s.code == 410),
        "{:?}",
        first.first().map(|r| r.as_ref().map(|e| format!("{e:?}")))
    );
    api.create(&PostParams::default(), &pod("a"))
        .await
        .expect("create");
    assert_eq!(
        added_within(&api, &from, Duration::from_millis(300)).await,
        ["a"],
        "only the next one"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn a_lagging_replica_delivers_watch_events_late() {
    let (server, api, from) = watching().await;
    server
        .faults()
        .set_lagging_replica(Resource::Pods, Duration::from_millis(600));
    api.create(&PostParams::default(), &pod("a"))
        .await
        .expect("create");
    assert!(
        added_within(&api, &from, Duration::from_millis(250))
            .await
            .is_empty(),
        "not yet"
    );
    assert_eq!(
        added_within(&api, &from, Duration::from_millis(1_000)).await,
        ["a"]
    );
    server.shutdown().await;
}

#[tokio::test]
async fn an_object_delay_holds_back_its_events_and_those_behind_them() {
    use tidemark_loadgen::faults::ObjectDelay;
    let (server, api, from) = watching().await;
    server.faults().set_object_watch_delay(ObjectDelay {
        resource: "pods".into(),
        label: "app".into(),
        value: "hot".into(),
        millis: 500,
    });
    let mut hot = pod("hot");
    hot.metadata.labels = Some([("app".to_string(), "hot".to_string())].into());
    api.create(&PostParams::default(), &hot).await.expect("hot");
    api.create(&PostParams::default(), &pod("cold"))
        .await
        .expect("cold");
    assert!(
        added_within(&api, &from, Duration::from_millis(250))
            .await
            .is_empty(),
        "cold waits behind hot"
    );
    assert_eq!(
        added_within(&api, &from, Duration::from_millis(800)).await,
        ["hot", "cold"]
    );
    server.shutdown().await;
}
