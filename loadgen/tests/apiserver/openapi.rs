//! OpenAPI documents for kubectl: `/openapi/v2`, the `/openapi/v3` index and its documents;
//! and `kubectl apply` with validation on (skipped when kubectl is not installed).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::*;
use http::Request;
use serde_json::Value;

async fn get_json(client: &kube::Client, path: &str) -> Result<Value, kube::Error> {
    let text = client
        .request_text(
            Request::get(path)
                .body(Vec::new())
                .map_err(kube::Error::HttpError)?,
        )
        .await?;
    serde_json::from_str(&text).map_err(kube::Error::SerdeError)
}

#[tokio::test]
async fn the_openapi_v3_index_leads_to_a_document_per_group_version_with_field_validation()
-> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let index = get_json(&client, "/openapi/v3").await?;
    let paths = index["paths"].as_object().ok_or("no paths")?;
    let mut keys: Vec<_> = paths.keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "api/v1",
            "apis/apiextensions.k8s.io/v1",
            "apis/apps/v1",
            "apis/batch/v1",
            "apis/coordination.k8s.io/v1",
            "apis/rbac.authorization.k8s.io/v1"
        ]
    );
    for (key, entry) in paths {
        let url = entry["serverRelativeURL"].as_str().ok_or("no url")?;
        let doc = get_json(&client, url).await?;
        assert_eq!(doc["openapi"], "3.0.0", "{key}");
        let patches: Vec<&Value> = doc["paths"]
            .as_object()
            .ok_or("no paths")?
            .values()
            .filter_map(|p| p.get("patch"))
            .collect();
        assert!(!patches.is_empty(), "{key}");
        for op in patches {
            assert!(op["x-kubernetes-group-version-kind"]["kind"].is_string());
            let params = op["parameters"].as_array().ok_or("no parameters")?;
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
            );
        }
    }
    server.shutdown().await;
    Ok(())
}

#[tokio::test]
async fn openapi_v2_is_a_swagger_document_with_every_kind() -> TestResult {
    let (server, client) = start(quiet_config()).await?;
    let doc = get_json(&client, "/openapi/v2").await?;
    assert_eq!(doc["swagger"], "2.0");
    let defs = doc["definitions"].as_object().ok_or("no definitions")?;
    let kinds: Vec<String> = defs
        .values()
        .filter_map(|d| d["x-kubernetes-group-version-kind"][0]["kind"].as_str())
        .filter(|k| !k.ends_with("List"))
        .map(str::to_string)
        .collect();
    assert_eq!(
        kinds.len(),
        tidemark_loadgen::Resource::ALL.len(),
        "{kinds:?}"
    );
    assert!(doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}/status"].is_object());
    server.shutdown().await;
    Ok(())
}

fn kubectl_present() -> bool {
    Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn kubectl(kubeconfig: &std::path::Path, args: &[&str], stdin: &str) -> Result<String, String> {
    let mut child = Command::new("kubectl")
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdin.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
    }
}

const MANIFEST: &str = "apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: REPLICAS
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: registry.invalid/app:1
";

#[tokio::test]
async fn kubectl_apply_with_validation_creates_then_updates_and_rejects_unknown_fields()
-> TestResult {
    if !kubectl_present() {
        println!("skipped: kubectl is not installed");
        return Ok(());
    }
    let (server, _client) = start(quiet_config()).await?;
    let dir = std::env::temp_dir().join(format!("loadgen-kubectl-{}", server.addr().port()));
    std::fs::create_dir_all(&dir)?;
    let kc = dir.join("kubeconfig");
    server.write_kubeconfig(&kc)?;
    let run = {
        let kc = kc.clone();
        move || -> Result<(String, String, Result<String, String>), String> {
            let two = MANIFEST.replace("REPLICAS", "2");
            kubectl(&kc, &["apply", "--validate=true", "-f", "-"], &two)?;
            let three = MANIFEST.replace("REPLICAS", "3");
            let configured = kubectl(&kc, &["apply", "--validate=true", "-f", "-"], &three)?;
            let replicas = kubectl(
                &kc,
                &["get", "rs", "web", "-o", "jsonpath={.spec.replicas}"],
                "",
            )?;
            let bogus = three.replace("kind: ReplicaSet", "kind: ReplicaSet\nbogus: 1");
            let rejected = kubectl(&kc, &["create", "--validate=strict", "-f", "-"], &bogus);
            Ok((configured, replicas, rejected))
        }
    };
    let (configured, replicas, rejected) = tokio::task::spawn_blocking(run).await??;
    assert!(configured.contains("configured"), "{configured}");
    assert_eq!(replicas, "3");
    let rejected = rejected.err().ok_or("an unknown field was accepted")?;
    assert!(rejected.contains("unknown field \"bogus\""), "{rejected}");
    let _ = std::fs::remove_dir_all(&dir);
    server.shutdown().await;
    Ok(())
}
