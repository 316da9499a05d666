//! `tidemark run`'s flags: Tidemark's own and kube-controller-manager's, so an operator's
//! existing `kube-controller-manager` command line runs unchanged after `tidemark run`.

use super::go_duration::{parse_duration_or_seconds, parse_go_duration};
use super::logging::LogFormat;
use super::not_run_flags::NotRunFlags;
use super::upstream_values::{PROTOBUF, parse_content_type, parse_resource_lock};
use clap::Parser;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tidemark_engine::labels::LabelSelector;
use tidemark_engine::parse_go_bool;

/// `tidemark run`. Derives `Parser` so tests can call `RunArgs::try_parse_from`; the binary uses
/// it as the `run` subcommand. Durations are Go durations (`1m0s`, `250ms`, `1.5s`, `0`), booleans
/// Go booleans (`--leader-elect=True`, `=1`, `=f`).
#[derive(Parser, Clone, Debug, PartialEq)]
#[command(name = "run", about = "Run the controller manager")]
pub struct RunArgs {
    /// Kubeconfig file (default: in-cluster config or $KUBECONFIG / ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL; overrides the kubeconfig's server, as upstream.
    #[arg(long)]
    pub master: Option<String>,
    /// Run against an embedded simulated API server with a demo workload.
    #[arg(long)]
    pub embedded: bool,
    /// Controllers, as kube-controller-manager reads the list: `*` all (replicaset, statefulset,
    /// daemonset, job, nodelifecycle), `name` enables, `-name` disables; upstream names
    /// (`replicaset-controller`, ...) work too. Upstream controllers Tidemark does not run may be
    /// disabled, or listed next to `*`.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// Number of shards, the unit of parallelism (default: the number of cores).
    #[arg(long)]
    pub shards: Option<usize>,
    /// Feature gates, e.g. StaleControllerConsistency=false or AllBeta=false (Go booleans).
    #[arg(long, default_value = "")]
    pub feature_gates: String,
    /// The stale-cache protection of every controller whose gate is on: tidemark (the
    /// default), or a baseline to compare with: upstream-1.36 (KEP-5647 as
    /// kube-controller-manager implements it: expectations, written versions checked, stale
    /// keys requeued rate-limited), upstream-1.35 (ControllerExpectations only) or naive (none).
    /// A controller whose StaleControllerConsistency gate is off runs naive.
    #[arg(long, default_value = "tidemark", value_parser = parse_mode)]
    pub consistency_mode: tidemark_engine::ConsistencyMode,
    /// Client-side QPS to the API server.
    #[arg(long, default_value_t = 20.0)]
    pub kube_api_qps: f32,
    /// Client-side burst to the API server.
    #[arg(long, default_value_t = 30)]
    pub kube_api_burst: u32,
    /// Content type asked of the API server: application/vnd.kubernetes.protobuf (upstream's
    /// default) reads Pods in protobuf, with JSON for every other resource and whenever the
    /// server answers in JSON; application/json reads everything as JSON.
    #[arg(long, default_value = PROTOBUF, value_parser = parse_content_type)]
    pub kube_api_content_type: String,
    /// Stop after this long: a Go duration (`90s`, `5m`) or whole seconds (default: run until
    /// SIGTERM or Ctrl-C; 60s with --embedded).
    #[arg(long, value_parser = parse_duration_or_seconds)]
    pub duration: Option<Duration>,
    /// Plain-HTTP /metrics, /healthz, /readyz and /livez, for --embedded only (default there
    /// 127.0.0.1:9464); `0` disables. Against a cluster the secure port serves them.
    #[arg(long)]
    pub metrics_addr: Option<String>,
    /// Write the summary as JSON here.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
    /// Embedded mode: how many ReplicaSets to seed.
    #[arg(long, default_value_t = 10)]
    pub demo_replicasets: usize,
    /// Embedded mode: the Pod watch delay of the simulated API server, in milliseconds.
    #[arg(long, default_value_t = 3000)]
    pub demo_pod_watch_delay_ms: u64,
    /// Node lifecycle: how long a node Lease may stay unchanged before the Node is marked.
    #[arg(long, default_value = "40s", value_parser = parse_go_duration)]
    pub node_monitor_grace_period: Duration,
    /// Node lifecycle marks only the Nodes this label selector selects (`kubectl -l` syntax,
    /// e.g. `pool=canary`), so a canary can manage a labelled pool while kube-controller-manager
    /// keeps the rest; the default, empty, selects every Node.
    #[arg(long, default_value = "", value_parser = LabelSelector::parse)]
    pub node_selector: LabelSelector,
    /// Node lifecycle: Nodes per second per zone tainted `NoExecute` (their Pods evicted) in a
    /// healthy zone, and in a fully disrupted one beside healthy ones.
    #[arg(long, default_value_t = 0.1, value_parser = non_negative_rate)]
    pub node_eviction_rate: f64,
    /// Node lifecycle: the same in a partially disrupted zone of more than
    /// --large-cluster-size-threshold Nodes (a smaller one stops).
    #[arg(long, default_value_t = 0.01, value_parser = non_negative_rate)]
    pub secondary_node_eviction_rate: f64,
    /// Node lifecycle: the fraction of a zone's Nodes not Ready (more than two) that makes it
    /// partially disrupted.
    #[arg(long, default_value_t = 0.55, value_parser = non_negative_rate)]
    pub unhealthy_zone_threshold: f64,
    /// Node lifecycle: a zone of at most this many Nodes stops tainting when partially
    /// disrupted.
    #[arg(long, default_value_t = 50)]
    pub large_cluster_size_threshold: u32,
    /// How long a graceful shutdown waits for the writes in flight.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration)]
    pub shutdown_grace_period: Duration,
    /// Accepted for compatibility; concurrency is per shard (--shards), so the value is recorded
    /// and sets nothing.
    #[arg(long, default_value_t = 5)]
    pub concurrent_replicaset_syncs: u32,
    /// Accepted for compatibility; concurrency is per shard (--shards), so the value is recorded
    /// and sets nothing.
    #[arg(long, default_value_t = 5)]
    pub concurrent_statefulset_syncs: u32,
    /// Accepted for compatibility; concurrency is per shard (--shards), so the value is recorded
    /// and sets nothing.
    #[arg(long, default_value_t = 2)]
    pub concurrent_daemonset_syncs: u32,
    /// Accepted for compatibility; concurrency is per shard (--shards), so the value is recorded
    /// and sets nothing.
    #[arg(long, default_value_t = 5)]
    pub concurrent_job_syncs: u32,
    /// Accepted; every controller uses the --kubeconfig identity (no per-controller service
    /// accounts).
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool)]
    pub use_service_account_credentials: bool,

    /// Leader election through a Lease (default: on against a cluster, off with --embedded).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_go_bool, help_heading = "Leader election")]
    pub leader_elect: Option<bool>,
    /// The lock kind: only `leases`.
    #[arg(long, default_value = "leases", value_parser = parse_resource_lock, help_heading = "Leader election")]
    pub leader_elect_resource_lock: String,
    /// Namespace of the leader election Lease.
    #[arg(long, default_value = "kube-system", help_heading = "Leader election")]
    pub leader_elect_resource_namespace: String,
    /// Name of the leader election Lease (upstream's is kube-controller-manager; Tidemark's stays
    /// tidemark so both can run side by side).
    #[arg(long, default_value = "tidemark", help_heading = "Leader election")]
    pub leader_elect_resource_name: String,
    /// This process's identity in the Lease (default: host name and a random suffix).
    #[arg(long, help_heading = "Leader election")]
    pub leader_elect_identity: Option<String>,
    /// How long a non-leader waits on an unchanged Lease before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_go_duration, help_heading = "Leader election")]
    pub leader_elect_lease_duration: Duration,
    /// How long a leader may act after sending its last successful renewal.
    #[arg(long, default_value = "10s", value_parser = parse_go_duration, help_heading = "Leader election")]
    pub leader_elect_renew_deadline: Duration,
    /// How often the Lease is read and renewed.
    #[arg(long, default_value = "2s", value_parser = parse_go_duration, help_heading = "Leader election")]
    pub leader_elect_retry_period: Duration,
    /// Writers check the leader fence before every write. Turning it off is unsafe and exists
    /// only to show, in the leader scenario, the double leadership it prevents.
    #[arg(long, default_value = "true", action = clap::ArgAction::Set, value_parser = parse_go_bool, help_heading = "Leader election")]
    pub leader_elect_fencing: bool,
    /// Scale-out: replicas split the namespaces into 64 ranges, each held through a Lease
    /// (`<resource-name>-range-NN` in --scale-out-lease-namespace), and each lists, watches (KEP-5866
    /// `shardSelector`) and writes only its ranges' objects. Needs --leader-elect; every
    /// replica runs with the same flags, and how many there are is found through the Leases.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool, help_heading = "Leader election")]
    pub scale_out: bool,
    /// The namespace of the range and membership Leases under --scale-out (a namespace of their
    /// own: the replicas may replace any Lease in it).
    #[arg(
        long,
        default_value = "tidemark-ranges",
        help_heading = "Leader election"
    )]
    pub scale_out_lease_namespace: String,

    /// Log format (upstream's --logging-format; --log-format is an alias).
    #[arg(long, visible_alias = "log-format", value_enum, default_value_t = LogFormat::Text, help_heading = "Logging")]
    pub logging_format: LogFormat,
    /// klog verbosity mapped onto log levels (RUST_LOG, when set, wins): 0-1 info from
    /// tidemark_actors and warn from dependencies; 2-3 debug from the tidemark crates; 4-5 trace
    /// from the tidemark crates and info from kube; 6 and up trace from everything, kube's and
    /// hyper's request logs included.
    #[arg(short = 'v', long = "v", default_value_t = 0, help_heading = "Logging")]
    pub v: u8,

    /// Secure serving: the address to listen on.
    #[arg(long, default_value = "0.0.0.0", help_heading = "Secure serving")]
    pub bind_address: IpAddr,
    /// Secure serving: the HTTPS port; 0 disables it.
    #[arg(long, default_value_t = 10257, help_heading = "Secure serving")]
    pub secure_port: u16,
    /// Secure serving: the PEM certificate.
    #[arg(long, help_heading = "Secure serving")]
    pub tls_cert_file: Option<PathBuf>,
    /// Secure serving: the PEM certificate's key.
    #[arg(long, help_heading = "Secure serving")]
    pub tls_private_key_file: Option<PathBuf>,
    /// Authentication: client certificates this CA signed authenticate on the secure port
    /// (subject CN the user, O the groups).
    #[arg(long, help_heading = "Authentication and authorization")]
    pub client_ca_file: Option<PathBuf>,
    /// Authentication: the front proxy's CA. Accepted; not used for authentication here.
    #[arg(long, help_heading = "Authentication and authorization")]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Authentication: kubeconfig for TokenReviews (default: --kubeconfig).
    #[arg(long, help_heading = "Authentication and authorization")]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// Authentication: do not look up the cluster's authentication configuration.
    #[arg(long, num_args = 0..=1, default_value = "false", default_missing_value = "true", value_parser = parse_go_bool, help_heading = "Authentication and authorization")]
    pub authentication_skip_lookup: bool,
    /// Authorization: kubeconfig for SubjectAccessReviews (default: --kubeconfig).
    #[arg(long, help_heading = "Authentication and authorization")]
    pub authorization_kubeconfig: Option<PathBuf>,
    /// Authorization: paths served without authorization.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez",
        help_heading = "Authentication and authorization"
    )]
    pub authorization_always_allow_paths: Vec<String>,

    /// Flags for controllers Tidemark does not run.
    #[command(flatten)]
    pub not_run: NotRunFlags,
}

