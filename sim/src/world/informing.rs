//! The informers' steps: lists replaced into every shard, watch batches read from the store's
//! history and routed with their progress marker, probes, drops and relists.

use super::{Event, World};
use crate::api::{api_resource, decode};
use crate::informer::STALLED_AFTER;
use loadgen::store::LogRead;
use std::sync::Arc;
use std::time::Duration;
use tidemark_engine::{Change, Placements, Resource, ResourceVersion};
/// How often a watch is read: the server streams, the harness samples.
fn pull_interval(rng: &mut fastrand::Rng) -> Duration {
    Duration::from_millis(rng.u64(20..=200))
}

/// client-go's reflector backoff before a relist (800 ms, jittered by up to 100%).
fn relist_backoff(rng: &mut fastrand::Rng) -> Duration {
    Duration::from_millis(rng.u64(800..=1_600))
}

impl World {
    /// Starts a list of informer `i`, reaching the server `after` from now.
    pub(crate) fn relist(&mut self, i: usize, after: Duration) {
        let informer = &mut self.informers[i];
        informer.stop();
        let list = informer.list;
        self.after(after, Event::List { informer: i, list });
    }

    /// The watch ended for a relist: every shard hears it first, the list follows the backoff.
    pub(crate) fn end_for_relist(&mut self, i: usize, why: &str) {
        let resource = self.informers[i].resource;
        self.note(format_args!("{resource} watch ends ({why}): relist"));
        let now = self.process_now();
        for s in 0..self.shards.len() {
            self.shards[s].relisting(resource, now);
            self.pump(s);
        }
        let backoff = relist_backoff(&mut self.rng);
        self.relist(i, backoff);
    }

    pub(crate) fn list(&mut self, i: usize, list: u64) {
        if !self.up || self.informers[i].list != list {
            return;
        }
        let resource = self.informers[i].resource;
        let (items, version) = self.store.all(api_resource(resource), None);
        let objects = items
            .iter()
            .filter_map(|stored| decode(resource, &stored.bytes).ok())
            .collect::<Vec<_>>();
        self.note(format_args!(
            "{resource} listed at {version}: {} objects",
            objects.len()
        ));
        let latency = self.network();
        self.after(
            latency,
            Event::Listed {
                informer: i,
                list,
                objects,
                version,
            },
        );
    }

    pub(crate) fn listed(
        &mut self,
        i: usize,
        list: u64,
        objects: Vec<tidemark_engine::Object>,
        version: u64,
    ) {
        if !self.up || self.informers[i].list != list {
            return;
        }
        let resource = self.informers[i].resource;
        self.note(format_args!(
            "{resource} list at {version} replaces the caches"
        ));
        let mut per_shard = vec![Vec::new(); self.shards.len()];
        let mut placements = Placements::new(&self.router);
        for object in objects {
            if resource.broadcast() {
                for slot in per_shard.iter_mut() {
                    slot.push(object.clone());
                }
                continue;
            }
            let route = self.router.route(&object);
            placements.listed(&object, route);
            route.deliver(object, &mut per_shard);
        }
        let now = self.process_now();
        for (s, objects) in per_shard.into_iter().enumerate() {
            self.shards[s].replace(resource, objects, ResourceVersion::new(version), now);
        }
        for s in 0..self.shards.len() {
            self.pump(s);
        }
        let t = self.now();
        let informer = &mut self.informers[i];
        informer.placements = placements;
        informer.pos = version;
        informer.delivered = version;
        informer.watch += 1;
        informer.watching = true;
        informer.last_delivery = t;
        informer.last_progress = t;
        informer.progress_sent = version;
        let watch = informer.watch;
        let next = pull_interval(&mut self.rng);
        self.after(next, Event::Pull { informer: i, watch });
    }

