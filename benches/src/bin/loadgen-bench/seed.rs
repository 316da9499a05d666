//! Seeds the bench server: N realistic Pods (4 to 7 KB each) owned by M realistic ReplicaSets
//! (about 5 KB each, managedFields included), rendered into pre-encoded bytes at resourceVersions
//! 1..=N, the ReplicaSets after them.

use bytes::Bytes;
use tidemark_benches::realistic_replicaset_json;
use tidemark_loadgen::bench::pods::{PodTemplates, replicaset_json};
use tidemark_loadgen::bench::pods_protobuf::{PodProtobufTemplates, TemplateError};
use tidemark_loadgen::bench::server::{BenchObjects, BenchServer, BenchServerConfig};

/// What was seeded.
#[derive(Debug, Clone)]
pub struct Seed {
    /// The Pods as the server holds them: JSON, or `Pod` messages when it serves protobuf.
    pub pods: Vec<Bytes>,
    /// The ReplicaSets' JSON.
    pub replicasets: Vec<Bytes>,
    /// The templates (for churn).
    pub templates: PodTemplates,
    /// The same Pods' protobuf templates, when the server serves protobuf ([`protobuf`]).
    pub protobuf: Option<PodProtobufTemplates>,
    /// The revision after seeding.
    pub revision: u64,
}

/// `TIDEMARK_BENCH_LEAN_OWNERS=1` seeds lean 0.6 KB ReplicaSets (a one-container template, no
/// managedFields): how PERF.md shows what realistic owners cost. The default is realistic
/// ReplicaSets.
pub fn lean_owners() -> bool {
    std::env::var("TIDEMARK_BENCH_LEAN_OWNERS").is_ok_and(|v| v == "1")
}

/// Renders `pods` Pods and `replicasets` ReplicaSets, with the Pods' protobuf templates when
/// the server is to serve protobuf.
pub fn render(pods: u64, replicasets: u64) -> Result<Seed, TemplateError> {
    let replicasets = replicasets.max(1);
    let owner = if lean_owners() {
        replicaset_json
    } else {
        realistic_replicaset_json
    };
    let templates = PodTemplates::new(replicasets);
    let protobuf = protobuf()
        .then(|| PodProtobufTemplates::new(&templates))
        .transpose()?;
    let pod_bytes = (0..pods)
        .map(|i| match &protobuf {
            Some(t) => Bytes::from(t.render(i, i + 1, 0)),
            None => Bytes::from(templates.render(i, i + 1, 0)),
        })
        .collect();
    let rs_bytes = (0..replicasets)
        .map(|r| {
            let replicas = pods / replicasets + u64::from(r < pods % replicasets);
            Bytes::from(owner(r, replicas, pods + r + 1))
        })
        .collect();
    Ok(Seed {
        pods: pod_bytes,
        replicasets: rs_bytes,
        protobuf,
        templates,
        revision: pods + replicasets,
    })
}

impl Seed {
    /// Pod `bytes` of this seed decoded, in the format the seed holds them.
    pub fn decode_pod(
        &self,
        bytes: &[u8],
    ) -> Result<tidemark_engine::PodView, tidemark_engine::DecodeError> {
        match self.protobuf {
            Some(_) => tidemark_engine::PodView::from_protobuf(bytes).map(|(pod, _)| pod),
            None => tidemark_engine::PodView::from_json(bytes),
        }
    }
}

/// `TIDEMARK_BENCH_PLAIN_HTTP=1` serves plain HTTP without credentials: how PERF.md
/// measures what TLS and authentication cost. The default is HTTPS with a bearer token.
pub fn plain_http() -> bool {
    std::env::var("TIDEMARK_BENCH_PLAIN_HTTP").is_ok_and(|v| v == "1")
}

/// `TIDEMARK_BENCH_PROTOBUF=1` has the bench server hold and serve its Pods in protobuf only
/// (Tidemark and the null client ask for it first; the reflector runs in JSON phases only).
pub fn protobuf() -> bool {
    std::env::var("TIDEMARK_BENCH_PROTOBUF").is_ok_and(|v| v == "1")
}

/// Starts the bench server with `seed` on the current tokio runtime.
pub async fn serve(seed: &Seed, window: usize) -> std::io::Result<BenchServer> {
    BenchServer::start(
        BenchServerConfig {
            window,
            plain_http: plain_http(),
            protobuf: protobuf(),
            ..BenchServerConfig::default()
        },
        BenchObjects {
            pods: seed.pods.clone(),
            replicasets: seed.replicasets.clone(),
            revision: seed.revision,
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_replicaset_gets_its_share_of_the_pods() {
        let seed = render(10, 3).expect("seed");
        assert_eq!(seed.pods.len(), 10);
        assert_eq!(seed.revision, 13);
        let replicas: u64 = seed
            .replicasets
            .iter()
            .map(|b| {
                let v: serde_json::Value = serde_json::from_slice(b).expect("json");
                v["spec"]["replicas"].as_u64().unwrap_or(0)
            })
            .sum();
        assert_eq!(replicas, 10);
    }
}
