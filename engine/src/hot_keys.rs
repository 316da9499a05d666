//! Which key of a controller is skipped far more than the rest: a decaying count of stale sync
//! skips for the few heaviest keys (the space-saving summary), so a scrape can show a hot key's
//! rate and share without a series per key, and a log line can name it. Time is passed in.
//!
//! Written here rather than taken from a crate: it sits on the shard's skip path, holds a fixed
//! number of slots (no allocation once they are filled) and decays on the shard's own clock.

use crate::key::ObjectKey;
use std::time::{Duration, Instant};

/// A skip counts half as much after this long: the figures follow the last half minute or so.
pub const HALF_LIFE: Duration = Duration::from_secs(10);

/// Keys tracked at once. A key heavier than `1 / SLOTS` of all skips is always among them.
const SLOTS: usize = 8;

/// A key is reported hot from this many skips a second, and while it takes this share of its
/// controller's skips...
pub const HOT_SKIPS_PER_SECOND: f64 = 0.2;
/// ... of the controller's skips in this shard.
pub const HOT_SHARE: f64 = 0.5;

/// The heaviest key and its figures.
#[derive(Clone, Debug, PartialEq)]
pub struct HotKey {
    /// The key.
    pub key: ObjectKey,
    /// Its skips a second lately (an overestimate by at most the lightest slot's weight when
    /// the summary had to evict).
    pub skips_per_second: f64,
    /// How long it has been reported hot (zero while it is not).
    pub hot_for: Duration,
}

/// What [`HotKeys::record`] noticed.
#[derive(Clone, Debug, PartialEq)]
pub enum HotChange {
    /// `key` just became hot: over [`HOT_SKIPS_PER_SECOND`] and [`HOT_SHARE`].
    Became(HotKey),
    /// The key reported hot cooled down (under half of either bound).
    Cooled(ObjectKey),
}

#[derive(Clone, Debug)]
struct Slot {
    key: ObjectKey,
    weight: f64,
}

/// The decaying summary of one controller's skips in one shard.
#[derive(Clone, Debug, Default)]
pub struct HotKeys {
    slots: Vec<Slot>,
    total: f64,
    at: Option<Instant>,
    /// The key reported hot, and since when.
    hot: Option<(ObjectKey, Instant)>,
}

/// `weight` in skips a second: a steady rate `r` settles at `r * HALF_LIFE / ln 2`.
fn per_second(weight: f64) -> f64 {
    weight * std::f64::consts::LN_2 / HALF_LIFE.as_secs_f64()
}

impl HotKeys {
    /// Decays every weight to `now` (time never runs back here: an earlier `now` decays nothing).
    fn decay(&mut self, now: Instant) {
        let factor = self.factor_at(now);
        if factor < 1.0 {
            for slot in &mut self.slots {
                slot.weight *= factor;
            }
            self.total *= factor;
        }
        if self.at.is_none_or(|at| now > at) {
            self.at = Some(now);
        }
    }

    /// `key` was skipped at `now`; says when the hot key changes.
    pub fn record(&mut self, key: &ObjectKey, now: Instant) -> Option<HotChange> {
        self.decay(now);
        self.total += 1.0;
        if let Some(slot) = self.slots.iter_mut().find(|s| &s.key == key) {
            slot.weight += 1.0;
        } else if self.slots.len() < SLOTS {
            self.slots.push(Slot {
                key: key.clone(),
                weight: 1.0,
            });
        } else if let Some(lightest) = self
            .slots
            .iter_mut()
            .min_by(|a, b| a.weight.total_cmp(&b.weight))
        {
            // Space-saving: the newcomer takes the lightest slot and its weight, so a key
            // heavier than 1/SLOTS of the total can never be lost.
            lightest.key = key.clone();
            lightest.weight += 1.0;
        }
        self.change(now)
    }

    fn change(&mut self, now: Instant) -> Option<HotChange> {
        let hottest = self.hottest_scaled(1.0, now)?;
        let rate = hottest.skips_per_second;
        let share = rate / per_second(self.total).max(f64::MIN_POSITIVE);
        match &self.hot {
            Some((hot, _)) if hot == &hottest.key => {
                if rate < HOT_SKIPS_PER_SECOND / 2.0 || share < HOT_SHARE / 2.0 {
                    self.hot = None;
                    return Some(HotChange::Cooled(hottest.key));
                }
                None
            }
            _ if rate >= HOT_SKIPS_PER_SECOND && share >= HOT_SHARE => {
                self.hot = Some((hottest.key.clone(), now));
                Some(HotChange::Became(hottest))
            }
            Some(_) => self.hot.take().map(|(key, _)| HotChange::Cooled(key)),
            None => None,
        }
    }

