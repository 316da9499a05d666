//! Reconcile throughput, Tidemark's side: the no-op reconciler in one shard per core (the
//! shards' own threads, as the manager runs them), every ReplicaSet key queued by a replace of
//! the ReplicaSet slice, then timed polls until each shard's queue is empty. Rounds repeat until
//! two seconds of polling have been measured.

use crate::noop::Noop;
use crate::seed::Seed;
use anyhow::Context;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use tidemark_engine::{
    ControllerSpec, Object, ReplicaSetView, Resource, ResourceVersion, Shard, ShardId, ShardRouter,
};

/// Decodes the seed into per-shard slices of Pods and ReplicaSets.
pub fn slices(seed: &Seed, shards: usize) -> anyhow::Result<Vec<(Vec<Object>, Vec<Object>)>> {
    let router = ShardRouter::new(shards);
    let mut pods: Vec<Vec<Object>> = vec![Vec::new(); shards];
    let mut sets: Vec<Vec<Object>> = vec![Vec::new(); shards];
    for bytes in &seed.pods {
        let pod = Object::Pod(seed.decode_pod(bytes).context("seeded Pod")?);
        router.route(&pod).deliver(pod, &mut pods);
    }
    for bytes in &seed.replicasets {
        let rs = Object::ReplicaSet(ReplicaSetView::from_json(bytes).context("seeded ReplicaSet")?);
        router.route(&rs).deliver(rs, &mut sets);
    }
    Ok(pods.into_iter().zip(sets).collect())
}

/// Reconciles per second with the gate on or off, `shards` at once.
pub fn tidemark(seed: &Seed, shards: usize, gate: bool) -> anyhow::Result<f64> {
    let slices = slices(seed, shards)?;
    let keys = seed.replicasets.len() as u64;
    let barrier = Arc::new(Barrier::new(shards));
    let version = ResourceVersion::new(seed.revision);
    let done = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = slices
        .into_iter()
        .enumerate()
        .map(|(index, (pods, replicasets))| {
            let barrier = barrier.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let noop = Noop::default();
                let mut shard = Shard::new(
                    ShardId(index),
                    vec![ControllerSpec {
                        reconciler: Box::new(noop.clone()),
                        mode: tidemark_engine::ConsistencyMode::from_gate(gate),
                    }],
                );
                let ctx = |now| tidemark_engine::Context { now, unix_secs: 0 };
                let mut out = Vec::new();
                shard.replace(Resource::Pods, pods, version, Instant::now());
                shard.replace(
                    Resource::ReplicaSets,
                    replicasets.clone(),
                    version,
                    Instant::now(),
                );
                shard.poll(&ctx(Instant::now()), &mut out);
                let mut busy = Duration::ZERO;
                let mut rounds = 0u32;
                loop {
                    shard.replace(
                        Resource::ReplicaSets,
                        replicasets.clone(),
                        version,
                        Instant::now(),
                    );
                    barrier.wait();
                    let started = Instant::now();
                    shard.poll(&ctx(started), &mut out);
                    // Every thread waits for the slowest: the round's wall time is the max.
                    barrier.wait();
                    busy += started.elapsed();
                    rounds += 1;
                    // Shard 0 decides for every shard, so that all leave after the same round.
                    if index == 0
                        && (rounds >= 200 || (rounds >= 5 && busy >= Duration::from_secs(2)))
                    {
                        done.store(true, Ordering::Release);
                    }
                    barrier.wait();
                    if done.load(Ordering::Acquire) {
                        break (busy, rounds);
                    }
                }
            })
        })
        .collect();
    let mut wall = Duration::ZERO;
    let mut rounds = 0;
    for t in threads {
        let (busy, r) = t
            .join()
            .map_err(|_| anyhow::anyhow!("a shard thread panicked"))?;
        wall = wall.max(busy);
        rounds = r;
    }
    Ok((u64::from(rounds) * keys) as f64 / wall.as_secs_f64())
}
