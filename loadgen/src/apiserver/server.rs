//! Starting and stopping the simulated API server, and its in-process handle [`ApiServer`].

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

pub use crate::apiserver::config::ServerConfig;

use crate::apiserver::admin::{self, AdminState};
use crate::apiserver::arrival::Arrivals;
use crate::apiserver::door::{Door, ServerCredentials};
use crate::apiserver::handlers::{self, App};
use crate::apiserver::kubeconfig::{KubeconfigTrust, KubeconfigUser};
use crate::apiserver::status::ApiError;
use crate::faults::Faults;
use crate::kubelet::nodes::{self, LeaseControl};
use crate::kubelet::{self, KubeletConfig};
use crate::oracle::{ReplicaSetTruth, SharedOracle, Violation, WriteRecord};
use crate::rbac::UserInfo;
use crate::resource::Resource;
use crate::store::deletion::{DeleteOptions, Deleted};
use crate::store::watch_stream::WatchContext;
use crate::store::watch_traffic::{ClientWatchFigures, WatchFigures, WatchTraffic};
use crate::store::{LOADGEN_USER_AGENT, Preconditions, Store};

/// A failure to start the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The fake nodes could not be registered.
    #[error("cannot register the fake nodes: {0}")]
    Bootstrap(#[from] ApiError),
    /// The certificates could not be made.
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] tidemark_tls::TlsError),
    /// The bootstrap RBAC policy could not be stored.
    #[error("cannot store the bootstrap RBAC policy: {0}")]
    Policy(ApiError),
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// A running simulated API server. Dropping it leaves the server running until the runtime
/// stops; [`ApiServer::shutdown`] stops it.
#[derive(Debug)]
pub struct ApiServer {
    addr: SocketAddr,
    admin_addr: SocketAddr,
    store: Arc<Store>,
    oracle: SharedOracle,
    faults: Arc<Faults>,
    traffic: Arc<WatchTraffic>,
    leases: Arc<LeaseControl>,
    door: Arc<Door>,
    credentials: Option<Arc<ServerCredentials>>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), ServerError> {
    let l = TcpListener::bind(addr)
        .await
        .map_err(|source| ServerError::Bind { addr, source })?;
    let local = l
        .local_addr()
        .map_err(|source| ServerError::Bind { addr, source })?;
    Ok((l, local))
}

fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(tidemark_tls::serve(
        listener,
        router,
        tls,
        tidemark_tls::ServeOptions::default(),
        stop,
    ))
}

/// Stores `objects` (each names its `kind`; namespaced ones their namespace), replacing what
/// is there by name. Kinds the server does not serve are an error; a CustomResourceDefinition
/// serves its kind to the objects after it.
pub(crate) fn apply_objects(store: &Store, objects: &[Value]) -> Result<(), ApiError> {
    for obj in objects {
        let kind = obj["kind"].as_str().unwrap_or("");
        let api_version = obj["apiVersion"].as_str().unwrap_or("");
        let r = store
            .resource_for_kind(api_version, kind)
            .ok_or_else(|| ApiError::bad_request(format!("no resource serves kind {kind:?}")))?;
        let ns = if r.namespaced() {
            obj["metadata"]["namespace"].as_str().unwrap_or("default")
        } else {
            ""
        };
        let name = obj["metadata"]["name"].as_str().unwrap_or("");
        if r == Resource::ServiceAccounts || r.namespaced() {
            ensure_namespace(store, ns)?;
        }
        if store.get(r, ns, name).is_some() {
            let replacement = obj.clone();
            store.update_with(
                r,
                ns,
                name,
                |current| {
                    let meta = current["metadata"].clone();
                    *current = replacement;
                    current["metadata"] = meta;
                },
                Some(LOADGEN_USER_AGENT),
            )?;
        } else {
            store.create(r, ns, obj.clone(), Some(LOADGEN_USER_AGENT))?;
        }
    }
    Ok(())
}