    fn hottest_scaled(&self, factor: f64, now: Instant) -> Option<HotKey> {
        self.slots
            .iter()
            .max_by(|a, b| a.weight.total_cmp(&b.weight))
            .map(|s| HotKey {
                key: s.key.clone(),
                skips_per_second: per_second(s.weight * factor),
                hot_for: match &self.hot {
                    Some((key, since)) if key == &s.key => now.saturating_duration_since(*since),
                    _ => Duration::ZERO,
                },
            })
    }

    /// How much the weights have decayed from their last update to `now`.
    fn factor_at(&self, now: Instant) -> f64 {
        self.at.map_or(1.0, |at| {
            let elapsed = now.saturating_duration_since(at).as_secs_f64();
            0.5f64.powf(elapsed / HALF_LIFE.as_secs_f64())
        })
    }

    /// The heaviest key at `now`, if any skip is remembered.
    pub fn hottest(&self, now: Instant) -> Option<HotKey> {
        self.hottest_scaled(self.factor_at(now), now)
    }

    /// Every key's skips a second lately, together.
    pub fn skips_per_second(&self, now: Instant) -> f64 {
        per_second(self.total * self.factor_at(now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(name: &str) -> ObjectKey {
        ObjectKey::new("ns", name)
    }

    /// `key` skipped every `every` from `from` for `times` skips; the last instant.
    fn skip_every(
        hot: &mut HotKeys,
        key: &ObjectKey,
        from: Instant,
        every: Duration,
        times: u32,
    ) -> (Instant, Vec<HotChange>) {
        let mut changes = Vec::new();
        let mut now = from;
        for i in 0..times {
            now = from + every * i;
            changes.extend(hot.record(key, now));
        }
        (now, changes)
    }

    #[test]
    fn a_steady_rate_settles_near_itself() {
        let mut hot = HotKeys::default();
        let t0 = Instant::now();
        let (end, _) = skip_every(&mut hot, &k("a"), t0, Duration::from_millis(500), 200);
        let rate = hot.hottest(end).expect("a key").skips_per_second;
        assert!((1.8..2.3).contains(&rate), "{rate}");
        assert!((hot.skips_per_second(end) - rate).abs() < 1e-9);
    }

    #[test]
    fn one_key_skipped_far_more_than_the_rest_becomes_hot_once_and_cools_when_it_stops() {
        let mut hot = HotKeys::default();
        let t0 = Instant::now();
        let mut changes = Vec::new();
        for i in 0..120u32 {
            let now = t0 + Duration::from_millis(250) * i;
            changes.extend(hot.record(&k("hot"), now));
            if i % 20 == 0 {
                changes.extend(hot.record(&k(&format!("cold-{i}")), now));
            }
        }
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(matches!(&changes[0], HotChange::Became(h) if h.key == k("hot")));
        let end = t0 + Duration::from_secs(30);
        let hottest = hot.hottest(end).expect("a key");
        assert!(
            hottest.hot_for > Duration::from_secs(28),
            "hot since its first second: {hottest:?}"
        );
        // Quiet for a minute, then one other key skips: the hot key has cooled.
        let later = t0 + Duration::from_secs(90);
        assert_eq!(
            hot.record(&k("other"), later),
            Some(HotChange::Cooled(k("hot")))
        );
    }

    #[test]
    fn skips_spread_over_many_keys_make_none_hot() {
        let mut hot = HotKeys::default();
        let t0 = Instant::now();
        for i in 0..400u32 {
            let now = t0 + Duration::from_millis(100) * i;
            assert_eq!(hot.record(&k(&format!("k{}", i % 10)), now), None);
        }
    }

    #[test]
    fn a_heavy_key_survives_a_crowd_of_one_off_keys() {
        let mut hot = HotKeys::default();
        let t0 = Instant::now();
        for i in 0..1_000u32 {
            let now = t0 + Duration::from_millis(10) * i;
            hot.record(&k(&format!("once-{i}")), now);
            if i % 3 == 0 {
                hot.record(&k("heavy"), now);
            }
        }
        let end = t0 + Duration::from_secs(10);
        assert_eq!(hot.hottest(end).expect("a key").key, k("heavy"));
    }

    #[test]
    fn a_rare_key_is_not_hot_however_alone_it_is() {
        let mut hot = HotKeys::default();
        let t0 = Instant::now();
        let (_, changes) = skip_every(&mut hot, &k("lonely"), t0, Duration::from_secs(30), 20);
        assert!(changes.is_empty(), "{changes:?}");
    }
}
