//! Unit tests of the shard: the gate, parking, deletions and atomic replace, driven by hand.

#[path = "staleness_tests.rs"]
mod staleness;

#[path = "adoption_tests.rs"]
mod adoption;

#[path = "pod_events_tests.rs"]
mod pod_events;

#[path = "withdraw_tests.rs"]
mod withdraw;

use super::*;
use crate::action::Action;
use crate::controllers::replicaset::ReplicaSetController;
use crate::object::Object;
use crate::object::test_support::{pod, replicaset_json};
use crate::object::{PodView, ReplicaSetView};
use crate::proof::BarrierId;
use crate::reconciler::Context;
use crate::write::WriteError;
use crate::write::{WriteErrorKind, WriteRequest, WriteResult};

fn shard(consistency: bool) -> Shard {
    Shard::new(
        ShardId(0),
        vec![ControllerSpec {
            reconciler: Box::new(ReplicaSetController),
            mode: crate::ConsistencyMode::from_gate(consistency),
        }],
    )
}

fn rv(v: u64) -> ResourceVersion {
    ResourceVersion::new(v).expect("nonzero")
}

fn ctx(now: Instant) -> Context {
    Context {
        now,
        unix_secs: 1_000,
    }
}

fn writes(shard: &mut Shard, now: Instant) -> Vec<WriteRequest> {
    let mut out = Vec::new();
    shard.poll(&ctx(now), &mut out);
    out.into_iter()
        .filter_map(|o| match o {
            Output::Write(w) => Some(w),
            _ => None,
        })
        .collect()
}

fn outputs(shard: &mut Shard, now: Instant) -> Vec<Output> {
    let mut out = Vec::new();
    shard.poll(&ctx(now), &mut out);
    out
}

fn barrier(out: &[Output]) -> Option<BarrierId> {
    out.iter().find_map(|o| match o {
        Output::Barrier { id, .. } => Some(*id),
        _ => None,
    })
}

/// Polls, expects the shard to ask for a barrier, answers it with `revision`, and returns the
/// writes of the next poll.
fn writes_after_barrier(s: &mut Shard, now: Instant, revision: u64) -> Vec<WriteRequest> {
    let out = outputs(s, now);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "nothing destructive before the barrier: {out:?}"
    );
    let id = barrier(&out).expect("a barrier is asked for");
    s.barrier_done(id, Ok(rv(revision)), now);
    writes(s, now)
}

fn creates(ws: &[WriteRequest]) -> usize {
    ws.iter()
        .filter(|w| matches!(w.action, Action::Create { .. }))
        .count()
}

/// The ReplicaSet `name` changed at `version` (say, its own status write came back).
fn touch(s: &mut Shard, name: &str, replicas: i32, version: u64, now: Instant) {
    let rs = replicaset_json("ns", name, replicas, version);
    s.apply(Change::Applied(Object::ReplicaSet(rs)), now);
    s.advance(Resource::ReplicaSets, rv(version), now);
}

fn written(v: u64) -> WriteResult {
    WriteResult::Written {
        resource_version: v.to_string(),
    }
}

/// Synced shard with `rs` (at rv 10) and `pods`, both lists at rv 10.
fn synced(consistency: bool, rs: &ReplicaSetView, pods: Vec<PodView>) -> Shard {
    let mut s = shard(consistency);
    let now = Instant::now();
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

/// Runs a plan to the end, answering every write with consecutive versions from `next_rv`.
fn complete(s: &mut Shard, mut ws: Vec<WriteRequest>, next_rv: &mut u64, now: Instant) -> usize {
    let mut created = 0;
    while !ws.is_empty() {
        for w in ws.drain(..) {
            *next_rv += 1;
            let result = match w.action {
                Action::Delete { .. } => WriteResult::Deleted,
                Action::Create { .. } => {
                    created += 1;
                    written(*next_rv)
                }
                _ => written(*next_rv),
            };
            s.write_done(w.id, result, now);
        }
        ws = writes(s, now);
    }
    created
}

#[test]
fn no_reconcile_runs_before_every_read_resource_has_its_first_list() {
    let mut s = shard(true);
    let now = Instant::now();
    let rs = replicaset_json("ns", "web", 2, 10);
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(rs)],
        Some(rv(10)),
        now,
    );
    assert!(writes(&mut s, now).is_empty(), "pods not listed yet");
    s.replace(Resource::Pods, vec![], Some(rv(10)), now);
    assert_eq!(
        creates(&writes(&mut s, now)),
        1,
        "slow start begins with one"
    );
}