    /// The informer reads what the server has sent on its watch since the last read.
    pub(crate) fn pull(&mut self, i: usize, watch: u64) {
        let informer = &self.informers[i];
        if !self.up || informer.watch != watch || !informer.watching {
            return;
        }
        let (resource, pos) = (informer.resource, informer.pos);
        let now = self.now();
        if let Some(until) = self.faults.stalled_until(resource, now) {
            self.queue.at(until, Event::Pull { informer: i, watch });
            return;
        }
        if self.faults.drops_watch(&mut self.rng, now) {
            let informer = &mut self.informers[i];
            informer.watch += 1;
            informer.pos = informer.delivered;
            informer.progress_sent = informer.delivered;
            let (watch, from) = (informer.watch, informer.delivered);
            if self.faults.gone(&mut self.rng, now) {
                self.end_for_relist(i, "dropped, resumed with 410 Gone");
            } else {
                let back = self.faults.replayed_on_resume(&mut self.rng, now);
                let from = from.saturating_sub(back).max(1);
                let informer = &mut self.informers[i];
                informer.pos = informer.pos.min(from);
                self.note(format_args!(
                    "{resource} watch dropped: resumes from {from}, batches in flight lost"
                ));
                let gap = Duration::from_millis(self.rng.u64(50..=1_000));
                self.after(gap, Event::Pull { informer: i, watch });
            }
            return;
        }
        let (events, read_to) = match self.store.events_after(api_resource(resource), pos) {
            LogRead::Compacted(at) => {
                self.end_for_relist(i, &format!("410 Gone: {pos} compacted at {at}"));
                return;
            }
            LogRead::Events(events, read_to) => (events, read_to),
        };
        // The simulated server sends a bookmark with its current revision every 0.3 to 1 s,
        // quiet resource or not; the watch is read about every 0.1 s.
        let bookmark = read_to > self.informers[i].progress_sent && self.rng.f64() < 0.3;
        let progress = if bookmark {
            Some(read_to)
        } else {
            events.last().map(|e| e.rev)
        };
        self.informers[i].pos = read_to;
        if let Some(p) = progress {
            let informer = &mut self.informers[i];
            informer.progress_sent = informer.progress_sent.max(p);
            let delay = self.faults.watch_delay(&mut self.rng, resource, now);
            let informer = &mut self.informers[i];
            let at = informer.last_delivery.max(now + delay);
            informer.last_delivery = at;
            self.queue.at(
                at,
                Event::Deliver {
                    informer: i,
                    watch,
                    events,
                    progress,
                },
            );
        }
        let next = pull_interval(&mut self.rng);
        self.after(next, Event::Pull { informer: i, watch });
    }

    /// A batch reaches the informer: route each event, then give every shard the progress
    /// marker (actors/src/informer/stream.rs).
    pub(crate) fn deliver(
        &mut self,
        i: usize,
        watch: u64,
        events: Vec<Arc<loadgen::store::Event>>,
        progress: Option<u64>,
    ) {
        if !self.up || self.informers[i].watch != watch {
            return;
        }
        let resource = self.informers[i].resource;
        let mut per_shard: Vec<Vec<Change>> = vec![Vec::new(); self.shards.len()];
        for event in &events {
            let Ok(object) = decode(resource, &event.object.bytes) else {
                continue;
            };
            let change = match event.kind {
                loadgen::store::EventType::Deleted => Change::Deleted(object),
                _ => Change::Applied(object),
            };
            if resource.broadcast() {
                for slot in per_shard.iter_mut() {
                    slot.push(change.clone());
                }
                continue;
            }
            let placement = self.informers[i].placements.place(&self.router, &change);
            if let Change::Applied(object) = &change {
                for left in &placement.left {
                    per_shard[left.0].push(Change::Departed(object.clone()));
                }
            }
            placement.route.deliver(change, &mut per_shard);
        }
        self.note(format_args!(
            "{resource} batch of {} events, progress {}",
            events.len(),
            progress.map_or_else(|| "-".to_string(), |p| p.to_string())
        ));
        let now = self.process_now();
        let progress = progress.and_then(ResourceVersion::new);
        for (s, changes) in per_shard.into_iter().enumerate() {
            if changes.is_empty() && progress.is_none() {
                continue;
            }
            for change in changes {
                self.shards[s].apply(change, now);
            }
            if let Some(p) = progress {
                self.shards[s].advance(resource, p, now);
            }
            self.pump(s);
        }
        if let Some(p) = progress {
            let t = self.now();
            let informer = &mut self.informers[i];
            informer.delivered = informer.delivered.max(p.get());
            informer.last_progress = t;
        }
    }

    /// A parked key's safety timer ran out: one consistent read of the revision tells a stalled
    /// watch from a quiet one (actors/src/informer/probe.rs).
    pub(crate) fn probe(&mut self, resource: Resource, target: ResourceVersion) {
        let Some(i) = self.informers.iter().position(|f| f.resource == resource) else {
            return;
        };
        let informer = &self.informers[i];
        if !informer.watching {
            return;
        }
        let current = self.store.current_revision();
        let silent = self.now().saturating_sub(informer.last_progress);
        // A probe is a consistent read: every shard learns the revision.
        if let Some(revision) = ResourceVersion::new(current) {
            self.tell_every_shard(revision);
        }
        if current >= target.get() && silent >= STALLED_AFTER {
            self.end_for_relist(i, "watch stalled behind the server");
        }
    }
}
