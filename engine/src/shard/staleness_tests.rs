//! Staleness beyond a key's own writes: relists that cancel running plans, lag-triggered live
//! reads, barriers older than what was seen, the takeover hold, ghosts of moved objects, and the
//! upstream baselines' expectations and requeues.

use super::*;
use crate::ConsistencyMode;
use crate::object::test_support::pod_owned_by;

fn shard_in(mode: ConsistencyMode) -> Shard {
    Shard::new(
        ShardId(0),
        vec![ControllerSpec::new(Box::new(ReplicaSetController), mode)],
    )
}

fn listed_in(
    mode: ConsistencyMode,
    rs: &ReplicaSetView,
    pods: Vec<PodView>,
    now: Instant,
) -> Shard {
    let mut s = shard_in(mode);
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(rs.clone())],
        Some(rv(10)),
        now,
    );
    s.replace(
        Resource::Pods,
        pods.into_iter().map(Object::Pod).collect(),
        Some(rv(10)),
        now,
    );
    s
}

/// A shard that listed one ReplicaSet `ns/web` wanting `replicas` Pods, and no Pod yet.
fn listed_without_pods(mode: ConsistencyMode, replicas: i32) -> (Shard, ReplicaSetView, Instant) {
    let rs = replicaset_json("ns", "web", replicas, 10);
    let now = Instant::now();
    let s = listed_in(mode, &rs, vec![], now);
    (s, rs, now)
}

/// A shard whose ReplicaSet `ns/web` (1 replica) sent its one create and its status write, both
/// answered (revisions 11 and 12), before the Pod watch shows anything.
fn one_create_answered(mode: ConsistencyMode) -> (Shard, ReplicaSetView, Instant) {
    let (mut s, rs, now) = listed_without_pods(mode, 1);
    let first = writes(&mut s, now);
    assert_eq!(creates(&first), 1);
    complete(&mut s, first, &mut 10, now);
    (s, rs, now)
}

fn with_generation(mut rs: ReplicaSetView, generation: i64) -> ReplicaSetView {
    rs.generation = generation;
    rs
}

fn live_read(out: &[Output]) -> Option<(crate::LiveReadId, Vec<(Resource, ObjectKey)>)> {
    out.iter().find_map(|o| match o {
        Output::LiveRead { id, objects, .. } => Some((*id, objects.clone())),
        _ => None,
    })
}

fn deletes(ws: &[WriteRequest]) -> usize {
    ws.iter()
        .filter(|w| matches!(w.action, Action::Delete { .. }))
        .count()
}

#[test]
fn a_relist_showing_a_new_spec_cancels_the_rest_of_a_running_plan() {
    let (mut s, _, now) = listed_without_pods(ConsistencyMode::Tidemark, 16);
    let first = writes(&mut s, now);
    assert_eq!(creates(&first), 1, "slow start sends one create first");
    // The watch broke (410): the relist shows the ReplicaSet scaled down to 1.
    let scaled = with_generation(replicaset_json("ns", "web", 1, 30), 2);
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(scaled)],
        Some(rv(30)),
        now,
    );
    s.write_done(first[0].id, written(31), now);
    let next = writes(&mut s, now);
    assert_eq!(
        creates(&next),
        0,
        "no further slow-start batch after the relist: {next:?}"
    );
}

/// A ReplicaSet scaling up to 16 whose first create is answered while its watch has ended for a
/// relist that has not landed yet (the reflector's backoff), in `mode`.
fn first_create_answered_while_relisting(
    mode: ConsistencyMode,
) -> (Shard, Vec<WriteRequest>, Instant) {
    let (mut s, _, now) = listed_without_pods(mode, 16);
    let first = writes(&mut s, now);
    assert_eq!(creates(&first), 1, "slow start sends one create first");
    s.relisting(Resource::ReplicaSets, now);
    s.write_done(first[0].id, written(31), now);
    let during = writes(&mut s, now);
    (s, during, now)
}

