//! The engine's scale-out ranges and the simulated API server's KEP-5866 filter were written
//! apart; here they must agree: the selector the engine writes for a range selects, on the
//! server, exactly the namespaces the engine puts in that range, and the ranges cover the ring;
//! the oracle's `range-single-writer` cut (written apart too) puts each namespace in the same
//! range as the engine.

use loadgen::store::shard_selector::ShardSelector;
use serde_json::json;
use tidemark_engine::ranges::{RANGES, RangeId, shard_selector};

#[test]
fn every_namespace_is_selected_by_exactly_the_range_the_engine_gives_it() {
    let selectors: Vec<ShardSelector> = (0..RANGES)
        .map(|i| {
            let text = shard_selector(&[RangeId(i)]).expect("one range");
            ShardSelector::parse(&text).expect("the server reads the engine's selector")
        })
        .collect();
    for n in 0..2_000 {
        let namespace = format!("team-{n}");
        let pod = json!({"metadata": {"namespace": namespace, "name": "p", "uid": "u"}});
        let selecting: Vec<u16> = (0..RANGES)
            .filter(|i| selectors[usize::from(*i)].matches(&pod))
            .collect();
        assert_eq!(
            selecting,
            vec![RangeId::of_namespace(&namespace).0],
            "{namespace}"
        );
        assert_eq!(
            loadgen::oracle::range_writers::range_of(&namespace),
            u64::from(RangeId::of_namespace(&namespace).0),
            "the oracle's cut, {namespace}"
        );
    }
    assert_eq!(u64::from(RANGES), loadgen::oracle::range_writers::RANGES);
}

#[test]
fn the_selector_of_every_range_together_selects_everything() {
    let all: Vec<RangeId> = (0..RANGES).map(RangeId).collect();
    let text = shard_selector(&all).expect("all ranges");
    assert_eq!(
        text,
        "shardRange(object.metadata.namespace, '0x0000000000000000', '0x10000000000000000')"
    );
    let selector = ShardSelector::parse(&text).expect("parses");
    for namespace in ["", "default", "kube-system", "zzz"] {
        assert!(selector.matches(&json!({"metadata": {"namespace": namespace}})));
    }
}

#[test]
fn a_selector_of_scattered_ranges_selects_exactly_their_namespaces() {
    let held: Vec<RangeId> = [
        30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 51, 53, 54, 55, 56, 57,
    ]
    .into_iter()
    .map(RangeId)
    .collect();
    let text = shard_selector(&held).expect("ranges");
    let selector = ShardSelector::parse(&text).expect("the server reads a selector with ||");
    for n in 0..2_000 {
        let namespace = format!("stress-{n}");
        let pod = json!({"metadata": {"namespace": namespace, "name": "p", "uid": "u"}});
        assert_eq!(
            selector.matches(&pod),
            held.contains(&RangeId::of_namespace(&namespace)),
            "{namespace} in {text}"
        );
    }
}
