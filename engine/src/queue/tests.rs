//! The work queue: one entry a key, parking and waking, backoff and its timers.

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