#[test]
fn no_plan_step_goes_out_while_a_cache_it_reads_waits_for_its_relist() {
    let (mut s, during, now) = first_create_answered_while_relisting(ConsistencyMode::Tidemark);
    assert_eq!(
        creates(&during),
        0,
        "the next batch waits for the relist: {during:?}"
    );
    let scaled = with_generation(replicaset_json("ns", "web", 1, 30), 2);
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(scaled)],
        Some(rv(32)),
        now,
    );
    let after = writes(&mut s, now);
    assert_eq!(
        creates(&after),
        0,
        "the relisted scale-down cancels the batch that waited: {after:?}"
    );
}

#[test]
fn a_held_plan_is_decided_again_once_the_relist_lands() {
    let (mut s, _, now) = first_create_answered_while_relisting(ConsistencyMode::Tidemark);
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(replicaset_json("ns", "web", 16, 30))],
        Some(rv(32)),
        now,
    );
    assert!(
        writes(&mut s, now).is_empty(),
        "its own create (31) is not in the Pod cache: the new decision waits for it"
    );
    s.advance(Resource::Pods, rv(32), now);
    let pod = pod(&replicaset_json("ns", "web", 16, 30), "first", 31, true);
    s.apply(Change::Applied(Object::Pod(pod)), now);
    s.advance(Resource::Pods, rv(33), now);
    assert!(
        creates(&writes(&mut s, now)) > 0,
        "once the cache has it, the key creates what is still missing"
    );
}

#[test]
fn a_relist_that_takes_longer_than_the_lag_threshold_holds_nothing_after_it() {
    let (mut s, during, now) = first_create_answered_while_relisting(ConsistencyMode::Tidemark);
    assert_eq!(creates(&during), 0);
    assert_eq!(
        s.next_deadline(),
        Some(now + LAG_THRESHOLD),
        "the shard wakes when the hold ends"
    );
    let later = now + LAG_THRESHOLD;
    assert_eq!(creates(&writes(&mut s, later)), 0, "the held plan ends");
    assert_eq!(
        creates(&writes(&mut s, later)),
        0,
        "the key's new decision waits for its own create"
    );
    assert!(
        s.next_deadline().is_none_or(|at| at > later),
        "no hold is left to wake for (only the parked key's safety timer)"
    );
}

#[test]
fn upstream_sends_its_next_batch_while_the_relist_is_pending() {
    let (_, during, _) = first_create_answered_while_relisting(ConsistencyMode::Upstream136);
    assert_eq!(
        creates(&during),
        2,
        "KEP-5647 as upstream has it does not look at the informer: {during:?}"
    );
}

#[test]
fn a_relist_with_the_same_spec_lets_the_plan_go_on() {
    let (mut s, _, now) = listed_without_pods(ConsistencyMode::Tidemark, 4);
    let first = writes(&mut s, now);
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(replicaset_json("ns", "web", 4, 30))],
        Some(rv(30)),
        now,
    );
    s.write_done(first[0].id, written(31), now);
    assert_eq!(creates(&writes(&mut s, now)), 2, "the next batch of two");
}

#[test]
fn a_deleted_owner_cancels_the_rest_of_its_plan() {
    let (mut s, rs, now) = listed_without_pods(ConsistencyMode::Tidemark, 8);
    let first = writes(&mut s, now);
    s.apply(Change::Deleted(Object::ReplicaSet(rs)), now);
    s.write_done(first[0].id, written(31), now);
    assert_eq!(creates(&writes(&mut s, now)), 0);
}

