//! Helpers shared by the integration tests: start a server, build clients, make objects.
#![allow(dead_code, missing_docs)]

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::json;
use tidemark_loadgen::faults::request_faults::{LatencyRule, Match};
use tidemark_loadgen::{ApiServer, ServerConfig};

pub type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// A server without the kubelet (unless a test asks), fast bookmarks.
pub fn quiet_config() -> ServerConfig {
    ServerConfig {
        kubelet_enabled: false,
        bookmark_interval: Duration::from_millis(100),
        ..ServerConfig::default()
    }
}

pub async fn start(
    config: ServerConfig,
) -> Result<(ApiServer, Client), Box<dyn std::error::Error + Send + Sync>> {
    let server = tidemark_loadgen::start(config).await?;
    let client = client_for(&server).await?;
    Ok((server, client))
}

/// The kube-rs configuration of a kubeconfig: HTTPS with the server's CA, as a real client.
pub async fn config_of(
    kubeconfig: &str,
) -> Result<kube::Config, Box<dyn std::error::Error + Send + Sync>> {
    tidemark_tls::install_crypto_provider();
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig)?;
    Ok(kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?)
}

/// A client of `server` as its admin (the kubeconfig it writes).
pub async fn client_for(
    server: &ApiServer,
) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    Ok(Client::try_from(
        config_of(&server.kubeconfig_yaml()).await?,
    )?)
}

/// A client of a plain-HTTP endpoint without credentials (the admin listener).
pub fn plain_client(url: &str) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    Ok(Client::try_from(kube::Config::new(url.parse()?))?)
}

/// A client of `server` with the kubeconfig `yaml`.
pub async fn client_with(yaml: &str) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    Ok(Client::try_from(config_of(yaml).await?)?)
}

/// An admin client that does not retry 429/503/504 (kube-rs retries them by default).
pub async fn client_without_retries(
    server: &ApiServer,
) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let mut config = config_of(&server.kubeconfig_yaml()).await?;
    config.default_retry = false;
    Ok(Client::try_from(config)?)
}

pub fn pods(client: &Client, ns: &str) -> Api<Pod> {
    Api::namespaced(client.clone(), ns)
}

pub fn replicasets(client: &Client, ns: &str) -> Api<ReplicaSet> {
    Api::namespaced(client.clone(), ns)
}

pub fn pod(name: &str) -> Pod {
    pod_json(json!({"metadata": {"name": name}}))
}

pub fn pod_json(mut v: serde_json::Value) -> Pod {
    v["apiVersion"] = json!("v1");
    v["kind"] = json!("Pod");
    v["spec"] = json!({"containers": [{"name": "app", "image": "registry.invalid/app:1"}]});
    serde_json::from_value(v).expect("a Pod")
}

pub fn replicaset(name: &str, replicas: i32) -> ReplicaSet {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]},
            },
        },
    }))
    .expect("a ReplicaSet")
}

/// Creates the ReplicaSet `name` in `default` through the API; its uid, for owner references.
pub async fn replicaset_uid(
    client: &Client,
    name: &str,
    replicas: i32,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let rs = replicasets(client, "default")
        .create(&PostParams::default(), &replicaset(name, replicas))
        .await?;
    Ok(rs
        .metadata
        .uid
        .ok_or("the server gave the ReplicaSet no uid")?)
}

/// Holds every request of `verb` on `resource` (any resource if `None`) for `millis`.
pub fn slow(verb: &str, resource: Option<&str>, millis: u64) -> LatencyRule {
    LatencyRule {
        matching: Match {
            verb: Some(verb.into()),
            resource: resource.map(Into::into),
        },
        millis,
    }
}

/// A Pod controlled by the ReplicaSet `rs` with `uid`.
pub fn owned_pod(name: &str, rs: &str, uid: &str) -> Pod {
    pod_json(json!({
        "metadata": {
            "name": name,
            "labels": {"app": rs},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": uid,
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
    }))
}

/// The `code` of a kube-rs API error.
pub fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// The `reason` of a kube-rs API error.
pub fn api_reason(e: &kube::Error) -> Option<String> {
    match e {
        kube::Error::Api(s) => Some(s.reason.clone()),
        _ => None,
    }
}

pub fn rv_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// Any typed object from JSON (test data; panics on a typo).
pub fn typed<K: serde::de::DeserializeOwned>(v: serde_json::Value) -> K {
    serde_json::from_value(v).expect("test object decodes")
}

/// A pod template labelled `app: name`.
pub fn template(name: &str) -> serde_json::Value {
    json!({
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]},
    })
}

/// A server with the kubelet and fast termination, for graceful deletion.
pub fn kubelet_config() -> ServerConfig {
    ServerConfig {
        kubelet_enabled: true,
        kubelet_ready_after: Duration::from_millis(20),
        pod_termination_after: Duration::from_millis(200),
        bookmark_interval: Duration::from_millis(100),
        ..ServerConfig::default()
    }
}