#[test]
fn replace_is_atomic_and_counts_missing_objects_as_deleted() {
    let rs = replicaset_json("ns", "web", 2, 10);
    let mut s = synced(
        true,
        &rs,
        vec![pod(&rs, "a", 5, true), pod(&rs, "b", 6, true)],
    );
    let now = Instant::now();
    s.replace(
        Resource::Pods,
        vec![
            Object::Pod(pod(&rs, "b", 6, true)),
            Object::Pod(pod(&rs, "c", 30, true)),
        ],
        Some(rv(40)),
        now,
    );
    let mut names: Vec<_> = s
        .cache()
        .pods
        .iter()
        .map(|p| p.key.name().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["b", "c"]);
    assert_eq!(s.watermark(Resource::Pods), Some(rv(40)));
}

#[test]
fn stale_key_parks_and_wakes_when_the_watermark_passes_its_target() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![]);
    let now = Instant::now();
    let mut next = 19;
    let first = writes(&mut s, now);
    assert_eq!(creates(&first), 1);
    complete(&mut s, first, &mut next, now); // pod at 20, status at 21
    touch(&mut s, "web", 1, 21, now);
    assert!(
        writes(&mut s, now).is_empty(),
        "pods cache is at 10, the key wrote 20"
    );
    assert_eq!(s.stats(Instant::now())[0].stale_sync_skips, 1);
    assert_eq!(s.stats(Instant::now())[0].parked, 1);
    s.advance(Resource::Pods, rv(19), now);
    assert!(writes(&mut s, now).is_empty(), "19 is not 20");
    let mut created = pod(&rs, "web-x", 20, false);
    created.phase = crate::object::PodPhase::Pending;
    s.apply(Change::Applied(Object::Pod(created)), now);
    s.advance(Resource::Pods, rv(20), now);
    let after = writes(&mut s, now);
    assert_eq!(
        creates(&after),
        0,
        "woken with the pod in cache: no second create"
    );
    assert_eq!(s.stats(Instant::now())[0].parked, 0);
    assert_eq!(s.stats(Instant::now())[0].queue.wakes, 1);
}

#[test]
fn with_the_gate_off_a_stale_cache_creates_twice() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(false, &rs, vec![]);
    let now = Instant::now();
    let mut next = 19;
    let first = writes(&mut s, now);
    complete(&mut s, first, &mut next, now);
    touch(&mut s, "web", 1, 21, now);
    assert_eq!(
        creates(&writes(&mut s, now)),
        1,
        "the naive controller over-creates"
    );
    assert_eq!(s.stats(Instant::now())[0].stale_reconciles, 1);
}

#[test]
fn a_parked_key_does_not_block_other_keys_of_its_shard() {
    let hot = replicaset_json("ns", "hot", 1, 10);
    let cold = replicaset_json("ns", "cold", 0, 10);
    let mut s = shard(true);
    let now = Instant::now();
    s.replace(
        Resource::ReplicaSets,
        vec![
            Object::ReplicaSet(hot.clone()),
            Object::ReplicaSet(cold.clone()),
        ],
        Some(rv(10)),
        now,
    );
    s.replace(Resource::Pods, vec![], Some(rv(10)), now);
    let mut next = 19;
    let first = writes(&mut s, now);
    complete(&mut s, first, &mut next, now);
    s.apply(
        Change::Applied(Object::ReplicaSet(replicaset_json("ns", "hot", 1, 30))),
        now,
    );
    let mut cold_v2 = replicaset_json("ns", "cold", 0, 31);
    cold_v2.generation = 2;
    s.apply(Change::Applied(Object::ReplicaSet(cold_v2)), now);
    s.advance(Resource::ReplicaSets, rv(31), now);
    let ws = writes(&mut s, now);
    assert_eq!(ws.len(), 1, "cold reconciles while hot is parked: {ws:?}");
    assert_eq!(ws[0].owner.name(), "cold");
    assert_eq!(s.stats(Instant::now())[0].parked, 1);
}