/// A proven shard whose ReplicaSet wants one Pod fewer, with the Pod cache fresh and the
/// ReplicaSet cache trailing a revision the process learned `lag` ago.
fn proven_with_lagging_replicasets(lag: Duration) -> (Shard, Instant, PodView) {
    let rs = replicaset_json("ns", "web", 1, 10);
    let extra = pod(&rs, "extra", 5, true);
    let t0 = Instant::now();
    let mut s = listed_in(
        ConsistencyMode::Tidemark,
        &rs,
        vec![pod(&rs, "keep", 4, true), extra.clone()],
        t0,
    );
    let ws = writes_after_barrier(&mut s, t0, 10);
    assert_eq!(deletes(&ws), 1, "the proving decision deletes");
    let mut next = 10;
    complete(&mut s, ws, &mut next, t0);
    s.apply(Change::Deleted(Object::Pod(extra.clone())), t0);
    s.advance(Resource::Pods, rv(20), t0);
    s.advance(Resource::ReplicaSets, rv(20), t0);
    // A second extra Pod, and the Pod watch running ahead while the ReplicaSet watch stalls.
    let again = pod(&rs, "again", 40, true);
    s.apply(Change::Applied(Object::Pod(again.clone())), t0);
    s.advance(Resource::Pods, rv(40), t0);
    let now = t0 + lag;
    s.advance(Resource::Pods, rv(41), now);
    (s, now, again)
}

#[test]
fn a_destructive_decision_on_a_lagging_cache_waits_for_a_live_read() {
    let (mut s, now, _) = proven_with_lagging_replicasets(LAG_THRESHOLD);
    assert!(s.is_lagging(Resource::ReplicaSets, now));
    let out = outputs(&mut s, now);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "no delete on a lagging cache: {out:?}"
    );
    let (id, objects) = live_read(&out).expect("a live read of the ReplicaSet");
    assert_eq!(
        objects,
        vec![(Resource::ReplicaSets, ObjectKey::new("ns", "web"))]
    );
    // The server still has the version the cache holds: the decision is current.
    s.live_read_done(id, Ok(vec![Some(rv(10))]), now);
    assert_eq!(deletes(&writes(&mut s, now)), 1);
}

#[test]
fn a_live_read_that_finds_a_newer_owner_parks_the_key_until_the_cache_has_it() {
    let (mut s, now, _) = proven_with_lagging_replicasets(LAG_THRESHOLD);
    let (id, _) = live_read(&outputs(&mut s, now)).expect("a live read");
    // The owner was scaled up again at 45; the stalled watch has not shown it.
    s.live_read_done(id, Ok(vec![Some(rv(45))]), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "parked until the cache reaches 45"
    );
    let scaled_up = with_generation(replicaset_json("ns", "web", 3, 45), 2);
    s.apply(Change::Applied(Object::ReplicaSet(scaled_up)), now);
    s.advance(Resource::ReplicaSets, rv(45), now);
    let ws = writes(&mut s, now);
    assert_eq!(deletes(&ws), 0, "the scale-up that followed wins: {ws:?}");
}

#[test]
fn a_watch_that_delivers_late_lags_even_while_what_it_misses_is_recent() {
    let (mut s, _, t0) = listed_without_pods(ConsistencyMode::Tidemark, 1);
    // The Pod watch tells of revision 50 at once; the ReplicaSet watch delivers it 3 s later.
    s.advance(Resource::Pods, rv(50), t0);
    let late = t0 + Duration::from_secs(3);
    s.advance(Resource::ReplicaSets, rv(50), late);
    assert!(
        s.is_lagging(Resource::ReplicaSets, late),
        "it misses nothing the process knows of, but it is 3 s late"
    );
    // A prompt delivery right after does not clear it: the lateness holds for a threshold.
    let soon = late + Duration::from_secs(1);
    s.advance(Resource::Pods, rv(55), soon);
    s.advance(Resource::ReplicaSets, rv(55), soon);
    assert!(s.is_lagging(Resource::ReplicaSets, soon));
    // Once it has delivered promptly for that long, it no longer lags.
    let later = late + LAG_THRESHOLD;
    s.advance(Resource::Pods, rv(60), later);
    s.advance(Resource::ReplicaSets, rv(60), later);
    assert!(!s.is_lagging(Resource::ReplicaSets, later));
}

