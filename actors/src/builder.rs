//! The way a library user assembles a manager: their controllers, the built-in ones they want,
//! and the knobs an operator sets, then `start`.

use crate::leader::LeaderElectionConfig;
use crate::manager::{Manager, ManagerConfig, StartError};
use crate::registration::Registration;
use kube::Client;
use tidemark_engine::{ConsistencyMode, FeatureGates};

/// Builds a [`Manager`]. It starts with no controller selected; the engine's protection
/// (tracking every write, parking stale keys, proof before destructive writes, the circuit
/// breaker, metrics) comes with each one.
///
/// ```
/// use tidemark_actors::{Manager, registration::Registration};
/// use tidemark_engine::JobController;
///
/// let builder = Manager::builder()
///     .controller(Registration::new(|| JobController))
///     .built_in("replicaset")
///     .shards(4);
/// assert_eq!(builder.config().controllers, ["job", "replicaset"]);
/// assert_eq!(builder.config().shards, 4);
/// ```
#[derive(Debug, Clone)]
pub struct ManagerBuilder {
    config: ManagerConfig,
}

impl Default for ManagerBuilder {
    fn default() -> Self {
        Self {
            config: ManagerConfig {
                controllers: Vec::new(),
                ..ManagerConfig::default()
            },
        }
    }
}

impl ManagerBuilder {
    /// Registers a controller and runs it.
    pub fn controller(mut self, registration: Registration) -> Self {
        self.select(registration.name());
        self.config.registrations.push(registration);
        self
    }

    /// Runs a built-in controller by its `--controllers` name (`replicaset`, `statefulset`,
    /// `daemonset`, `job`, `nodelifecycle`); an unknown name fails at [`ManagerBuilder::start`].
    pub fn built_in(mut self, name: &str) -> Self {
        self.select(name);
        self
    }

    /// The number of shards (default: one per core).
    pub fn shards(mut self, shards: usize) -> Self {
        self.config.shards = shards.max(1);
        self
    }

    /// Feature gates (`StaleControllerConsistency<Gate>=false` turns a controller's protection
    /// off).
    pub fn gates(mut self, gates: FeatureGates) -> Self {
        self.config.gates = gates;
        self
    }

    /// The protection of every controller whose gate is on.
    pub fn mode(mut self, mode: ConsistencyMode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Leader election through a Lease.
    pub fn leader_election(mut self, election: LeaderElectionConfig) -> Self {
        self.config.leader_election = Some(election);
        self
    }

    /// Anything else, on the configuration itself.
    pub fn configure(mut self, change: impl FnOnce(&mut ManagerConfig)) -> Self {
        change(&mut self.config);
        self
    }

    /// The configuration so far.
    pub fn config(&self) -> &ManagerConfig {
        &self.config
    }

    /// Starts the manager: call inside an actix `System`, with `client` made on the I/O
    /// runtime `io` ([`crate::manager::io_runtime`]).
    pub fn start(self, client: Client, io: &tokio::runtime::Handle) -> Result<Manager, StartError> {
        Manager::start(&self.config, client, io)
    }

    fn select(&mut self, name: &str) {
        if !self.config.controllers.iter().any(|c| c == name) {
            self.config.controllers.push(name.to_string());
        }
    }
}

/// Runs `work` inside an actix `System` (where [`ManagerBuilder::start`] must be called) with the
/// I/O runtime beside it, whose handle `work` gets; then gives the runtime two seconds to stop.
/// Make kube clients on that runtime (`handle.spawn(kube::Client::try_default())`).
pub fn with_runtimes<F, Fut>(work: F) -> std::io::Result<Fut::Output>
where
    F: FnOnce(tokio::runtime::Handle) -> Fut,
    Fut: std::future::Future,
{
    let io = crate::manager::io_runtime()?;
    let output = actix::System::new().block_on(work(io.handle().clone()));
    io.shutdown_timeout(std::time::Duration::from_secs(2));
    Ok(output)
}

impl Manager {
    /// A builder with no controller selected.
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder::default()
    }
}