#[test]
fn deletions_are_tracked_until_the_cache_shows_them() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let victim = pod(&rs, "victim", 5, true);
    let mut s = synced(true, &rs, vec![victim.clone()]);
    let now = Instant::now();
    let ws = writes_after_barrier(&mut s, now, 10);
    assert!(matches!(ws[0].action, Action::Delete { .. }));
    let mut next = 19;
    complete(&mut s, ws, &mut next, now);
    touch(&mut s, "web", 0, 30, now);
    s.advance(Resource::Pods, rv(100), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "a high watermark proves nothing about a delete"
    );
    assert_eq!(s.stats(Instant::now())[0].parked, 1);
    s.apply(Change::Deleted(Object::Pod(victim)), now);
    let ws = writes(&mut s, now);
    assert!(
        ws.iter()
            .all(|w| !matches!(w.action, Action::Delete { .. })),
        "{ws:?}"
    );
    assert_eq!(s.stats(Instant::now())[0].parked, 0);
}

#[test]
fn a_delete_already_observed_when_acknowledged_is_not_awaited() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let victim = pod(&rs, "victim", 5, true);
    let mut s = synced(true, &rs, vec![victim.clone()]);
    let now = Instant::now();
    let ws = writes_after_barrier(&mut s, now, 10);
    s.apply(Change::Deleted(Object::Pod(victim)), now);
    s.write_done(ws[0].id, WriteResult::Deleted, now);
    assert_eq!(s.stats(Instant::now())[0].tracked_keys, 0);
}

#[test]
fn a_non_comparable_written_version_fails_open_and_is_counted() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![]);
    let now = Instant::now();
    let ws = writes(&mut s, now);
    s.write_done(
        ws[0].id,
        WriteResult::Written {
            resource_version: String::new(),
        },
        now,
    );
    let status = writes(&mut s, now);
    s.write_done(status[0].id, written(21), now);
    touch(&mut s, "web", 1, 21, now);
    let _ = writes(&mut s, now);
    assert_eq!(s.stats(Instant::now())[0].unknown_freshness, 1);
}

#[test]
fn a_failed_write_backs_off_and_events_do_not_shorten_it() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![]);
    let now = Instant::now();
    let ws = writes(&mut s, now);
    let error = WriteError {
        kind: WriteErrorKind::Throttled,
        message: "429: not applied".into(),
    };
    s.write_done(ws[0].id, WriteResult::Failed(error), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "the rest of the plan is abandoned"
    );
    let due = s.next_deadline().expect("backoff");
    s.apply(
        Change::Applied(Object::ReplicaSet(replicaset_json("ns", "web", 1, 11))),
        now,
    );
    assert!(writes(&mut s, now).is_empty());
    assert_eq!(s.next_deadline(), Some(due));
    assert_eq!(creates(&writes(&mut s, due)), 1);
}

#[test]
fn a_stuck_watermark_asks_for_a_probe_and_reports_starvation() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![]);
    let mut now = Instant::now();
    let mut next = 19;
    let first = writes(&mut s, now);
    complete(&mut s, first, &mut next, now);
    touch(&mut s, "web", 1, 21, now);
    let mut probes = 0;
    let mut starving = 0;
    for _ in 0..6 {
        let mut out = Vec::new();
        s.poll(&ctx(now), &mut out);
        for o in out {
            match o {
                Output::Probe { target, .. } => {
                    assert_eq!(target, rv(20));
                    probes += 1;
                }
                Output::Starving { .. } => starving += 1,
                Output::Write(w) => panic!("no write while stale: {w:?}"),
                Output::Withdraw(ids) => panic!("no plan to withdraw from: {ids:?}"),
                Output::Barrier { .. } | Output::Degraded { .. } | Output::LiveRead { .. } => {
                    panic!("a scale-up needs no barrier")
                }
            }
        }
        now = s.next_deadline().expect("safety timer");
    }
    assert_eq!(probes, 5);
    assert!(starving >= 1);
}

