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
mod tests {
    use super::*;

    fn k(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }
    fn rv(v: u64) -> ResourceVersion {
        ResourceVersion::new(v).expect("nonzero")
    }
    fn pods_at(v: u64) -> ParkTarget {
        ParkTarget::Watermark {
            resource: Resource::Pods,
            version: rv(v),
        }
    }

    #[test]
    fn a_failed_barrier_moves_the_parked_key_into_a_growing_error_backoff() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.add(&k("a"), now);
        let p = q.pop().expect("ready");
        q.park(&p.key, ParkTarget::Barrier, now);
        assert_eq!(q.parked(), 1);
        assert!(q.fail_parked(&k("a"), now));
        assert_eq!(q.parked(), 0);
        assert_eq!(q.failures(&k("a")), 1);
        q.add(&k("a"), now);
        assert_eq!(q.pop(), None, "an event does not cut the backoff short");
        let mut fired = Vec::new();
        q.fire(now + Duration::from_millis(5), &mut fired);
        let again = q.pop().expect("retried after the first backoff step");
        assert_eq!(again.key, k("a"));
        assert!(
            !q.fail_parked(&k("a"), now),
            "only a parked key can fail its park"
        );
    }

    #[test]
    fn a_woken_key_reports_how_long_it_was_parked() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.add(&k("a"), now);
        let p = q.pop().expect("ready");
        assert_eq!(p.parked_for, None);
        q.park(&p.key, pods_at(10), now);
        q.watermark(Resource::Pods, rv(10), now + Duration::from_millis(40));
        let woken = q.pop().expect("woken");
        assert_eq!(woken.parked_for, Some(Duration::from_millis(40)));
    }

    #[test]
    fn adds_are_deduplicated_while_queued() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.add(&k("a"), now);
        q.add(&k("a"), now);
        q.add(&k("b"), now);
        assert_eq!(q.depth(), 2);
        assert_eq!(q.stats().adds, 3);
    }

    #[test]
    fn a_key_in_flight_runs_again_after_it_finishes_if_it_changed() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.add(&k("a"), now);
        let p = q.pop().expect("ready");
        q.start(&p.key);
        q.add(&k("a"), now);
        assert_eq!(q.depth(), 0, "never two reconciles of one key at once");
        q.finish(&k("a"), Outcome::Done, now);
        assert_eq!(q.pop().map(|p| p.key), Some(k("a")));
    }

    #[test]
    fn stale_key_wakes_when_watermark_passes_target_and_not_before() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.add(&k("a"), now);
        let p = q.pop().expect("ready");
        q.park(&p.key, pods_at(10), now);
        assert_eq!(q.watermark(Resource::Pods, rv(9), now), 0);
        assert_eq!(q.watermark(Resource::ReplicaSets, rv(50), now), 0);
        assert!(q.pop().is_none());
        assert_eq!(q.watermark(Resource::Pods, rv(10), now), 1);
        let woken = q.pop().expect("woken");
        assert!(woken.woken);
        assert_eq!(q.parked(), 0);
    }

    #[test]
    fn a_parked_key_does_not_block_other_keys() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.add(&k("hot"), now);
        q.add(&k("cold"), now);
        let hot = q.pop().expect("hot");
        q.park(&hot.key, pods_at(100), now);
        q.add(&k("hot"), now);
        assert_eq!(q.pop().map(|p| p.key), Some(k("cold")));
        assert!(
            q.pop().is_none(),
            "re-adding a parked key does not unpark it"
        );
    }

    #[test]
    fn event_re_adds_do_not_raise_a_keys_backoff() {
        let mut q = WorkQueue::default();
        let t0 = Instant::now();
        q.add(&k("a"), t0);
        let p = q.pop().expect("ready");
        q.start(&p.key);
        q.finish(&p.key, Outcome::Failed, t0);
        assert_eq!(q.failures(&k("a")), 1);
        let due = q.next_deadline().expect("backoff timer");
        for _ in 0..100 {
            q.add(&k("a"), t0);
        }
        assert_eq!(q.failures(&k("a")), 1);
        assert_eq!(
            q.next_deadline(),
            Some(due),
            "adds neither extend nor cut the backoff"
        );
        assert!(q.pop().is_none());
        let mut fired = Vec::new();
        q.fire(due, &mut fired);
        assert_eq!(fired, vec![Fired::Retry(k("a"))]);
        assert!(q.pop().is_some());
    }

    #[test]
    fn as_client_go_an_event_cuts_a_failed_keys_backoff_short_and_keeps_its_failures() {
        let mut q = WorkQueue::default().with_events_cut_backoff(true);
        let t0 = Instant::now();
        q.add(&k("a"), t0);
        let p = q.pop().expect("ready");
        q.start(&p.key);
        q.finish(&p.key, Outcome::Failed, t0);
        assert!(q.pop().is_none(), "backing off");
        q.add(&k("a"), t0);
        assert_eq!(
            q.pop().map(|p| p.key),
            Some(k("a")),
            "the event queues it now"
        );
        assert_eq!(q.next_deadline(), None, "its backoff timer is gone");
        assert_eq!(q.failures(&k("a")), 1);
    }

    #[test]
    fn as_client_go_a_key_that_changed_while_failing_runs_again_at_once() {
        let mut q = WorkQueue::default().with_events_cut_backoff(true);
        let t0 = Instant::now();
        q.add(&k("a"), t0);
        let p = q.pop().expect("ready");
        q.start(&p.key);
        q.add(&k("a"), t0);
        q.finish(&p.key, Outcome::Failed, t0);
        assert_eq!(q.pop().map(|p| p.key), Some(k("a")));
    }

    #[test]
    fn failures_back_off_exponentially_and_success_forgets_them() {
        let mut q = WorkQueue::default();
        let mut now = Instant::now();
        q.add(&k("a"), now);
        let mut delays = Vec::new();
        for _ in 0..4 {
            let mut fired = Vec::new();
            q.fire(now, &mut fired);
            let p = q.pop().expect("ready");
            q.start(&p.key);
            q.finish(&p.key, Outcome::Failed, now);
            let due = q.next_deadline().expect("timer");
            delays.push(due - now);
            now = due;
        }
        assert_eq!(delays, [5, 10, 20, 40].map(Duration::from_millis));
        let mut fired = Vec::new();
        q.fire(now, &mut fired);
        let p = q.pop().expect("ready");
        q.start(&p.key);
        q.finish(&p.key, Outcome::Done, now);
        assert_eq!(q.failures(&k("a")), 0);
    }

    #[test]
    fn a_parked_key_gets_a_capped_safety_timer_that_grows_with_its_skips() {
        let mut q = WorkQueue::default();
        let mut now = Instant::now();
        q.add(&k("a"), now);
        let mut delays = Vec::new();
        for _ in 0..6 {
            let p = q.pop().expect("ready");
            let skips = q.park(&p.key, pods_at(10), now);
            let due = q.next_deadline().expect("safety timer");
            delays.push((due - now).as_secs());
            let mut fired = Vec::new();
            q.fire(due, &mut fired);
            assert!(matches!(&fired[..], [Fired::ParkExpired { skips: s, .. }] if *s == skips));
            now = due;
        }
        assert_eq!(delays, [5, 10, 20, 40, 60, 60]);
        assert_eq!(q.stats().park_timeouts, 6);
    }

    #[test]
    fn waking_one_key_parked_on_deletions() {
        let mut q = WorkQueue::default();
        let now = Instant::now();
        q.add(&k("a"), now);
        let p = q.pop().expect("ready");
        q.park(&p.key, ParkTarget::Deletions, now);
        assert!(q.is_parked(&k("a")));
        assert!(q.wake(&k("a"), now));
        assert_eq!(q.pop().map(|p| p.key), Some(k("a")));
        assert_eq!(q.next_deadline(), None, "the safety timer is cancelled");
    }
}
