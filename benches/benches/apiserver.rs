//! The simulated API server under read load: a watch replaying 10,000 realistic Pods over HTTP,
//! and a paged list of them, each read by kube-rs keeping the raw JSON (no typed decode, so the
//! figure is the server's and the transport's, not the client's decoder).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::core::{ObjectList, Request};
use serde_json::value::RawValue;
use tidemark_benches::pod_json;
use tidemark_loadgen::{Resource, ServerConfig};

const PODS: usize = 10_000;

fn setup(rt: &tokio::runtime::Runtime) -> (tidemark_loadgen::ApiServer, kube::Client) {
    rt.block_on(async {
        let server = tidemark_loadgen::start(ServerConfig {
            kubelet_enabled: false,
            ..ServerConfig::default()
        })
        .await
        .unwrap_or_else(|e| panic!("server: {e}"));
        for i in 0..PODS {
            let mut pod: serde_json::Value =
                serde_json::from_slice(&pod_json("bench", &format!("web-{i}"), "web", 1))
                    .unwrap_or_else(|e| panic!("fixture: {e}"));
            for field in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "ownerReferences",
                "generateName",
            ] {
                pod["metadata"].as_object_mut().map(|m| m.remove(field));
            }
            server
                .create(Resource::Pods, "bench", pod)
                .unwrap_or_else(|e| panic!("seed: {e}"));
        }
        tidemark_tls::install_crypto_provider();
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml())
            .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
        let client = kube::Client::try_from(config).unwrap_or_else(|e| panic!("client: {e}"));
        (server, client)
    })
}

fn watch_replay(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let (server, client) = setup(&rt);
    let mut group = c.benchmark_group("apiserver");
    group.throughput(Throughput::Elements(PODS as u64));
    group.sample_size(10);
    group.bench_function("watch_replay_10k_pods", |b| {
        b.iter(|| {
            rt.block_on(async {
                let params = WatchParams::default().timeout(60);
                let request = Request::new("/api/v1/pods")
                    .watch(&params, "1")
                    .unwrap_or_else(|e| panic!("{e}"));
                let stream = client
                    .request_events::<Box<RawValue>>(request)
                    .await
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut stream = Box::pin(stream);
                let mut seen = 0;
                while seen < PODS {
                    match stream.next().await {
                        Some(Ok(WatchEvent::Added(_))) => seen += 1,
                        Some(Ok(_)) => {}
                        other => panic!("watch ended early: {:?}", other.map(|r| r.map(|_| ()))),
                    }
                }
            })
        })
    });
    group.bench_function("paged_list_10k_pods", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut token = None;
                let mut seen = 0;
                loop {
                    let params = ListParams {
                        limit: Some(500),
                        continue_token: token.clone(),
                        ..ListParams::default()
                    };
                    let request = Request::new("/api/v1/pods")
                        .list(&params)
                        .unwrap_or_else(|e| panic!("{e}"));
                    let page: ObjectList<Box<RawValue>> = client
                        .request(request)
                        .await
                        .unwrap_or_else(|e| panic!("{e}"));
                    seen += page.items.len();
                    match page.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(next) => token = Some(next),
                        None => break,
                    }
                }
                assert_eq!(seen, PODS);
            })
        })
    });
    group.finish();
    rt.block_on(server.shutdown());
}

criterion_group!(benches, watch_replay);
criterion_main!(benches);
