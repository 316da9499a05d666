//! How the simulated API server is started: addresses, the kubelet emulation, history, and the
//! faults in force from the start.

use std::net::SocketAddr;
use std::time::Duration;

use crate::resource::Resource;

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
    /// Serve plain HTTP with no authentication or authorization, as the insecure port of old
    /// (default false: HTTPS, credentials required, RBAC enforced).
    pub plain_http: bool,
    /// More names or addresses for the serving certificate (loopback is always in it).
    pub extra_hosts: Vec<String>,
    /// The `ShardedListAndWatch` feature gate (KEP-5866, default on): off, `shardSelector` is
    /// ignored and lists carry no `shardInfo`, as on a server without the feature.
    pub sharded_list_and_watch: bool,
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
            plain_http: false,
            extra_hosts: Vec::new(),
            sharded_list_and_watch: true,
        }
    }
}