impl RunArgs {
    /// Whether leader election runs: `--leader-elect` if given, else on unless `--embedded`.
    pub fn leader_elect_on(&self) -> bool {
        self.leader_elect.unwrap_or(!self.embedded)
    }

    /// Where secure serving listens; `None` with `--secure-port 0`.
    pub fn secure_serving_addr(&self) -> Option<SocketAddr> {
        (self.secure_port != 0).then_some(SocketAddr::new(self.bind_address, self.secure_port))
    }

    /// `--authentication-kubeconfig`, falling back to `--kubeconfig` as upstream.
    pub fn effective_authentication_kubeconfig(&self) -> Option<&Path> {
        self.authentication_kubeconfig
            .as_deref()
            .or(self.kubeconfig.as_deref())
    }

    /// `--authorization-kubeconfig`, falling back to `--kubeconfig` as upstream.
    pub fn effective_authorization_kubeconfig(&self) -> Option<&Path> {
        self.authorization_kubeconfig
            .as_deref()
            .or(self.kubeconfig.as_deref())
    }

    /// What an operator coming from kube-controller-manager should know at start-up: flags
    /// accepted whose upstream meaning does not hold here.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.use_service_account_credentials {
            warnings.push(
                "--use-service-account-credentials: every controller uses the --kubeconfig identity"
                    .to_string(),
            );
        }
        warnings
    }
}

fn parse_mode(text: &str) -> Result<tidemark_engine::ConsistencyMode, String> {
    text.parse()
        .map_err(|e: tidemark_engine::UnknownMode| e.to_string())
}

/// A rate or fraction flag: a finite number, zero or more.
fn non_negative_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("{v} is not a finite number of zero or more")),
        Err(e) => Err(e.to_string()),
    }
}
