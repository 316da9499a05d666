//! What happens at a moment of virtual time, and how a run ends.

use super::election::LeaseWriteOutcome;
use loadgen::store::RequestId;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tidemark_engine::{
    Action, BarrierId, LeaseRecord, LiveReadId, ObjectKey, Resource, ResourceVersion, WriteId,
    WriteResult,
};

/// A read the shard asked for (a barrier or a live read), on its way to the server.
#[derive(Clone, Debug)]
pub enum Read {
    /// The current revision.
    Barrier(BarrierId),
    /// The current versions of these objects.
    Objects(LiveReadId, Vec<(Resource, ObjectKey)>),
}

/// The server's answer to a [`Read`].
#[derive(Clone, Debug)]
pub enum Answer {
    /// The revision read.
    Barrier(BarrierId, u64),
    /// Each object's version (`None`: not found).
    Objects(LiveReadId, Vec<Option<ResourceVersion>>),
}

/// Something that happens at a moment of virtual time.
#[derive(Debug)]
pub enum Event {
    /// A shard's timer (its `next_deadline`) fires.
    Timer {
        /// The shard.
        shard: usize,
        /// The process it belongs to.
        epoch: u64,
        /// The deadline armed.
        at: Instant,
    },
    /// An informer reads its watch.
    Pull {
        /// The informer.
        informer: usize,
        /// The watch connection.
        watch: u64,
    },
    /// A watch batch reaches the informer, which routes it to the shards.
    Deliver {
        /// The informer.
        informer: usize,
        /// The watch connection it came on.
        watch: u64,
        /// The events, in revision order.
        events: Vec<Arc<loadgen::store::Event>>,
        /// Its progress marker.
        progress: Option<u64>,
    },
    /// An informer's list request reaches the server.
    List {
        /// The informer.
        informer: usize,
        /// The list attempt.
        list: u64,
    },
    /// A list's answer reaches the informer.
    Listed {
        /// The informer.
        informer: usize,
        /// The list attempt.
        list: u64,
        /// The objects, decoded.
        objects: Vec<tidemark_engine::Object>,
        /// The list's revision.
        version: u64,
    },
    /// A write reaches the server (the oracle judges Pod writes now).
    WriteArrives {
        /// When it was sent.
        sent: Duration,
        /// The process that sent it.
        epoch: u64,
        /// The shard.
        shard: usize,
        /// Its id.
        id: WriteId,
        /// The write.
        action: Action,
    },
    /// The server commits a write that arrived.
    WriteCommits {
        /// When it was sent.
        sent: Duration,
        /// The process that sent it.
        epoch: u64,
        /// The shard.
        shard: usize,
        /// Its id.
        id: WriteId,
        /// The write.
        action: Action,
        /// Its arrival, for the oracle.
        arrival: Option<RequestId>,
    },
    /// A write's answer reaches the shard.
    WriteAnswered {
        /// The process that sent it.
        epoch: u64,
        /// The shard.
        shard: usize,
        /// Its id.
        id: WriteId,
        /// The answer.
        result: WriteResult,
    },
    /// A read reaches the server.
    ReadArrives {
        /// The process that sent it.
        epoch: u64,
        /// The shard.
        shard: usize,
        /// The read.
        read: Read,
    },
    /// A read's answer reaches the shard.
    ReadAnswered {
        /// The process that sent it.
        epoch: u64,
        /// The shard.
        shard: usize,
        /// The answer.
        answer: Answer,
    },
    /// The kubelet looks at the Pods.
    KubeletTick,
    /// The kubelet starts a Pod.
    PodStarts {
        /// Namespace and name.
        key: (String, String),
        /// Its uid.
        uid: String,
    },
    /// The kubelet removes a terminating Pod.
    PodRemoved {
        /// Namespace and name.
        key: (String, String),
        /// Its uid.
        uid: String,
    },
    /// The user scales a set.
    Scale {
        /// Which set.
        set: usize,
        /// To how many.
        replicas: i32,
    },
    /// The user gives a set a new image (a StatefulSet or DaemonSet rolls).
    Roll {
        /// Which set.
        set: usize,
    },
    /// A new Node joins (DaemonSets place a Pod on it).
    NodeJoins,
    /// The kubelet of a Node stops renewing its Lease.
    NodeSilent {
        /// Which Node (by index).
        node: usize,
        /// For how long; `None`: for good.
        until: Option<Duration>,
    },
    /// The kubelet of a silent Node is back: it renews its Lease and reports Ready.
    NodeBack {
        /// Which Node.
        node: usize,
    },
    /// Every Node whose kubelet is alive renews its Lease.
    Heartbeat,
    /// A Job's running Pod succeeds.
    PodFinishes {
        /// Namespace and name.
        key: (String, String),
        /// Its uid.
        uid: String,
    },
    /// The process reads its Lease and writes what its elector decides.
    ElectionRound {
        /// The process.
        epoch: u64,
    },
    /// A Lease write reaches the server.
    LeaseWriteArrives {
        /// The process.
        epoch: u64,
        /// The record written.
        record: LeaseRecord,
        /// A create (no Lease yet), else an update.
        create: bool,
        /// When it was sent, on the process's clock.
        sent_at: Instant,
        /// When it was sent, in virtual time.
        sent: Duration,
    },
    /// A Lease write's answer reaches the elector.
    LeaseWriteAnswered {
        /// The process.
        epoch: u64,
        /// The record written.
        record: LeaseRecord,
        /// What became of it.
        outcome: LeaseWriteOutcome,
        /// When it was sent.
        sent_at: Instant,
    },
    /// The fence of process `epoch` has reached its end, unless renewed since.
    FenceCloses {
        /// The process.
        epoch: u64,
    },
    /// The aimed race: the user changes set `set` while its plan runs, and the watch that would
    /// tell of it ends with `410`.
    RelistRace {
        /// The set's name.
        set: String,
    },
    /// The process crashes: every shard and cache is lost.
    Crash,
    /// The process starts (again): new shards, every cache listed.
    Start,
    /// Faults stop.
    FaultsEnd,
    /// Liveness: have all sets converged?
    Check,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Every set converged after the faults stopped.
    Converged,
    /// The oracle found a violation.
    Violated,
    /// A process wrote while the Lease named another.
    SplitLeadership(Vec<String>),
    /// Node lifecycle marked a Node whose Lease had been renewed within the grace period.
    LiveNodeMarked(Vec<String>),
    /// Sets not converged within the bound after faults stopped.
    NotConverged(Vec<String>),
    /// The run did not end within its event budget.
    Runaway,
}
