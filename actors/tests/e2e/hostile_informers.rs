//! The informers against a hostile API server (`tidemark_loadgen::hostile`): `ERROR 410` on
//! every watch relists with client-go's reflector backoff, list pages and watches are paced by
//! the informers' rate limit, a watch line without a newline is cut at the cap, a trickled list
//! and a write that is never answered fail at their deadline naming the URL, a silent watch is
//! renewed, and one object that is not UTF-8 does not keep the others of its list out.

use crate::common::{until, with_runtime};
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tidemark_actors::client::{RequestTimeouts, build_client_with};
use tidemark_actors::informer::{InformerLimits, InformerState};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_engine::Resource;
use tidemark_loadgen::hostile::{Hostile, HostileServer, WatchBehaviour, WriteBehaviour};

pub async fn start_hostile(io: &tokio::runtime::Handle, config: Hostile) -> HostileServer {
    io.spawn(HostileServer::start(config))
        .await
        .expect("join")
        .expect("hostile server")
}

pub fn client_of(
    io: &tokio::runtime::Handle,
    server: &HostileServer,
    timeouts: RequestTimeouts,
) -> kube::Client {
    let url = server.url().parse().expect("url");
    build_client_with(kube::Config::new(url), None, io, timeouts).expect("client")
}

pub fn config_for(server: &HostileServer, controllers: &[&str]) -> ManagerConfig {
    ManagerConfig {
        shards: 1,
        controllers: controllers.iter().map(|c| c.to_string()).collect(),
        api_server: server.url(),
        ..ManagerConfig::default()
    }
}

/// `manifest` as the server stores it: with a uid and a resourceVersion.
pub fn stored(mut manifest: Value, uid: &str, version: u64) -> Vec<u8> {
    manifest["metadata"]["uid"] = uid.into();
    manifest["metadata"]["resourceVersion"] = version.to_string().into();
    serde_json::to_vec(&manifest).expect("json")
}

pub fn replicaset(name: &str, replicas: i32) -> Vec<u8> {
    let manifest = tidemark_loadgen::workload::replicaset_manifest("demo", name, replicas);
    stored(manifest, &format!("uid-{name}"), 10)
}

fn pod(i: usize) -> Vec<u8> {
    let manifest = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{i}"), "namespace": "demo", "labels": {"app": "other"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Running"}
    });
    stored(manifest, &format!("pod-{i}"), 5)
}

fn informer(manager: &Manager, resource: Resource) -> std::sync::Arc<InformerState> {
    manager
        .informers()
        .iter()
        .find(|(r, _)| *r == resource)
        .map(|(_, s)| s.clone())
        .expect("informer")
}

#[test]
fn an_error_410_on_every_watch_relists_with_the_reflectors_backoff() {
    with_runtime(|io| async move {
        let hostile = Hostile {
            watches: WatchBehaviour::Gone,
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let manager =
            Manager::start(&config_for(&server, &["replicaset"]), client, &io).expect("manager");
        tokio::time::sleep(Duration::from_secs(5)).await;
        let lists: Vec<Duration> = server
            .seen()
            .iter()
            .filter(|s| s.resource == "replicasets" && s.full_list && !s.watch)
            .map(|s| s.at)
            .collect();
        manager.stop();
        server.shutdown();
        assert!(
            (2..=4).contains(&lists.len()),
            "5 s of 410s: lists at {lists:?}"
        );
        let gaps: Vec<Duration> = lists.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps[0] >= Duration::from_millis(800), "{gaps:?}");
        if let Some(second) = gaps.get(1) {
            assert!(*second >= Duration::from_millis(1600), "doubled: {gaps:?}");
        }
    });
}

