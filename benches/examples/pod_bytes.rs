//! Where a cached Pod's bytes go, its owner's share included: jemalloc's allocated delta for
//! 100,000 bench Pods decoded into a Vec, then replaced into a shard with the ReplicaSet
//! controller (cache, owner index, queue), then their 10,000 realistic ReplicaSets (about 5 KB
//! of JSON each, managedFields included) replaced into the same shard.
//!
//! `cargo run --release -p tidemark-benches --example pod_bytes`

use std::time::Instant;
use tidemark_benches::{pod_json, realistic_replicaset_json};
use tidemark_engine::{
    ControllerSpec, Object, PodView, ReplicaSetController, ReplicaSetView, Resource,
    ResourceVersion, Shard, ShardId,
};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn allocated() -> f64 {
    tidemark_benches::jemalloc_allocated() as f64
}

const PODS: usize = 100_000;
const PODS_PER_OWNER: usize = 10;
const OWNERS: usize = PODS / PODS_PER_OWNER;

/// Bytes allocated by `make`, per item of the `count` it makes, with what it made.
fn measured<T>(count: usize, make: impl FnOnce() -> T) -> (T, f64) {
    let before = allocated();
    let made = make();
    (made, (allocated() - before) / count as f64)
}

fn main() {
    let texts: Vec<Vec<u8>> = (0..PODS)
        .map(|i| {
            let owner = format!("web-{}", i / PODS_PER_OWNER);
            pod_json(
                "bench",
                &format!("{owner}-{i:05}"),
                &owner,
                1_000 + i as u64,
            )
        })
        .collect();
    let owner_texts: Vec<Vec<u8>> = (0..OWNERS as u64)
        .map(|r| realistic_replicaset_json(r, PODS_PER_OWNER as u64, 200_000 + r))
        .collect();
    let owner_json = owner_texts.iter().map(Vec::len).sum::<usize>() / OWNERS;

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
    let pods_cached = allocated();
    println!(
        "in the shard (cache, owner index, queue of owners): {:.0} B/Pod",
        (pods_cached - start) / PODS as f64
    );

    let (whole, value_per_owner) = measured(OWNERS, || {
        owner_texts
            .iter()
            .filter_map(|t| serde_json::from_slice::<serde_json::Value>(t).ok())
            .collect::<Vec<_>>()
    });
    drop(whole);
    println!(
        "a realistic ReplicaSet: {owner_json} B of JSON; as a serde_json::Value tree {value_per_owner:.0} B"
    );
    let (owners, view_per_owner) = measured(OWNERS, || {
        owner_texts
            .iter()
            .filter_map(|t| ReplicaSetView::from_json(t).ok().map(Object::ReplicaSet))
            .collect::<Vec<_>>()
    });
    println!(
        "ReplicaSetView: {} B inline, {view_per_owner:.0} B/ReplicaSet allocated (incl. the Vec slot)",
        std::mem::size_of::<ReplicaSetView>(),
    );
    shard.replace(
        Resource::ReplicaSets,
        owners,
        ResourceVersion::new(300_000),
        Instant::now(),
    );
    let owners_cached = allocated();
    let owner_share = (owners_cached - pods_cached) / PODS as f64;
    println!("the owners in the shard, one per {PODS_PER_OWNER} Pods: {owner_share:.0} B/Pod");
    println!(
        "everything the shard holds for the workload (Pods and owners): {:.0} B/Pod",
        (owners_cached - start) / PODS as f64
    );
    drop(texts);
    drop(owner_texts);
    std::hint::black_box(&shard);
}
