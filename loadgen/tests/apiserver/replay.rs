//! Property: a watch from any retained revision replays exactly the history after it, so a
//! snapshot at that revision plus the replayed events is the current state.

use proptest::prelude::*;
use std::collections::BTreeMap;
use tidemark_loadgen::Resource;
use tidemark_loadgen::store::{EventType, LogRead, Store};

fn pod(name: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": {"v": "0"}},
        "spec": {"containers": [{"name": "c", "image": "pause"}]}})
}

/// name -> resourceVersion
fn state_of(items: impl IntoIterator<Item = (String, u64)>) -> BTreeMap<String, u64> {
    items.into_iter().collect()
}

fn name_of(v: &serde_json::Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn a_watch_from_any_revision_replays_exactly_the_history_after_it(
        ops in prop::collection::vec((0u8..3, 0usize..6), 1..60),
        pick in any::<prop::sample::Index>(),
    ) {
        let store = Store::new(100_000, None);
        let mut revisions = vec![store.current_revision()];
        for (i, (op, n)) in ops.iter().enumerate() {
            let name = format!("p{n}");
            let present = store.get(Resource::Pods, "ns", &name).is_some();
            let _ = match (op, present) {
                (0, false) | (1 | 2, false) => store.create(Resource::Pods, "ns", pod(&name), None).map(|_| ()),
                (1, true) => store
                    .update_with(Resource::Pods, "ns", &name, |v| v["metadata"]["labels"]["v"] = i.to_string().into(), None)
                    .map(|_| ()),
                _ => store.delete(Resource::Pods, "ns", &name, &Default::default(), None).map(|_| ()),
            };
            revisions.push(store.current_revision());
        }
        let from = revisions[pick.index(revisions.len())];
        let (snapshot, _) = store.list_page(Resource::Pods, None, from, None, usize::MAX, &|_| true).expect("retained");
        let mut replayed = state_of(snapshot.iter().map(|s| (name_of(&s.value), s.rv)));
        let mut position = from;
        let mut last_rev = from;
        loop {
            let LogRead::Events(events, to) = store.events_after(Resource::Pods, position) else {
                panic!("compacted inside the window");
            };
            for e in &events {
                prop_assert!(e.rev > last_rev, "strictly in revision order, all after {from}");
                last_rev = e.rev;
                match e.kind {
                    EventType::Deleted => { replayed.remove(&e.key.1); }
                    _ => { replayed.insert(e.key.1.clone(), e.object.rv); }
                }
            }
            if to >= store.current_revision() && events.is_empty() || to == position {
                break;
            }
            position = to;
        }
        let (now, _) = store.all(Resource::Pods, None);
        prop_assert_eq!(replayed, state_of(now.iter().map(|s| (name_of(&s.value), s.rv))));
    }
}
