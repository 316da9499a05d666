//! Core benchmarks: decode, shard apply, gate check, park and wake. Each figure that has a peer
//! equivalent (k8s-openapi decode) is measured in the same run, side by side.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Instant;
use tidemark_benches::pod_json;
use tidemark_engine::queue::{ParkTarget, WorkQueue};
use tidemark_engine::resource::PerResource;
use tidemark_engine::version_map::VersionMap;
use tidemark_engine::{
    Change, ControllerSpec, Object, ObjectKey, PodView, ReplicaSetController, Resource,
    ResourceVersion, Shard, ShardId,
};

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
                                consistency,
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

criterion_group!(benches, decode, shard_apply, gate_check, park_and_wake);
criterion_main!(benches);
