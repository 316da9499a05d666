//! Fuzzing the projections' decoders: arbitrary bytes, arbitrary JSON, and mutated real objects
//! never panic; a Pod reads the same through the fast decode and the checked one; and a decoded
//! object is either well formed or says which field is not.

mod fuzz_support;

use fuzz_support::{corpus, json, mutate, mutations, object_with_identity, run};
use proptest::prelude::*;
use serde_json::Value;
use tidemark_engine::{
    DaemonSetView, JobView, LeaseView, NodeView, PodView, ReplicaSetView, StatefulSetView,
};

/// Every decoder on `bytes`; returns how many decoded and how many of those are malformed.
fn decode_all(bytes: &[u8]) -> (usize, usize) {
    let mut decoded = 0;
    let mut malformed = 0;
    let mut count = |m: Option<bool>| {
        if let Some(m) = m {
            decoded += 1;
            malformed += usize::from(m);
        }
    };
    count(
        PodView::decode(bytes)
            .ok()
            .map(|(p, _)| p.malformed.is_some()),
    );
    count(
        ReplicaSetView::from_json(bytes)
            .ok()
            .map(|v| v.malformed.is_some()),
    );
    count(
        StatefulSetView::from_json(bytes)
            .ok()
            .map(|v| v.malformed.is_some()),
    );
    count(
        DaemonSetView::from_json(bytes)
            .ok()
            .map(|v| v.malformed.is_some()),
    );
    count(
        JobView::from_json(bytes)
            .ok()
            .map(|v| v.malformed.is_some()),
    );
    count(
        NodeView::from_json(bytes)
            .ok()
            .map(|v| v.malformed.is_some()),
    );
    count(
        LeaseView::from_json(bytes)
            .ok()
            .map(|v| v.malformed.is_some()),
    );
    (decoded, malformed)
}

/// The fast Pod decode and the checked read agree on every input.
fn pod_paths_agree(value: &Value) -> Result<(), TestCaseError> {
    let bytes = serde_json::to_vec(value).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let fast = PodView::decode(&bytes).map(|(p, _)| p);
    let checked = PodView::from_value(value);
    prop_assert_eq!(fast, checked, "{}", value);
    Ok(())
}

#[test]
fn decoders_survive_arbitrary_bytes() {
    run(
        "decoders/bytes",
        2000,
        prop::collection::vec(any::<u8>(), 0..256),
        |bytes| {
            decode_all(&bytes);
            Ok(())
        },
    );
}

#[test]
fn decoders_survive_arbitrary_json() {
    run("decoders/json", 2000, json(), |value| {
        let bytes = serde_json::to_vec(&value).map_err(|e| TestCaseError::fail(e.to_string()))?;
        decode_all(&bytes);
        Ok(())
    });
    run(
        "decoders/identified-json",
        2000,
        object_with_identity(),
        |value| {
            let bytes =
                serde_json::to_vec(&value).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (decoded, _) = decode_all(&bytes);
            prop_assert!(
                decoded >= 2,
                "an identified object decodes as a Node and a Lease at least"
            );
            pod_paths_agree(&value)
        },
    );
}

#[test]
fn decoders_survive_mutated_real_objects_and_pod_paths_agree() {
    let corpus = corpus();
    let n = corpus.len();
    run(
        "decoders/mutated-corpus",
        3000,
        (0..n, mutations()),
        |(index, edits)| {
            let mut value = corpus[index].1.clone();
            mutate(&mut value, &edits);
            let bytes =
                serde_json::to_vec(&value).map_err(|e| TestCaseError::fail(e.to_string()))?;
            decode_all(&bytes);
            pod_paths_agree(&value)
        },
    );
}

#[test]
fn every_well_formed_corpus_object_decodes_clean_and_every_hostile_one_is_caught() {
    for (name, value) in corpus() {
        let bytes = serde_json::to_vec(&value).expect("json");
        let kind = name.split(['-', '.']).next().unwrap_or("");
        let malformed = match kind {
            "pod" => PodView::decode(&bytes).map(|(p, _)| p.malformed.is_some()),
            "replicaset" => ReplicaSetView::from_json(&bytes).map(|v| v.malformed.is_some()),
            "statefulset" => StatefulSetView::from_json(&bytes).map(|v| v.malformed.is_some()),
            "daemonset" => DaemonSetView::from_json(&bytes).map(|v| v.malformed.is_some()),
            "job" => JobView::from_json(&bytes).map(|v| v.malformed.is_some()),
            "node" => NodeView::from_json(&bytes).map(|v| v.malformed.is_some()),
            "lease" => LeaseView::from_json(&bytes).map(|v| v.malformed.is_some()),
            other => panic!("{name}: unknown kind {other}"),
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let hostile = value["metadata"]["name"] != Value::Null && corpus_is_hostile(&name);
        assert_eq!(malformed, hostile, "{name}");
    }
}

fn corpus_is_hostile(name: &str) -> bool {
    fuzz_support::corpus_dir()
        .join("hostile")
        .join(name)
        .exists()
}

#[test]
fn a_large_float_in_a_malformed_field_reads_the_same_on_both_pod_paths() {
    // Found by the mutated corpus: without correctly rounded float parsing the fast path read
    // 1.1372628102152425e19 back as ...423e19 and named another value in its error.
    let pod = serde_json::json!({"metadata": {"name": "db", "namespace": "default",
        "uid": "u", "resourceVersion": "39",
        "ownerReferences": [[1.1372628102152425e19_f64]]}});
    pod_paths_agree(&pod).expect("both paths agree");
}
