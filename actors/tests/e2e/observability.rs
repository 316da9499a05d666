//! What an operator sees: every named metric parsed by a Prometheus text parser with its labels,
//! moving when the run makes it move; and the live-read circuit breaker pausing destructive work
//! while ordinary work goes on, visible in metrics and `/readyz`.

use crate::common::{http_get, until, with_runtime};
use std::collections::HashMap;
use std::time::Duration;
use tidemark_actors::embedded::{
    DEMO_NAMESPACE, client_for, converged, replicaset_manifest, start_server,
};
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_actors::startup::start_metrics;
use tidemark_loadgen::request_faults::{ErrorRule, Match};
use tidemark_loadgen::{ApiServer, Resource, ServerConfig};

/// One scrape, parsed: per metric name, its samples as (labels, value); a histogram's value is
/// its count.
type Samples = Vec<(HashMap<String, String>, f64)>;

struct Parsed(HashMap<String, Samples>, String);

/// Checks every histogram of a scrape as Prometheus reads it: each `_bucket` series is
/// cumulative (never decreasing with `le`), ends with `le="+Inf"`, and that bucket equals the
/// series' `_count`. Returns how many series it checked.
fn check_histograms(text: &str) -> usize {
    // (family, labels without le) -> [(le, value)], and -> count.
    let mut buckets: HashMap<(String, String), Vec<(String, f64)>> = HashMap::new();
    let mut counts: HashMap<(String, String), f64> = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let value: f64 = value.parse().expect("a number");
        let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
        let labels = labels.trim_end_matches('}');
        if let Some(family) = name.strip_suffix("_bucket") {
            let mut le = None;
            let rest: Vec<&str> = labels
                .split(',')
                .filter(|l| match l.strip_prefix("le=") {
                    Some(v) => {
                        le = Some(v.trim_matches('"').to_string());
                        false
                    }
                    None => !l.is_empty(),
                })
                .collect();
            let le = le.unwrap_or_else(|| panic!("a bucket without le: {line}"));
            buckets
                .entry((family.to_string(), rest.join(",")))
                .or_default()
                .push((le, value));
        } else if let Some(family) = name.strip_suffix("_count") {
            counts.insert((family.to_string(), labels.to_string()), value);
        }
    }
    for (key, series) in &buckets {
        let mut previous = 0.0;
        let mut bound = f64::NEG_INFINITY;
        for (le, v) in series {
            let this: f64 = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().expect("le")
            };
            assert!(
                this > bound,
                "{key:?}: buckets in increasing le order: {series:?}"
            );
            assert!(*v >= previous, "{key:?}: cumulative: {series:?}");
            (previous, bound) = (*v, this);
        }
        assert_eq!(
            series.last().map(|(le, _)| le.as_str()),
            Some("+Inf"),
            "{key:?} ends with +Inf"
        );
        assert_eq!(
            counts.get(key).copied(),
            Some(previous),
            "{key:?}: le=\"+Inf\" equals _count"
        );
    }
    buckets.len()
}

impl Parsed {
    async fn scrape(addr: std::net::SocketAddr) -> Self {
        let (code, text) = http_get(addr, "/metrics").await;
        assert_eq!(code, 200, "{text}");
        let raw = text.clone();
        let lines = text.lines().map(|l| Ok(l.to_string()));
        let scrape =
            prometheus_parse::Scrape::parse(lines).expect("a Prometheus parser accepts it");
        let mut by_name: HashMap<String, Samples> = HashMap::new();
        for sample in scrape.samples {
            let value = match &sample.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => *v,
                prometheus_parse::Value::Histogram(buckets) => {
                    buckets.last().map_or(0.0, |b| b.count)
                }
                prometheus_parse::Value::Summary(_) => 0.0,
            };
            let labels: HashMap<String, String> = sample
                .labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            by_name
                .entry(sample.metric)
                .or_default()
                .push((labels, value));
        }
        Self(by_name, raw)
    }

    /// The value of `name` with every label of `labels`, if present.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.0.get(name)?.iter().find_map(|(l, v)| {
            labels
                .iter()
                .all(|(k, want)| l.get(*k).map(String::as_str) == Some(want))
                .then_some(*v)
        })
    }

    fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.get(name, labels).is_some()
    }
}