#[test]
fn late_events_with_a_bookmark_right_behind_them_still_show_the_watch_late() {
    let (mut s, _, t0) = listed_without_pods(ConsistencyMode::Tidemark, 1);
    // The Pod watch tells of revision 30 at once; the ReplicaSet watch's next event is 30.
    s.advance(Resource::Pods, rv(30), t0);
    // 1.5 s later a barrier teaches revision 60; the ReplicaSet watch is still 3 s late.
    let barrier = t0 + Duration::from_millis(1_500);
    s.observe_revision(rv(60), barrier);
    // At 3 s the late event at 30 arrives, with a bookmark to 60 (nothing else pending) in the
    // same batch: 60 was learned only 1.5 s ago, 30 a full 3 s ago.
    let late = t0 + Duration::from_secs(3);
    let scaled = with_generation(replicaset_json("ns", "web", 2, 30), 2);
    s.apply(Change::Applied(Object::ReplicaSet(scaled)), late);
    s.advance(Resource::ReplicaSets, rv(60), late);
    assert!(
        s.is_lagging(Resource::ReplicaSets, late),
        "the batch's first event says how late the watch is"
    );
    // A bookmark alone right after does not make it look prompt.
    s.observe_revision(rv(70), late);
    s.advance(
        Resource::ReplicaSets,
        rv(70),
        late + Duration::from_millis(100),
    );
    assert!(s.is_lagging(Resource::ReplicaSets, late + Duration::from_millis(100)));
}

#[test]
fn a_live_read_vouches_only_for_the_versions_it_read() {
    let (mut s, now, _) = proven_with_lagging_replicasets(LAG_THRESHOLD);
    let (id, _) = live_read(&outputs(&mut s, now)).expect("a live read");
    s.live_read_done(id, Ok(vec![Some(rv(10))]), now);
    // Before the key decides again, the lagging watch delivers a later dip to zero.
    let dip = with_generation(replicaset_json("ns", "web", 0, 42), 2);
    s.apply(Change::Applied(Object::ReplicaSet(dip)), now);
    let out = outputs(&mut s, now);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "the read vouched for version 10, not for the dip at 42: {out:?}"
    );
    assert!(
        live_read(&out).is_some(),
        "the new decision asks again: {out:?}"
    );
}

#[test]
fn a_cache_behind_only_for_a_moment_needs_no_live_read() {
    let (mut s, now, _) =
        proven_with_lagging_replicasets(LAG_THRESHOLD - Duration::from_millis(500));
    let out = outputs(&mut s, now);
    assert!(live_read(&out).is_none(), "{out:?}");
    assert_eq!(
        out.iter()
            .filter(|o| matches!(o, Output::Write(w) if matches!(w.action, Action::Delete { .. })))
            .count(),
        1
    );
}

#[test]
fn the_baselines_delete_on_a_lagging_cache_without_asking() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let t0 = Instant::now();
    let mut s = listed_in(
        ConsistencyMode::Upstream136,
        &rs,
        vec![pod(&rs, "keep", 4, true), pod(&rs, "extra", 5, true)],
        t0,
    );
    s.advance(Resource::Pods, rv(41), t0);
    let later = t0 + Duration::from_secs(10);
    s.advance(Resource::Pods, rv(42), later);
    let out = outputs(&mut s, later);
    assert!(live_read(&out).is_none() && barrier(&out).is_none());
    assert_eq!(deletes(&writes_from(out)), 1);
}

fn writes_from(out: Vec<Output>) -> Vec<WriteRequest> {
    out.into_iter()
        .filter_map(|o| match o {
            Output::Write(w) => Some(w),
            _ => None,
        })
        .collect()
}

