//! The per-controller work queue of a shard: deduplicated keys, one in flight per key, parked keys
//! woken by the watermark, and error backoff that event re-adds cannot inflate. Time is passed in.

use crate::backoff::Backoff;
use crate::key::ObjectKey;
use crate::resource::{PerResource, Resource};
use crate::rv::ResourceVersion;
use ahash::AHashMap;
use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// What a parked key waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParkTarget {
    /// The watermark of `resource` reaching `version`.
    Watermark {
        /// The resource.
        resource: Resource,
        /// The version to reach.
        version: ResourceVersion,
    },
    /// Deletions this key made showing up in the cache; woken by [`WorkQueue::wake`].
    Deletions,
    /// A barrier (a consistent read of the current revision) that proves the key's next
    /// destructive decision; woken by [`WorkQueue::wake`] when its answer comes.
    Barrier,
    /// A live read of the objects a destructive decision rests on (its cache is known to lag);
    /// woken by [`WorkQueue::wake`] when its answer comes.
    LiveRead,
    /// The creates and deletes of the key's last sync showing up in the cache (upstream's
    /// `ControllerExpectations`); woken by [`WorkQueue::wake`] when they have.
    Expectations,
}

/// How a reconcile ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Success: the failure count is forgotten.
    Done,
    /// Success, and run again after this long.
    RequeueAfter(Duration),
    /// Failure: retry after the error backoff.
    Failed,
}

/// A timer that came due.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fired {
    /// A key's error backoff or requeue delay ended; it is queued again.
    Retry(ObjectKey),
    /// A parked key's safety timer ran out: the watermark did not pass its target in time.
    /// The key is queued again so the gate re-checks it; `skips` counts its consecutive skips.
    ParkExpired {
        /// The key.
        key: ObjectKey,
        /// What it waits for.
        target: ParkTarget,
        /// Consecutive skips so far.
        skips: u32,
    },
}

/// A key taken from the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Popped {
    /// The key.
    pub key: ObjectKey,
    /// When it became ready (for queue-latency metrics).
    pub ready_since: Instant,
    /// It became ready because a watermark passed its target.
    pub woken: bool,
    /// How long it had been parked, when it was woken from a park.
    pub parked_for: Option<Duration>,
}

#[derive(Clone, Debug)]
enum State {
    Queued {
        since: Instant,
        woken: bool,
        parked_for: Option<Duration>,
    },
    InFlight {
        dirty: bool,
    },
    Parked {
        target: ParkTarget,
        timer: (Instant, u64),
        slot: Option<(ResourceVersion, u64)>,
        since: Instant,
    },
    Waiting {
        timer: (Instant, u64),
    },
}

#[derive(Clone, Debug)]
struct Entry {
    state: State,
    failures: u32,
    skips: u32,
}

/// Counters a queue keeps for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Every add, deduplicated or not (`workqueue_adds_total`).
    pub adds: u64,
    /// Retries after a failure (`workqueue_retries_total`).
    pub retries: u64,
    /// Keys parked because their cache was stale.
    pub parks: u64,
    /// Parked keys woken by a watermark.
    pub wakes: u64,
    /// Parked keys whose safety timer ran out.
    pub park_timeouts: u64,
}

/// A shard's queue for one controller.
#[derive(Debug)]
pub struct WorkQueue {
    entries: AHashMap<ObjectKey, Entry>,
    ready: VecDeque<ObjectKey>,
    timers: BTreeMap<(Instant, u64), ObjectKey>,
    parked: PerResource<BTreeMap<(ResourceVersion, u64), ObjectKey>>,
    parked_count: usize,
    seq: u64,
    errors: Backoff,
    safety: Backoff,
    stats: QueueStats,
    events_cut_backoff: bool,
}

impl Default for WorkQueue {
    fn default() -> Self {
        Self::new(Backoff::ERRORS, Backoff::PARKED)
    }
}

