//! Writes withdrawn when their plan is superseded: a create decided for eight replicas that
//! still waits for the client-side rate limit when the user scales to one is not sent.

use super::*;
use crate::write::WriteId;

/// A shard whose ReplicaSet `ns/web` scales from nothing to 8: the slow start's first create
/// answered (revision 11), the second batch of two creates out and unanswered.
fn second_batch_out(consistency: bool) -> (Shard, Vec<WriteRequest>, Instant) {
    let mut s = synced(consistency, &replicaset_json("ns", "web", 8, 10), vec![]);
    let now = Instant::now();
    let first = writes(&mut s, now);
    assert_eq!(creates(&first), 1, "slow start sends one create first");
    s.write_done(first[0].id, written(11), now);
    let second = writes(&mut s, now);
    assert_eq!(creates(&second), 2, "then two: {second:?}");
    (s, second, now)
}

fn scaled(
    s: &mut Shard,
    replicas: i32,
    generation: i64,
    version: u64,
    now: Instant,
) -> Vec<Output> {
    let mut rs = replicaset_json("ns", "web", replicas, version);
    rs.generation = generation;
    s.apply(Change::Applied(Object::ReplicaSet(rs)), now);
    s.advance(Resource::ReplicaSets, rv(version), now);
    outputs(s, now)
}

fn withdrawn(out: &[Output]) -> Vec<WriteId> {
    out.iter()
        .filter_map(|o| match o {
            Output::Withdraw(ids) => Some(ids.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

#[test]
fn a_new_spec_withdraws_the_unanswered_writes_of_the_plan_latest_first() {
    let (mut s, second, now) = second_batch_out(true);
    let out = scaled(&mut s, 1, 2, 20, now);
    let mut expected: Vec<WriteId> = second.iter().map(|w| w.id).collect();
    expected.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(withdrawn(&out), expected);
}

#[test]
fn a_write_already_answered_is_not_withdrawn() {
    let (mut s, second, now) = second_batch_out(true);
    s.write_done(second[0].id, written(12), now);
    let out = scaled(&mut s, 1, 2, 20, now);
    assert_eq!(withdrawn(&out), [second[1].id]);
}

#[test]
fn a_status_change_of_the_same_spec_withdraws_nothing() {
    let (mut s, _, now) = second_batch_out(true);
    let out = scaled(&mut s, 8, 1, 20, now);
    assert!(withdrawn(&out).is_empty(), "{out:?}");
}

#[test]
fn a_plan_ended_by_withdrawn_writes_decides_again_at_once_without_backoff() {
    let (mut s, second, now) = second_batch_out(true);
    scaled(&mut s, 1, 2, 20, now);
    for w in &second {
        s.write_done(w.id, WriteResult::Withdrawn, now);
    }
    // The Pod of the first batch shows; the user scales up again to 3.
    let rs = replicaset_json("ns", "web", 8, 10);
    s.apply(
        Change::Applied(Object::Pod(pod(&rs, "web-a", 11, true))),
        now,
    );
    s.advance(Resource::Pods, rv(21), now);
    let again = writes_of(scaled(&mut s, 3, 3, 22, now));
    assert_eq!(
        creates(&again),
        1,
        "slow start again at once, no backoff: {again:?}"
    );
    assert_eq!(s.stats(now)[0].writes_withdrawn, 2);
}

#[test]
fn with_the_gate_off_the_plan_keeps_its_writes_in_flight() {
    let (mut s, _, now) = second_batch_out(false);
    let out = scaled(&mut s, 1, 2, 20, now);
    assert!(withdrawn(&out).is_empty(), "{out:?}");
}

fn writes_of(out: Vec<Output>) -> Vec<WriteRequest> {
    out.into_iter()
        .filter_map(|o| match o {
            Output::Write(w) => Some(w),
            _ => None,
        })
        .collect()
}