#[test]
fn list_pages_and_watches_take_tokens_of_the_informers_rate_limit() {
    with_runtime(|io| async move {
        let hostile = Hostile {
            items: vec![("pods".into(), (0..12).map(pod).collect())],
            page_size: 1,
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let config = ManagerConfig {
            qps: 4.0,
            burst: 1,
            ..config_for(&server, &["replicaset"])
        };
        let started = Instant::now();
        let manager = Manager::start(&config, client, &io).expect("manager");
        let synced = until(Duration::from_secs(10), || {
            manager
                .informers()
                .iter()
                .all(|(_, s)| s.synced.load(Ordering::Relaxed))
        })
        .await;
        let took = started.elapsed();
        let pages = server
            .seen()
            .iter()
            .filter(|s| s.resource == "pods" && !s.watch)
            .count();
        manager.stop();
        server.shutdown();
        assert!(synced, "both caches synced");
        assert_eq!(pages, 12, "one page per Pod");
        assert!(
            took >= Duration::from_millis(2500),
            "13 list pages at 4 a second after a burst of 1 took only {took:?}"
        );
    });
}

#[test]
fn a_watch_line_without_a_newline_is_cut_at_the_cap_and_the_informer_relists() {
    with_runtime(|io| async move {
        let hostile = Hostile {
            watches: WatchBehaviour::EndlessLine {
                chunk: 64 << 10,
                every: Duration::from_millis(2),
            },
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let config = ManagerConfig {
            informer_limits: InformerLimits {
                watch_line: 1 << 20,
                ..InformerLimits::default()
            },
            ..config_for(&server, &["replicaset"])
        };
        let manager = Manager::start(&config, client, &io).expect("manager");
        let replicasets = informer(&manager, Resource::ReplicaSets);
        let relisted = until(Duration::from_secs(4), || {
            server.lists("replicasets") >= 2 && replicasets.malformed.load(Ordering::Relaxed) >= 1
        })
        .await;
        let watched_again = until(Duration::from_secs(2), || {
            server.watches("replicasets") >= 2
        })
        .await;
        let watches = server.watches("replicasets");
        manager.stop();
        server.shutdown();
        assert!(
            relisted,
            "the endless line is a malformed event and the informer lists again ({} lists, {} malformed)",
            server.lists("replicasets"),
            replicasets.malformed.load(Ordering::Relaxed)
        );
        assert!(
            watched_again,
            "a new watch after the relist ({watches} watches)"
        );
    });
}

#[test]
fn a_trickled_list_body_fails_at_the_read_deadline_naming_the_url() {
    with_runtime(|io| async move {
        let hostile = Hostile {
            items: vec![("replicasets".into(), vec![replicaset("web", 1)])],
            trickle_lists: Some(Duration::from_millis(200)),
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let timeouts = RequestTimeouts {
            read: Duration::from_secs(1),
            ..RequestTimeouts::default()
        };
        let client = client_of(&io, &server, timeouts);
        let manager =
            Manager::start(&config_for(&server, &["replicaset"]), client, &io).expect("manager");
        let replicasets = informer(&manager, Resource::ReplicaSets);
        let mut failure = None;
        let reported = until(Duration::from_secs(4), || {
            failure = replicasets.last_failure.lock().clone();
            failure.is_some()
        })
        .await;
        manager.stop();
        server.shutdown();
        assert!(reported, "a list that never ends is a failure, not a hang");
        let (_, why) = failure.expect("failure");
        assert!(why.contains("not answered within 1s"), "{why}");
        assert!(
            why.contains(&format!("{}/apis/apps/v1/replicasets", server.url())),
            "the URL is named: {why}"
        );
        assert!(!replicasets.synced.load(Ordering::Relaxed));
    });
}

#[test]
fn a_write_the_server_never_answers_fails_at_the_write_deadline() {
    with_runtime(|io| async move {
        let hostile = Hostile {
            items: vec![("replicasets".into(), vec![replicaset("web", 2)])],
            writes: WriteBehaviour::Hang,
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let timeouts = RequestTimeouts {
            write: Duration::from_secs(1),
            ..RequestTimeouts::default()
        };
        let client = client_of(&io, &server, timeouts);
        let manager =
            Manager::start(&config_for(&server, &["replicaset"]), client, &io).expect("manager");
        let source = manager.source();
        let failed = until(Duration::from_secs(5), || {
            source.writes().failed.load(Ordering::Relaxed) >= 1
        })
        .await;
        let sent = source.writes().sent.load(Ordering::Relaxed);
        manager.stop();
        server.shutdown();
        assert!(sent >= 1, "the manager tried to create Pods");
        assert!(failed, "a hung create is answered by its deadline");
    });
}

#[test]
fn a_watch_that_sends_nothing_is_renewed_after_the_idle_timeout() {
    with_runtime(|io| async move {
        let hostile = Hostile {
            watches: WatchBehaviour::Silent,
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let config = ManagerConfig {
            informer_limits: InformerLimits {
                watch_idle: Duration::from_millis(700),
                ..InformerLimits::default()
            },
            ..config_for(&server, &["replicaset"])
        };
        let manager = Manager::start(&config, client, &io).expect("manager");
        let renewed = until(Duration::from_secs(4), || {
            server.watches("replicasets") >= 3
        })
        .await;
        manager.stop();
        server.shutdown();
        assert!(
            renewed,
            "silent watches renewed: {} watches",
            server.watches("replicasets")
        );
        assert_eq!(server.lists("replicasets"), 1, "renewed, not relisted");
    });
}

#[test]
fn a_watch_that_closes_at_once_is_a_very_short_watch_and_relists_with_backoff() {
    with_runtime(|io| async move {
        let hostile = Hostile {
            watches: WatchBehaviour::Closed,
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let manager =
            Manager::start(&config_for(&server, &["replicaset"]), client, &io).expect("manager");
        tokio::time::sleep(Duration::from_secs(4)).await;
        let (watches, lists) = (server.watches("replicasets"), server.lists("replicasets"));
        manager.stop();
        server.shutdown();
        assert!(watches <= 4, "{watches} watches in 4 s: no tight loop");
        assert!(lists >= 2, "each very short watch is followed by a relist");
    });
}

#[test]
fn one_object_that_is_not_utf8_is_skipped_and_the_rest_of_its_list_is_cached() {
    with_runtime(|io| async move {
        let bad = replicaset("bad-XX", 1);
        let at = bad.windows(2).position(|w| w == b"XX").expect("marker");
        let mut bad = bad;
        bad[at] = 0xff;
        bad[at + 1] = 0xfe;
        let hostile = Hostile {
            items: vec![(
                "replicasets".into(),
                vec![replicaset("web-a", 0), bad, replicaset("web-b", 0)],
            )],
            ..Hostile::default()
        };
        let server = start_hostile(&io, hostile).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let manager =
            Manager::start(&config_for(&server, &["replicaset"]), client, &io).expect("manager");
        let replicasets = informer(&manager, Resource::ReplicaSets);
        let synced = until(Duration::from_secs(4), || {
            replicasets.synced.load(Ordering::Relaxed)
        })
        .await;
        let stats = manager.stats().await;
        manager.stop();
        server.shutdown();
        assert!(synced, "the list is not blocked by one bad object");
        assert_eq!(replicasets.malformed.load(Ordering::Relaxed), 1);
        let cached: usize = stats
            .shards
            .iter()
            .flat_map(|s| &s.resources)
            .filter(|(r, ..)| *r == Resource::ReplicaSets)
            .map(|(.., n)| n)
            .sum();
        assert_eq!(cached, 2, "the two good ReplicaSets are cached");
    });
}
