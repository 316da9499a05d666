//! Fuzzing the simulator over HTTP: random methods, paths, query strings, content types and
//! bodies (arbitrary JSON near the served kinds' shapes, or arbitrary bytes). Every request gets
//! an HTTP answer (a handler panic would drop the connection), no answer is a 5xx, and the
//! server still serves afterwards. `TIDEMARK_FUZZ_CASES` raises the budget.

use crate::common::*;
use http::Request;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::{Map, Value};
use std::time::Instant;

const PATHS: &[&str] = &[
    "/api/v1/namespaces/{ns}/pods",
    "/api/v1/namespaces/{ns}/pods/{name}",
    "/api/v1/namespaces/{ns}/pods/{name}/status",
    "/api/v1/namespaces/{ns}/pods/{name}/eviction",
    "/apis/apps/v1/namespaces/{ns}/replicasets",
    "/apis/apps/v1/namespaces/{ns}/replicasets/{name}",
    "/apis/apps/v1/namespaces/{ns}/replicasets/{name}/status",
    "/apis/apps/v1/namespaces/{ns}/replicasets/{name}/scale",
    "/apis/apps/v1/namespaces/{ns}/statefulsets/{name}",
    "/apis/apps/v1/namespaces/{ns}/daemonsets/{name}/status",
    "/apis/batch/v1/namespaces/{ns}/jobs",
    "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}",
    "/api/v1/nodes",
    "/api/v1/nodes/{name}",
    "/api/v1/nodes/{name}/status",
    "/{name}/{ns}",
];

const QUERIES: &[&str] = &[
    "",
    "watch=true&timeoutSeconds=1",
    "watch=1&resourceVersion=0&timeoutSeconds=-3",
    "limit=1&continue={name}",
    "labelSelector={name}",
    "fieldSelector=metadata.name%3D{name}",
    "resourceVersion={name}&resourceVersionMatch=Exact",
    "dryRun=All",
    "fieldValidation=Strict",
    "timeoutSeconds=99999999999999999999&watch=true",
    "propagationPolicy={name}",
];

const WORDS: &[&str] = &[
    "default",
    "default",
    "web",
    "web",
    "x",
    "",
    "%2F",
    "..",
    "a.b",
    "Not_Valid",
    "five",
    "-1",
    "7",
    "18446744073709551616",
    "a=b,c!=d",
    "eyJyZXYiOjF9",
    "in (",
    "Running",
    "True",
    "Parallel",
];

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop::sample::select(&[3.0f64, -0.5][..]).prop_map(Value::from),
        prop::sample::select(WORDS).prop_map(Value::from),
    ];
    let keys = prop::sample::select(
        &[
            "apiVersion",
            "kind",
            "metadata",
            "name",
            "namespace",
            "labels",
            "spec",
            "status",
            "replicas",
            "selector",
            "matchLabels",
            "template",
            "containers",
            "image",
            "conditions",
            "type",
            "taints",
            "effect",
            "op",
            "path",
            "value",
            "resourceVersion",
            "deleteOptions",
        ][..],
    );
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((keys.clone().prop_map(str::to_string), inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A well-formed object of a served kind with one field replaced by arbitrary JSON.
fn near_valid() -> impl Strategy<Value = Value> {
    let bases = vec![
        serde_json::json!({"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        serde_json::json!({"metadata": {"name": "web"}, "spec": {"replicas": 2,
            "selector": {"matchLabels": {"app": "web"}}, "template": template("web")},
            "status": {"replicas": 1}}),
        serde_json::json!({"metadata": {"name": "n1"}, "spec": {"taints": []},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        serde_json::json!({"metadata": {"name": "l1"}, "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}}),
    ];
    let paths = &[
        "spec.replicas",
        "status",
        "metadata.labels",
        "spec.containers",
        "status.conditions",
        "spec.selector",
        "spec.template.spec",
        "spec.taints",
        "spec.renewTime",
        "status.replicas",
        "metadata",
        "spec",
    ][..];
    (
        prop::sample::select(bases),
        prop::sample::select(paths),
        json(),
        any::<bool>(),
    )
        .prop_map(|(mut base, path, value, replace)| {
            if replace {
                let mut at = &mut base;
                let parts: Vec<&str> = path.split('.').collect();
                for (i, part) in parts.iter().enumerate() {
                    let Some(map) = at.as_object_mut() else { break };
                    if i + 1 == parts.len() {
                        map.insert((*part).to_string(), value.clone());
                        break;
                    }
                    at = map
                        .entry((*part).to_string())
                        .or_insert(Value::Object(Map::new()));
                }
            }
            base
        })
}

#[derive(Debug, Clone)]
struct Req {
    method: &'static str,
    path: String,
    content_type: &'static str,
    body: Vec<u8>,
}

fn request() -> impl Strategy<Value = Req> {
    (
        prop::sample::select(&["GET", "POST", "PUT", "PATCH", "DELETE"][..]),
        prop::sample::select(PATHS),
        prop::sample::select(QUERIES),
        prop::sample::select(WORDS),
        prop::sample::select(WORDS),
        prop::sample::select(
            &[
                "application/json",
                "application/json",
                "application/json",
                "application/merge-patch+json",
                "application/json-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
                "text/plain",
            ][..],
        ),
        prop_oneof![
            4 => near_valid().prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
            3 => json().prop_map(|v| serde_json::to_vec(&v).unwrap_or_default()),
            1 => prop::collection::vec(any::<u8>(), 0..64),
        ],
    )
        .prop_map(|(method, path, query, ns, name, content_type, body)| {
            let fill = |s: &str| s.replace("{ns}", ns).replace("{name}", name);
            let path = if query.is_empty() {
                fill(path)
            } else {
                format!("{}?{}", fill(path), fill(query))
            };
            Req {
                method,
                path,
                content_type,
                body,
            }
        })
}

#[tokio::test]
async fn random_requests_always_get_an_answer_and_never_a_server_error() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let client_once = client_without_retries(&server).await?;
    replicasets(&client, "default")
        .create(&Default::default(), &replicaset("web", 1))
        .await?;
    let cases: usize = std::env::var("TIDEMARK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let mut runner = TestRunner::deterministic();
    let strategy = request();
    let started = Instant::now();
    let mut codes = std::collections::BTreeMap::<u16, usize>::new();
    for _ in 0..cases {
        let req = strategy
            .new_tree(&mut runner)
            .map_err(|e| e.to_string())?
            .current();
        let Ok(built) = Request::builder()
            .method(req.method)
            .uri(req.path.as_str())
            .header("content-type", req.content_type)
            .body(req.body.clone())
        else {
            continue;
        };
        let resp = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            client_once.send(built.map(kube::client::Body::from)),
        )
        .await
        .map_err(|_| format!("no answer in 5 s: {req:?}"))?
        .map_err(|e| format!("no answer ({e}): {req:?}"))?;
        let code = resp.status().as_u16();
        assert!(code < 500, "{code} for {req:?}");
        *codes.entry(code).or_default() += 1;
    }
    eprintln!(
        "fuzz loadgen/http-requests: {cases} requests in {} ms, answers {codes:?}",
        started.elapsed().as_millis()
    );
    pods(&client, "default")
        .create(&Default::default(), &pod("still-serving"))
        .await?;
    server.shutdown().await;
    Ok(())
}