async fn seeded(io: &tokio::runtime::Handle, replicasets: usize, replicas: i32) -> ApiServer {
    let server = start_server(
        io,
        ServerConfig {
            watch_delays: vec![(Resource::Pods, Duration::from_millis(800))],
            kubelet_ready_after: Duration::from_millis(100),
            bookmark_interval: Duration::from_millis(300),
            ..ServerConfig::default()
        },
    )
    .await
    .expect("server starts");
    for i in 0..replicasets {
        server
            .create(
                Resource::ReplicaSets,
                DEMO_NAMESPACE,
                replicaset_manifest(&format!("rs-{i}"), replicas),
            )
            .expect("seed");
    }
    server
}

fn live_pods(server: &ApiServer, name: &str) -> i64 {
    server
        .replicaset_truth()
        .iter()
        .find(|t| t.name == name)
        .map_or(-1, |t| t.live_pods)
}

const C: (&str, &str) = ("controller", "replicaset");
const PODS: [(&str, &str); 3] = [
    ("controller", "replicaset"),
    ("group", ""),
    ("resource", "pods"),
];

#[test]
fn every_named_metric_parses_with_its_labels_and_moves_with_the_run() {
    with_runtime(|io| async move {
        let server = seeded(&io, 4, 1).await;
        let config = ManagerConfig {
            shards: 2,
            qps: 500.0,
            burst: 500,
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        let addr = start_metrics(&io, "127.0.0.1:0".parse().expect("addr"), &manager)
            .await
            .expect("metrics endpoint");
        assert!(
            until(Duration::from_secs(20), || converged(
                &server.replicaset_truth()
            ))
            .await
        );
        let before = Parsed::scrape(addr).await;
        for i in 0..4 {
            server
                .scale_replicaset(DEMO_NAMESPACE, &format!("rs-{i}"), 4)
                .expect("scale up");
        }
        assert!(
            until(Duration::from_secs(30), || converged(
                &server.replicaset_truth()
            ))
            .await
        );
        for i in 0..4 {
            server
                .scale_replicaset(DEMO_NAMESPACE, &format!("rs-{i}"), 2)
                .expect("scale down");
        }
        assert!(
            until(Duration::from_secs(30), || converged(
                &server.replicaset_truth()
            ))
            .await
        );
        let after = Parsed::scrape(addr).await;
        let url = server.url();
        manager.stop();
        server.shutdown().await;

        let name = [("name", "replicaset")];
        for metric in [
            "workqueue_depth",
            "workqueue_adds_total",
            "workqueue_retries_total",
            "workqueue_queue_duration_seconds",
            "workqueue_work_duration_seconds",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
        ] {
            assert!(after.has(metric, &name), "{metric} with name=replicaset");
        }
        for metric in [
            "tidemark_parked_keys",
            "tidemark_parked_duration_seconds",
            "tidemark_reconcile_duration_seconds",
            "tidemark_proven_keys",
        ] {
            assert!(
                after.has(metric, &[C]),
                "{metric} with controller=replicaset"
            );
        }
        assert!(after.has("tidemark_reconcile_total", &[C, ("result", "success")]));
        assert!(after.has("tidemark_live_reads_total", &[C, ("result", "error")]));
        assert!(after.has(
            "tidemark_store_resource_version",
            &[("group", ""), ("resource", "pods")]
        ));
        assert!(after.has(
            "tidemark_store_resource_version",
            &[("group", "apps"), ("resource", "replicasets")]
        ));
        assert_eq!(
            after.get("tidemark_circuit_breaker_open", &[("group", "apps")]),
            Some(0.0)
        );
        assert_eq!(
            after.get("tidemark_circuit_breaker_open", &[("group", "")]),
            Some(0.0)
        );
        assert_eq!(
            after.get("tidemark_leader", &[("leader_election", "false")]),
            Some(1.0),
            "without election the only manager acts"
        );
        for metric in [
            "process_resident_memory_bytes",
            "process_cpu_seconds_total",
            "process_start_time_seconds",
            "process_open_fds",
        ] {
            assert!(after.get(metric, &[]) > Some(0.0), "{metric}");
        }

        let moved = |metric: &str, labels: &[(&str, &str)]| {
            let (b, a) = (before.get(metric, labels), after.get(metric, labels));
            assert!(a > b, "{metric} {labels:?} must move: {b:?} -> {a:?}");
        };
        moved("tidemark_stale_sync_skips_total", &PODS);
        moved("tidemark_cache_lag_seconds", &PODS);
        moved("tidemark_parked_duration_seconds", &[C]);
        moved("tidemark_live_reads_total", &[C, ("result", "success")]);
        moved("tidemark_reconcile_total", &[C, ("result", "success")]);
        moved("workqueue_adds_total", &name);
        moved(
            "tidemark_store_resource_version",
            &[("group", ""), ("resource", "pods")],
        );
        assert!(
            after.get("tidemark_destructive_held_total", &[C]) >= Some(1.0),
            "the first scale-down of each set waited for its proof"
        );

        // Every histogram, as a Prometheus server reads it.
        assert!(check_histograms(&after.1) >= 5, "{}", after.1);
        // Prometheus refuses a scrape that repeats a series.
        let mut seen = std::collections::HashSet::new();
        for line in after.1.lines().filter(|l| !l.starts_with('#')) {
            let series = line.rsplit_once(' ').map_or(line, |(s, _)| s);
            assert!(seen.insert(series), "{series} appears twice");
        }
        // KEP-5647's and client-go's names, as kube-controller-manager exposes them.
        moved(
            "replicaset_controller_stale_sync_skips_total",
            &[("group", ""), ("resource", "pods")],
        );
        assert!(after.has(
            "informer_store_resource_version",
            &[
                ("name", "kube-controller-manager"),
                ("group", "apps"),
                ("version", "v1"),
                ("resource", "replicasets")
            ]
        ));
        moved(
            "informer_store_resource_version",
            &[("group", ""), ("version", "v1"), ("resource", "pods")],
        );
        // Other tests' servers share the process-wide client metrics: select this one's host.
        let host = url
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .trim_end_matches('/');
        moved(
            "rest_client_requests_total",
            &[("code", "201"), ("method", "POST"), ("host", host)],
        );
        moved(
            "rest_client_request_duration_seconds",
            &[("verb", "DELETE"), ("host", host)],
        );
        assert!(
            !after.has("leader_election_master_status", &[]),
            "registered only with leader election, as upstream"
        );
        // No series for a cache the ReplicaSet controller never reads (the other controllers of
        // this run read Nodes and Leases: their series are theirs).
        for unread in ["nodes", "leases", "jobs", "daemonsets"] {
            let r = ("resource", unread);
            assert!(!after.has("replicaset_controller_stale_sync_skips_total", &[r]));
            assert!(
                !after.has("tidemark_stale_sync_skips_total", &[C, r]),
                "{unread}"
            );
            assert!(
                !after.has("tidemark_cache_lag_seconds", &[C, r]),
                "{unread}"
            );
        }
    });
}

#[test]
fn failing_live_reads_open_the_breaker_pause_deletes_and_let_creates_through() {
    with_runtime(|io| async move {
        let server = seeded(&io, 2, 3).await;
        let config = ManagerConfig {
            shards: 1,
            qps: 500.0,
            burst: 500,
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        let addr = start_metrics(&io, "127.0.0.1:0".parse().expect("addr"), &manager)
            .await
            .expect("metrics endpoint");
        assert!(
            until(Duration::from_secs(20), || converged(
                &server.replicaset_truth()
            ))
            .await
        );
        // Barriers list ReplicaSets with limit=1; the informer has listed already and now watches.
        server.faults().requests().add_error(ErrorRule {
            matching: Match {
                verb: Some("list".into()),
                resource: Some("replicasets".into()),
            },
            fraction: 1.0,
            code: 500,
            retry_after_seconds: 0,
        });
        server
            .scale_replicaset(DEMO_NAMESPACE, "rs-0", 1)
            .expect("scale down");
        server
            .scale_replicaset(DEMO_NAMESPACE, "rs-1", 5)
            .expect("scale up");
        let opened = until(Duration::from_secs(15), || manager_breaker_open(&manager)).await;
        let grown = until(Duration::from_secs(10), || live_pods(&server, "rs-1") == 5).await;
        let scrape = Parsed::scrape(addr).await;
        let (ready, detail) = http_get(addr, "/readyz").await;
        let kept = live_pods(&server, "rs-0");
        server.faults().requests().clear();
        let recovered = until(Duration::from_secs(30), || live_pods(&server, "rs-0") == 1).await;
        let warned = server.list(Resource::Events).iter().any(|e| {
            e["reason"] == "FreshnessUnproven"
                && e["type"] == "Warning"
                && e["involvedObject"]["name"] == "rs-0"
        });
        let after = Parsed::scrape(addr).await;
        manager.stop();
        server.shutdown().await;

        assert!(opened, "repeated live-read failures open the breaker");
        assert!(
            grown,
            "ordinary work (creates, status) goes on while reads fail"
        );
        assert_eq!(kept, 3, "no delete without proof of freshness");
        assert_eq!(
            scrape.get("tidemark_circuit_breaker_open", &[("group", "apps")]),
            Some(1.0)
        );
        assert!(scrape.get("tidemark_live_reads_total", &[C, ("result", "error")]) >= Some(1.0));
        assert_eq!(
            ready, 200,
            "still ready: caches synced; degraded is detail: {detail}"
        );
        assert!(
            detail.contains("[!] degraded: live-read circuit breaker open"),
            "{detail}"
        );
        assert!(
            warned,
            "the degraded ReplicaSet carries a Warning Event saying why"
        );
        assert!(
            recovered,
            "the breaker half-opens, a trial read succeeds, the delete goes ahead"
        );
        assert_eq!(
            after.get("tidemark_circuit_breaker_open", &[("group", "apps")]),
            Some(0.0)
        );
    });
}

fn manager_breaker_open(manager: &Manager) -> bool {
    manager
        .source()
        .barriers()
        .breakers_open()
        .iter()
        .any(|(_, open)| *open)
}

#[test]
fn with_leader_election_the_lease_s_master_status_is_one_once_this_process_leads() {
    with_runtime(|io| async move {
        let server = seeded(&io, 1, 1).await;
        let config = ManagerConfig {
            shards: 1,
            controllers: vec!["replicaset".into()],
            leader_election: Some(tidemark_actors::leader::LeaderElectionConfig::new("me")),
            ..ManagerConfig::default()
        };
        let manager = Manager::start(
            &config,
            client_for(&server, &io).await.expect("client"),
            &io,
        )
        .expect("manager");
        let addr = start_metrics(&io, "127.0.0.1:0".parse().expect("addr"), &manager)
            .await
            .expect("metrics endpoint");
        let mut status = None;
        for _ in 0..100 {
            status = Parsed::scrape(addr)
                .await
                .get("leader_election_master_status", &[("name", "tidemark")]);
            if status == Some(1.0) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        manager.stop();
        server.shutdown().await;
        assert_eq!(status, Some(1.0), "named after the Lease, 1 while leading");
    });
}
