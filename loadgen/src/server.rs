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

use crate::admin::{self, AdminState};
use crate::deletion::{DeleteOptions, Deleted};
use crate::faults::Faults;
use crate::handlers::{self, App};
use crate::kubelet::{self, KubeletConfig};
use crate::nodes::{self, LeaseControl};
use crate::oracle::{ReplicaSetTruth, Violation, WriteRecord};
use crate::resource::Resource;
use crate::status::ApiError;
use crate::store::{LOADGEN_USER_AGENT, Preconditions, Store};
use crate::watch::WatchContext;

/// How the server is started.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Address of the API listener (default `127.0.0.1:0`).
    pub listen: SocketAddr,
    /// Address of the admin listener (default `127.0.0.1:0`).
    pub admin_listen: SocketAddr,
    /// How often watches with `allowWatchBookmarks=true` get a bookmark (default 1 s).
    pub bookmark_interval: Duration,
    /// How many revisions of history are kept for watches and snapshots (default 100,000).
    pub compaction_window: u64,
    /// Whether the kubelet emulation runs (default true).
    pub kubelet_enabled: bool,
    /// How long after creation the kubelet makes a Pod Running and Ready (default 300 ms).
    pub kubelet_ready_after: Duration,
    /// How many fake nodes the kubelet binds Pods to (default 3).
    pub node_count: usize,
    /// How long the kubelet takes to stop a Pod given a grace period, at most the grace
    /// period itself (default 200 ms).
    pub pod_termination_after: Duration,
    /// How long a Pod owned by a Job runs before the kubelet makes it Succeeded, or Failed
    /// when it has the annotation `loadgen.tidemark.dev/fail: "true"` (default 1 s).
    pub job_pod_runtime: Duration,
    /// How often each fake node renews its Lease in `kube-node-lease` (default 10 s).
    pub lease_renew_interval: Duration,
    /// Watch delays in force from the start.
    pub watch_delays: Vec<(Resource, Duration)>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        ServerConfig {
            listen: loopback,
            admin_listen: loopback,
            bookmark_interval: Duration::from_secs(1),
            compaction_window: 100_000,
            kubelet_enabled: true,
            kubelet_ready_after: Duration::from_millis(300),
            node_count: 3,
            pod_termination_after: Duration::from_millis(200),
            job_pod_runtime: Duration::from_secs(1),
            lease_renew_interval: Duration::from_secs(10),
            watch_delays: Vec::new(),
        }
    }
}

/// A failure to start the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The fake nodes could not be registered.
    #[error("cannot register the fake nodes: {0}")]
    Bootstrap(#[from] ApiError),
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
    faults: Arc<Faults>,
    leases: Arc<LeaseControl>,
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

fn serve(listener: TcpListener, router: Router, mut stop: watch::Receiver<bool>) -> JoinHandle<()> {
    tokio::spawn(async move {
        let graceful = async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        if let Err(e) = axum::serve(listener, router)
            .with_graceful_shutdown(graceful)
            .await
        {
            tracing::warn!(error = %e, "listener stopped");
        }
    })
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
    let terminations = if config.kubelet_enabled {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = store.terminations.set(tx);
        Some(rx)
    } else {
        None
    };
    let faults = Arc::new(Faults::default());
    for (r, d) in &config.watch_delays {
        faults.set_watch_delay(*r, *d);
    }
    let app = Arc::new(App {
        store: store.clone(),
        watch: WatchContext {
            store: store.clone(),
            faults: faults.clone(),
            bookmark_interval: config.bookmark_interval,
            shutdown: stop.clone(),
        },
    });
    let api = Router::new()
        .fallback(handlers::handle)
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(
            faults.clone(),
            crate::request_faults::layer,
        ));
    let leases = Arc::new(LeaseControl::default());
    let admin = admin::router(AdminState {
        faults: faults.clone(),
        store: store.clone(),
        leases: leases.clone(),
    });
    let mut tasks = vec![
        serve(listener, api, stop.clone()),
        serve(admin_listener, admin, stop.clone()),
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
        faults,
        leases,
        shutdown,
        tasks,
    })
}

impl ApiServer {
    /// The API listener's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The API base URL, e.g. `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
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

    /// A kubeconfig pointing at this server.
    pub fn kubeconfig_yaml(&self) -> String {
        crate::kubeconfig::kubeconfig_yaml(&self.url())
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

    /// The revision of the last committed write.
    pub fn current_revision(&self) -> u64 {
        self.store.current_revision()
    }

    /// Every invariant violation the oracle found.
    pub fn violations(&self) -> Vec<Violation> {
        self.store.violations()
    }

    /// Every committed write, in revision order.
    pub fn writes(&self) -> Vec<WriteRecord> {
        self.store.writes()
    }

    /// How many writes were committed.
    pub fn write_count(&self) -> u64 {
        self.store.write_count()
    }

    /// The ground truth about every ReplicaSet.
    pub fn replicaset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.store.replicaset_truth()
    }

    /// The ground truth about every StatefulSet.
    pub fn statefulset_truth(&self) -> Vec<ReplicaSetTruth> {
        self.store.statefulset_truth()
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
