//! The faults of one run, drawn from its seed at the start: how late each resource's watch
//! delivers, when it stalls, how often watches drop, `410`s, lost and slow write responses, and
//! whether the process crashes. Every fault stops at `until`; after it the run must converge.

use std::time::Duration;
use tidemark_engine::Resource;

/// A window of virtual time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Start.
    pub from: Duration,
    /// End (exclusive).
    pub to: Duration,
}

impl Window {
    /// Whether `t` is inside.
    pub fn contains(&self, t: Duration) -> bool {
        self.from <= t && t < self.to
    }
}

/// One resource's watch faults.
#[derive(Clone, Debug, Default)]
pub struct WatchFaults {
    /// Every batch arrives this much later (plus up to a quarter of it as jitter).
    pub delay: Duration,
    /// Windows in which the server sends this resource nothing.
    pub stalls: Vec<Window>,
}

/// Everything that goes wrong in one run.
#[derive(Clone, Debug)]
pub struct FaultPlan {
    /// Faults happen before this; none after.
    pub until: Duration,
    /// Per resource watched.
    pub watches: Vec<(Resource, WatchFaults)>,
    /// Chance that a watch read drops the connection (the watch resumes from the last version
    /// the shards have, or, with `gone_on_resume`, gets `410` and relists).
    pub drop: f64,
    /// Chance that a resumed watch is answered `410 Gone`.
    pub gone_on_resume: f64,
    /// Chance that a resumed watch starts a few revisions before what the shards were given,
    /// so events already delivered come again (another API server's watch cache answering the
    /// reconnect from an older revision).
    pub replay_on_resume: f64,
    /// Revisions of history the store keeps (compaction beyond them: `410`).
    pub history: u64,
    /// A request's network leg when it is not slow, in milliseconds (lowest, highest).
    pub leg_ms: (u64, u64),
    /// Chance that a write is refused with a `500` before it is applied.
    pub server_error: f64,
    /// Chance that a write is applied but its response is lost (answered as a transport error).
    pub lost_response: f64,
    /// Chance that a write is slow, and how slow at most.
    pub slow_write: f64,
    /// The longest a slow write takes to reach the server and to be answered.
    pub slow_write_max: Duration,
    /// Chance that a write is stuck on its way to the server (a stalled connection, a queue
    /// in front of the API server) for longer than any Lease lasts.
    pub stuck_write: f64,
    /// How long a stuck write takes to arrive at most (at least a quarter of it).
    pub stuck_write_max: Duration,
    /// How far a process's monotonic clock may run from the server's: each incarnation draws
    /// its rate within `1 ± clock_drift` (so a leader's fence and its successor's wait for the
    /// Lease to expire are measured on different clocks).
    pub clock_drift: f64,
    /// When the process crashes, and how long until it is back.
    pub crash: Option<(Duration, Duration)>,
    /// The crash comes with a network partition of this length: the dead process's writes
    /// still on their way are held until it heals, then delivered.
    pub partition: Option<Duration>,
}

/// The most a process's clock runs fast or slow (2%: far beyond NTP's 500 ppm slew, a VM's
/// clock after a migration). The node lifecycle oracle shortens the grace period by as much.
pub const MAX_CLOCK_DRIFT: f64 = 0.02;

fn ms(rng: &mut fastrand::Rng, lo: u64, hi: u64) -> Duration {
    Duration::from_millis(rng.u64(lo..=hi))
}

impl FaultPlan {
    /// Draws the faults of a run over `resources`, active for `window`.
    pub fn draw(rng: &mut fastrand::Rng, resources: &[Resource], window: Duration) -> Self {
        let until_ms = window.as_millis() as u64;
        let watches = resources
            .iter()
            .map(|&r| {
                let delay = if rng.f64() < 0.6 {
                    ms(rng, 0, 3_000)
                } else {
                    ms(rng, 0, 50)
                };
                let stalls = (0..rng.usize(0..=2))
                    .map(|_| {
                        let from = ms(rng, 0, until_ms);
                        let to = (from + ms(rng, 500, 40_000)).min(window);
                        Window { from, to }
                    })
                    .collect();
                (r, WatchFaults { delay, stalls })
            })
            .collect();
        Self {
            until: window,
            watches,
            drop: rng.f64() * 0.03,
            gone_on_resume: rng.f64() * 0.5,
            replay_on_resume: rng.f64() * 0.5,
            history: rng.u64(50..=2_000),
            leg_ms: (1, 20),
            lost_response: rng.f64() * 0.1,
            server_error: rng.f64() * 0.05,
            slow_write: rng.f64() * 0.1,
            slow_write_max: ms(rng, 100, 5_000),
            stuck_write: rng.f64() * 0.02,
            stuck_write_max: ms(rng, 8_000, 20_000),
            // The successor starts soon; it leads only once the crashed process's Lease has
            // expired on its own clock.
            crash: (rng.f64() < 0.3).then(|| (ms(rng, 0, until_ms), ms(rng, 200, 3_000))),
            partition: rng.bool().then(|| ms(rng, 4_000, 20_000)),
            clock_drift: if rng.bool() {
                rng.f64() * MAX_CLOCK_DRIFT
            } else {
                0.0
            },
        }
    }