fn ensure_namespace(store: &Store, ns: &str) -> Result<(), ApiError> {
    if ns.is_empty() || store.get(Resource::Namespaces, "", ns).is_some() {
        return Ok(());
    }
    match store.create(
        Resource::Namespaces,
        "",
        serde_json::json!({"metadata": {"name": ns}}),
        Some(LOADGEN_USER_AGENT),
    ) {
        Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Binds both listeners and spawns the server on the current tokio runtime.
pub async fn start(config: ServerConfig) -> Result<ApiServer, ServerError> {
    let (listener, addr) = bind(config.listen).await?;
    let (admin_listener, admin_addr) = bind(config.admin_listen).await?;
    let (shutdown, stop) = watch::channel(false);
    let (kubelet_tx, kubelet_rx) = if config.kubelet_enabled {
        let (tx, rx) = mpsc::unbounded_channel();
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let store = Arc::new(Store::new(config.compaction_window, kubelet_tx));
    let oracle = SharedOracle::observing(&store);
    oracle.set_delivery_allowance(crate::oracle::knowable::DELIVERY_ALLOWANCE);
    let terminations = if config.kubelet_enabled {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = store.terminations.set(tx);
        Some(rx)
    } else {
        None
    };
    let door = Arc::new(Door::new(store.clone()));
    let bootstrap = [
        crate::rbac::bootstrap_cluster_roles(),
        crate::rbac::bootstrap_cluster_role_bindings(),
    ]
    .concat();
    apply_objects(&store, &bootstrap).map_err(ServerError::Policy)?;
    let credentials = if config.plain_http {
        None
    } else {
        Some(Arc::new(ServerCredentials::generate(&config.extra_hosts)?))
    };
    let tls = match &credentials {
        Some(c) => {
            let identity = tidemark_tls::ServerIdentity::from_issued(&c.serving)?;
            let ca = tidemark_tls::certificates_from_pem(c.ca.cert_pem())?;
            Some(tidemark_tls::server_config(identity, Some(&ca))?)
        }
        None => None,
    };
    let faults = Arc::new(Faults::default());
    for (r, d) in &config.watch_delays {
        faults.set_watch_delay(*r, *d);
    }
    let traffic = Arc::new(WatchTraffic::default());
    let app = Arc::new(App {
        store: store.clone(),
        watch: WatchContext {
            store: store.clone(),
            faults: faults.clone(),
            bookmark_interval: config.bookmark_interval,
            shutdown: stop.clone(),
            sharded_list_and_watch: config.sharded_list_and_watch,
            traffic: traffic.clone(),
        },
        door: door.clone(),
        protobuf_pods: Default::default(),
    });
    let mut api = Router::new().fallback(handlers::handle).with_state(app);
    if !config.plain_http {
        api = api.layer(axum::middleware::from_fn_with_state(
            door.clone(),
            crate::apiserver::door::layer,
        ));
    }
    let api = api
        .layer(axum::middleware::from_fn_with_state(
            faults.clone(),
            crate::faults::request_faults::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arrivals {
                store: store.clone(),
                oracle: oracle.clone(),
            },
            crate::apiserver::arrival::layer,
        ));
    let leases = Arc::new(LeaseControl::default());
    let admin = admin::router(AdminState {
        faults: faults.clone(),
        store: store.clone(),
        oracle: oracle.clone(),
        leases: leases.clone(),
    });
    let mut tasks = vec![
        serve(listener, api, tls, stop.clone()),
        serve(admin_listener, admin, None, stop.clone()),
    ];
    if let Some(rx) = terminations {
        tasks.push(kubelet::spawn_terminator(
            store.clone(),
            rx,
            config.pod_termination_after,
            stop.clone(),
        ));
    }
    if let Some(rx) = kubelet_rx {
        nodes::bootstrap(&store, config.node_count)?;
        tasks.push(nodes::spawn_renewals(
            store.clone(),
            config.node_count,
            config.lease_renew_interval,
            leases.clone(),
            stop.clone(),
        ));
        let kubelet_config = KubeletConfig {
            ready_after: config.kubelet_ready_after,
            node_count: config.node_count,
            job_pod_runtime: config.job_pod_runtime,
        };
        tasks.push(kubelet::spawn_with(store.clone(), rx, kubelet_config, stop));
    }
    tracing::info!(%addr, %admin_addr, "loadgen API server listening");
    Ok(ApiServer {
        addr,
        admin_addr,
        store,
        oracle,
        faults,
        traffic,
        leases,
        door,
        credentials,
        shutdown,
        tasks,
    })
}

impl ApiServer {
    /// The API listener's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The API base URL, e.g. `https://127.0.0.1:PORT` (`http://` with `plain_http`).
    pub fn url(&self) -> String {
        let scheme = if self.credentials.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// The CA that signed the serving certificate and the client certificates, PEM; `None`
    /// for a plain-HTTP server.
    pub fn ca_pem(&self) -> Option<&str> {
        self.credentials.as_ref().map(|c| c.ca.cert_pem())
    }

    fn ca(&self) -> Result<&tidemark_tls::CertificateAuthority, tidemark_tls::TlsError> {
        self.credentials
            .as_ref()
            .map(|c| &c.ca)
            .ok_or_else(|| tidemark_tls::TlsError::Parse("a plain-HTTP server has no CA".into()))
    }

    /// A client certificate for `user` in `groups` (at most two), signed by the server's CA.
    pub fn issue_client_certificate(
        &self,
        user: &str,
        groups: &[String],
    ) -> Result<tidemark_tls::IssuedCertificate, tidemark_tls::TlsError> {
        self.ca()?.issue_client(user, groups)
    }

    /// A serving certificate for `hosts`, signed by the server's CA (a cluster's CA signing
    /// a component's certificate).
    pub fn issue_serving_certificate(
        &self,
        hosts: &[String],
    ) -> Result<tidemark_tls::IssuedCertificate, tidemark_tls::TlsError> {
        self.ca()?.issue_server(hosts)
    }

    /// A bearer token for `user` (a static token, as `--token-auth-file` gives), valid for
    /// `ttl` or forever.
    pub fn issue_token(&self, user: UserInfo, ttl: Option<Duration>) -> String {
        self.door.tokens.issue(user, ttl)
    }

    /// A token for ServiceAccount `namespace/name`, as TokenRequest issues one.
    pub fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
        ttl: Duration,
    ) -> Result<String, crate::apiserver::door::TokenError> {
        self.door
            .tokens
            .issue_for_service_account(&self.store, namespace, name, ttl)
    }

    /// Makes a token invalid at once (as deleting its Secret or rotating a token file does).
    pub fn revoke_token(&self, token: &str) -> bool {
        self.door.tokens.revoke(token)
    }

    /// Every authenticated request so far: user, attributes, decision, count.
    pub fn request_log(&self) -> Vec<crate::rbac::RequestLogEntry> {
        self.door.log.entries()
    }

    /// Stores manifests (ServiceAccounts, RBAC objects, ...), replacing objects of the same
    /// name, and creating their namespaces.
    pub fn apply(&self, objects: &[Value]) -> Result<(), ApiError> {
        apply_objects(&self.store, objects)
    }

    /// Stores a CustomResourceDefinition (validated as a POST would be; see
    /// [`crate::crd::manifest`]) and returns the resource it serves from now on.
    pub fn define(&self, crd: &Value) -> Result<Resource, ApiError> {
        let stored = self.store.create(
            Resource::CustomResourceDefinitions,
            "",
            crd.clone(),
            Some(LOADGEN_USER_AGENT),
        )?;
        crate::store::customs::declared(&stored.value).ok_or_else(|| ApiError::Internal {
            message: "the stored CustomResourceDefinition serves no resource".into(),
        })
    }

    /// The resource served at `group`/`plural`, built-in or custom.
    pub fn resource(&self, group: &str, plural: &str) -> Option<Resource> {
        self.store.resource_for(group, plural)
    }

    /// A kubeconfig for this server: the cluster trusted as `trust` asks (the server's CA
    /// inline by default) and `user`.
    pub fn kubeconfig_for(&self, user: &KubeconfigUser) -> String {
        let trust = match self.ca_pem() {
            Some(ca) => KubeconfigTrust::CaData(ca.to_string()),
            None => KubeconfigTrust::PlainHttp,
        };
        self.kubeconfig_with(&trust, user)
    }

    /// A kubeconfig with the trust and user given.
    pub fn kubeconfig_with(&self, trust: &KubeconfigTrust, user: &KubeconfigUser) -> String {
        crate::apiserver::kubeconfig::kubeconfig(&self.url(), trust, user)
    }

    /// The admin listener's address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// Stops renewing the node Lease of `node` (e.g. `node-0`), as a node that went silent.
    pub fn stop_lease_renewal(&self, node: &str) {
        self.leases.stop(node);
    }

    /// Renews the node Lease of `node` again.
    pub fn resume_lease_renewal(&self, node: &str) {
        self.leases.resume(node);
    }

    /// Fault settings, changeable at run time.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// A kubeconfig for this server as its admin (a `system:masters` client certificate).
    pub fn kubeconfig_yaml(&self) -> String {
        let user = match &self.credentials {
            Some(c) => KubeconfigUser::ClientCertificate {
                cert_pem: c.admin.cert_pem.clone(),
                key_pem: c.admin.key_pem.clone(),
            },
            None => KubeconfigUser::Anonymous,
        };
        self.kubeconfig_for(&user)
    }

    /// Writes [`ApiServer::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Creates an object through the commit path (user agent `loadgen`).
    pub fn create(&self, r: Resource, namespace: &str, obj: Value) -> Result<Value, ApiError> {
        self.store
            .create(r, namespace, obj, Some(LOADGEN_USER_AGENT))
            .map(|s| s.value.clone())
    }

    /// The current state of one object.
    pub fn get(&self, r: Resource, namespace: &str, name: &str) -> Option<Value> {
        self.store.get(r, namespace, name).map(|s| s.value.clone())
    }

    /// The store the server serves.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The oracle observing the store.
    pub fn oracle(&self) -> &SharedOracle {
        &self.oracle
    }

    /// Every current object of `r`, in key order.
    pub fn list(&self, r: Resource) -> Vec<Value> {
        self.store
            .all(r, None)
            .0
            .into_iter()
            .map(|s| s.value.clone())
            .collect()
    }

    /// Read-modify-write of the whole object (spec and status) at a new revision.
    pub fn update_with(
        &self,
        r: Resource,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Result<Value, ApiError> {
        self.store
            .update_with(r, namespace, name, f, Some(LOADGEN_USER_AGENT))
            .map(|s| s.value.clone())
    }

    /// Deletes an object as a DELETE request with `opts` would (grace period, propagation,
    /// preconditions; user agent `loadgen`). Returns the object: gone (its last state) or
    /// pending (with its deletionTimestamp).
    pub fn delete_with(
        &self,
        r: Resource,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        self.store
            .delete_opts(r, namespace, name, opts, Some(LOADGEN_USER_AGENT))
    }

    /// Deletes an object at once (user agent `loadgen`); returns its last state.
    pub fn delete(&self, r: Resource, namespace: &str, name: &str) -> Result<Value, ApiError> {
        self.store
            .delete(
                r,
                namespace,
                name,
                &Preconditions::default(),
                Some(LOADGEN_USER_AGENT),
            )
            .map(|s| s.value.clone())
    }

    /// Sets `spec.replicas` of a ReplicaSet.
    pub fn scale_replicaset(
        &self,
        namespace: &str,
        name: &str,
        replicas: i32,
    ) -> Result<(), ApiError> {
        self.update_with(Resource::ReplicaSets, namespace, name, |rs| {
            if !rs["spec"].is_object() {
                rs["spec"] = serde_json::json!({});
            }
            rs["spec"]["replicas"] = Value::from(replicas);
        })
        .map(|_| ())
    }

    /// Every commit after revision `pos`, of any resource, in revision order (a bounded
    /// batch; read again from the revision it returns).
    pub fn commits_after(&self, pos: u64) -> crate::store::LogRead {
        self.store.commits_after(pos)
    }

    /// The revision of the last committed write.
    pub fn current_revision(&self) -> u64 {
        self.store.current_revision()
    }

    /// Every invariant violation the oracle found.
    pub fn violations(&self) -> Vec<Violation> {
        self.oracle.violations()
    }

    /// What the watches sent so far, per resource and `shardSelector`.
    pub fn watch_traffic(&self) -> Vec<WatchFigures> {
        self.traffic.figures()
    }

    /// What the watches sent so far, per client (`User-Agent`) and resource.
    pub fn watch_traffic_by_client(&self) -> Vec<ClientWatchFigures> {
        self.traffic.by_client()
    }

    /// Every committed write, in revision order.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.oracle.writes()
    }

    /// How many writes were committed.
    pub fn write_count(&self) -> u64 {
        self.oracle.write_count()
    }

    /// The ground truth about every ReplicaSet.
    pub fn replicaset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.oracle.replicaset_truth(&self.store)
    }

    /// The ground truth about every StatefulSet.
    pub fn statefulset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.oracle.statefulset_truth(&self.store)
    }

    /// Stops the listeners, open watches and the kubelet, waiting up to 2 s for them.
    pub async fn shutdown(self) {
        self.shutdown.send_replace(true);
        for t in self.tasks {
            let abort = t.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), t)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}
