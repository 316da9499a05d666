//! Where a cached Pod's bytes go, its owner's share included, field by field: jemalloc's
//! allocated delta for 100,000 of the bench's realistic Pods (the loadgen bench's templates:
//! canonical UIDs, 16 namespaces, one ReplicaSet per 10 Pods) and their 10,000 realistic
//! ReplicaSets (about 6 KB of JSON each, managedFields included).
//!
//! What a field costs allocated is what is freed when that field is cleared in every decoded
//! object (a value shared between objects counts once, where it is finally freed). The cache
//! map and the owner index are measured by moving the same decoded Pods into a bare map, then
//! into a `Store`, then into a shard with the ReplicaSet controller.
//!
//! `cargo run --release -p tidemark-benches --example pod_bytes`

use std::time::Instant;
use tidemark_benches::realistic_replicaset_json;
use tidemark_engine::labels::{LabelSelector, Labels};
use tidemark_engine::pod_template::PodTemplate;
use tidemark_engine::store::Store;
use tidemark_engine::views::owner_json::OwnerJson;
use tidemark_engine::{
    ControllerSpec, Object, ObjectKey, PodView, ReplicaSetController, ReplicaSetView, Resource,
    ResourceVersion, Shard, ShardId, Uid,
};
use tidemark_loadgen::bench::pods::PodTemplates;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn allocated() -> f64 {
    tidemark_benches::jemalloc_allocated() as f64
}

const PODS: usize = 100_000;
const PODS_PER_OWNER: usize = 10;
const OWNERS: usize = PODS / PODS_PER_OWNER;

/// The bench's Pods, decoded, each rendered into one reused buffer so the texts take no room.
fn decoded_pods() -> Vec<PodView> {
    let templates = PodTemplates::new(OWNERS as u64);
    let mut text = Vec::new();
    (0..PODS as u64)
        .filter_map(|i| {
            text.clear();
            templates.render_into(&mut text, i, 1_000 + i, 0);
            PodView::from_json(&text).ok()
        })
        .collect()
}

/// Bytes per Pod freed by `clear` applied to every item.
fn freed_per_pod<T>(items: &mut [T], clear: impl Fn(&mut T)) -> f64 {
    let before = allocated();
    items.iter_mut().for_each(clear);
    (before - allocated()) / PODS as f64
}

fn row(field: &str, inline: usize, allocated_per_pod: f64) {
    println!("  {field:<34} {inline:>6} {allocated_per_pod:>10.0}");
}

fn pod_fields() {
    let start = allocated();
    let mut pods = decoded_pods();
    let buffer = (pods.capacity() * std::mem::size_of::<PodView>()) as f64;
    let heap = (allocated() - start - buffer) / PODS as f64;
    println!(
        "PodView: {} B inline, {heap:.0} B/Pod allocated beside it",
        std::mem::size_of::<PodView>()
    );
    println!("  {:<34} {:>6} {:>10}", "field", "inline", "alloc/Pod");
    let empty_key = ObjectKey::new("", "");
    let empty_uid = Uid::new("");
    let no_labels = Labels::default();
    let sample = pods[0].clone();
    row(
        "key (namespace/name)",
        std::mem::size_of_val(&sample.key),
        freed_per_pod(&mut pods, |p| p.key = empty_key.clone()),
    );
    row(
        "uid",
        std::mem::size_of_val(&sample.uid),
        freed_per_pod(&mut pods, |p| p.uid = empty_uid.clone()),
    );
    row(
        "labels",
        std::mem::size_of_val(&sample.labels),
        freed_per_pod(&mut pods, |p| p.labels = no_labels.clone()),
    );
    row(
        "controller (kind, name, uid)",
        std::mem::size_of_val(&sample.controller),
        freed_per_pod(&mut pods, |p| p.controller = None),
    );
    row(
        "node_name",
        std::mem::size_of_val(&sample.node_name),
        freed_per_pod(&mut pods, |p| p.node_name = None),
    );
    row(
        "malformed, failure",
        std::mem::size_of_val(&sample.malformed) + std::mem::size_of_val(&sample.failure),
        freed_per_pod(&mut pods, |p| {
            p.malformed = None;
            p.failure = None;
        }),
    );
    let rest = std::mem::size_of::<PodView>()
        - [
            std::mem::size_of_val(&sample.key),
            std::mem::size_of_val(&sample.uid),
            std::mem::size_of_val(&sample.labels),
            std::mem::size_of_val(&sample.controller),
            std::mem::size_of_val(&sample.node_name),
            std::mem::size_of_val(&sample.malformed),
            std::mem::size_of_val(&sample.failure),
        ]
        .iter()
        .sum::<usize>();
    row("the rest (numbers, flags, padding)", rest, 0.0);
    let residue = (allocated() - start - buffer) / PODS as f64;
    row("left allocated after clearing", 0, residue);
}

