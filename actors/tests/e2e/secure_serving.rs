//! `/metrics` on the secure port as kube-controller-manager serves it: HTTPS, a scraper without
//! a token gets 401, one whose ServiceAccount may not `get /metrics` 403, one that may 200; the
//! health paths need neither. Authentication and authorization are delegated to the simulated
//! API server (TokenReview, SubjectAccessReview) as the manager's own ServiceAccount.

use crate::common::with_runtime;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tidemark_actors::embedded::start_server;
use tidemark_actors::manager::{Manager, ManagerConfig};
use tidemark_actors::metrics::MetricsState;
use tidemark_actors::serving::{
    DEFAULT_ALWAYS_ALLOW_PATHS, DelegatedAuth, SecureServing, serve_secure,
};
use tidemark_actors::startup::client_for_kubeconfig;
use tidemark_loadgen::ServerConfig;
use tidemark_loadgen::kubeconfig::KubeconfigUser;
use tidemark_tls::{HttpsGet, https_get};

#[test]
fn metrics_need_an_authenticated_and_authorized_scraper_and_health_needs_neither() {
    with_runtime(|io| async move {
        let server = start_server(&io, ServerConfig::default())
            .await
            .expect("server");
        let rbac = tidemark_loadgen::rbac::parse_manifests(
            tidemark_loadgen::rbac::deploy::TIDEMARK_RBAC_YAML,
        )
        .expect("deploy/rbac.yaml");
        server.apply(&rbac).expect("RBAC");
        server
            .apply(&[
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "prometheus", "namespace": "monitoring"}}),
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nosy", "namespace": "default"}}),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "metrics-reader"},
                       "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": "prometheus-reads-metrics"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
                       "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}]}),
            ])
            .expect("scraper RBAC");
        let hour = Duration::from_secs(3600);
        let manager_token = server
            .service_account_token("kube-system", "tidemark", hour)
            .expect("token");
        let kubeconfig = server.kubeconfig_for(&KubeconfigUser::Token(manager_token));
        let client = client_for_kubeconfig(&kubeconfig, &io)
            .await
            .expect("client");
        let config = ManagerConfig {
            shards: 1,
            controllers: vec!["replicaset".into()],
            ..ManagerConfig::default()
        };
        let manager = Manager::start(&config, client.clone(), &io).expect("manager");
        let serving = SecureServing {
            addr: "127.0.0.1:0".parse().expect("addr"),
            cert: None,
            client_ca: None,
            always_allow_paths: DEFAULT_ALWAYS_ALLOW_PATHS
                .iter()
                .map(|p| p.to_string())
                .collect(),
        };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let state = MetricsState::new(manager.source());
        let auth = Arc::new(DelegatedAuth::new(client));
        let addr = io
            .spawn(async move { serve_secure(&serving, state, auth, stopped).await })
            .await
            .expect("join")
            .expect("secure port");
        // The certificate is self-signed: fetch it to trust it, as an operator pins it.
        let presented = tidemark_tls::peer_certificate(addr, "localhost")
            .await
            .expect("certificate");
        let get = |path: &'static str, bearer: Option<String>| {
            let roots = vec![presented.clone()];
            async move {
                let request = HttpsGet {
                    server_name: "localhost",
                    path,
                    bearer: bearer.as_deref(),
                    roots: &roots,
                    timeout: Duration::from_secs(5),
                };
                https_get(addr, &request).await.expect("answered")
            }
        };
        let scraper = server
            .service_account_token("monitoring", "prometheus", hour)
            .expect("token");
        let nosy = server
            .service_account_token("default", "nosy", hour)
            .expect("token");
        let anonymous = get("/metrics", None).await;
        let forbidden = get("/metrics", Some(nosy)).await;
        let allowed = get("/metrics", Some(scraper)).await;
        let bogus = get("/metrics", Some("bogus".into())).await;
        let health = get("/healthz", None).await;
        let live = get("/livez", None).await;
        stop.send_replace(true);
        manager.stop();
        server.shutdown().await;
        assert_eq!(anonymous.status, 401, "{}", anonymous.body);
        assert_eq!(bogus.status, 401, "{}", bogus.body);
        assert_eq!(forbidden.status, 403, "{}", forbidden.body);
        assert!(
            forbidden.body.contains("forbidden: User \\\"system:serviceaccount:default:nosy\\\" cannot get path \\\"/metrics\\\""),
            "{}",
            forbidden.body
        );
        assert_eq!(allowed.status, 200, "{}", allowed.body);
        assert!(allowed.body.contains("workqueue_depth"), "{}", allowed.body);
        assert_eq!(health.status, 200, "{}", health.body);
        assert_eq!(live.status, 200);
    });
}
