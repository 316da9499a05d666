//! Core benchmarks: resourceVersion compare, route, decode, shard apply (one core, and a batch on
//! both cores), gate check, park and wake, queue pop. Each reports throughput; each figure that
//! has a peer equivalent (k8s-openapi decode) is measured in the same run, side by side.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Instant;
use tidemark_benches::pod_json;
use tidemark_engine::queue::{ParkTarget, WorkQueue};
use tidemark_engine::resource::PerResource;
use tidemark_engine::version_map::VersionMap;
use tidemark_engine::{
    Change, ControllerSpec, Object, ObjectKey, PodView, ReplicaSetController, Resource,
    ResourceVersion, Shard, ShardId, ShardRouter,
};

fn rv_compare(c: &mut Criterion) {
    let texts: Vec<String> = (0..1_000u64)
        .map(|i| (1_000_000 + i * 7_919).to_string())
        .collect();
    let mut group = c.benchmark_group("resource_version");
    group.throughput(Throughput::Elements(texts.len() as u64));
    group.bench_function("parse_and_compare_1000", |b| {
        b.iter(|| {
            let mut newer = 0;
            let mut last = ResourceVersion::new(1);
            for t in &texts {
                let v = ResourceVersion::parse(black_box(t)).ok();
                if v > last {
                    newer += 1;
                }
                last = v;
            }
            black_box(newer)
        })
    });
    group.finish();
}

fn pod_events(n: usize, owners: usize) -> Vec<Change> {
    (0..n)
        .map(|i| {
            let owner = format!("web-{}", i % owners);
            let bytes = pod_json("default", &format!("{owner}-{i}"), &owner, 1_000 + i as u64);
            Change::Applied(Object::Pod(
                PodView::from_json(&bytes).unwrap_or_else(|e| panic!("fixture: {e}")),
            ))
        })
        .collect()
}

fn route(c: &mut Criterion) {
    let events = pod_events(1_000, 100);
    let router = ShardRouter::new(2);
    let mut group = c.benchmark_group("route");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("pod_by_controlling_owner_1000", |b| {
        b.iter(|| {
            let mut sum = 0usize;
            for e in &events {
                let o = e.object();
                sum += router
                    .route(black_box(o))
                    .shards(2)
                    .map(|s| s.0)
                    .sum::<usize>();
            }
            black_box(sum)
        })
    });
    group.finish();
}

