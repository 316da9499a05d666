//! A shard adopting orphans: the owner read live first, an owner deleted meanwhile adopting
//! nothing, the adoption's own write awaited like any other, and an orphan whose own key hashes
//! to another shard reaching the shard of the owner that matches it.

use super::*;
use crate::live_read::LiveReadId;
use crate::object::test_support::orphan_pod;
use crate::placements::Placements;
use crate::router::Route;

fn live_read(out: &[Output]) -> Option<(LiveReadId, Vec<(Resource, ObjectKey)>)> {
    out.iter().find_map(|o| match o {
        Output::LiveRead { id, objects, .. } => Some((*id, objects.clone())),
        _ => None,
    })
}

fn adoptions(ws: &[WriteRequest]) -> Vec<String> {
    ws.iter()
        .filter_map(|w| match &w.action {
            Action::StrategicPatch { key, patch, .. }
                if patch["metadata"]["ownerReferences"][0]["controller"] == true =>
            {
                Some(key.name().to_string())
            }
            _ => None,
        })
        .collect()
}

fn loose() -> PodView {
    let mut pod = orphan_pod("ns", "loose", &[("app", "web")]);
    pod.resource_version = ResourceVersion::new(5);
    pod
}

#[test]
fn an_adoption_waits_for_a_live_read_of_its_owner() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![loose()]);
    let now = Instant::now();
    let out = outputs(&mut s, now);
    assert!(
        out.iter().all(|o| !matches!(o, Output::Write(_))),
        "nothing is written before the owner is read: {out:?}"
    );
    let (id, objects) = live_read(&out).expect("the owner is read live");
    assert_eq!(objects, [(Resource::ReplicaSets, rs.key.clone())]);
    s.live_read_done(id, Ok(vec![Some(rv(10))]), now);
    let ws = writes(&mut s, now);
    assert_eq!(adoptions(&ws), ["loose"]);
    assert_eq!(creates(&ws), 0, "the adopted Pod is the one replica");
}

#[test]
fn an_owner_deleted_since_the_cache_saw_it_adopts_nothing() {
    let rs = replicaset_json("ns", "web", 1, 10);
    let mut s = synced(true, &rs, vec![loose()]);
    let now = Instant::now();
    let (id, _) = live_read(&outputs(&mut s, now)).expect("the owner is read live");
    s.live_read_done(id, Ok(vec![Some(rv(12))]), now);
    assert!(
        writes(&mut s, now).is_empty(),
        "the server has a newer owner: wait for the cache to have it"
    );
    let mut going = replicaset_json("ns", "web", 1, 12);
    going.terminating = true;
    s.apply(Change::Applied(Object::ReplicaSet(going)), now);
    s.advance(Resource::ReplicaSets, rv(12), now);
    let out = outputs(&mut s, now);
    assert!(live_read(&out).is_none());
    let ws: Vec<_> = out
        .into_iter()
        .filter_map(|o| match o {
            Output::Write(w) => Some(w),
            _ => None,
        })
        .collect();
    assert!(
        adoptions(&ws).is_empty(),
        "a set being deleted adopts nothing"
    );
}

#[test]
fn while_an_adoption_is_unseen_the_set_neither_adopts_nor_creates_again() {
    let rs = replicaset_json("ns", "web", 2, 10);
    let mut s = synced(true, &rs, vec![loose()]);
    let now = Instant::now();
    let (id, _) = live_read(&outputs(&mut s, now)).expect("the owner is read live");
    s.live_read_done(id, Ok(vec![Some(rv(10))]), now);
    let ws = writes(&mut s, now);
    assert_eq!((adoptions(&ws).len(), creates(&ws)), (1, 0), "adopt first");
    let mut next = 19;
    complete(&mut s, ws, &mut next, now);
    touch(&mut s, "web", 2, 30, now);
    assert!(
        outputs(&mut s, now)
            .iter()
            .all(|o| !matches!(o, Output::Write(_) | Output::LiveRead { .. })),
        "the Pod cache has not seen the adoption (20) nor the create (21): the key parks"
    );
}

#[test]
fn an_orphan_in_another_shard_reaches_its_owner() {
    let router = ShardRouter::new(4);
    let orphan = loose();
    let own_shard = router.shard_of(&orphan.key);
    let rs = (0..100)
        .map(|i| replicaset_json("ns", &format!("web-{i}"), 1, 10))
        .find(|rs| router.shard_of(&rs.key) != own_shard)
        .expect("some name hashes to another shard");
    let owner_shard = router.shard_of(&rs.key);
    let mut orphan = orphan;
    orphan.labels = crate::object::test_support::labels(&[("app", rs.key.name())]);

    let mut placements = Placements::new(&router);
    let arrival = placements.place(&router, &Change::Applied(Object::Pod(orphan.clone())));
    assert_eq!(arrival.route, Route::Every);
    let mut per_shard: Vec<Vec<Object>> = vec![Vec::new(); 4];
    arrival
        .route
        .deliver(Object::Pod(orphan.clone()), &mut per_shard);

    let mut s = Shard::new(
        owner_shard,
        vec![ControllerSpec {
            reconciler: Box::new(ReplicaSetController),
            mode: crate::ConsistencyMode::Tidemark,
        }],
    )
    .with_router(router.clone());
    let now = Instant::now();
    s.replace(
        Resource::ReplicaSets,
        vec![Object::ReplicaSet(rs.clone())],
        Some(rv(10)),
        now,
    );
    s.replace(
        Resource::Pods,
        std::mem::take(&mut per_shard[owner_shard.0]),
        Some(rv(10)),
        now,
    );
    let (id, _) = live_read(&outputs(&mut s, now)).expect("the owner's shard has the orphan");
    s.live_read_done(id, Ok(vec![Some(rv(10))]), now);
    assert_eq!(adoptions(&writes(&mut s, now)), ["loose"]);

    let adopted = pod(&rs, "loose", 13, true);
    let after = placements.place(&router, &Change::Applied(Object::Pod(adopted)));
    assert_eq!(after.route, Route::Shard(owner_shard));
    assert_eq!(after.left.len(), 3, "the other shards drop their copies");
}
