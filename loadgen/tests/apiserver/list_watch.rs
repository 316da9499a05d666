//! Lists (limit/continue snapshots, resourceVersionMatch, selectors) and watches (revision
//! order, bookmarks, 410 Expired) over HTTP with kube-rs.

use std::time::Duration;

use crate::common::*;
use futures::{StreamExt, TryStreamExt};
use kube::api::{DeleteParams, ListParams, PostParams, VersionMatch, WatchEvent, WatchParams};
use tidemark_loadgen::ServerConfig;

#[tokio::test]
async fn list_with_limit_and_continue_returns_a_consistent_snapshot_even_when_writes_happen_between_pages()
-> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    for i in 0..10 {
        api.create(&PostParams::default(), &pod(&format!("p-{i:02}")))
            .await?;
    }
    let first = api.list(&ListParams::default().limit(4)).await?;
    let list_rv = first.metadata.resource_version.clone().unwrap_or_default();
    assert_eq!(first.items.len(), 4);
    // Writes between pages: delete one not yet served, add one, modify one.
    api.delete("p-07", &DeleteParams::default()).await?;
    api.create(&PostParams::default(), &pod("p-05a")).await?;
    api.create(&PostParams::default(), &pod("p-99")).await?;
    let mut names: Vec<String> = first
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    let mut token = first.metadata.continue_.clone();
    let mut pages = 1;
    while let Some(t) = token.filter(|t| !t.is_empty()) {
        let page = api
            .list(&ListParams::default().limit(4).continue_token(&t))
            .await?;
        assert_eq!(
            page.metadata.resource_version.as_deref(),
            Some(list_rv.as_str())
        );
        names.extend(page.items.iter().filter_map(|p| p.metadata.name.clone()));
        token = page.metadata.continue_.clone();
        pages += 1;
        assert!(pages < 10, "runaway pagination");
    }
    let expected: Vec<String> = (0..10).map(|i| format!("p-{i:02}")).collect();
    assert_eq!(names, expected);
    assert_eq!(pages, 3);
    // A fresh list sees the new state.
    let now = api.list(&ListParams::default()).await?;
    assert_eq!(now.items.len(), 11);
    assert_eq!(
        now.metadata.resource_version,
        Some(server.current_revision().to_string())
    );
    // An exact read of the old revision is the old snapshot.
    let exact = api
        .list(
            &ListParams::default()
                .at(&list_rv)
                .matching(VersionMatch::Exact),
        )
        .await?;
    assert_eq!(exact.items.len(), 10);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_list_not_older_than_a_future_revision_times_out_with_504() -> TestResult {
    let (server, _) = start(quiet_config()).await?;
    let client = client_without_retries(&server).await?;
    let api = pods(&client, "default");
    let future = (server.current_revision() + 1000).to_string();
    let started = std::time::Instant::now();
    let e = api
        .list(
            &ListParams::default()
                .at(&future)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .err()
        .ok_or("a future revision was served")?;
    assert_eq!(api_code(&e), Some(504));
    assert_eq!(api_reason(&e).as_deref(), Some("Timeout"));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(2900) && waited < Duration::from_secs(6),
        "{waited:?}"
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn selectors_filter_lists_and_all_namespace_lists_see_every_namespace() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    for (ns, name, app) in [("a", "x", "web"), ("b", "y", "web"), ("b", "z", "db")] {
        let p = pod_json(serde_json::json!({"metadata": {"name": name, "labels": {"app": app}}}));
        pods(&client, ns).create(&PostParams::default(), &p).await?;
    }
    let all: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::all(client.clone());
    assert_eq!(all.list(&ListParams::default()).await?.items.len(), 3);
    assert_eq!(
        all.list(&ListParams::default().labels("app=web"))
            .await?
            .items
            .len(),
        2
    );
    assert_eq!(
        all.list(&ListParams::default().labels("app notin (web)"))
            .await?
            .items
            .len(),
        1
    );
    assert_eq!(
        pods(&client, "b")
            .list(&ListParams::default().labels("app"))
            .await?
            .items
            .len(),
        2
    );
    assert_eq!(
        all.list(&ListParams::default().fields("metadata.name=y"))
            .await?
            .items
            .len(),
        1
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn watch_from_a_resource_version_yields_events_in_revision_order_and_bookmarks_when_asked()
-> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("before")).await?;
    let from = server.current_revision().to_string();
    let writer = {
        let api = api.clone();
        tokio::spawn(async move {
            for i in 0..5 {
                let _ = api
                    .create(&PostParams::default(), &pod(&format!("w-{i}")))
                    .await;
            }
            let _ = api.delete("w-0", &DeleteParams::default()).await;
        })
    };
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &from)
        .await?
        .boxed();
    let mut revs = Vec::new();
    let mut kinds = Vec::new();
    let mut bookmark = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while bookmark.is_none() || revs.len() < 6 {
        let next = tokio::time::timeout_at(deadline, stream.try_next()).await??;
        match next.ok_or("watch ended early")? {
            WatchEvent::Added(p) => {
                revs.push(rv_of(&p.metadata));
                kinds.push("ADDED");
            }
            WatchEvent::Deleted(p) => {
                revs.push(rv_of(&p.metadata));
                kinds.push("DELETED");
            }
            WatchEvent::Modified(p) => {
                revs.push(rv_of(&p.metadata));
                kinds.push("MODIFIED");
            }
            WatchEvent::Bookmark(b) => {
                if revs.len() == 6 {
                    bookmark = Some(b.metadata.resource_version.parse::<u64>()?);
                }
            }
            WatchEvent::Error(e) => return Err(format!("watch error {e:?}").into()),
        }
    }
    writer.await?;
    assert_eq!(
        kinds,
        ["ADDED", "ADDED", "ADDED", "ADDED", "ADDED", "DELETED"]
    );
    assert!(revs.windows(2).all(|w| w[0] < w[1]), "{revs:?}");
    assert!(revs[0] > from.parse::<u64>()?);
    assert!(bookmark >= revs.last().copied());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_watch_without_a_resource_version_starts_with_the_current_objects() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    api.create(&PostParams::default(), &pod("b")).await?;
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), "0")
        .await?
        .boxed();
    let mut names = Vec::new();
    while names.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(3), stream.try_next()).await??;
        if let Some(WatchEvent::Added(p)) = ev {
            names.extend(p.metadata.name);
        }
    }
    assert_eq!(names, ["a", "b"]);
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_compacted_resource_version_yields_410_expired() -> TestResult {
    let config = ServerConfig {
        compaction_window: 5,
        ..quiet_config()
    };
    let (server, client) = start(config).await?;
    let api = pods(&client, "default");
    let old = server.current_revision().to_string();
    for i in 0..10 {
        api.create(&PostParams::default(), &pod(&format!("p-{i}")))
            .await?;
    }
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &old)
        .await?
        .boxed();
    let ev = tokio::time::timeout(Duration::from_secs(3), stream.try_next()).await??;
    match ev {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
            assert!(
                e.message.contains("too old resource version"),
                "{}",
                e.message
            );
        }
        other => return Err(format!("expected a 410 ERROR event, got {other:?}").into()),
    }
    let e = api
        .list(&ListParams::default().at(&old).matching(VersionMatch::Exact))
        .await
        .err()
        .ok_or("an exact list at a compacted revision was served")?;
    assert_eq!(api_code(&e), Some(410));
    assert_eq!(api_reason(&e).as_deref(), Some("Expired"));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_watch_list_sends_the_current_objects_then_the_initial_events_end_bookmark() -> TestResult
{
    let (server, client) = start(quiet_config()).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    let params = WatchParams::default().initial_events().timeout(5);
    let mut stream = api.watch(&params, "").await?.boxed();
    let mut added = 0;
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(3), stream.try_next()).await??;
        match ev.ok_or("watch ended")? {
            WatchEvent::Added(_) => added += 1,
            WatchEvent::Bookmark(b) => {
                let end = b
                    .metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .cloned();
                assert_eq!(end.as_deref(), Some("true"));
                assert_eq!(
                    b.metadata.resource_version,
                    server.current_revision().to_string()
                );
                break;
            }
            other => return Err(format!("unexpected {other:?}").into()),
        }
    }
    assert_eq!(added, 1);
    // Live events follow.
    api.create(&PostParams::default(), &pod("b")).await?;
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(3), stream.try_next()).await??;
        match ev.ok_or("watch ended")? {
            WatchEvent::Added(p) => {
                assert_eq!(p.metadata.name.as_deref(), Some("b"));
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other => return Err(format!("unexpected {other:?}").into()),
        }
    }
    server.shutdown().await;
    Ok(())
}