#[test]
fn a_barrier_answered_from_the_past_proves_nothing() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let now = Instant::now();
    let mut s = listed_in(
        ConsistencyMode::Tidemark,
        &rs,
        vec![pod(&rs, "extra", 5, true)],
        now,
    );
    s.advance(Resource::Pods, rv(50), now);
    let out = outputs(&mut s, now);
    let id = barrier(&out).expect("an unproven key asks for a barrier");
    // A lagging replica answers with a revision older than the Pod watch already showed.
    s.barrier_done(id, Ok(rv(30)), now);
    assert_eq!(s.stats(now)[0].live_reads_failed, 1);
    assert_eq!(s.stats(now)[0].proven_keys, 0);
    assert!(writes(&mut s, now).is_empty());
}

#[test]
fn after_a_takeover_destructive_work_waits_out_the_previous_leaders_deadline() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let now = Instant::now();
    let mut s = listed_in(
        ConsistencyMode::Tidemark,
        &rs,
        vec![pod(&rs, "extra", 5, true)],
        now,
    );
    s.hold_destructive_until(now + Duration::from_secs(3));
    let out = outputs(&mut s, now);
    assert!(out.iter().all(|o| !matches!(o, Output::Write(_))));
    assert_eq!(s.next_deadline(), Some(now + Duration::from_secs(3)));
    let later = now + Duration::from_secs(3);
    let ws = writes_after_barrier(&mut s, later, 10);
    assert_eq!(deletes(&ws), 1);
}

#[test]
fn a_pod_that_departs_to_another_shard_no_longer_counts_for_its_old_owner() {
    let rs = replicaset_json("ns", "web", 2, 10);
    let now = Instant::now();
    let adopted = pod(&rs, "adopted", 5, true);
    let mut s = listed_in(
        ConsistencyMode::Tidemark,
        &rs,
        vec![pod(&rs, "stays", 4, true), adopted.clone()],
        now,
    );
    let status = writes(&mut s, now);
    assert_eq!(
        creates(&status) + deletes(&status),
        0,
        "two of two: {status:?}"
    );
    let mut next = 10;
    complete(&mut s, status, &mut next, now);
    touch(&mut s, "web", 2, 20, now);
    let other = replicaset_json("ns", "other", 1, 10);
    s.apply(
        Change::Departed(Object::Pod(pod_owned_by(&other, "adopted"))),
        now,
    );
    s.advance(Resource::Pods, rv(21), now);
    assert_eq!(s.cache().len(Resource::Pods), 1, "the ghost is gone");
    assert_eq!(
        creates(&writes(&mut s, now)),
        1,
        "the old owner replaces it"
    );
}

#[test]
fn expectations_hold_a_second_create_until_the_first_is_observed() {
    let (mut s, rs, now) = one_create_answered(ConsistencyMode::Upstream135);
    // The status write came back and the key syncs again before the Pod watch shows the Pod.
    touch(&mut s, "web", 1, 30, now);
    assert_eq!(
        creates(&writes(&mut s, now)),
        0,
        "the create is still expected"
    );
    assert_eq!(s.stats(now)[0].expectation_skips, 1);
    s.apply(
        Change::Applied(Object::Pod(pod(&rs, "web-a", 11, true))),
        now,
    );
    s.advance(Resource::Pods, rv(31), now);
    assert_eq!(creates(&writes(&mut s, now)), 0, "observed: one of one");
}

#[test]
fn naive_creates_twice_where_expectations_wait() {
    let (mut s, _, now) = one_create_answered(ConsistencyMode::Naive);
    touch(&mut s, "web", 1, 30, now);
    assert_eq!(
        creates(&writes(&mut s, now)),
        1,
        "the cache shows no Pod yet"
    );
}

