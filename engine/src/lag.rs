//! Known lag: what this process has learned of the API server's revision (its own writes,
//! barrier reads, other resources' watermarks) and since when, so a cache whose watermark trails
//! that knowledge for longer than a threshold is *known* to lag, not merely suspected.

use crate::rv::ResourceVersion;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long a cache may trail a revision the process knows the server reached before the cache
/// counts as lagging. Healthy watches deliver an event or a bookmark well within it on the
/// simulated server (bookmarks every 0.3 to 1 s); on a cluster whose bookmarks come once a
/// minute a quiet resource trips it, which costs destructive decisions a live read, never safety.
pub const LAG_THRESHOLD: Duration = Duration::from_secs(2);

/// Revisions learned closer together than this share one entry (the later revision, the earlier
/// time): that can only make a cache look lagging sooner, the safe direction.
const COALESCE: Duration = Duration::from_millis(50);

/// At most this many entries are kept; beyond it the two newest are merged (again the safe
/// direction), so a watch that never catches up cannot grow the timeline without bound.
const MAX_ENTRIES: usize = 256;

/// The server revisions this process learned, each with when it learned it. Both columns only
/// grow, so "the first revision above a watermark" is a binary search.
#[derive(Clone, Debug, Default)]
pub struct KnownRevisions {
    entries: VecDeque<(ResourceVersion, Instant)>,
    highest: Option<ResourceVersion>,
}

impl KnownRevisions {
    /// The server has reached at least `revision`, as learned at `now`.
    pub fn learn(&mut self, revision: ResourceVersion, now: Instant) {
        if self.highest.is_some_and(|h| h >= revision) {
            return;
        }
        self.highest = Some(revision);
        match self.entries.back_mut() {
            Some((last, at)) if now.saturating_duration_since(*at) < COALESCE => *last = revision,
            _ => self.entries.push_back((revision, now)),
        }
        if self.entries.len() > MAX_ENTRIES
            && let Some((newest, _)) = self.entries.pop_back()
            && let Some((last, _)) = self.entries.back_mut()
        {
            *last = newest;
        }
    }

    /// The highest revision learned.
    pub fn highest(&self) -> Option<ResourceVersion> {
        self.highest
    }

    /// Whether a cache at `watermark` is known to lag at `now`: some revision above it was
    /// learned `threshold` or longer ago. A cache with no watermark lags behind anything known
    /// that long.
    pub fn lagging(
        &self,
        watermark: Option<ResourceVersion>,
        now: Instant,
        threshold: Duration,
    ) -> bool {
        let first_above = match watermark {
            Some(w) => self.entries.partition_point(|(r, _)| *r <= w),
            None => 0,
        };
        self.entries
            .get(first_above)
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) >= threshold)
    }

    /// When this process first knew the server had reached `revision` (`None`: it never heard of
    /// it before). A cache whose watermark reaches `revision` at `now` delivered it
    /// `now - learned_at` after the process could have known: that is the watch's delay, which
    /// [`lagging`](Self::lagging) cannot see while the cache misses only changes made since.
    /// Coalesced entries answer the earlier time: a delay is never underestimated.
    pub fn learned_at(&self, revision: ResourceVersion) -> Option<Instant> {
        let first = self.entries.partition_point(|(r, _)| *r < revision);
        self.entries.get(first).map(|(_, at)| *at)
    }

    /// Forgets what every cache has already reached (`lowest` is the lowest watermark of the
    /// caches that still matter).
    pub fn prune(&mut self, lowest: ResourceVersion) {
        while self.entries.front().is_some_and(|(r, _)| *r <= lowest) {
            self.entries.pop_front();
        }
    }

    /// Entries kept (for tests and metrics).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rv(n: u64) -> ResourceVersion {
        ResourceVersion::new(n).expect("non-zero")
    }

    #[test]
    fn a_cache_behind_a_revision_learned_long_enough_ago_lags() {
        let t0 = Instant::now();
        let mut known = KnownRevisions::default();
        known.learn(rv(100), t0);
        let later = t0 + LAG_THRESHOLD;
        assert!(known.lagging(Some(rv(99)), later, LAG_THRESHOLD));
        assert!(!known.lagging(Some(rv(100)), later, LAG_THRESHOLD));
    }

    #[test]
    fn a_cache_behind_only_a_recent_revision_does_not_lag_yet() {
        let t0 = Instant::now();
        let mut known = KnownRevisions::default();
        known.learn(rv(100), t0);
        known.learn(rv(200), t0 + Duration::from_secs(5));
        let now = t0 + Duration::from_secs(6);
        assert!(!known.lagging(Some(rv(150)), now, LAG_THRESHOLD));
        assert!(known.lagging(Some(rv(50)), now, LAG_THRESHOLD));
    }

    #[test]
    fn revisions_learned_together_share_the_earlier_time() {
        let t0 = Instant::now();
        let mut known = KnownRevisions::default();
        known.learn(rv(10), t0);
        known.learn(rv(20), t0 + Duration::from_millis(10));
        assert_eq!(known.len(), 1);
        assert!(known.lagging(Some(rv(15)), t0 + LAG_THRESHOLD, LAG_THRESHOLD));
    }

    #[test]
    fn an_older_revision_teaches_nothing() {
        let t0 = Instant::now();
        let mut known = KnownRevisions::default();
        known.learn(rv(10), t0);
        known.learn(rv(5), t0 + Duration::from_secs(1));
        assert_eq!(known.highest(), Some(rv(10)));
        assert_eq!(known.len(), 1);
    }

    #[test]
    fn the_timeline_stays_bounded_when_a_watch_never_catches_up() {
        let t0 = Instant::now();
        let mut known = KnownRevisions::default();
        for i in 1..10_000u64 {
            known.learn(rv(i), t0 + Duration::from_millis(100 * i));
        }
        assert!(known.len() <= MAX_ENTRIES);
        assert_eq!(known.highest(), Some(rv(9_999)));
        assert!(known.lagging(Some(rv(1)), t0 + Duration::from_secs(2_000), LAG_THRESHOLD));
    }

    #[test]
    fn a_watch_delay_is_how_long_after_the_process_knew_a_revision_the_cache_got_it() {
        let t0 = Instant::now();
        let mut known = KnownRevisions::default();
        known.learn(rv(100), t0);
        known.learn(rv(200), t0 + Duration::from_secs(1));
        assert_eq!(known.learned_at(rv(100)), Some(t0));
        assert_eq!(known.learned_at(rv(150)), Some(t0 + Duration::from_secs(1)));
        assert_eq!(known.learned_at(rv(201)), None, "never heard of");
    }

    #[test]
    fn pruning_drops_what_every_cache_reached() {
        let t0 = Instant::now();
        let mut known = KnownRevisions::default();
        known.learn(rv(10), t0);
        known.learn(rv(20), t0 + Duration::from_secs(1));
        known.prune(rv(15));
        assert_eq!(known.len(), 1);
        assert!(known.lagging(Some(rv(15)), t0 + Duration::from_secs(3), LAG_THRESHOLD));
    }
}
