//! Where a cached Pod's bytes go: jemalloc's allocated delta for 100,000 bench Pods decoded into
//! a Vec, then replaced into a shard with the ReplicaSet controller (cache, owner index, queue).
//!
//! `cargo run --release -p tidemark-benches --example pod_bytes`

use std::time::Instant;
use tidemark_benches::pod_json;
use tidemark_engine::{
    ControllerSpec, Object, PodView, ReplicaSetController, Resource, ResourceVersion, Shard,
    ShardId,
};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn allocated() -> f64 {
    tidemark_benches::jemalloc_allocated() as f64
}

fn main() {
    const PODS: usize = 100_000;
    let texts: Vec<Vec<u8>> = (0..PODS)
        .map(|i| {
            let owner = format!("web-{}", i / 10);
            pod_json(
                "bench",
                &format!("{owner}-{i:05}"),
                &owner,
                1_000 + i as u64,
            )
        })
        .collect();
    let start = allocated();
    let pods: Vec<Object> = texts
        .iter()
        .filter_map(|t| PodView::from_json(t).ok().map(Object::Pod))
        .collect();
    let decoded = allocated();
    println!(
        "PodView: {} B inline, {:.0} B/Pod allocated (incl. the Vec slot)",
        std::mem::size_of::<PodView>(),
        (decoded - start) / PODS as f64
    );
    let mut shard = Shard::new(
        ShardId(0),
        vec![ControllerSpec {
            reconciler: Box::new(ReplicaSetController),
            mode: tidemark_engine::ConsistencyMode::from_gate(true),
        }],
    );
    shard.replace(
        Resource::Pods,
        pods,
        ResourceVersion::new(200_000),
        Instant::now(),
    );
    let cached = allocated();
    println!(
        "in the shard (cache, owner index, queue of owners): {:.0} B/Pod",
        (cached - start) / PODS as f64
    );
    drop(texts);
    std::hint::black_box(&shard);
}