impl WorkQueue {
    /// A queue with the given error backoff and parked-key safety timer.
    pub fn new(errors: Backoff, safety: Backoff) -> Self {
        Self {
            entries: AHashMap::new(),
            ready: VecDeque::new(),
            timers: BTreeMap::new(),
            parked: PerResource::default(),
            parked_count: 0,
            seq: 0,
            errors,
            safety,
            stats: QueueStats::default(),
            events_cut_backoff: false,
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Adds a key because something it depends on changed. A queued or parked key stays as it
    /// is, a key in flight runs again when it finishes, and a key in backoff keeps its delay:
    /// events never raise a failure count nor cut a backoff short.
    pub fn add(&mut self, key: &ObjectKey, now: Instant) {
        self.stats.adds += 1;
        match self.entries.get_mut(key) {
            None => {
                self.entries.insert(
                    key.clone(),
                    Entry {
                        state: State::Queued {
                            since: now,
                            woken: false,
                            parked_for: None,
                        },
                        failures: 0,
                        skips: 0,
                    },
                );
                self.ready.push_back(key.clone());
            }
            Some(Entry {
                state: State::InFlight { dirty },
                ..
            }) => *dirty = true,
            Some(entry) if self.events_cut_backoff => {
                if let State::Waiting { timer } = entry.state {
                    self.timers.remove(&timer);
                    entry.state = State::Queued {
                        since: now,
                        woken: false,
                        parked_for: None,
                    };
                    self.ready.push_back(key.clone());
                }
            }
            Some(_) => {}
        }
    }

    /// With `cut`, an add of a key waiting out its backoff (or a requeue delay) queues it at once,
    /// and a key that changed while in flight runs again at once even if it failed: client-go's
    /// workqueue, which the upstream baselines run. Off (Tidemark's queue), a failing key waits
    /// out its backoff whatever events arrive, so a storm of events cannot turn it into a hot
    /// loop.
    pub fn with_events_cut_backoff(mut self, cut: bool) -> Self {
        self.events_cut_backoff = cut;
        self
    }

    /// Takes the next ready key. The caller then either [`start`](Self::start)s or
    /// [`park`](Self::park)s it.
    pub fn pop(&mut self) -> Option<Popped> {
        let key = self.ready.pop_front()?;
        let (ready_since, woken, parked_for) = match self.entries.get(&key).map(|e| &e.state) {
            Some(State::Queued {
                since,
                woken,
                parked_for,
            }) => (*since, *woken, *parked_for),
            _ => return self.pop(),
        };
        Some(Popped {
            key,
            ready_since,
            woken,
            parked_for,
        })
    }

    /// Marks a popped key as being reconciled.
    pub fn start(&mut self, key: &ObjectKey) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.state = State::InFlight { dirty: false };
            entry.skips = 0;
        }
    }

    /// Parks a popped key until `target`; returns its consecutive skip count.
    pub fn park(&mut self, key: &ObjectKey, target: ParkTarget, now: Instant) -> u32 {
        let seq = self.next_seq();
        let Some(entry) = self.entries.get_mut(key) else {
            return 0;
        };
        let delay = self.safety.delay(entry.skips);
        entry.skips += 1;
        let timer = (now + delay, seq);
        let slot = match &target {
            ParkTarget::Watermark { resource, version } => {
                self.parked
                    .get_mut(*resource)
                    .insert((*version, seq), key.clone());
                Some((*version, seq))
            }
            ParkTarget::Deletions
            | ParkTarget::Barrier
            | ParkTarget::LiveRead
            | ParkTarget::Expectations => None,
        };
        entry.state = State::Parked {
            target,
            timer,
            slot,
            since: now,
        };
        self.timers.insert(timer, key.clone());
        self.parked_count += 1;
        self.stats.parks += 1;
        entry.skips
    }

    /// Takes a parked key out of the park's timer and watermark index; returns when it was
    /// parked. The caller sets its next state.
    fn leave_park(&mut self, key: &ObjectKey) -> Option<Instant> {
        let entry = self.entries.get_mut(key)?;
        let State::Parked {
            target,
            timer,
            slot,
            since,
        } = &entry.state
        else {
            return None;
        };
        self.timers.remove(timer);
        if let (ParkTarget::Watermark { resource, .. }, Some(slot)) = (target, slot) {
            self.parked.get_mut(*resource).remove(slot);
        }
        self.parked_count -= 1;
        Some(*since)
    }

    fn unpark(&mut self, key: &ObjectKey, now: Instant) -> bool {
        let Some(since) = self.leave_park(key) else {
            return false;
        };
        let Some(entry) = self.entries.get_mut(key) else {
            return false;
        };
        entry.state = State::Queued {
            since: now,
            woken: true,
            parked_for: Some(now.saturating_duration_since(since)),
        };
        self.ready.push_back(key.clone());
        true
    }

    /// The watermark of `resource` reached `version`: every key parked on a target at or below it
    /// becomes ready at once. Returns how many woke.
    pub fn watermark(
        &mut self,
        resource: Resource,
        version: ResourceVersion,
        now: Instant,
    ) -> usize {
        let map = self.parked.get_mut(resource);
        let due = match version.get().checked_add(1).and_then(ResourceVersion::new) {
            Some(next) => {
                let later = map.split_off(&(next, 0));
                std::mem::replace(map, later)
            }
            None => std::mem::take(map),
        };
        let mut woke = 0;
        for ((_, _), key) in due {
            if let Some(entry) = self.entries.get_mut(&key)
                && let State::Parked { timer, since, .. } = &entry.state
            {
                self.timers.remove(timer);
                self.parked_count -= 1;
                entry.state = State::Queued {
                    since: now,
                    woken: true,
                    parked_for: Some(now.saturating_duration_since(*since)),
                };
                self.ready.push_back(key);
                woke += 1;
            }
        }
        self.stats.wakes += woke as u64;
        woke
    }

