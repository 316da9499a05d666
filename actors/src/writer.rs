//! The writer: performs a shard's writes on the I/O runtime under the client-side rate limit,
//! and feeds each answer (with the returned resourceVersion) back to the shard.

use crate::errors::classify;
use crate::events::{EventRecorder, kcm::Outcome};
use crate::fence::Fence;
use crate::paths::{collection, with_server_timeout};
use crate::rate_limit::TokenBucket;
use crate::server_revision::ServerRevision;
use crate::shard_actor::{Outgoing, ShardActor, ToWriter, WriteDone};
use actix::Addr;
use ahash::AHashMap;
use kube::Client;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::Request;
use parking_lot::Mutex;
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tidemark_engine::{
    Action, ActionClass, ResourceVersion, WriteError, WriteErrorKind, WriteId, WriteResult,
};
use tokio::sync::{mpsc, oneshot};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaOnly {
    metadata: VersionOnly,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VersionOnly {
    #[serde(default)]
    name: String,
    #[serde(default)]
    resource_version: String,
}

/// A write's result and the name of the object written (the server completes `generateName`),
/// which its Event names.
struct Performed {
    result: WriteResult,
    name: Option<String>,
}

impl From<WriteResult> for Performed {
    fn from(result: WriteResult) -> Self {
        Self { result, name: None }
    }
}

fn written(meta: MetaOnly) -> Performed {
    Performed {
        result: WriteResult::Written {
            resource_version: meta.metadata.resource_version,
        },
        name: Some(meta.metadata.name).filter(|n| !n.is_empty()),
    }
}

/// Counts of what the writers did, for the status line and the summary.
#[derive(Debug, Default)]
pub struct WriteCounters {
    /// Writes sent.
    pub sent: AtomicU64,
    /// Writes that failed (conflicts among them).
    pub failed: AtomicU64,
    /// Writes the server refused because the object was not as the decision saw it
    /// ([`WriteErrorKind::is_conflict`]).
    pub conflicts: AtomicU64,
    /// Writes answered (successfully or not).
    pub finished: AtomicU64,
    /// Writes refused by the fence (not leader).
    pub fenced: AtomicU64,
    /// Set at shutdown: writes not sent yet are abandoned.
    pub stopping: std::sync::atomic::AtomicBool,
}

impl WriteCounters {
    /// Writes sent and not answered yet.
    pub fn in_flight(&self) -> u64 {
        self.sent
            .load(Ordering::Relaxed)
            .saturating_sub(self.finished.load(Ordering::Relaxed))
    }
}

/// What every shard's writer shares: the client, the rate limit, the counters.
#[derive(Clone)]
pub struct WriterPool {
    client: Client,
    limiter: Arc<TokenBucket>,
    counters: Arc<WriteCounters>,
    fence: Arc<Fence>,
    io: tokio::runtime::Handle,
    deadline: Option<Duration>,
    events: Option<Arc<EventRecorder>>,
    server_revision: Arc<ServerRevision>,
}

impl WriterPool {
    /// A pool writing through `client` on the runtime `io`, sending only while `fence` allows.
    pub fn new(
        client: Client,
        limiter: Arc<TokenBucket>,
        fence: Arc<Fence>,
        io: tokio::runtime::Handle,
    ) -> Self {
        Self {
            client,
            limiter,
            counters: Arc::default(),
            fence,
            io,
            deadline: None,
            events: None,
            server_revision: Arc::default(),
        }
    }

    /// Every write answered records its Event (as kube-controller-manager's pod control does).
    pub fn with_events(mut self, events: Arc<EventRecorder>) -> Self {
        self.events = Some(events);
        self
    }

    /// Every revision a write is answered with is also learned into `server_revision`, for
    /// every shard.
    pub fn with_server_revision(mut self, server_revision: Arc<ServerRevision>) -> Self {
        self.server_revision = server_revision;
        self
    }

    /// Every write carries `deadline` as its `timeout` and fails (outcome unknown) when no
    /// answer comes within it: a leader's late write cannot commit after a successor took over.
    pub fn with_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// The counters.
    pub fn counters(&self) -> Arc<WriteCounters> {
        self.counters.clone()
    }

    /// Starts the writer of one shard; the returned sender takes its write requests and
    /// withdrawals. Each write takes its rate-limit token in the order it came; one that must
    /// wait for it can be withdrawn until then, and then hands its token back.
    pub fn spawn(&self, shard: Addr<ShardActor>) -> mpsc::UnboundedSender<ToWriter> {
        let (tx, mut rx) = mpsc::unbounded_channel::<ToWriter>();
        let pool = self.clone();
        let waiting = Arc::new(Waiting::default());
        self.io.spawn(async move {
            while let Some(input) = rx.recv().await {
                let Outgoing { request, owner_uid } = match input {
                    ToWriter::Write(outgoing) => outgoing,
                    ToWriter::Withdraw(ids) => {
                        waiting.withdraw(&ids);
                        continue;
                    }
                };
                let pool = pool.clone();
                let shard = shard.clone();
                let reservation = pool.limiter.reservation();
                let withdrawn = (!reservation.is_due()).then(|| waiting.add(request.id));
                let waiting = waiting.clone();
                tokio::spawn(async move {
                    if let Some(withdrawn) = withdrawn {
                        let came = tokio::select! {
                            biased;
                            _ = withdrawn => false,
                            () = reservation.wait() => waiting.take(request.id),
                        };
                        if !came {
                            pool.limiter.cancel(reservation);
                            tracing::debug!(controller = request.controller, key = %request.owner, verb = request.action.verb(), "plan superseded: write withdrawn before it was sent");
                            shard.do_send(WriteDone {
                                id: request.id,
                                result: WriteResult::Withdrawn,
                            });
                            return;
                        }
                    }
                    if pool.counters.stopping.load(Ordering::Relaxed) {
                        tracing::debug!(key = %request.owner, verb = request.action.verb(), "shutting down: write not sent");
                        return;
                    }
                    let namespace = request.action.namespace();
                    if !pool.fence.allows_in(namespace, std::time::Instant::now()) {
                        pool.counters.fenced.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(controller = request.controller, key = %request.owner, verb = request.action.verb(), "not leader of the object (fence closed): write not sent");
                        shard.do_send(WriteDone {
                            id: request.id,
                            result: WriteResult::Failed(WriteError {
                                kind: WriteErrorKind::Fenced,
                                message: "not leader of the object's range: the write fence is closed"
                                    .into(),
                            }),
                        });
                        return;
                    }
                    if request.action.class() == ActionClass::Destructive {
                        tracing::info!(controller = request.controller, key = %request.owner, verb = request.action.verb(), resource = %request.action.resource(), "destructive action");
                    }
                    pool.counters.sent.fetch_add(1, Ordering::Relaxed);
                    let performed =
                        perform_named(&pool.client, &request.action, pool.deadline).await;
                    let result = performed.result;
                    // A version that is not a revision teaches nothing.
                    if let WriteResult::Written { resource_version } = &result
                        && let Ok(revision) = ResourceVersion::parse(resource_version)
                    {
                        pool.server_revision.learn(revision);
                    }
                    pool.counters.finished.fetch_add(1, Ordering::Relaxed);
                    if let Some(events) = &pool.events {
                        let outcome = match &result {
                            WriteResult::Failed(e) => Outcome::Failed(e),
                            _ => Outcome::Done(performed.name.as_deref()),
                        };
                        events.write_outcome(
                            request.controller,
                            &request.owner,
                            owner_uid.as_ref(),
                            &request.action,
                            outcome,
                        );
                    }
                    if let WriteResult::Failed(e) = &result {
                        pool.counters.failed.fetch_add(1, Ordering::Relaxed);
                        if e.kind.is_conflict() {
                            pool.counters.conflicts.fetch_add(1, Ordering::Relaxed);
                        }
                        tracing::warn!(controller = request.controller, key = %request.owner, verb = request.action.verb(), error = %e, "write failed");
                    } else {
                        tracing::debug!(controller = request.controller, key = %request.owner, verb = request.action.verb(), ?result, "write done");
                    }
                    shard.do_send(WriteDone { id: request.id, result });
                });
            }
        });
        tx
    }
}

/// The writes of one shard that wait for their rate-limit token, each with the way to tell it
/// that it is withdrawn.
#[derive(Default)]
struct Waiting(Mutex<AHashMap<WriteId, oneshot::Sender<()>>>);

impl Waiting {
    /// `id` waits; the receiver fires if it is withdrawn.
    fn add(&self, id: WriteId) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        self.0.lock().insert(id, tx);
        rx
    }

    /// `id`'s token came: whether it is still to be sent (not withdrawn meanwhile).
    fn take(&self, id: WriteId) -> bool {
        self.0.lock().remove(&id).is_some()
    }

    /// Withdraws those of `ids` that still wait (the others were sent, or never waited).
    fn withdraw(&self, ids: &[WriteId]) {
        let mut waiting = self.0.lock();
        for id in ids {
            if let Some(tx) = waiting.remove(id) {
                let _ = tx.send(());
            }
        }
    }
}