fn queue_pop(c: &mut Criterion) {
    const KEYS: usize = 10_000;
    let keys: Vec<ObjectKey> = (0..KEYS)
        .map(|i| ObjectKey::new("default", format!("web-{i}")))
        .collect();
    let mut group = c.benchmark_group("queue");
    group.throughput(Throughput::Elements(KEYS as u64));
    group.bench_function("add_pop_finish_10000", |b| {
        b.iter_batched(
            || {
                let mut q = WorkQueue::default();
                let now = Instant::now();
                for k in &keys {
                    q.add(k, now);
                }
                q
            },
            |mut q| {
                let now = Instant::now();
                while let Some(p) = q.pop() {
                    q.start(&p.key);
                    q.finish(&p.key, tidemark_engine::queue::Outcome::Done, now);
                }
                q
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// Pre-decoded events applied in batches on both cores, one shard per core (the in-process
/// churn figure: no HTTP, no decode).
fn shard_apply_both_cores(c: &mut Criterion) {
    const EVENTS: usize = 20_000;
    let router = ShardRouter::new(2);
    let mut per_shard: Vec<Vec<Change>> = vec![Vec::new(), Vec::new()];
    for e in pod_events(EVENTS, 200) {
        let o = e.object();
        router.route(o).deliver(e, &mut per_shard);
    }
    let mut group = c.benchmark_group("shard_apply_both_cores");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.sample_size(20);
    group.bench_function("batch_20000_gate_on", |b| {
        b.iter_batched(
            || {
                per_shard
                    .iter()
                    .enumerate()
                    .map(|(i, events)| {
                        let mut shard = Shard::new(
                            ShardId(i),
                            vec![ControllerSpec {
                                reconciler: Box::new(ReplicaSetController),
                                mode: tidemark_engine::ConsistencyMode::from_gate(true),
                            }],
                        );
                        shard.replace(
                            Resource::Pods,
                            vec![],
                            ResourceVersion::new(1),
                            Instant::now(),
                        );
                        (shard, events.clone())
                    })
                    .collect::<Vec<_>>()
            },
            |shards| {
                std::thread::scope(|scope| {
                    for (mut shard, events) in shards {
                        scope.spawn(move || {
                            let now = Instant::now();
                            for change in events {
                                shard.apply(change, now);
                            }
                            if let Some(v) = ResourceVersion::new(1_000 + EVENTS as u64) {
                                shard.advance(Resource::Pods, v, now);
                            }
                            shard
                        });
                    }
                })
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn decode(c: &mut Criterion) {
    let bytes = pod_json("default", "web-1-abcde", "web-1", 42);
    let mut group = c.benchmark_group("decode_pod");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("tidemark_projection", |b| {
        b.iter(|| PodView::from_json(black_box(&bytes)))
    });
    group.bench_function("tidemark_raw_event_then_projection", |b| {
        // What the informer does per watch event: keep the object's raw JSON, then decode it.
        b.iter(|| {
            let raw: Box<serde_json::value::RawValue> = serde_json::from_slice(black_box(&bytes))
                .unwrap_or_else(|e| panic!("fixture: {e}"));
            PodView::decode(raw.get().as_bytes())
        })
    });
    group.bench_function("k8s_openapi_pod", |b| {
        b.iter(|| serde_json::from_slice::<k8s_openapi::api::core::v1::Pod>(black_box(&bytes)))
    });
    group.finish();
}

/// The bench's realistic Pod (managedFields, env, volumes: 4 to 7 KB of JSON) read from JSON
/// and from the same Pod in protobuf, as the informer reads each.
fn decode_wire_formats(c: &mut Criterion) {
    let templates = tidemark_loadgen::bench::pods::PodTemplates::new(100);
    let json = templates.render(3, 4_711, 2);
    let value: serde_json::Value =
        serde_json::from_slice(&json).unwrap_or_else(|e| panic!("fixture: {e}"));
    let proto =
        tidemark_loadgen::protobuf::encode_pod(&value).unwrap_or_else(|e| panic!("fixture: {e}"));
    let mut group = c.benchmark_group("decode_pod_wire");
    group.throughput(Throughput::Elements(1));
    group.bench_function("json", |b| b.iter(|| PodView::decode(black_box(&json))));
    group.bench_function("protobuf", |b| {
        b.iter(|| PodView::from_protobuf(black_box(&proto)))
    });
    group.finish();
}

fn shard_apply(c: &mut Criterion) {
    const EVENTS: usize = 10_000;
    let owners = 100;
    let events: Vec<Change> = (0..EVENTS)
        .map(|i| {
            let owner = format!("web-{}", i % owners);
            let bytes = pod_json("default", &format!("{owner}-{i}"), &owner, 1_000 + i as u64);
            Change::Applied(Object::Pod(
                PodView::from_json(&bytes).unwrap_or_else(|e| panic!("fixture: {e}")),
            ))
        })
        .collect();
    let mut group = c.benchmark_group("shard_apply");
    group.throughput(Throughput::Elements(EVENTS as u64));
    for consistency in [true, false] {
        group.bench_with_input(
            BenchmarkId::new("gate", consistency),
            &consistency,
            |b, &consistency| {
                b.iter_batched(
                    || {
                        let mut shard = Shard::new(
                            ShardId(0),
                            vec![ControllerSpec {
                                reconciler: Box::new(ReplicaSetController),
                                mode: tidemark_engine::ConsistencyMode::from_gate(consistency),
                            }],
                        );
                        let now = Instant::now();
                        shard.replace(Resource::Pods, vec![], ResourceVersion::new(1), now);
                        (shard, events.clone())
                    },
                    |(mut shard, events)| {
                        let now = Instant::now();
                        for change in events {
                            shard.apply(change, now);
                        }
                        if let Some(v) = ResourceVersion::new(1_000 + EVENTS as u64) {
                            shard.advance(Resource::Pods, v, now);
                        }
                        shard
                    },
                    criterion::BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

/// A Node of about 3 KB, like the Nodes of a kwok scale test.
fn node_json(i: usize) -> Vec<u8> {
    let labels: serde_json::Map<String, serde_json::Value> = (0..20)
        .map(|l| {
            (
                format!("example.com/label-{l}"),
                serde_json::json!(format!("value-{i}-{l}")),
            )
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "metadata": {"name": format!("node-{i}"), "uid": format!("00000000-0000-0000-0000-{i:012}"),
            "resourceVersion": (10 + i).to_string(), "labels": labels},
        "spec": {"podCIDR": format!("10.{}.{}.0/24", i / 256, i % 256)},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status", "lastHeartbeatTime": "2026-12-02T10:00:00Z"}],
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "kwok", "kernelVersion": "6.0.0"}},
    }))
    .unwrap_or_default()
}

/// Nodes are broadcast to every shard (DaemonSets read them everywhere): the cost of one list of
/// 5,000 Nodes replaced into one shard, against the same list cloned into each of two shards.
/// The clones share each Node's JSON (an `Arc`), so a shard's copy costs its projection only.
fn node_broadcast(c: &mut Criterion) {
    const NODES: usize = 5_000;
    let nodes: Vec<Object> = (0..NODES)
        .map(|i| {
            Object::Node(
                tidemark_engine::NodeView::from_json(&node_json(i))
                    .unwrap_or_else(|e| panic!("fixture: {e}")),
            )
        })
        .collect();
    let shard = |id: usize, shards: usize| {
        Shard::new(
            ShardId(id),
            vec![
                ControllerSpec {
                    reconciler: Box::new(tidemark_engine::DaemonSetController),
                    mode: tidemark_engine::ConsistencyMode::from_gate(true),
                },
                ControllerSpec {
                    reconciler: Box::new(tidemark_engine::NodeLifecycleController::default()),
                    mode: tidemark_engine::ConsistencyMode::from_gate(true),
                },
            ],
        )
        .with_router(ShardRouter::new(shards))
    };
    let mut group = c.benchmark_group("node_broadcast_5000");
    group.throughput(Throughput::Elements(NODES as u64));
    for shards in [1usize, 2] {
        group.bench_with_input(BenchmarkId::new("shards", shards), &shards, |b, &shards| {
            b.iter_batched(
                || (0..shards).map(|i| shard(i, shards)).collect::<Vec<_>>(),
                |mut all| {
                    let now = Instant::now();
                    for s in &mut all {
                        s.replace(
                            Resource::Nodes,
                            nodes.clone(),
                            ResourceVersion::new(9_999),
                            now,
                        );
                    }
                    all
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    eprintln!(
        "node_broadcast: a shard's copy of a Node is {} bytes of projection (its JSON is shared)",
        std::mem::size_of::<tidemark_engine::NodeView>()
    );
}

fn gate_check(c: &mut Criterion) {
    let mut map = VersionMap::default();
    let keys: Vec<ObjectKey> = (0..1_000)
        .map(|i| ObjectKey::new("default", format!("web-{i}")))
        .collect();
    let marks: PerResource<Option<ResourceVersion>> =
        PerResource::from_fn(|_| ResourceVersion::new(10));
    for k in &keys {
        map.record_write(
            k,
            None,
            Resource::Pods,
            ResourceVersion::new(20).ok_or(tidemark_engine::NotComparable::Zero),
        );
    }
    c.bench_function("gate_check_stale_key", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(map.check(&keys[i], &marks))
        })
    });
}

fn park_and_wake(c: &mut Criterion) {
    const KEYS: usize = 1_000;
    let keys: Vec<ObjectKey> = (0..KEYS)
        .map(|i| ObjectKey::new("default", format!("web-{i}")))
        .collect();
    let mut group = c.benchmark_group("park_and_wake");
    group.throughput(Throughput::Elements(KEYS as u64));
    group.bench_function("watermark_wakes_1000_keys", |b| {
        b.iter(|| {
            let mut q = WorkQueue::default();
            let now = Instant::now();
            for (i, k) in keys.iter().enumerate() {
                q.add(k, now);
                let popped = q.pop().map(|p| p.key);
                if let (Some(k), Some(v)) = (popped, ResourceVersion::new(100 + i as u64)) {
                    q.park(
                        &k,
                        ParkTarget::Watermark {
                            resource: Resource::Pods,
                            version: v,
                        },
                        now,
                    );
                }
            }
            if let Some(v) = ResourceVersion::new(100 + KEYS as u64) {
                black_box(q.watermark(Resource::Pods, v, now));
            }
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    rv_compare,
    route,
    decode,
    decode_wire_formats,
    shard_apply,
    shard_apply_both_cores,
    gate_check,
    park_and_wake,
    queue_pop,
    node_broadcast
);
criterion_main!(benches);
