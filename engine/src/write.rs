//! Writes between a shard and its writer: the request, and what the API server answered.

use crate::action::Action;
use crate::key::ObjectKey;

/// Identifies one write of one shard.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriteId(pub u64);

/// A write the shard wants done.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteRequest {
    /// Answer with this id.
    pub id: WriteId,
    /// The controller that asked.
    pub controller: &'static str,
    /// The key whose reconcile asked.
    pub owner: ObjectKey,
    /// The write.
    pub action: Action,
}

/// How the API server classified a failed write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WriteErrorKind {
    /// 409 Conflict: the cached resourceVersion was stale.
    Conflict,
    /// 409 AlreadyExists.
    AlreadyExists,
    /// 404 NotFound.
    NotFound,
    /// 400/422: the request is wrong; retrying it unchanged will not help.
    Invalid,
    /// 429, or the client-side rate limiter refused.
    Throttled,
    /// 5xx.
    Server,
    /// The connection failed or timed out: the write may or may not have been applied.
    Transport,
    /// Not sent: this process is not (or no longer provably) the leader.
    Fenced,
}

impl WriteErrorKind {
    /// Whether the write may have been applied although it failed: the connection broke or
    /// the server answered 5xx (a `504` says it "may still be processing the request").
    pub fn outcome_unknown(self) -> bool {
        matches!(self, WriteErrorKind::Transport | WriteErrorKind::Server)
    }

    /// Whether the server refused the write because the object is not as the decision saw it
    /// (409 Conflict or AlreadyExists, 404 NotFound): optimistic concurrency at work, which
    /// the next decision settles, not a server failing.
    pub fn is_conflict(self) -> bool {
        matches!(
            self,
            WriteErrorKind::Conflict | WriteErrorKind::AlreadyExists | WriteErrorKind::NotFound
        )
    }
}

/// A failed write.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct WriteError {
    /// The class.
    pub kind: WriteErrorKind,
    /// The server's message.
    pub message: String,
}

/// The answer to a [`WriteRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteResult {
    /// Created or updated; the resourceVersion the server returned (as sent, maybe not comparable).
    Written {
        /// `metadata.resourceVersion` of the returned object.
        resource_version: String,
    },
    /// Deleted (or already gone).
    Deleted,
    /// Not sent: the shard withdrew it ([`Output::Withdraw`](crate::shard::Output::Withdraw))
    /// while it waited for the client-side rate limit, because the plan it belonged to was
    /// superseded. The server never saw it.
    Withdrawn,
    /// Failed.
    Failed(WriteError),
}