fn invalid(message: String) -> WriteResult {
    WriteResult::Failed(WriteError {
        kind: WriteErrorKind::Invalid,
        message,
    })
}

/// Performs one write and classifies the answer; with a `deadline`, the API server is asked to
/// give up after it (`?timeout=`) and the client stops waiting shortly after.
pub async fn perform(client: &Client, action: &Action, deadline: Option<Duration>) -> WriteResult {
    perform_named(client, action, deadline).await.result
}

async fn perform_named(client: &Client, action: &Action, deadline: Option<Duration>) -> Performed {
    let Some(deadline) = deadline else {
        return perform_untimed(client, action, None).await;
    };
    let grace = Duration::from_millis(250);
    match tokio::time::timeout(
        deadline + grace,
        perform_untimed(client, action, Some(deadline)),
    )
    .await
    {
        Ok(performed) => performed,
        Err(_) => WriteResult::Failed(WriteError {
            kind: WriteErrorKind::Transport,
            message: format!("no answer within the write deadline of {deadline:?}"),
        })
        .into(),
    }
}

async fn perform_untimed(
    client: &Client,
    action: &Action,
    deadline: Option<Duration>,
) -> Performed {
    match action {
        Action::Create {
            resource,
            namespace,
            body,
        } => {
            let path = collection(*resource, Some(namespace));
            send_object(client, body, deadline, |bytes| {
                Request::new(path).create(&PostParams::default(), bytes)
            })
            .await
        }
        Action::UpdateStatus {
            resource,
            key,
            body,
        } => {
            let path = collection(*resource, Some(key.namespace()));
            send_object(client, body, deadline, |bytes| {
                Request::new(path).replace_subresource(
                    "status",
                    key.name(),
                    &PostParams::default(),
                    bytes,
                )
            })
            .await
        }
        Action::Patch {
            resource,
            key,
            patch,
        } => send_patch(client, *resource, key, &Patch::Merge(patch), deadline).await,
        Action::StrategicPatch {
            resource,
            key,
            patch,
        } => send_patch(client, *resource, key, &Patch::Strategic(patch), deadline).await,
        Action::Delete { resource, key, uid } => {
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid.to_string()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            let request = match Request::new(collection(*resource, Some(key.namespace())))
                .delete(key.name(), &params)
            {
                Ok(r) => r,
                Err(e) => return invalid(e.to_string()).into(),
            };
            match client
                .request_text(with_server_timeout(request, deadline))
                .await
            {
                Ok(_) => WriteResult::Deleted.into(),
                Err(e) => WriteResult::Failed(classify(&e)).into(),
            }
        }
    }
}

