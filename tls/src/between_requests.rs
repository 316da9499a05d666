//! The HTTP/2 counterpart of HTTP/1's header-read deadline: a connection on which no request
//! is open and none has begun for the deadline is closed.
//!
//! hyper's HTTP/2 server has no header-read timeout, and the idle deadline counts any byte: a
//! client that sends PING frames, or a HEADERS frame a byte at a time, keeps a connection (and
//! one of the listener's slots) forever without ever asking for anything. A request counts from
//! the moment its headers are complete (the service is called) until its response is handed
//! back.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The requests of one connection, as the service sees them.
pub(crate) struct Requests {
    opened: Instant,
    open: AtomicUsize,
    last_change_millis: AtomicU64,
}

impl Requests {
    pub(crate) fn new() -> Self {
        Self {
            opened: Instant::now(),
            open: AtomicUsize::new(0),
            last_change_millis: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_change_millis.store(now, Ordering::Relaxed);
    }

    /// A request's headers arrived; it is open until the guard drops.
    pub(crate) fn begin(&self) -> OpenRequest<'_> {
        self.open.fetch_add(1, Ordering::Relaxed);
        self.touch();
        OpenRequest(self)
    }

    /// Resolves once no request has been open, nor begun, for `deadline`.
    pub(crate) async fn unused_for(&self, deadline: Duration) {
        loop {
            if self.open.load(Ordering::Relaxed) > 0 {
                tokio::time::sleep(deadline).await;
                continue;
            }
            let last = self.opened
                + Duration::from_millis(self.last_change_millis.load(Ordering::Relaxed));
            let at = last + deadline;
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
        self.0.touch();
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