    /// Prompt watches and requests whose every leg takes `leg_ms` over `window`, nothing
    /// lost, no crash: the ground an aimed schedule sets its own race on.
    pub fn steady(resources: &[Resource], window: Duration, leg_ms: (u64, u64)) -> Self {
        Self {
            until: window,
            leg_ms,
            ..Self::none(resources)
        }
    }

    /// No faults at all (for tests of the harness itself).
    pub fn none(resources: &[Resource]) -> Self {
        Self {
            until: Duration::ZERO,
            watches: resources
                .iter()
                .map(|&r| (r, WatchFaults::default()))
                .collect(),
            drop: 0.0,
            gone_on_resume: 0.0,
            replay_on_resume: 0.0,
            history: 10_000,
            leg_ms: (1, 20),
            lost_response: 0.0,
            server_error: 0.0,
            slow_write: 0.0,
            slow_write_max: Duration::ZERO,
            stuck_write: 0.0,
            stuck_write_max: Duration::ZERO,
            crash: None,
            partition: None,
            clock_drift: 0.0,
        }
    }

    /// Whether faults are still on at `t`.
    pub fn active(&self, t: Duration) -> bool {
        t < self.until
    }

    fn watch(&self, r: Resource) -> Option<&WatchFaults> {
        self.watches.iter().find(|(w, _)| *w == r).map(|(_, f)| f)
    }

    /// When a batch read from the server at `t` reaches the informer.
    pub fn watch_delay(&self, rng: &mut fastrand::Rng, r: Resource, t: Duration) -> Duration {
        match self.watch(r) {
            Some(f) if self.active(t) && !f.delay.is_zero() => {
                let jitter = f.delay.as_millis() as u64 / 4;
                f.delay + ms(rng, 0, jitter)
            }
            _ => ms(rng, 0, 5),
        }
    }

    /// The end of the stall `t` is in, if any.
    pub fn stalled_until(&self, r: Resource, t: Duration) -> Option<Duration> {
        self.watch(r)?
            .stalls
            .iter()
            .find(|w| w.contains(t))
            .map(|w| w.to)
    }

    /// One leg of a request's trip (to the server, or back).
    pub fn network(&self, rng: &mut fastrand::Rng, t: Duration) -> Duration {
        if self.active(t) && rng.f64() < self.slow_write {
            ms(rng, 0, self.slow_write_max.as_millis() as u64)
        } else {
            ms(rng, self.leg_ms.0, self.leg_ms.1)
        }
    }

    /// A write's (or a Lease write's) way to the server: a network leg, or stuck.
    pub fn write_leg(&self, rng: &mut fastrand::Rng, t: Duration) -> Duration {
        if self.active(t) && rng.f64() < self.stuck_write {
            let max = self.stuck_write_max.as_millis() as u64;
            ms(rng, max / 4, max)
        } else {
            self.network(rng, t)
        }
    }

    /// Whether the response of a write committed at `t` is lost.
    pub fn loses_response(&self, rng: &mut fastrand::Rng, t: Duration) -> bool {
        self.active(t) && rng.f64() < self.lost_response
    }

    /// Whether a write arriving at `t` is refused with a `500`.
    pub fn fails_write(&self, rng: &mut fastrand::Rng, t: Duration) -> bool {
        self.active(t) && rng.f64() < self.server_error
    }

    /// Whether a watch read at `t` drops the connection.
    pub fn drops_watch(&self, rng: &mut fastrand::Rng, t: Duration) -> bool {
        self.active(t) && rng.f64() < self.drop
    }

    /// How many revisions before the delivered one a watch resumed at `t` starts from.
    pub fn replayed_on_resume(&self, rng: &mut fastrand::Rng, t: Duration) -> u64 {
        if self.active(t) && rng.f64() < self.replay_on_resume {
            rng.u64(1..=20)
        } else {
            0
        }
    }

    /// Whether a watch resumed at `t` is answered `410 Gone`.
    pub fn gone(&self, rng: &mut fastrand::Rng, t: Duration) -> bool {
        self.active(t) && rng.f64() < self.gone_on_resume
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_draws_the_same_faults() {
        let draw = || {
            let mut rng = fastrand::Rng::with_seed(7);
            format!(
                "{:?}",
                FaultPlan::draw(&mut rng, &[Resource::Pods], Duration::from_secs(30))
            )
        };
        assert_eq!(draw(), draw());
    }

    #[test]
    fn no_fault_fires_after_the_window() {
        let mut rng = fastrand::Rng::with_seed(1);
        let mut plan = FaultPlan::draw(&mut rng, &[Resource::Pods], Duration::from_secs(30));
        plan.drop = 1.0;
        plan.lost_response = 1.0;
        let after = Duration::from_secs(31);
        assert!(!plan.drops_watch(&mut rng, after));
        assert!(!plan.loses_response(&mut rng, after));
        assert!(plan.drops_watch(&mut rng, Duration::from_secs(1)));
    }
}
