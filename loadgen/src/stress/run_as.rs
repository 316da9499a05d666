//! Running a manager as an operator would on a real cluster: as the ServiceAccount of
//! `deploy/rbac.yaml` with that RBAC enforced, its secure port serving a certificate of the
//! cluster CA, and scraped at the end by a Prometheus ServiceAccount allowed `get /metrics`.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::apiserver::kubeconfig::KubeconfigUser;
use crate::apiserver::server::ApiServer;
use crate::rbac::{Attributes, RequestLogEntry, parse_manifests};
use crate::stress::managers::{Managers, ServingFiles};
use crate::stress::report::ReportedViolation;

/// The ServiceAccount of `deploy/rbac.yaml`.
pub const MANAGER_SERVICE_ACCOUNT: (&str, &str) = ("kube-system", "tidemark");
/// The scraper's ServiceAccount.
pub const SCRAPER_SERVICE_ACCOUNT: (&str, &str) = ("monitoring", "prometheus");

/// Why the identity could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum RunAsError {
    /// `deploy/rbac.yaml` does not parse.
    #[error("deploy/rbac.yaml: {0}")]
    Manifests(String),
    /// The server refused the objects or the token.
    #[error("{0}")]
    Api(String),
    /// Files could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The server has no CA (plain HTTP).
    #[error("{0}")]
    Tls(#[from] tidemark_tls::TlsError),
}

/// What a manager process needs to run as the ServiceAccount.
#[derive(Debug, Clone)]
pub struct ManagerIdentity {
    /// The kubeconfig (the ServiceAccount's token, the server's CA).
    pub kubeconfig: std::path::PathBuf,
    /// The secure port's certificate.
    pub serving: ServingFiles,
    /// The ServiceAccount's user name.
    pub user: String,
    /// A token of the scraper.
    pub scraper_token: String,
}

fn scraper_objects() -> Vec<Value> {
    let (ns, name) = SCRAPER_SERVICE_ACCOUNT;
    vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "tidemark:metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "tidemark:metrics-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tidemark:metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
        }),
    ]
}

/// Applies `deploy/rbac.yaml` and the scraper's RBAC, issues both tokens, and writes the
/// kubeconfig and serving files into `dir`.
pub fn set_up(server: &ApiServer, dir: &Path) -> Result<ManagerIdentity, RunAsError> {
    let manifests = parse_manifests(crate::rbac::deploy::TIDEMARK_RBAC_YAML)
        .map_err(|e| RunAsError::Manifests(e.to_string()))?;
    server
        .apply(&manifests)
        .map_err(|e| RunAsError::Api(format!("applying deploy/rbac.yaml: {e}")))?;
    server
        .apply(&scraper_objects())
        .map_err(|e| RunAsError::Api(format!("applying the scraper's RBAC: {e}")))?;
    let (ns, name) = MANAGER_SERVICE_ACCOUNT;
    let hour = Duration::from_secs(3600);
    let token = server
        .service_account_token(ns, name, hour)
        .map_err(|e| RunAsError::Api(e.to_string()))?;
    let (sns, sname) = SCRAPER_SERVICE_ACCOUNT;
    let scraper_token = server
        .service_account_token(sns, sname, hour)
        .map_err(|e| RunAsError::Api(e.to_string()))?;
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        server.kubeconfig_for(&KubeconfigUser::Token(token)),
    )?;
    let cert = server.issue_serving_certificate(&["localhost".into(), "127.0.0.1".into()])?;
    let serving = ServingFiles {
        cert: dir.join("serving.crt"),
        key: dir.join("serving.key"),
    };
    std::fs::write(&serving.cert, &cert.cert_pem)?;
    std::fs::write(&serving.key, &cert.key_pem)?;
    Ok(ManagerIdentity {
        kubeconfig,
        serving,
        user: format!("system:serviceaccount:{ns}:{name}"),
        scraper_token,
    })
}

/// The requests the manager's ServiceAccount made; a denied one is a violation: the role in
/// `deploy/rbac.yaml` lacks a permission the manager needs.
pub fn requests_of(
    server: &ApiServer,
    identity: &ManagerIdentity,
) -> (Vec<RequestLogEntry>, Vec<ReportedViolation>) {
    let entries: Vec<RequestLogEntry> = server
        .request_log()
        .into_iter()
        .filter(|e| e.user == identity.user)
        .collect();
    let violations = entries
        .iter()
        .filter(|e| !e.allowed)
        .map(|e| ReportedViolation {
            invariant: "rbac-forbidden".into(),
            object: describe(&e.request),
            revision: server.current_revision(),
            detail: format!(
                "{} was refused {} times: deploy/rbac.yaml lacks it",
                e.user, e.count
            ),
        })
        .collect();
    (entries, violations)
}

/// `verb group/resource/subresource in namespace`, as the closing table prints a request.
pub fn describe(a: &Attributes) -> String {
    match a {
        Attributes::Resource(r) => {
            let mut what = format!("{} {}/{}", r.verb, r.api_group, r.resource);
            if !r.subresource.is_empty() {
                what.push('/');
                what.push_str(&r.subresource);
            }
            if !r.namespace.is_empty() {
                what.push_str(" in ");
                what.push_str(&r.namespace);
            }
            what
        }
        Attributes::NonResource { verb, path } => format!("{verb} {path}"),
    }
}

/// The `/metrics` text of a manager, by the identity of the process that served it.
#[derive(Debug, Clone)]
pub struct Scraped {
    /// The incarnation scraped (`tidemark-1.2`).
    pub identity: String,
    /// The Prometheus text it served.
    pub body: String,
}

/// Scrapes every running manager's `/metrics` on its secure port as the scraper; a failed
/// scrape is a violation. Returns the violations and what the successful scrapes read.
pub async fn scrape(
    server: &ApiServer,
    managers: &Managers,
    identity: &ManagerIdentity,
) -> (Vec<ReportedViolation>, Vec<Scraped>) {
    let roots = match server.ca_pem().map(tidemark_tls::certificates_from_pem) {
        Some(Ok(r)) => r,
        _ => return (Vec::new(), Vec::new()),
    };
    let mut violations = Vec::new();
    let mut scraped = Vec::new();
    for (who, addr) in managers.secure_addrs() {
        let get = tidemark_tls::HttpsGet {
            server_name: "127.0.0.1",
            path: "/metrics",
            bearer: Some(&identity.scraper_token),
            roots: &roots,
            timeout: Duration::from_secs(5),
        };
        let problem = match tidemark_tls::https_get(addr, &get).await {
            Ok(r) if r.status == 200 && r.body.contains("workqueue_depth") => {
                scraped.push(Scraped {
                    identity: who.clone(),
                    body: r.body,
                });
                None
            }
            Ok(r) => Some(format!(
                "status {}: {}",
                r.status,
                r.body.chars().take(200).collect::<String>()
            )),
            Err(e) => Some(e.to_string()),
        };
        if let Some(detail) = problem {
            violations.push(ReportedViolation {
                invariant: "metrics-scrape".into(),
                object: format!("{who} https://{addr}/metrics"),
                revision: server.current_revision(),
                detail,
            });
        }
    }
    (violations, scraped)
}