#[test]
fn a_first_delete_after_start_waits_for_a_barrier_and_the_watermark_passing_it() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let mut s = synced(true, &rs, vec![pod(&rs, "extra", 5, true)]);
    let now = Instant::now();
    let out = outputs(&mut s, now);
    let id = barrier(&out).expect("an unproven key asks for a barrier");
    assert!(out.iter().all(|o| !matches!(o, Output::Write(_))));
    assert_eq!(s.stats(now)[0].destructive_held, 1);
    assert_eq!(s.stats(now)[0].awaiting_barrier, 1);
    s.barrier_done(id, Ok(rv(40)), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "the cache (rv 10) has not reached the barrier (rv 40)"
    );
    s.advance(Resource::ReplicaSets, rv(40), now);
    assert!(writes(&mut s, now).is_empty(), "pods still at rv 10");
    s.advance(Resource::Pods, rv(41), now);
    let ws = writes(&mut s, now);
    assert!(matches!(ws[0].action, Action::Delete { .. }), "{ws:?}");
    let stats = &s.stats(now)[0];
    assert_eq!(stats.live_reads_ok, 1);
    assert_eq!(stats.proven_keys, 1);
}

#[test]
fn once_proven_a_key_deletes_again_without_a_new_barrier() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let first = pod(&rs, "first", 5, true);
    let mut s = synced(true, &rs, vec![first.clone()]);
    let now = Instant::now();
    let ws = writes_after_barrier(&mut s, now, 10);
    let mut next = 10;
    complete(&mut s, ws, &mut next, now);
    s.apply(Change::Deleted(Object::Pod(first)), now);
    s.apply(
        Change::Applied(Object::Pod(pod(&rs, "second", 30, true))),
        now,
    );
    s.advance(Resource::Pods, rv(30), now);
    touch(&mut s, "web", 0, 31, now);
    let out = outputs(&mut s, now);
    assert_eq!(barrier(&out), None, "{out:?}");
    assert!(
        out.iter()
            .any(|o| matches!(o, Output::Write(w) if matches!(w.action, Action::Delete { .. })))
    );
}

#[test]
fn a_failed_barrier_keeps_destructive_work_parked_while_ordinary_work_goes_on() {
    let shrinking = replicaset_json("ns", "shrink", 0, 10);
    let growing = replicaset_json("ns", "grow", 1, 10);
    let mut s = shard(true);
    let now = Instant::now();
    s.replace(
        Resource::ReplicaSets,
        vec![
            Object::ReplicaSet(shrinking.clone()),
            Object::ReplicaSet(growing),
        ],
        Some(rv(10)),
        now,
    );
    s.replace(
        Resource::Pods,
        vec![Object::Pod(pod(&shrinking, "extra", 5, true))],
        Some(rv(10)),
        now,
    );
    let out = outputs(&mut s, now);
    assert_eq!(
        out.iter()
            .filter(|o| matches!(o, Output::Write(w) if matches!(w.action, Action::Create { .. })))
            .count(),
        1,
        "the growing set creates without proof: {out:?}"
    );
    let id = barrier(&out).expect("the shrinking set asks for a barrier");
    let mut degraded = Vec::new();
    s.barrier_done(id, Err("503 Service Unavailable".into()), now);
    s.poll(&ctx(now), &mut degraded);
    assert!(
        degraded.iter().any(|o| matches!(o, Output::Degraded { key, reason: "FreshnessUnproven", .. } if key.name() == "shrink")),
        "the owner hears why its scale-down waits: {degraded:?}"
    );
    let stats = &s.stats(now)[0];
    assert_eq!(stats.live_reads_failed, 1);
    assert_eq!(stats.proven_keys, 0);
    let later = now + Duration::from_millis(2);
    let out = outputs(&mut s, later);
    assert!(
        out.iter()
            .all(|o| !matches!(o, Output::Write(w) if matches!(w.action, Action::Delete { .. }))),
        "no delete after a failed barrier: {out:?}"
    );
    let retry = now + Duration::from_secs(1);
    let out = outputs(&mut s, retry);
    assert!(
        barrier(&out).is_some(),
        "after its backoff the key asks again: {out:?}"
    );
}

