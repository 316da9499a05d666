//! What the store tells those who observe its commits: each committed write in revision order,
//! under the write lock, with the request it belongs to.

use serde::Serialize;
use serde_json::Value;

use crate::resource::Resource;

/// The verb of a committed write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verb {
    /// POST.
    Create,
    /// PUT of the main resource.
    Update,
    /// PUT of the `/status` subresource.
    UpdateStatus,
    /// DELETE.
    Delete,
}

/// A number an observer gave a request when it reached the server, carried to every commit the
/// request makes (see [`during`]), so the observer can tie the commit to what it saw arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

/// One committed write.
#[derive(Debug, Clone, Copy)]
pub struct Commit<'a> {
    /// The revision it committed at.
    pub revision: u64,
    /// What kind of write.
    pub verb: Verb,
    /// The resource written.
    pub resource: Resource,
    /// The object before (absent for a create).
    pub prev: Option<&'a Value>,
    /// The object after (absent for a removal).
    pub new: Option<&'a Value>,
    /// The client's `User-Agent`.
    pub user_agent: Option<&'a str>,
    /// The request it is part of, if one was named with [`during`] or [`sync_scope`].
    pub request: Option<RequestId>,
}

/// Sees every commit, in revision order, while the store's write lock is held: what it records
/// is exact at each revision, and it must not call back into the store.
pub trait CommitObserver: Send {
    /// `commit` has just been made.
    fn committed(&mut self, commit: &Commit<'_>);
}

tokio::task_local! {
    static CURRENT: RequestId;
}

/// The request whose handler is running on this task, if one was named.
pub fn current() -> Option<RequestId> {
    CURRENT.try_with(|id| *id).ok()
}

/// Runs `handler` (the rest of a request's handling) as request `id`: its commits carry it.
pub async fn during<F: std::future::Future>(id: RequestId, handler: F) -> F::Output {
    CURRENT.scope(id, handler).await
}

/// Runs `commit` as request `id`, for a synchronous caller (the deterministic simulation, which
/// has no tokio task per request).
pub fn sync_scope<R>(id: RequestId, commit: impl FnOnce() -> R) -> R {
    CURRENT.sync_scope(id, commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_is_named_only_inside_its_scope() {
        assert_eq!(current(), None);
        assert_eq!(
            during(RequestId(7), async { current() }).await,
            Some(RequestId(7))
        );
        assert_eq!(sync_scope(RequestId(8), current), Some(RequestId(8)));
        assert_eq!(current(), None);
    }
}
