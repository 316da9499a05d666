//! The HTTP/2 counterpart of HTTP/1's header-read deadline: a connection on which no request
//! is open and none has begun for the deadline is closed.
//!
//! hyper's HTTP/2 server has no header-read timeout, and the idle deadline counts any byte: a
//! client that sends PING frames, or a HEADERS frame a byte at a time, keeps a connection (and
//! one of the listener's slots) forever without ever asking for anything. A request counts from
//! the moment its headers are complete (the service is called) until its response is handed
//! back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::activity::Activity;

/// The requests of one connection, as the service sees them.
pub(crate) struct Requests {
    open: AtomicUsize,
    /// When a request last began or ended.
    changed: Activity,
}

impl Requests {
    pub(crate) fn new() -> Self {
        Self {
            open: AtomicUsize::new(0),
            changed: Activity::new(),
        }
    }

    /// A request's headers arrived; it is open until the guard drops.
    pub(crate) fn begin(&self) -> OpenRequest<'_> {
        self.open.fetch_add(1, Ordering::Relaxed);
        self.changed.touch();
        OpenRequest(self)
    }

    /// Resolves once no request has been open, nor begun, for `deadline`.
    pub(crate) async fn unused_for(&self, deadline: Duration) {
        loop {
            if self.open.load(Ordering::Relaxed) > 0 {
                tokio::time::sleep(deadline).await;
                continue;
            }
            let at = self.changed.deadline(deadline);
            if Instant::now() >= at {
                return;
            }
            tokio::time::sleep_until(at).await;
        }
    }
}

/// An open request; it ends when dropped (answered, or its future cancelled).
pub(crate) struct OpenRequest<'a>(&'a Requests);

impl Drop for OpenRequest<'_> {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
        self.0.changed.touch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_connection_without_requests_is_unused_after_the_deadline() {
        let requests = Requests::new();
        let started = Instant::now();
        requests.unused_for(Duration::from_secs(10)).await;
        assert!(started.elapsed() >= Duration::from_secs(10));
    }

    #[tokio::test(start_paused = true)]
    async fn an_open_request_keeps_the_connection_in_use() {
        let requests = std::sync::Arc::new(Requests::new());
        let held = requests.clone();
        let open = tokio::spawn(async move {
            let _open = held.begin();
            tokio::time::sleep(Duration::from_secs(30)).await;
        });
        tokio::task::yield_now().await;
        let started = Instant::now();
        requests.unused_for(Duration::from_secs(10)).await;
        assert!(started.elapsed() >= Duration::from_secs(30));
        open.await.expect("the request task");
    }
}