#[test]
fn with_the_gate_off_destructive_work_needs_no_barrier() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let mut s = synced(false, &rs, vec![pod(&rs, "extra", 5, true)]);
    let out = outputs(&mut s, Instant::now());
    assert_eq!(barrier(&out), None);
    assert!(
        out.iter()
            .any(|o| matches!(o, Output::Write(w) if matches!(w.action, Action::Delete { .. })))
    );
}

#[test]
fn a_follower_reconciles_nothing_and_a_new_leader_waits_for_the_takeover_revision() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = shard(true);
    s.follow();
    let now = Instant::now();
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(rs)],
        Some(rv(10)),
        now,
    );
    s.replace(Resource::Pods, vec![], Some(rv(10)), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "a warm follower writes nothing"
    );
    s.lead(Some(rv(50)), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "the warm cache (rv 10) may miss the old leader's writes up to rv 50"
    );
    s.advance(Resource::ReplicaSets, rv(50), now);
    s.advance(Resource::Pods, rv(50), now);
    assert_eq!(creates(&writes(&mut s, now)), 1);
}

#[test]
fn losing_leadership_revokes_every_proof() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let victim = pod(&rs, "victim", 5, true);
    let mut s = synced(true, &rs, vec![victim]);
    let now = Instant::now();
    let ws = writes_after_barrier(&mut s, now, 10);
    let mut next = 10;
    complete(&mut s, ws, &mut next, now);
    assert_eq!(s.stats(now)[0].proven_keys, 1);
    s.follow();
    assert_eq!(s.stats(now)[0].proven_keys, 0);
}

#[test]
fn cache_lag_is_measured_from_acknowledgement_to_the_watermark_passing_the_write() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![]);
    let now = Instant::now();
    let ws = writes(&mut s, now);
    s.write_done(ws[0].id, written(20), now);
    let seen = now + Duration::from_millis(300);
    s.advance(Resource::Pods, rv(20), seen);
    let lag = &s.stats(seen)[0].cache_lag_us;
    let pods = lag.get(Resource::Pods);
    assert_eq!(pods.len(), 1);
    assert!(
        pods.max() >= 299_000 && pods.max() <= 301_000,
        "{}",
        pods.max()
    );
}

#[test]
fn how_long_a_key_stayed_parked_is_recorded_when_it_wakes() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![]);
    let now = Instant::now();
    let ws = writes(&mut s, now);
    let mut next = 19;
    complete(&mut s, ws, &mut next, now);
    touch(&mut s, "web", 1, 30, now);
    assert!(writes(&mut s, now).is_empty());
    let woke = now + Duration::from_millis(50);
    s.advance(Resource::Pods, rv(30), woke);
    writes(&mut s, woke);
    let parked = &s.stats(woke)[0].parked_duration_us;
    assert_eq!(parked.len(), 1);
    assert!(parked.max() >= 49_000, "{}", parked.max());
}

#[test]
fn a_new_spec_stops_the_rest_of_a_plan_and_the_key_decides_again() {
    let rs = replicaset_json("ns", "web", 7, 10);
    let mut s = synced(true, &rs, vec![]);
    let now = Instant::now();
    let ws = writes(&mut s, now);
    assert_eq!(creates(&ws), 1, "slow start");
    let mut scaled_down = replicaset_json("ns", "web", 1, 11);
    scaled_down.generation = rs.generation + 1;
    s.apply(Change::Applied(Object::ReplicaSet(scaled_down)), now);
    s.advance(Resource::ReplicaSets, rv(11), now);
    s.write_done(ws[0].id, written(12), now);
    let next = writes(&mut s, now);
    assert_eq!(
        creates(&next),
        0,
        "the plan for 7 must not go on creating for a set scaled to 1: {next:?}"
    );
}

