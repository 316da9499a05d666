//! The figures scale-out is judged by: ranges held and handed over, what each informer received
//! and whether the server sharded it, the objects cached, and the heap they take.

use crate::manager::ManagerStats;
use crate::ranges::RangeState;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use std::sync::atomic::Ordering;
use tidemark_engine::Resource;

/// The range loop's figures at a scrape.
#[derive(Clone, Debug, Default)]
pub struct RangeFigures {
    held: usize,
    acquired: u64,
    released: u64,
    lost: u64,
}

impl RangeFigures {
    /// Reads `state`.
    pub fn of(state: &RangeState) -> Self {
        Self {
            held: state.held.lock().len(),
            acquired: state.acquired.load(Ordering::Relaxed),
            released: state.released.load(Ordering::Relaxed),
            lost: state.lost.load(Ordering::Relaxed),
        }
    }
}

/// `tidemark_ranges_held` and `tidemark_range_handovers_total{change}`.
pub fn encode_ranges(ranges: &RangeFigures, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
    encoder
        .encode_descriptor(
            "tidemark_ranges_held",
            "Ranges of the namespace ring whose writes this replica may send now (scale-out)",
            None,
            MetricType::Gauge,
        )?
        .encode_gauge(&(ranges.held as i64))?;
    let mut family = encoder.encode_descriptor(
        "tidemark_range_handovers",
        "Ranges gained (acquired), given back to another replica (released), or lost without giving them back (lost)",
        None,
        MetricType::Counter,
    )?;
    for (change, value) in [
        ("acquired", ranges.acquired),
        ("released", ranges.released),
        ("lost", ranges.lost),
    ] {
        family
            .encode_family(&[("change", change)])?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}

/// `tidemark_cached_objects{resource}`: objects in the shards' caches (a resource every shard
/// holds whole, such as Nodes, counted once).
pub fn encode_cached_objects(
    stats: &ManagerStats,
    encoder: &mut DescriptorEncoder,
) -> std::fmt::Result {
    let mut per_resource: Vec<(Resource, usize)> = Vec::new();
    for shard in &stats.shards {
        for (resource, _, _, objects) in &shard.resources {
            match per_resource.iter_mut().find(|(r, _)| r == resource) {
                Some((r, total)) if r.broadcast() => *total = (*total).max(*objects),
                Some((_, total)) => *total += objects,
                None => per_resource.push((*resource, *objects)),
            }
        }
    }
    let mut family = encoder.encode_descriptor(
        "tidemark_cached_objects",
        "Objects in the shards' caches",
        None,
        MetricType::Gauge,
    )?;
    for (resource, objects) in per_resource {
        family
            .encode_family(&[("group", resource.group()), ("resource", resource.plural())])?
            .encode_gauge(&(objects as i64))?;
    }
    Ok(())
}

/// `tidemark_heap_allocated_bytes`: what the allocator has handed out and not taken back (the
/// caches, mostly), read from jemalloc.
pub fn encode_heap(encoder: &mut DescriptorEncoder) -> std::fmt::Result {
    let allocated = tikv_jemalloc_ctl::epoch::advance()
        .and_then(|_| tikv_jemalloc_ctl::stats::allocated::read());
    let Ok(allocated) = allocated else {
        return Ok(());
    };
    encoder
        .encode_descriptor(
            "tidemark_heap_allocated_bytes",
            "Bytes allocated by the process and not freed (jemalloc stats.allocated)",
            None,
            MetricType::Gauge,
        )?
        .encode_gauge(&(allocated as i64))?;
    Ok(())
}
