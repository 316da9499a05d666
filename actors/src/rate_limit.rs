//! Client-side rate limiting as client-go's token bucket does it (`--kube-api-qps`/`-burst`).

use parking_lot::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A token bucket: `burst` tokens, refilled at `qps` per second. Waiters are served in the order
/// they reserve, because each reservation moves the bucket's debt forward.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// A full bucket. A `qps` of 0 or less disables limiting.
    pub fn new(qps: f32, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            qps: f64::from(qps),
            burst,
            state: Mutex::new((burst, Instant::now())),
        }
    }

    /// How long the caller must wait for its token; the token is taken now.
    pub fn reserve(&self) -> Duration {
        self.reservation()
            .act_at
            .saturating_duration_since(Instant::now())
    }

    /// Takes a token now and says when it may be used.
    pub fn reservation(&self) -> Reservation {
        let now = Instant::now();
        if self.qps <= 0.0 {
            return Reservation { act_at: now };
        }
        let mut state = self.state.lock();
        let (tokens, last) = *state;
        let refilled =
            (tokens + now.saturating_duration_since(last).as_secs_f64() * self.qps).min(self.burst);
        let left = refilled - 1.0;
        *state = (left, now);
        let wait = if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-left / self.qps)
        };
        Reservation { act_at: now + wait }
    }

    /// Gives back the token of a reservation that will not be used, as golang.org/x/time/rate's
    /// `Reservation.Cancel` does: only a reservation that has not come due yet and that no later
    /// reservation queues behind returns its token (those later ones already wait out their
    /// share; giving the token to the next caller would let it pass them and exceed `qps`).
    /// Cancelling a run of reservations latest first returns all of them.
    pub fn cancel(&self, reservation: Reservation) {
        let now = Instant::now();
        if self.qps <= 0.0 || reservation.act_at <= now {
            return;
        }
        let mut state = self.state.lock();
        let (tokens, last) = *state;
        let latest = last + Duration::from_secs_f64((-tokens).max(0.0) / self.qps);
        let half_a_token = Duration::from_secs_f64(0.5 / self.qps);
        if latest.saturating_duration_since(reservation.act_at) < half_a_token {
            *state = (tokens + 1.0, last);
        }
    }

    /// Waits for a token.
    pub async fn acquire(&self) {
        self.reservation().wait().await;
    }
}

/// A token taken from a [`TokenBucket`], usable from `act_at` on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    act_at: Instant,
}

impl Reservation {
    /// Whether the token may be used now.
    pub fn is_due(&self) -> bool {
        self.act_at <= Instant::now()
    }

    /// Waits until the token may be used.
    pub async fn wait(self) {
        tokio::time::sleep_until(self.act_at).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn burst_is_free_and_then_qps_paces_requests() {
        let bucket = TokenBucket::new(20.0, 30);
        for _ in 0..30 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
        let waits: Vec<_> = (0..3).map(|_| bucket.reserve()).collect();
        assert_eq!(waits[0], Duration::from_millis(50));
        assert_eq!(waits[2], Duration::from_millis(150));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(bucket.reserve(), Duration::ZERO, "refilled after idling");
    }

    #[tokio::test(start_paused = true)]
    async fn cancelling_the_queued_reservations_latest_first_returns_their_tokens() {
        let bucket = TokenBucket::new(2.0, 1);
        assert_eq!(bucket.reserve(), Duration::ZERO);
        let queued: Vec<Reservation> = (0..4).map(|_| bucket.reservation()).collect();
        for r in queued.into_iter().rev() {
            bucket.cancel(r);
        }
        assert_eq!(
            bucket.reserve(),
            Duration::from_millis(500),
            "the next caller waits as if the four had never reserved"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_reservation_with_others_queued_behind_it_returns_nothing() {
        let bucket = TokenBucket::new(2.0, 1);
        assert_eq!(bucket.reserve(), Duration::ZERO);
        let first = bucket.reservation();
        let _behind = bucket.reservation();
        bucket.cancel(first);
        assert_eq!(
            bucket.reserve(),
            Duration::from_millis(1500),
            "the one behind keeps its turn at 1 s; no caller passes it"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reservation_already_due_is_spent() {
        let bucket = TokenBucket::new(2.0, 1);
        let spent = bucket.reservation();
        assert!(spent.is_due());
        bucket.cancel(spent);
        assert_eq!(bucket.reserve(), Duration::from_millis(500));
    }

    proptest::proptest! {
        #[test]
        fn whatever_is_cancelled_no_two_kept_tokens_come_due_closer_than_the_rate_allows(
            queued in 1usize..12,
            cancelled in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..12),
            more in 0usize..6,
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .expect("runtime");
            let mut due: Vec<Instant> = runtime.block_on(async {
                let bucket = TokenBucket::new(4.0, 1);
                let mut kept: Vec<Reservation> = (0..queued).map(|_| bucket.reservation()).collect();
                for pick in cancelled {
                    if kept.is_empty() {
                        break;
                    }
                    bucket.cancel(kept.remove(pick.index(kept.len())));
                }
                kept.extend((0..more).map(|_| bucket.reservation()));
                kept.iter().map(|r| r.act_at).collect()
            });
            due.sort();
            for pair in due.windows(2) {
                proptest::prop_assert!(
                    pair[1] - pair[0] >= Duration::from_millis(249),
                    "two tokens {:?} apart at 4 qps, burst 1",
                    pair[1] - pair[0]
                );
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn zero_qps_means_unlimited() {
        let bucket = TokenBucket::new(0.0, 1);
        for _ in 0..100 {
            assert_eq!(bucket.reserve(), Duration::ZERO);
        }
    }
}