#[test]
fn a_create_whose_outcome_is_unknown_waits_for_a_barrier_before_creating_again() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![]);
    let now = Instant::now();
    let ws = writes(&mut s, now);
    assert_eq!(creates(&ws), 1);
    let lost = WriteResult::Failed(WriteError {
        kind: WriteErrorKind::Server,
        message: "504 Timeout: may still be processing the request".into(),
    });
    s.write_done(ws[0].id, lost, now);
    let retry = now + Duration::from_secs(2);
    let out = outputs(&mut s, retry);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "no second create while the first may have landed: {out:?}"
    );
    let id = barrier(&out).expect("a barrier is asked for");
    s.barrier_done(id, Ok(rv(30)), retry);
    assert!(
        writes(&mut s, retry).is_empty(),
        "the cache has not reached rv 30"
    );
    let landed = pod(&rs, "web-landed", 25, false);
    s.apply(Change::Applied(Object::Pod(landed)), retry);
    s.advance(Resource::Pods, rv(30), retry);
    s.advance(Resource::ReplicaSets, rv(30), retry);
    let after = writes(&mut s, retry);
    assert_eq!(creates(&after), 0, "the create had landed: {after:?}");
    assert_eq!(s.stats(retry)[0].unknown_outcome_barriers, 1);
}

#[test]
fn with_the_gate_off_an_unknown_outcome_creates_again() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(false, &rs, vec![]);
    let now = Instant::now();
    let ws = writes(&mut s, now);
    let lost = WriteResult::Failed(WriteError {
        kind: WriteErrorKind::Transport,
        message: "connection reset".into(),
    });
    s.write_done(ws[0].id, lost, now);
    let again = writes(&mut s, now + Duration::from_secs(2));
    assert_eq!(creates(&again), 1, "the naive controller doubles the Pod");
}

mod node_lifecycle {
    use super::*;
    use crate::controllers::nodelifecycle::NodeLifecycleController;
    use crate::views::nodes::{LeaseView, NodeView};

    fn node_shard(consistency: bool) -> Shard {
        Shard::new(
            ShardId(0),
            vec![ControllerSpec {
                reconciler: Box::new(NodeLifecycleController {
                    grace_period: Duration::from_secs(40),
                    ..NodeLifecycleController::default()
                }),
                mode: crate::ConsistencyMode::from_gate(consistency),
            }],
        )
    }

