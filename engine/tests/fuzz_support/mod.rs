//! Structure-aware fuzzing on stable Rust: proptest strategies for JSON biased towards the
//! fields controllers read, mutations of the real objects in `testdata/fuzz`, a fixed budget of
//! cases (`TIDEMARK_FUZZ_CASES` raises it for long runs by hand) drawn from a fixed seed, so CI
//! runs the same cases every time (`TIDEMARK_FUZZ_SEED=N` draws others, `random` a new set each
//! run, for exploring by hand), and a line per target saying the seed, how many cases ran and
//! how long they took.
#![allow(dead_code)]

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Instant;

/// The cases a target runs: `TIDEMARK_FUZZ_CASES` if set, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("TIDEMARK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The seed the cases are drawn from: `TIDEMARK_FUZZ_SEED` (a number, or `random`), else 1.
pub fn seed() -> u64 {
    match std::env::var("TIDEMARK_FUZZ_SEED").ok().as_deref() {
        Some("random") => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64),
        Some(n) => n.parse().unwrap_or(1),
        None => 1,
    }
}

/// Runs `test` over `cases` inputs of `strategy`; a failure (or a panic) fails the test with
/// the shrunk input, which then belongs in `testdata/fuzz/hostile` as a regression case.
pub fn run<S: Strategy>(
    target: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let cases = cases(default_cases);
    let seed = seed();
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let started = Instant::now();
    let result = runner.run(&strategy, test);
    eprintln!(
        "fuzz {target}: {cases} cases from seed {seed} in {} ms",
        started.elapsed().as_millis()
    );
    if let Err(e) = result {
        panic!("fuzz {target} found a failure: {e}");
    }
}

/// The directory of the corpus.
pub fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/fuzz")
}

/// Every corpus object (well-formed ones, then the hostile ones), by file name.
pub fn corpus() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for dir in [corpus_dir(), corpus_dir().join("hostile")] {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for path in files {
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((name, value));
        }
    }
    out
}

/// Field names the controllers read, so random objects reach their code.
pub const KEYS: &[&str] = &[
    "metadata",
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "kind",
    "finalizers",
    "deletionTimestamp",
    "creationTimestamp",
    "spec",
    "status",
    "replicas",
    "selector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "template",
    "conditions",
    "type",
    "phase",
    "containerStatuses",
    "restartCount",
    "nodeName",
    "taints",
    "effect",
    "value",
    "parallelism",
    "completions",
    "completionMode",
    "completedIndexes",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "failedIndexes",
    "successPolicy",
    "succeededIndexes",
    "succeededCount",
    "podReplacementPolicy",
    "terminating",
    "suspend",
    "podManagementPolicy",
    "ordinals",
    "start",
    "updateStrategy",
    "rollingUpdate",
    "maxUnavailable",
    "partition",
    "volumeClaimTemplates",
    "tolerations",
    "nodeSelector",
    "holderIdentity",
    "renewTime",
    "uncountedTerminatedPods",
    "succeeded",
    "failed",
    "minReadySeconds",
    "volumes",
    "containers",
    "affinity",
    "startTime",
    "observedGeneration",
];

/// Values with meaning somewhere in an object.
pub const WORDS: &[&str] = &[
    "",
    "True",
    "False",
    "Unknown",
    "Ready",
    "Running",
    "Pending",
    "Succeeded",
    "Failed",
    "Complete",
    "Indexed",
    "NonIndexed",
    "Parallel",
    "OrderedReady",
    "OnDelete",
    "RollingUpdate",
    "NoSchedule",
    "NoExecute",
    "Exists",
    "Equal",
    "In",
    "NotIn",
    "DoesNotExist",
    "Gt",
    "Lt",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "node.kubernetes.io/unreachable",
    "2026-01-01T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "yesterday",
    "25%",
    "101%",
    "5",
    "-1",
    "007",
    "+1",
    "0-4294967295",
    "1,3-5",
    "3-1",
    "web",
    "rs-web",
    "sts-db",
    "ds-agent",
    "job-pi",
    "node-0",
    "db-0",
    "db-+1",
    "db-2147483648",
    "batch.kubernetes.io/job-tracking",
    "batch.kubernetes.io/job-completion-index",
    "metadata.name",
    "é",
    "\u{0}",
];

/// Numbers at the edges of the ranges fields have.
pub const NUMBERS: &[i64] = &[
    0,
    1,
    2,
    3,
    -1,
    -2,
    500,
    501,
    i32::MAX as i64,
    i32::MAX as i64 + 1,
    i32::MIN as i64,
    i64::MAX,
    i64::MIN,
    4_294_967_295,
];

