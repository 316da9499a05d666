//! Faults, kubelet emulation, the oracle, discovery and the kubeconfig, seen from clients.

use crate::common::replicaset_uid;
use std::time::{Duration, Instant};

use crate::common::*;
use futures::{StreamExt, TryStreamExt};
use http::Request;
use kube::api::{PostParams, WatchEvent, WatchParams};
use tidemark_loadgen::{Resource, ServerConfig, ViolationKind};

async fn next_added_at(
    stream: &mut (
             impl futures::Stream<Item = kube::Result<WatchEvent<k8s_openapi::api::core::v1::Pod>>>
             + Unpin
         ),
) -> Result<Instant, Box<dyn std::error::Error + Send + Sync>> {
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await??;
        match ev.ok_or("watch ended")? {
            WatchEvent::Added(_) => return Ok(Instant::now()),
            WatchEvent::Error(e) => return Err(format!("{e:?}").into()),
            _ => {}
        }
    }
}

#[tokio::test]
async fn the_watch_delay_fault_holds_events_back_and_can_be_changed_through_the_admin_endpoint()
-> TestResult {
    let config = ServerConfig {
        watch_delays: vec![(Resource::Pods, Duration::from_millis(500))],
        ..quiet_config()
    };
    let (server, client) = start(config).await?;
    let api = pods(&client, "default");
    let from = server.current_revision().to_string();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &from)
        .await?
        .boxed();
    let t0 = Instant::now();
    api.create(&PostParams::default(), &pod("slow")).await?;
    let seen = next_added_at(&mut stream).await?;
    assert!(seen - t0 >= Duration::from_millis(490), "{:?}", seen - t0);

    // Change it to zero through the admin listener.
    let admin = plain_client(&format!("http://{}", server.admin_addr()))?;
    let req = Request::put("/faults/watch-delay")
        .header("content-type", "application/json")
        .body(br#"{"resource":"pods","millis":0}"#.to_vec())?;
    let reply = admin.request_text(req).await?;
    assert!(reply.contains("\"pods\":0"), "{reply}");
    assert_eq!(server.faults().watch_delay(Resource::Pods), Duration::ZERO);
    let t1 = Instant::now();
    api.create(&PostParams::default(), &pod("fast")).await?;
    let seen = next_added_at(&mut stream).await?;
    assert!(seen - t1 < Duration::from_millis(400), "{:?}", seen - t1);
    let faults = admin
        .request_text(Request::get("/faults").body(Vec::new())?)
        .await?;
    assert!(faults.contains("watchDelayMillis"), "{faults}");
    let bad = Request::put("/faults/watch-delay")
        .body(br#"{"resource":"widgets","millis":1}"#.to_vec())?;
    assert!(admin.request_text(bad).await.is_err());
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn a_bookmark_never_passes_an_event_held_back_by_the_watch_delay() -> TestResult {
    let config = ServerConfig {
        watch_delays: vec![(Resource::Pods, Duration::from_millis(400))],
        bookmark_interval: Duration::from_millis(50),
        ..quiet_config()
    };
    let (server, client) = start(config).await?;
    let api = pods(&client, "default");
    let from = server.current_revision();
    let mut stream = api
        .watch(&WatchParams::default().timeout(10), &from.to_string())
        .await?
        .boxed();
    let created = api.create(&PostParams::default(), &pod("held")).await?;
    let created_rv = rv_of(&created.metadata);
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), stream.try_next()).await??;
        match ev.ok_or("watch ended")? {
            WatchEvent::Bookmark(b) => {
                let b: u64 = b.metadata.resource_version.parse()?;
                assert!(
                    b < created_rv,
                    "bookmark {b} passed undelivered event {created_rv}"
                );
            }
            WatchEvent::Added(p) => {
                assert_eq!(rv_of(&p.metadata), created_rv);
                break;
            }
            other => return Err(format!("unexpected {other:?}").into()),
        }
    }
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_kubelet_moves_a_pod_to_running_and_ready() -> TestResult {
    let config = ServerConfig {
        kubelet_enabled: true,
        kubelet_ready_after: Duration::from_millis(50),
        node_count: 2,
        ..quiet_config()
    };
    let (server, client) = start(config).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &pod("a")).await?;
    api.create(&PostParams::default(), &pod("b")).await?;
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut nodes = std::collections::BTreeSet::new();
    for name in ["a", "b"] {
        loop {
            let p = api.get(name).await?;
            let status = p.status.clone().unwrap_or_default();
            if status.phase.as_deref() == Some("Running") {
                let ready = status
                    .conditions
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                assert!(ready);
                assert!(status.pod_ip.is_some());
                assert!(status.start_time.is_some());
                nodes.extend(p.spec.and_then(|s| s.node_name));
                break;
            }
            assert!(Instant::now() < deadline, "pod {name} never became Running");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert_eq!(nodes.into_iter().collect::<Vec<_>>(), ["node-0", "node-1"]);
    assert!(
        server
            .writes()
            .iter()
            .any(|w| w.user_agent.as_deref() == Some("kubelet"))
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_oracle_reports_over_create_when_a_replicaset_gets_one_pod_too_many() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let uid = replicaset_uid(&client, "web", 2).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &owned_pod("web-1", "web", &uid))
        .await?;
    api.create(&PostParams::default(), &owned_pod("web-2", "web", &uid))
        .await?;
    assert!(server.violations().is_empty(), "exactly desired is fine");
    assert_eq!(server.replicaset_truth()[0].live_pods, 2);
    let third = api
        .create(&PostParams::default(), &owned_pod("web-3", "web", &uid))
        .await?;
    let v = server.violations();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].kind, ViolationKind::OverCreate);
    assert_eq!((v[0].live, v[0].desired), (2, 2));
    assert_eq!(v[0].pod, "web-3");
    assert_eq!(v[0].replicaset, "web");
    assert_eq!(v[0].revision, rv_of(&third.metadata));
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_oracle_reports_nothing_when_a_replicaset_scales_within_bounds() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let uid = replicaset_uid(&client, "web", 1).await?;
    let api = pods(&client, "default");
    api.create(&PostParams::default(), &owned_pod("web-1", "web", &uid))
        .await?;
    server.scale_replicaset("default", "web", 2)?;
    api.create(&PostParams::default(), &owned_pod("web-2", "web", &uid))
        .await?;
    server.scale_replicaset("default", "web", 1)?;
    api.delete("web-2", &Default::default()).await?;
    assert!(server.violations().is_empty(), "{:?}", server.violations());
    let truth = &server.replicaset_truth()[0];
    assert_eq!(
        (truth.spec_replicas, truth.live_pods, truth.generation),
        (1, 1, 3)
    );
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn discovery_works_for_kube_rs() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let version = client.apiserver_version().await?;
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "36")
    );
    assert_eq!(version.git_version, "v1.36.0");
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await?;
    let mut found = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            let cluster = matches!(
                ar.plural.as_str(),
                "nodes"
                    | "namespaces"
                    | "customresourcedefinitions"
                    | "clusterroles"
                    | "clusterrolebindings"
                    | "tokenreviews"
                    | "subjectaccessreviews"
                    | "selfsubjectaccessreviews"
            );
            let want = if cluster {
                kube::discovery::Scope::Cluster
            } else {
                kube::discovery::Scope::Namespaced
            };
            assert_eq!(caps.scope, want, "{}", ar.plural);
            found.push(format!("{}/{}", ar.group, ar.plural));
        }
    }
    found.sort();
    assert_eq!(
        found,
        [
            "/events",
            "/namespaces",
            "/nodes",
            "/persistentvolumeclaims",
            "/pods",
            "/serviceaccounts",
            "apiextensions.k8s.io/customresourcedefinitions",
            "apps/controllerrevisions",
            "apps/daemonsets",
            "apps/replicasets",
            "apps/statefulsets",
            "authentication.k8s.io/tokenreviews",
            "authorization.k8s.io/selfsubjectaccessreviews",
            "authorization.k8s.io/subjectaccessreviews",
            "batch/jobs",
            "coordination.k8s.io/leases",
            "rbac.authorization.k8s.io/clusterrolebindings",
            "rbac.authorization.k8s.io/clusterroles",
            "rbac.authorization.k8s.io/rolebindings",
            "rbac.authorization.k8s.io/roles",
        ]
    );
    let health = client
        .request_text(Request::get("/healthz").body(Vec::new())?)
        .await?;
    assert_eq!(health, "ok");
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn the_kubeconfig_connects_a_standard_client() -> TestResult {
    let (server, _) = start(quiet_config()).await?;
    let dir = std::env::temp_dir().join(format!("loadgen-kubeconfig-{}", std::process::id()));
    server.write_kubeconfig(&dir)?;
    let kubeconfig = kube::config::Kubeconfig::read_from(&dir)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        server.url()
    );
    let client = kube::Client::try_from(config)?;
    pods(&client, "default")
        .create(&PostParams::default(), &pod("via-kubeconfig"))
        .await?;
    assert!(
        server
            .get(Resource::Pods, "default", "via-kubeconfig")
            .is_some()
    );
    let _ = std::fs::remove_file(&dir);
    server.shutdown().await;
    Ok(())
}