    fn node() -> Object {
        let value = serde_json::json!({
            "metadata": {"name": "n1", "uid": "uid-n1", "resourceVersion": "3"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        });
        Object::Node(NodeView::from_value(value).expect("node"))
    }

    fn lease(rv: u64) -> Object {
        let json = format!(
            r#"{{"metadata":{{"name":"n1","namespace":"kube-node-lease","uid":"l1","resourceVersion":"{rv}"}},"spec":{{"holderIdentity":"n1"}}}}"#
        );
        Object::Lease(LeaseView::from_json(json.as_bytes()).expect("lease"))
    }

    fn listed(consistency: bool, t0: Instant) -> Shard {
        let mut s = node_shard(consistency);
        s.replace(Resource::Nodes, vec![node()], Some(rv(10)), t0);
        s.replace(Resource::Leases, vec![lease(9)], Some(rv(10)), t0);
        s
    }

    /// The silent-looking Node asks for a barrier at `at`, answered with rv 50, which both
    /// watches reach at once.
    fn proven_at(s: &mut Shard, at: Instant) {
        let id = barrier(&outputs(s, at)).expect("barrier");
        s.barrier_done(id, Ok(rv(50)), at);
        s.advance(Resource::Nodes, rv(50), at);
        s.advance(Resource::Leases, rv(50), at);
    }

    #[test]
    fn under_scale_out_only_the_manager_wide_leader_looks_at_nodes() {
        let t0 = Instant::now();
        let mut s = listed(true, t0);
        s.lead_cluster(false, t0);
        let late = t0 + Duration::from_secs(41);
        assert!(
            outputs(&mut s, late).is_empty(),
            "a replica that does not lead leaves the silent Node alone"
        );
        s.lead_cluster(true, late);
        assert!(
            barrier(&outputs(&mut s, late)).is_some(),
            "the leader looks at it at once (it asks for proof first)"
        );
    }

    #[test]
    fn a_lease_watch_lagging_past_the_grace_period_marks_nothing_once_the_barrier_is_passed() {
        let t0 = Instant::now();
        let mut s = listed(true, t0);
        assert!(writes(&mut s, t0).is_empty(), "just seen");
        let late = t0 + Duration::from_secs(41);
        let out = outputs(&mut s, late);
        assert!(
            out.iter().all(|o| !matches!(o, Output::Write(_))),
            "{out:?}"
        );
        let id = barrier(&out).expect("the silent-looking Lease needs a barrier");
        s.barrier_done(id, Ok(rv(50)), late);
        s.advance(Resource::Nodes, rv(50), late);
        assert!(
            writes(&mut s, late).is_empty(),
            "the Lease watch has not reached rv 50"
        );
        s.apply(Change::Applied(lease(45)), late);
        s.advance(Resource::Leases, rv(50), late);
        assert!(
            writes(&mut s, late).is_empty(),
            "the renewals the lagging watch held back show the node alive"
        );
    }

    #[test]
    fn with_the_gate_off_the_lagging_lease_watch_marks_a_live_node() {
        let t0 = Instant::now();
        let mut s = listed(false, t0);
        let ws = writes(&mut s, t0 + Duration::from_secs(41));
        assert!(
            ws.iter()
                .any(|w| matches!(w.action, Action::UpdateStatus { .. })),
            "{ws:?}"
        );
    }

    #[test]
    fn every_marking_decision_needs_its_own_barrier() {
        let t0 = Instant::now();
        let mut s = listed(true, t0);
        let late = t0 + Duration::from_secs(41);
        proven_at(&mut s, late);
        let ws = writes(&mut s, late);
        assert!(!ws.is_empty(), "still silent after the barrier: marked");
        assert_eq!(s.stats(late)[0].proven_keys, 0, "the proof was used up");
    }

    #[test]
    fn a_proof_the_key_did_not_need_vouches_for_nothing_later() {
        let t0 = Instant::now();
        let mut s = listed(true, t0);
        let late = t0 + Duration::from_secs(41);
        let id = barrier(&outputs(&mut s, late)).expect("barrier");
        s.barrier_done(id, Ok(rv(50)), late);
        s.advance(Resource::Nodes, rv(50), late);
        s.apply(Change::Applied(lease(45)), late);
        s.advance(Resource::Leases, rv(50), late);
        assert!(writes(&mut s, late).is_empty(), "renewed: nothing to mark");
        let much_later = late + Duration::from_secs(41);
        let out = outputs(&mut s, much_later);
        assert!(
            out.iter().all(|o| !matches!(o, Output::Write(_))),
            "the proof of 41 s ago is gone with the decision it was for: {out:?}"
        );
        assert!(barrier(&out).is_some(), "a new barrier first: {out:?}");
    }

    #[test]
    fn a_proof_that_waited_past_a_second_for_the_watch_is_followed_by_a_live_read() {
        let t0 = Instant::now();
        let mut s = listed(true, t0);
        let late = t0 + Duration::from_secs(41);
        let id = barrier(&outputs(&mut s, late)).expect("barrier");
        s.barrier_done(id, Ok(rv(50)), late);
        let caught_up = late + Duration::from_secs(3);
        s.advance(Resource::Nodes, rv(50), caught_up);
        s.advance(Resource::Leases, rv(50), caught_up);
        let out = outputs(&mut s, caught_up);
        assert!(
            out.iter().all(|o| !matches!(o, Output::Write(_))),
            "{out:?}"
        );
        assert!(
            out.iter().any(|o| matches!(o, Output::LiveRead { .. })),
            "the Lease is read live before a 3 s old proof is trusted: {out:?}"
        );
    }

    #[test]
    fn a_marking_whose_first_step_took_past_a_second_sends_no_taint_and_decides_again() {
        let t0 = Instant::now();
        let mut s = listed(true, t0);
        let late = t0 + Duration::from_secs(41);
        proven_at(&mut s, late);
        let ws = writes(&mut s, late);
        assert!(
            matches!(ws.as_slice(), [w] if matches!(w.action, Action::UpdateStatus { .. })),
            "{ws:?}"
        );
        let answered = late + Duration::from_secs(2);
        s.write_done(ws[0].id, written(60), answered);
        let out = outputs(&mut s, answered);
        assert!(
            out.iter().all(
                |o| !matches!(o, Output::Write(w) if matches!(w.action, Action::Patch { .. }))
            ),
            "the taint was decided 2 s ago: not sent on that decision: {out:?}"
        );
    }
}

#[test]
fn a_watermark_quiet_for_too_long_needs_a_new_barrier_even_for_a_proven_key() {
    let rs = replicaset_json("ns", "web", 0, 10);
    let first = pod(&rs, "first", 5, true);
    let mut s = synced(true, &rs, vec![first.clone()]);
    let now = Instant::now();
    let ws = writes_after_barrier(&mut s, now, 10);
    let mut next = 10;
    complete(&mut s, ws, &mut next, now);
    s.apply(Change::Deleted(Object::Pod(first)), now);
    touch(&mut s, "web", 0, 30, now);
    s.advance(Resource::Pods, rv(30), now);
    let ws = writes(&mut s, now);
    let mut next = 40;
    complete(&mut s, ws, &mut next, now);
    assert_eq!(s.stats(now)[0].proven_keys, 1);
    touch(&mut s, "web", 0, 50, now);
    s.advance(Resource::Pods, rv(50), now);
    let quiet = now + QUIET_WATERMARK + Duration::from_secs(1);
    s.apply(
        Change::Applied(Object::Pod(pod(&rs, "late", 31, true))),
        quiet,
    );
    let out = outputs(&mut s, quiet);
    assert!(
        out.iter()
            .all(|o| !matches!(o, Output::Write(w) if matches!(w.action, Action::Delete { .. }))),
        "{out:?}"
    );
    assert!(
        barrier(&out).is_some(),
        "no watermark moved for {QUIET_WATERMARK:?}: the cache proves nothing about now: {out:?}"
    );
}

/// The ReplicaSet controller, except that it panics on the ReplicaSet named `bomb`.
#[derive(Debug)]
struct PanicsOnBomb;

impl crate::reconciler::Reconciler for PanicsOnBomb {
    fn name(&self) -> &'static str {
        "replicaset"
    }
    fn gate_name(&self) -> &'static str {
        ReplicaSetController.gate_name()
    }
    fn primary(&self) -> Resource {
        ReplicaSetController.primary()
    }
    fn reads(&self) -> &[Resource] {
        ReplicaSetController.reads()
    }
    fn keys_for(&self, object: &Object, keys: &mut smallvec::SmallVec<[ObjectKey; 2]>) {
        ReplicaSetController.keys_for(object, keys)
    }
    fn reconcile(
        &self,
        key: &ObjectKey,
        cache: &crate::cache::ShardCache,
        ctx: &Context,
    ) -> Result<crate::action::Plan, crate::reconciler::ReconcileError> {
        assert_ne!(key.name(), "bomb", "a reconciler bug");
        ReplicaSetController.reconcile(key, cache, ctx)
    }
}

#[test]
fn a_reconcile_that_panics_fails_its_key_only_and_retries_with_backoff() {
    let mut s = Shard::new(
        ShardId(0),
        vec![ControllerSpec {
            reconciler: Box::new(PanicsOnBomb),
            mode: crate::ConsistencyMode::Tidemark,
        }],
    );
    let now = Instant::now();
    s.replace(
        Resource::ReplicaSets,
        vec![
            Object::ReplicaSet(replicaset_json("ns", "bomb", 1, 10)),
            Object::ReplicaSet(replicaset_json("ns", "web", 1, 10)),
        ],
        Some(rv(10)),
        now,
    );
    s.replace(Resource::Pods, vec![], Some(rv(10)), now);
    let ws = writes(&mut s, now);
    let retried = writes(&mut s, now + Duration::from_secs(60));
    assert_eq!(creates(&ws), 1, "web still gets its Pod: {ws:?}");
    assert_eq!(ws[0].owner.name(), "web");
    assert!(retried.is_empty(), "bomb panics again: {retried:?}");
    let stats = &s.stats(now)[0];
    assert_eq!(
        stats.reconcile_panics, 2,
        "the key was retried after its backoff"
    );
    assert_eq!(stats.reconcile_errors, 2);
}