#[test]
fn upstream_136_requeues_a_stale_key_with_backoff_instead_of_parking_it() {
    let (mut s, rs, now) = one_create_answered(ConsistencyMode::Upstream136);
    // The create (11) is observed, the status write (12) is not yet.
    s.apply(
        Change::Applied(Object::Pod(pod(&rs, "web-a", 11, true))),
        now,
    );
    s.advance(Resource::Pods, rv(11), now);
    s.apply(
        Change::Applied(Object::Pod(pod(&rs, "web-b", 11, true))),
        now,
    );
    assert!(writes(&mut s, now).is_empty());
    let stats = &s.stats(now)[0];
    assert_eq!(stats.stale_sync_skips, 1);
    assert_eq!(
        stats.parked, 0,
        "not parked: waiting out a rate-limited retry"
    );
    assert!(s.next_deadline().is_some());
}

/// A shard whose ReplicaSet `ns/web` wants `replicas` Pods and has none, with the Pod watch
/// running ahead while the ReplicaSet watch trails a revision the process learned `lag` ago.
fn lagging_owner_without_pods(
    mode: ConsistencyMode,
    replicas: i32,
    lag: Duration,
) -> (Shard, Instant) {
    let (mut s, _, t0) = listed_without_pods(mode, replicas);
    s.advance(Resource::Pods, rv(40), t0);
    let now = t0 + lag;
    s.advance(Resource::Pods, rv(41), now);
    (s, now)
}

#[test]
fn a_create_decided_on_a_lagging_owner_cache_waits_for_a_live_read() {
    let (mut s, now) = lagging_owner_without_pods(ConsistencyMode::Tidemark, 3, LAG_THRESHOLD);
    let out = outputs(&mut s, now);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "no create on a spec the server may have lowered: {out:?}"
    );
    let (id, objects) = live_read(&out).expect("a live read of the ReplicaSet");
    assert_eq!(
        objects,
        vec![(Resource::ReplicaSets, ObjectKey::new("ns", "web"))]
    );
    // The user scaled to 0 at 35; the stalled watch has not shown it.
    s.live_read_done(id, Ok(vec![Some(rv(35))]), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "parked until the cache has 35"
    );
    let scaled_to_zero = with_generation(replicaset_json("ns", "web", 0, 35), 2);
    s.apply(Change::Applied(Object::ReplicaSet(scaled_to_zero)), now);
    s.advance(Resource::ReplicaSets, rv(41), now);
    assert_eq!(creates(&writes(&mut s, now)), 0, "the set wants none now");
    assert_eq!(s.stats(now)[0].lag_live_reads, 1);
    assert_eq!(
        s.stats(now)[0].destructive_held,
        0,
        "creating is not destructive"
    );
}

#[test]
fn a_create_whose_owner_is_read_live_at_the_cached_version_goes_ahead() {
    let (mut s, now) = lagging_owner_without_pods(ConsistencyMode::Tidemark, 3, LAG_THRESHOLD);
    let (id, _) = live_read(&outputs(&mut s, now)).expect("a live read");
    s.live_read_done(id, Ok(vec![Some(rv(10))]), now);
    assert_eq!(
        creates(&writes(&mut s, now)),
        1,
        "slow start's first create"
    );
}

#[test]
fn a_create_on_an_owner_cache_behind_only_for_a_moment_needs_no_live_read() {
    let (mut s, now) = lagging_owner_without_pods(
        ConsistencyMode::Tidemark,
        3,
        LAG_THRESHOLD - Duration::from_millis(500),
    );
    let out = outputs(&mut s, now);
    assert!(live_read(&out).is_none(), "{out:?}");
    assert_eq!(creates(&writes_from(out)), 1);
}

#[test]
fn the_baselines_create_on_a_lagging_owner_cache_without_asking() {
    for mode in [ConsistencyMode::Naive, ConsistencyMode::Upstream136] {
        let (mut s, now) = lagging_owner_without_pods(mode, 3, LAG_THRESHOLD);
        let out = outputs(&mut s, now);
        assert!(live_read(&out).is_none(), "{mode}: {out:?}");
        assert_eq!(creates(&writes_from(out)), 1, "{mode}");
    }
}