    /// Wakes one parked key (its deletions were observed, or its owner is gone).
    pub fn wake(&mut self, key: &ObjectKey, now: Instant) -> bool {
        let woke = self.unpark(key, now);
        if woke {
            self.stats.wakes += 1;
        }
        woke
    }

    /// A parked key's wait failed (its barrier could not be read): it leaves the park and retries
    /// after the error backoff, which this failure raises.
    pub fn fail_parked(&mut self, key: &ObjectKey, now: Instant) -> bool {
        let seq = self.next_seq();
        if self.leave_park(key).is_none() {
            return false;
        }
        let Some(entry) = self.entries.get_mut(key) else {
            return false;
        };
        let delay = self.errors.delay(entry.failures);
        entry.failures = entry.failures.saturating_add(1);
        let timer = (now + delay, seq);
        entry.state = State::Waiting { timer };
        self.stats.retries += 1;
        self.timers.insert(timer, key.clone());
        true
    }

    /// Ends the reconcile of `key`. A failure always backs off; a success runs again at once when
    /// the key changed while it was in flight.
    pub fn finish(&mut self, key: &ObjectKey, outcome: Outcome, now: Instant) {
        let seq = self.next_seq();
        let Some(entry) = self.entries.get_mut(key) else {
            return;
        };
        let dirty = matches!(entry.state, State::InFlight { dirty: true });
        let delay = match outcome {
            Outcome::Done => {
                entry.failures = 0;
                None
            }
            Outcome::RequeueAfter(after) => {
                entry.failures = 0;
                (!dirty).then_some(after)
            }
            Outcome::Failed => {
                let delay = self.errors.delay(entry.failures);
                entry.failures = entry.failures.saturating_add(1);
                self.stats.retries += 1;
                // client-go's queue hands a key that changed while in flight out again at once,
                // failed or not.
                (!(dirty && self.events_cut_backoff)).then_some(delay)
            }
        };
        match delay {
            Some(after) => {
                let timer = (now + after, seq);
                entry.state = State::Waiting { timer };
                self.timers.insert(timer, key.clone());
            }
            None if dirty => {
                entry.state = State::Queued {
                    since: now,
                    woken: false,
                    parked_for: None,
                };
                self.ready.push_back(key.clone());
            }
            None => {
                self.entries.remove(key);
            }
        }
    }

    /// Moves every timer due at `now`; reports each in `fired`.
    pub fn fire(&mut self, now: Instant, fired: &mut Vec<Fired>) {
        while let Some(entry) = self.timers.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            let Some(e) = self.entries.get_mut(&key) else {
                continue;
            };
            match std::mem::replace(
                &mut e.state,
                State::Queued {
                    since: now,
                    woken: false,
                    parked_for: None,
                },
            ) {
                State::Waiting { .. } => {
                    self.ready.push_back(key.clone());
                    fired.push(Fired::Retry(key));
                }
                State::Parked {
                    target,
                    slot,
                    since,
                    ..
                } => {
                    e.state = State::Queued {
                        since: now,
                        woken: false,
                        parked_for: Some(now.saturating_duration_since(since)),
                    };
                    if let (ParkTarget::Watermark { resource, .. }, Some(slot)) = (&target, slot) {
                        self.parked.get_mut(*resource).remove(&slot);
                    }
                    self.parked_count -= 1;
                    self.stats.park_timeouts += 1;
                    let skips = e.skips;
                    self.ready.push_back(key.clone());
                    fired.push(Fired::ParkExpired { key, target, skips });
                }
                other => e.state = other,
            }
        }
    }

    /// The earliest timer, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.first_key_value().map(|(k, _)| k.0)
    }

    /// Keys ready to run (`workqueue_depth`).
    pub fn depth(&self) -> usize {
        self.ready.len()
    }

    /// Keys parked on a stale cache (`tidemark_parked_keys`).
    pub fn parked(&self) -> usize {
        self.parked_count
    }

    /// Keys being reconciled now.
    pub fn in_flight(&self) -> usize {
        self.entries
            .values()
            .filter(|e| matches!(e.state, State::InFlight { .. }))
            .count()
    }

    /// Consecutive failures of `key`.
    pub fn failures(&self, key: &ObjectKey) -> u32 {
        self.entries.get(key).map_or(0, |e| e.failures)
    }

    /// Whether `key` is parked.
    pub fn is_parked(&self, key: &ObjectKey) -> bool {
        matches!(
            self.entries.get(key).map(|e| &e.state),
            Some(State::Parked { .. })
        )
    }

    /// The counters.
    pub fn stats(&self) -> QueueStats {
        self.stats
    }
}

#[cfg(test)]
mod tests;
