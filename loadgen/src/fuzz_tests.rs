//! Fuzzing the simulator's request parsing on stable Rust (proptest, a fixed budget;
//! `TIDEMARK_FUZZ_CASES` raises it): query strings, label and field selectors, continue tokens,
//! resourceVersion options, watch timeouts, delete options, patches of every kind applied to
//! arbitrary objects, the type checks and validation of every served kind, and the kubelet's
//! edits of Pods of any shape. None may panic; every refusal is an `ApiError`.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Value};
use std::time::{Duration, Instant};

use crate::resource::Resource;

fn run<S: Strategy>(
    target: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let cases = std::env::var("TIDEMARK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default_cases);
    // A fixed seed, so CI runs the same cases every time; `TIDEMARK_FUZZ_SEED` draws others.
    let seed: u64 = std::env::var("TIDEMARK_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
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

const KEYS: &[&str] = &[
    "metadata",
    "name",
    "namespace",
    "labels",
    "spec",
    "status",
    "replicas",
    "selector",
    "matchLabels",
    "matchExpressions",
    "template",
    "containers",
    "conditions",
    "type",
    "phase",
    "taints",
    "effect",
    "ownerReferences",
    "finalizers",
    "$patch",
    "$deleteFromPrimitiveList/finalizers",
    "$retainKeys",
    "op",
    "path",
    "value",
    "from",
    "resourceVersion",
    "uid",
    "updateStrategy",
    "rollingUpdate",
    "maxUnavailable",
    "completionMode",
    "podManagementPolicy",
    "renewTime",
];

const WORDS: &[&str] = &[
    "",
    "add",
    "remove",
    "replace",
    "move",
    "copy",
    "test",
    "/spec/replicas",
    "/metadata/labels/a",
    "/status",
    "/spec/containers/0",
    "/spec/containers/-",
    "/a~1b",
    "/~2",
    "delete",
    "merge",
    "True",
    "Ready",
    "Running",
    "Indexed",
    "Parallel",
    "OnDelete",
    "NoSchedule",
    "In",
    "Exists",
    "25%",
    "-1",
    "2026-01-01T00:00:00Z",
    "yesterday",
    "five",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        prop::sample::select(&[3.0f64, -0.5, 1e300][..]).prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
        "[a-z0-9/~.-]{0,8}".prop_map(Value::from),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        3 => prop::sample::select(KEYS).prop_map(str::to_string),
                        1 => "[a-z]{1,4}",
                    ],
                    inner
                ),
                0..5
            )
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Text in the alphabet of selectors, tokens and query strings, plus arbitrary Unicode.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z0-9=!,().%&+ /_-]{0,24}",
        1 => "\\PC{0,16}",
        1 => prop::sample::select(&[
            "a=b,c!=d", "a in (x,y)", "!a", "a notin ()", "metadata.name=x", "spec.nodeName=",
            "status.phase!=Running", "a=(", "in in in", "a,,b", "==", "a=b=c",
        ][..]).prop_map(str::to_string),
    ]
}

fn resource() -> impl Strategy<Value = Resource> {
    prop::sample::select(Resource::ALL.to_vec())
}

#[test]
fn query_strings_selectors_tokens_and_options_never_panic() {
    run(
        "loadgen/request-parsing",
        3000,
        (
            text(),
            text(),
            text(),
            resource(),
            prop::collection::vec(any::<u8>(), 0..64),
        ),
        |(a, b, c, r, bytes)| {
            let encoded: String = url_escape(&a);
            if let Ok(uri) = format!("/api/v1/pods?{encoded}&labelSelector={}", url_escape(&b))
                .parse::<http::Uri>()
                && let Ok(q) = crate::apiserver::options::Query::parse(&uri)
            {
                let _ = crate::apiserver::options::dry_run(&q);
                let _ = crate::apiserver::options::parse_delete_options(&bytes, &q);
                let _ = crate::apiserver::options::field_validation(r, Value::Null, &q);
            }
            if let Ok(s) = crate::store::selector::Selectors::parse_for(r, Some(&a), Some(&b)) {
                s.matches(&serde_json::json!({"metadata": {"name": c, "labels": {"a": b}}}));
            }
            let _ = crate::store::list::ContinueToken::decode(&c);
            let _ = crate::store::list::read_at(Some(&a), Some(&b));
            let _ = crate::store::watch_stream::timeout(Some(&c), Duration::from_secs(1));
            let _ = crate::apiserver::options::parse_json(&bytes);
            Ok(())
        },
    );
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"=&-_.!,()".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn continue_tokens_of_arbitrary_json_never_panic() {
    use base64::Engine;
    run("loadgen/continue-tokens", 2000, json(), |v| {
        let raw = serde_json::to_vec(&v).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw);
        let _ = crate::store::list::ContinueToken::decode(&token);
        Ok(())
    });
}

#[test]
fn patches_of_every_kind_apply_to_arbitrary_objects_without_panicking() {
    let kinds = [
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "text/plain",
    ];
    run(
        "loadgen/patches",
        3000,
        (
            prop::sample::select(kinds.to_vec()),
            json(),
            json(),
            resource(),
        ),
        |(kind, patch, target, r)| {
            let raw = serde_json::to_vec(&patch).map_err(|e| TestCaseError::fail(e.to_string()))?;
            if let Ok(p) = crate::store::patch::parse(kind, &raw) {
                let _ = p.pins_resource_version();
                let mut object = target.clone();
                if p.apply_to(&mut object).is_ok() {
                    let _ = crate::admission::typecheck::check_patched(r, &object);
                    let _ = crate::admission::field_rules::status_rules(r, &object);
                }
            }
            Ok(())
        },
    );
}

#[test]
fn type_checks_validation_and_the_kubelet_take_any_object() {
    run(
        "loadgen/validation-and-kubelet",
        3000,
        (json(), json(), resource()),
        |(object, old, r)| {
            let _ = crate::admission::typecheck::check_body(r, &object);
            let _ = crate::admission::validation::validate_name(r, &object);
            let _ = crate::admission::validation::validate(r, &object);
            let _ = crate::admission::validation::validate_update(r, &old, &object);
            let _ = crate::admission::field_rules::status_rules(r, &object);
            let mut pod = object.clone();
            crate::kubelet::start_pod(&mut pod, "node-0", "10.0.0.1");
            crate::kubelet::finish_pod(&mut pod, Some(1));
            let _ = crate::kubelet::owned_by_job(&object);
            let _ = crate::apiserver::write_ops::scale_of(&object);
            Ok(())
        },
    );
}