/// A shard whose ReplicaSet's one create is answered and whose status write is refused with a
/// 409 Conflict (the server holds a newer ReplicaSet than the cache); the Pod watch has the
/// create. Returns the outputs of the next decision.
fn status_write_conflicts(mode: ConsistencyMode) -> Vec<Output> {
    let (mut s, rs, now) = listed_without_pods(mode, 1);
    let mut ws = writes(&mut s, now);
    let mut next = 10;
    while !ws.is_empty() {
        for w in ws.drain(..) {
            next += 1;
            let result = match w.action {
                Action::UpdateStatus { .. } => WriteResult::Failed(WriteError {
                    kind: WriteErrorKind::Conflict,
                    message: "the object has been modified".into(),
                }),
                _ => written(next),
            };
            s.write_done(w.id, result, now);
        }
        ws = writes(&mut s, now);
    }
    s.apply(
        Change::Applied(Object::Pod(pod(&rs, "web-1", 11, true))),
        now,
    );
    s.advance(Resource::Pods, rv(next), now);
    s.advance(Resource::ReplicaSets, rv(next), now);
    outputs(&mut s, now + Duration::from_secs(2))
}

#[test]
fn a_conflict_on_a_keys_write_waits_for_a_barrier_before_it_decides_again() {
    let out = status_write_conflicts(ConsistencyMode::Tidemark);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "the cache is behind the server for this key: {out:?}"
    );
    assert!(barrier(&out).is_some(), "{out:?}");
}

#[test]
fn with_the_gate_off_a_conflict_is_retried_on_the_same_cache() {
    let out = status_write_conflicts(ConsistencyMode::Naive);
    assert!(barrier(&out).is_none(), "{out:?}");
    assert!(
        out.iter().any(|o| matches!(o, Output::Write(_))),
        "the status write goes out again: {out:?}"
    );
}

#[test]
fn a_revision_another_shard_learned_makes_a_cache_trailing_it_lag() {
    let (mut s, _, t0) = listed_without_pods(ConsistencyMode::Tidemark, 3);
    // Another shard's write was answered with revision 30; this shard wrote nothing.
    s.observe_revision(rv(30), t0);
    assert!(!s.is_lagging(Resource::ReplicaSets, t0));
    let later = t0 + LAG_THRESHOLD;
    assert!(
        s.is_lagging(Resource::ReplicaSets, later),
        "its cache is at 10, the server has been at 30 for the lag threshold"
    );
    let out = outputs(&mut s, later);
    assert!(
        live_read(&out).is_some(),
        "the create is read live: {out:?}"
    );
}

#[test]
fn a_shard_not_told_what_another_learned_creates_on_its_lagging_cache() {
    let (mut s, _, t0) = listed_without_pods(ConsistencyMode::Tidemark, 3);
    let later = t0 + LAG_THRESHOLD;
    assert!(!s.is_lagging(Resource::ReplicaSets, later));
    let out = outputs(&mut s, later);
    assert!(live_read(&out).is_none(), "{out:?}");
    assert_eq!(creates(&writes_from(out)), 1);
}

#[test]
fn a_cache_that_waited_for_its_relist_past_the_lag_threshold_is_known_to_lag_until_it_lands() {
    let (mut s, rs, now) = listed_without_pods(ConsistencyMode::Tidemark, 2);
    s.relisting(Resource::ReplicaSets, now);
    assert!(
        !s.is_lagging(Resource::ReplicaSets, now),
        "a hold, not yet a lag"
    );
    let later = now + LAG_THRESHOLD;
    assert!(
        s.is_lagging(Resource::ReplicaSets, later),
        "no watch for the lag threshold: the cache misses what it cannot know"
    );
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(rs)],
        Some(rv(20)),
        later,
    );
    assert!(
        !s.is_lagging(Resource::ReplicaSets, later),
        "the list is as fresh as its answer"
    );
}