/// A JSON leaf: nulls, booleans, edge and random numbers, floats, meaningful and random strings.
pub fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        prop::sample::select(NUMBERS).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::sample::select(&[3.0f64, 0.5, -0.0, 1e300][..]).prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        "[a-z0-9.:/%+-]{0,10}".prop_map(Value::from),
    ]
}

/// An object key: mostly one the controllers read.
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(KEYS).prop_map(str::to_string),
        1 => "[a-zA-Z]{1,6}",
    ]
}

/// Arbitrary JSON, a few levels deep.
pub fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// An object with an identity (so decoders get past it) and arbitrary everything else.
pub fn object_with_identity() -> impl Strategy<Value = Value> {
    (json(), json(), json(), json(), prop::sample::select(WORDS)).prop_map(
        |(meta, spec, status, extra, name)| {
            let mut metadata = match meta {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            metadata.insert("name".into(), Value::from(format!("x{name}")));
            metadata.insert("uid".into(), Value::from("u"));
            metadata.insert("namespace".into(), Value::from("default"));
            metadata.insert("resourceVersion".into(), Value::from("7"));
            let mut root = Map::new();
            root.insert("metadata".into(), Value::Object(metadata));
            root.insert("spec".into(), spec);
            root.insert("status".into(), status);
            root.insert("extra".into(), extra);
            Value::Object(root)
        },
    )
}

/// One edit of an object: at the `at`-th path (modulo how many there are), do `what`.
#[derive(Clone, Debug)]
pub struct Mutation {
    /// Which path.
    pub at: usize,
    /// What to do there.
    pub what: Edit,
}

/// An edit.
#[derive(Clone, Debug)]
pub enum Edit {
    /// Replace the value.
    Replace(Value),
    /// Remove it.
    Remove,
    /// The same number as a string, a float, negated or far out of range.
    Confuse(u8),
}

/// A few mutations.
pub fn mutations() -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(
        (
            any::<usize>(),
            prop_oneof![
                3 => json().prop_map(Edit::Replace),
                1 => Just(Edit::Remove),
                2 => (0u8..6).prop_map(Edit::Confuse),
            ],
        )
            .prop_map(|(at, what)| Mutation { at, what }),
        0..4,
    )
}

fn paths(v: &Value, here: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                here.push(k.clone());
                out.push(here.clone());
                paths(child, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                here.push(i.to_string());
                out.push(here.clone());
                paths(child, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn slot<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Value> {
    let mut at = v;
    for part in path {
        at = match at {
            Value::Object(m) => m.get_mut(part)?,
            Value::Array(a) => a.get_mut(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

fn confuse(v: &Value, how: u8) -> Value {
    match (v, how) {
        (Value::Number(n), 0) => Value::from(n.to_string()),
        (Value::Number(n), 1) => Value::from(n.as_f64().unwrap_or(0.0) + 0.5),
        (Value::Number(n), 2) => {
            Value::from(n.as_i64().unwrap_or(1).saturating_neg().saturating_sub(1))
        }
        (Value::Number(_), 3) => Value::from(u64::MAX),
        (Value::String(s), 0) => Value::from(s.len()),
        (Value::String(s), 1) => Value::from(format!("{s}{s}")),
        (Value::Bool(b), _) => Value::from(b.to_string()),
        (Value::Object(_), 0) | (Value::Array(_), 0) => Value::from("not-an-object"),
        (Value::Object(m), 1) => Value::Array(m.values().cloned().collect()),
        (Value::Array(a), 1) => a.first().cloned().unwrap_or(Value::Null),
        (_, 4) => Value::Null,
        (other, _) => other.clone(),
    }
}

/// Applies `mutations` to `value`.
pub fn mutate(value: &mut Value, mutations: &[Mutation]) {
    for m in mutations {
        let mut all = Vec::new();
        paths(value, &mut Vec::new(), &mut all);
        if all.is_empty() {
            return;
        }
        let path = all[m.at % all.len()].clone();
        match &m.what {
            Edit::Replace(new) => {
                if let Some(s) = slot(value, &path) {
                    *s = new.clone();
                }
            }
            Edit::Remove => {
                let (last, parent) = match path.split_last() {
                    Some(x) => x,
                    None => continue,
                };
                match slot(value, parent) {
                    Some(Value::Object(map)) => {
                        map.remove(last);
                    }
                    Some(Value::Array(items)) => {
                        if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < items.len()) {
                            items.remove(i);
                        }
                    }
                    _ => {}
                }
            }
            Edit::Confuse(how) => {
                if let Some(s) = slot(value, &path) {
                    *s = confuse(s, *how);
                }
            }
        }
    }
}