fn cache_structures() {
    let start = allocated();
    let pods = decoded_pods();
    let buffer = (pods.capacity() * std::mem::size_of::<PodView>()) as f64;
    let views = allocated() - start - buffer;
    let mut map = std::collections::HashMap::with_capacity(pods.len());
    for pod in pods {
        map.insert(pod.key.clone(), pod);
    }
    let in_map = allocated() - start;
    let map_cost = (in_map - views) / PODS as f64;
    let mut store: Store<PodView> = Store::default();
    store.replace(map.into_values().collect());
    let in_store = allocated() - start;
    println!(
        "the cache map (key and PodView slots, {} B a slot): {map_cost:.0} B/Pod",
        std::mem::size_of::<(ObjectKey, PodView)>()
    );
    println!(
        "the owner index and orphan set: {:.0} B/Pod",
        (in_store - in_map) / PODS as f64
    );
    std::hint::black_box(&store);
}

fn owner_fields(owner_texts: &[Vec<u8>]) {
    let start = allocated();
    let mut owners: Vec<ReplicaSetView> = owner_texts
        .iter()
        .filter_map(|t| ReplicaSetView::from_json(t).ok())
        .collect();
    let buffer = (owners.capacity() * std::mem::size_of::<ReplicaSetView>()) as f64;
    let heap = (allocated() - start - buffer) / PODS as f64;
    println!(
        "ReplicaSetView: {} B inline, {:.0} B/ReplicaSet allocated beside it ({heap:.0} B/Pod)",
        std::mem::size_of::<ReplicaSetView>(),
        heap * PODS_PER_OWNER as f64
    );
    println!("  {:<34} {:>6} {:>10}", "field", "inline", "alloc/Pod");
    let timed = |what: &str, work: &dyn Fn(&ReplicaSetView) -> bool| {
        let started = Instant::now();
        let done = owners.iter().filter(|o| work(o)).count();
        let each = started.elapsed().as_secs_f64() * 1e6 / owners.len() as f64;
        println!(
            "  {what}: {each:.1} us a ReplicaSet ({done} of {})",
            owners.len()
        );
    };
    timed("the object back for a write (decompress, parse)", &|o| {
        o.raw.to_value().is_ok()
    });
    timed("decompressing alone", &|o| o.raw.json().is_ok());
    let empty_raw = OwnerJson::keep(serde_json::Value::Null);
    let no_template = std::sync::Arc::new(PodTemplate::default());
    let sample = owners[0].clone();
    row(
        "raw (the object for writes)",
        std::mem::size_of_val(&sample.raw),
        freed_per_pod(&mut owners, |o| o.raw = empty_raw.clone()),
    );
    row(
        "template (labels, annotations)",
        std::mem::size_of_val(&sample.template),
        freed_per_pod(&mut owners, |o| o.template = no_template.clone()),
    );
    row(
        "selector",
        std::mem::size_of_val(&sample.selector),
        freed_per_pod(&mut owners, |o| o.selector = LabelSelector::default()),
    );
    let residue = (allocated() - start - buffer) / PODS as f64;
    row("left allocated after clearing", 0, residue);
}

fn main() {
    let owner_texts: Vec<Vec<u8>> = (0..OWNERS as u64)
        .map(|r| realistic_replicaset_json(r, PODS_PER_OWNER as u64, 200_000 + r))
        .collect();
    let owner_json = owner_texts.iter().map(Vec::len).sum::<usize>() / OWNERS;

    pod_fields();
    cache_structures();

    let start = allocated();
    let pods: Vec<Object> = decoded_pods().into_iter().map(Object::Pod).collect();
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
        "Pods in the shard (views, cache map, owner index, queue): {:.0} B/Pod",
        (pods_cached - start) / PODS as f64
    );

    println!("a realistic ReplicaSet: {owner_json} B of JSON");
    owner_fields(&owner_texts);
    let owners: Vec<Object> = owner_texts
        .iter()
        .filter_map(|t| ReplicaSetView::from_json(t).ok().map(Object::ReplicaSet))
        .collect();
    shard.replace(
        Resource::ReplicaSets,
        owners,
        ResourceVersion::new(300_000),
        Instant::now(),
    );
    let owners_cached = allocated();
    let owner_share = (owners_cached - pods_cached) / PODS as f64;
    println!(
        "the owners in the shard, one per {PODS_PER_OWNER} Pods: {owner_share:.0} B/Pod ({:.0} B/ReplicaSet)",
        owner_share * PODS_PER_OWNER as f64
    );
    println!(
        "everything the shard holds for the workload (Pods and owners): {:.0} B/Pod",
        (owners_cached - start) / PODS as f64
    );
    drop(owner_texts);
    std::hint::black_box(&shard);
}
