//! When something last happened on a connection, and a future that resolves once nothing has
//! for a while: the idle deadline (bytes moved) and the HTTP/2 request deadline both use it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

/// The last moment something happened, as milliseconds since the connection opened (an atomic,
/// so the stream and the service record it without a lock).
pub(crate) struct Activity {
    opened: Instant,
    last_millis: AtomicU64,
}

impl Activity {
    pub(crate) fn new() -> Self {
        Self {
            opened: Instant::now(),
            last_millis: AtomicU64::new(0),
        }
    }

    /// Something happened now.
    pub(crate) fn touch(&self) {
        let now = u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_millis.store(now, Ordering::Relaxed);
    }

    /// When `quiet` will have passed since the last thing happened.
    pub(crate) fn deadline(&self, quiet: Duration) -> Instant {
        self.opened + Duration::from_millis(self.last_millis.load(Ordering::Relaxed)) + quiet
    }

    /// Resolves once nothing has happened for `quiet`.
    pub(crate) async fn idle_for(&self, quiet: Duration) {
        loop {
            let deadline = self.deadline(quiet);
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}