/// PATCHes `key` and reads back the version.
async fn send_patch(
    client: &Client,
    resource: tidemark_engine::Resource,
    key: &tidemark_engine::ObjectKey,
    patch: &Patch<&serde_json::Value>,
    deadline: Option<Duration>,
) -> Performed {
    let path = collection(resource, Some(key.namespace()));
    let request = match Request::new(path).patch(key.name(), &PatchParams::default(), patch) {
        Ok(r) => r,
        Err(e) => return invalid(e.to_string()).into(),
    };
    match client
        .request::<MetaOnly>(with_server_timeout(request, deadline))
        .await
    {
        Ok(meta) => written(meta),
        Err(e) => WriteResult::Failed(classify(&e)).into(),
    }
}

/// Serialises `body`, builds the request with `build`, sends it and reads back the version.
async fn send_object(
    client: &Client,
    body: &serde_json::Value,
    deadline: Option<Duration>,
    build: impl FnOnce(Vec<u8>) -> Result<http::Request<Vec<u8>>, kube::core::request::Error>,
) -> Performed {
    let request = serde_json::to_vec(body)
        .map_err(|e| e.to_string())
        .and_then(|bytes| build(bytes).map_err(|e| e.to_string()));
    let request = match request {
        Ok(r) => r,
        Err(e) => return invalid(e).into(),
    };
    match client
        .request::<MetaOnly>(with_server_timeout(request, deadline))
        .await
    {
        Ok(meta) => written(meta),
        Err(e) => WriteResult::Failed(classify(&e)).into(),
    }
}
