//! The pace of `NoExecute` tainting, shared by every shard's copy of node lifecycle: each
//! zone's state and pace (upstream's per-zone `RateLimitedTimedQueue`, one token at most,
//! refilled at the zone's rate), found from the Nodes at most once a survey period, and the
//! stop when every zone is fully disrupted (upstream's "master disruption mode": the cause is
//! then more likely the control plane's own network than every kubelet at once). Time is passed
//! in; a lock makes the pace one per zone across shards, as upstream has one queue per zone.
//!
//! A zone's token goes to one Node at a time and stays with it while its decision waits for
//! its proof (a decision is planned again once proven, and must find its token then); the
//! next token starts to refill when that Node is seen tainted, so taintings commit at least a
//! period apart even when proofs delay them (upstream, without proofs, spaces decisions).

use crate::controllers::nodelifecycle::zones::{
    EvictionRates, ZoneState, counts_for_disruption, zone_key,
};
use crate::views::nodes::{ConditionStatus, NodeView};
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How often the zones' states are found again (upstream's `--node-monitor-period` default).
pub const SURVEY_PERIOD: Duration = Duration::from_secs(5);

/// How soon a Node waiting while another holds its zone's token asks again (upstream's
/// tainting pass looks at its queues every 100 ms; a key a second costs less and keeps up with
/// any rate below one a second).
pub const HELD_RETRY: Duration = Duration::from_secs(1);

/// How long a Node keeps its zone's token without being seen tainted: a decision that never
/// went ahead (its Node came back, its writes failed) frees the zone after this.
pub const TOKEN_HELD_AT_MOST: Duration = Duration::from_secs(30);

/// Whether a Node may be tainted `NoExecute` now.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Its zone's token is its own: taint it.
    Now,
    /// Its zone has no token for it before this long (or tainting is stopped in the zone): ask
    /// again.
    After(Duration),
    /// Every zone is fully disrupted: no Node is tainted, and those tainted are untainted.
    Stopped,
}

/// A zone's token: refilled at `rate` after each tainting is seen, held by one Node at a time.
#[derive(Clone, Debug)]
struct Pace {
    rate: f64,
    /// When the token is back (`None`: it is there now).
    refilled_at: Option<Instant>,
    /// The Node holding the token, and since when.
    holder: Option<(String, Instant)>,
}

impl Pace {
    fn full(rate: f64) -> Self {
        Self {
            rate,
            refilled_at: None,
            holder: None,
        }
    }

    fn period(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.rate)
    }

    fn take(&mut self, node: &str, now: Instant) -> Grant {
        if let Some((holder, since)) = &self.holder {
            if holder == node {
                return Grant::Now;
            }
            if now.saturating_duration_since(*since) < TOKEN_HELD_AT_MOST {
                return Grant::After(HELD_RETRY);
            }
            self.holder = None;
        }
        if self.rate <= 0.0 {
            return Grant::After(SURVEY_PERIOD);
        }
        if let Some(at) = self.refilled_at
            && at > now
        {
            return Grant::After(at - now);
        }
        self.holder = Some((node.to_string(), now));
        self.refilled_at = None;
        Grant::Now
    }

    /// `node` is seen tainted: the token is spent, the next comes a period on.
    fn spent(&mut self, node: &str, now: Instant) {
        if self.holder.as_ref().is_some_and(|(h, _)| h == node) {
            self.holder = None;
            if self.rate > 0.0 {
                self.refilled_at = Some(now + self.period());
            }
        }
    }

    /// `node` no longer wants tainting: its token goes back unspent.
    fn returned(&mut self, node: &str) {
        if self.holder.as_ref().is_some_and(|(h, _)| h == node) {
            self.holder = None;
        }
    }

    /// The pace at `rate` from now on, upstream's `SwapLimiter`: a token there stays there,
    /// one missing comes a whole period of the new rate on (a stopped zone that resumes
    /// waits a period for its first); a stopped zone takes the token back from its holder.
    fn swap(&mut self, rate: f64, now: Instant) {
        if rate == self.rate {
            return;
        }
        let available =
            self.rate > 0.0 && self.holder.is_none() && self.refilled_at.is_none_or(|at| at <= now);
        self.rate = rate;
        if rate <= 0.0 {
            self.holder = None;
            self.refilled_at = None;
        } else if !available {
            self.refilled_at = Some(now + self.period());
        }
    }
}

#[derive(Clone, Debug)]
struct Zone {
    /// `None` while no Node that counts is in it.
    state: Option<ZoneState>,
    size: usize,
    not_ready: usize,
    pace: Pace,
}

#[derive(Debug, Default)]
struct Survey {
    at: Option<Instant>,
    zones: BTreeMap<String, Zone>,
    all_fully_disrupted: bool,
    resumed_at: Option<Instant>,
}

/// A zone as last surveyed, for metrics and logs.
#[derive(Clone, Debug, PartialEq)]
pub struct ZoneReport {
    /// The zone key.
    pub zone: String,
    /// Its state.
    pub state: ZoneState,
    /// Nodes that count in it.
    pub size: usize,
    /// Of those, not Ready.
    pub not_ready: usize,
}

/// The zones' states and buckets.
#[derive(Debug, Default)]
pub struct Evictions {
    rates: EvictionRates,
    survey: Mutex<Survey>,
}

impl Evictions {
    /// Pacing by `rates`.
    pub fn new(rates: EvictionRates) -> Self {
        Self {
            rates,
            survey: Mutex::default(),
        }
    }

    /// The flags it paces by.
    pub fn rates(&self) -> &EvictionRates {
        &self.rates
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Survey> {
        // Nothing under the lock can panic half-way; a poisoned lock holds a whole survey.
        self.survey.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Finds the zones' states from `nodes` (every Node the controller manages) when the last
    /// survey is a survey period old, and changes the buckets' rates as upstream's
    /// `handleDisruption` does.
    pub fn survey<'a, I>(&self, now: Instant, nodes: impl FnOnce() -> I)
    where
        I: Iterator<Item = &'a NodeView>,
    {
        let mut s = self.lock();
        if s.at
            .is_some_and(|at| now.saturating_duration_since(at) < SURVEY_PERIOD)
        {
            return;
        }
        s.at = Some(now);
        let mut ready_by_zone: BTreeMap<String, Vec<Option<ConditionStatus>>> = BTreeMap::new();
        for node in nodes() {
            let zone = zone_key(&node.labels);
            let statuses = ready_by_zone.entry(zone).or_default();
            if counts_for_disruption(node) {
                statuses.push(node.conditions.ready);
            }
        }
        let eviction_rate = self.rates.eviction_rate;
        for zone in ready_by_zone.keys() {
            s.zones.entry(zone.clone()).or_insert_with(|| Zone {
                state: Some(ZoneState::Initial),
                size: 0,
                not_ready: 0,
                pace: Pace::full(eviction_rate),
            });
        }
        let mut new_states = BTreeMap::new();
        for (zone, statuses) in &ready_by_zone {
            if !statuses.is_empty() {
                let (not_ready, state) = self.rates.zone_state(statuses.iter().copied());
                new_states.insert(zone.clone(), (state, statuses.len(), not_ready));
            }
        }
        let all_are = !new_states.is_empty()
            && new_states
                .values()
                .all(|(state, ..)| *state == ZoneState::FullDisruption);
        for (zone, z) in s.zones.iter_mut() {
            if !new_states.contains_key(zone) {
                z.state = None;
            }
        }
        let all_were = s
            .zones
            .values()
            .filter_map(|z| z.state)
            .all(|state| state == ZoneState::FullDisruption);
        let rates = self.rates;
        if all_are && all_were {
            for (zone, (_, size, not_ready)) in &new_states {
                if let Some(z) = s.zones.get_mut(zone) {
                    (z.size, z.not_ready) = (*size, *not_ready);
                }
            }
            return;
        }
        let entering = all_are;
        let exiting = !all_are && s.all_fully_disrupted;
        s.all_fully_disrupted = all_are;
        if exiting {
            // Upstream gives every Node a fresh grace period when the disruption ends.
            s.resumed_at = Some(now);
        }
        for (zone, (state, size, not_ready)) in &new_states {
            let Some(z) = s.zones.get_mut(zone) else {
                continue;
            };
            (z.size, z.not_ready) = (*size, *not_ready);
            if entering {
                z.pace.swap(0.0, now);
                z.state = Some(ZoneState::FullDisruption);
            } else if exiting || z.state != Some(*state) {
                z.pace.swap(rates.rate_in(*state, *size), now);
                z.state = Some(*state);
            }
        }
    }

    /// Whether `node` of `zone` may be tainted `NoExecute` now; gives it the zone's token if
    /// so (asked again before it is seen tainted, it still has it).
    pub fn take(&self, zone: &str, node: &str, now: Instant) -> Grant {
        let mut s = self.lock();
        if s.all_fully_disrupted {
            return Grant::Stopped;
        }
        let eviction_rate = self.rates.eviction_rate;
        let z = s.zones.entry(zone.to_string()).or_insert_with(|| Zone {
            state: Some(ZoneState::Initial),
            size: 0,
            not_ready: 0,
            pace: Pace::full(eviction_rate),
        });
        z.pace.take(node, now)
    }

    /// `node` of `zone` is seen carrying its `NoExecute` taint: its token is spent.
    pub fn tainted(&self, zone: &str, node: &str, now: Instant) {
        if let Some(z) = self.lock().zones.get_mut(zone) {
            z.pace.spent(node, now);
        }
    }

    /// `node` of `zone` no longer wants a `NoExecute` taint: a token it holds goes back.
    pub fn not_wanted(&self, zone: &str, node: &str) {
        if let Some(z) = self.lock().zones.get_mut(zone) {
            z.pace.returned(node);
        }
    }

    /// Whether every zone is fully disrupted (no Node is tainted `NoExecute`).
    pub fn stopped(&self) -> bool {
        self.lock().all_fully_disrupted
    }

    /// When every zone last stopped being fully disrupted: silence is measured from then at
    /// the earliest.
    pub fn resumed_at(&self) -> Option<Instant> {
        self.lock().resumed_at
    }

    /// The zones as last surveyed.
    pub fn zones(&self) -> Vec<ZoneReport> {
        self.lock()
            .zones
            .iter()
            .filter_map(|(zone, z)| {
                Some(ZoneReport {
                    zone: zone.clone(),
                    state: z.state?,
                    size: z.size,
                    not_ready: z.not_ready,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, zone: &str, ready: &str) -> NodeView {
        NodeView::from_value(json!({
            "metadata": {"name": name, "uid": name, "resourceVersion": "1",
                "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }))
        .expect("node")
    }

    fn zone(z: &str) -> String {
        format!(":\0:{z}")
    }

    #[test]
    fn a_zone_taints_one_node_at_once_then_one_per_period_after_the_last_is_seen() {
        let evictions = Evictions::default();
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let nodes = [node("a", "z1", "True"), node("b", "z1", "Unknown")];
        evictions.survey(t0, || nodes.iter());
        let z1 = zone("z1");
        assert_eq!(evictions.take(&z1, "a", t0), Grant::Now);
        assert_eq!(
            evictions.take(&z1, "a", t0 + s(3)),
            Grant::Now,
            "planned again once proven, it still has the token"
        );
        assert_eq!(
            evictions.take(&z1, "b", t0 + s(3)),
            Grant::After(HELD_RETRY)
        );
        evictions.tainted(&z1, "a", t0 + s(4));
        assert_eq!(
            evictions.take(&z1, "b", t0 + s(5)),
            Grant::After(s(9)),
            "0.1 per second from the tainting seen: 9 s of the 10 are left"
        );
        assert_eq!(evictions.take(&z1, "b", t0 + s(14)), Grant::Now);
        assert_eq!(
            evictions.take(&zone("z2"), "c", t0 + s(14)),
            Grant::Now,
            "each zone has its own pace"
        );
    }

    #[test]
    fn a_token_not_used_goes_back_and_one_held_too_long_is_taken_back() {
        let evictions = Evictions::default();
        let t0 = Instant::now();
        let z1 = zone("z1");
        assert_eq!(evictions.take(&z1, "a", t0), Grant::Now);
        evictions.not_wanted(&z1, "a");
        assert_eq!(
            evictions.take(&z1, "b", t0),
            Grant::Now,
            "a came back: b's turn"
        );
        assert_eq!(
            evictions.take(&z1, "c", t0 + TOKEN_HELD_AT_MOST),
            Grant::Now,
            "b never got tainted: after the hold the token moves on"
        );
    }

    #[test]
    fn a_small_partially_disrupted_zone_stops_tainting_until_it_recovers() {
        let evictions = Evictions::default();
        let t0 = Instant::now();
        let mut nodes: Vec<NodeView> = (0..4)
            .map(|i| node(&format!("n{i}"), "z1", "Unknown"))
            .collect();
        nodes.push(node("ok", "z1", "True"));
        nodes.push(node("other", "z2", "True"));
        evictions.survey(t0, || nodes.iter());
        assert_eq!(
            evictions.zones()[0].state,
            ZoneState::PartialDisruption,
            "4 of 5 not Ready"
        );
        assert_eq!(
            evictions.take(&zone("z1"), "n0", t0),
            Grant::After(SURVEY_PERIOD),
            "5 Nodes is not a large cluster: tainting stops"
        );
        for n in nodes.iter_mut().take(3) {
            *n = node(n.key.name(), "z1", "True");
        }
        let recovered = t0 + SURVEY_PERIOD;
        evictions.survey(recovered, || nodes.iter());
        assert_eq!(evictions.zones()[0].state, ZoneState::Normal);
        assert_eq!(
            evictions.take(&zone("z1"), "n0", recovered),
            Grant::After(Duration::from_secs(10)),
            "resumed empty: a whole period for the first"
        );
        assert_eq!(
            evictions.take(&zone("z1"), "n0", recovered + Duration::from_secs(10)),
            Grant::Now
        );
    }

    #[test]
    fn when_every_zone_is_fully_disrupted_tainting_stops_and_resumes_with_a_fresh_grace() {
        let evictions = Evictions::default();
        let t0 = Instant::now();
        let dark = [node("a", "z1", "Unknown"), node("b", "z2", "Unknown")];
        evictions.survey(t0, || dark.iter());
        assert!(evictions.stopped());
        assert_eq!(evictions.take(&zone("z1"), "a", t0), Grant::Stopped);
        assert_eq!(evictions.resumed_at(), None);

        let later = t0 + SURVEY_PERIOD;
        let one_back = [node("a", "z1", "True"), node("b", "z2", "Unknown")];
        evictions.survey(later, || one_back.iter());
        assert!(!evictions.stopped());
        assert_eq!(evictions.resumed_at(), Some(later));
        assert_eq!(
            evictions.take(&zone("z2"), "b", later),
            Grant::After(Duration::from_secs(10)),
            "a fully disrupted zone beside a healthy one taints at the normal rate, from empty"
        );
    }

    #[test]
    fn a_survey_is_taken_at_most_once_a_period_and_excluded_nodes_do_not_count() {
        let evictions = Evictions::default();
        let t0 = Instant::now();
        let excluded = NodeView::from_value(json!({
            "metadata": {"name": "x", "uid": "x", "resourceVersion": "1", "labels": {
                "topology.kubernetes.io/zone": "z1",
                crate::controllers::nodelifecycle::zones::EXCLUDE_DISRUPTION_LABEL: "",
            }},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]},
        }))
        .expect("node");
        let nodes = [node("a", "z1", "True"), excluded];
        evictions.survey(t0, || nodes.iter());
        assert_eq!(evictions.zones()[0].size, 1);
        let mut looked = false;
        evictions.survey(t0 + Duration::from_secs(1), || {
            looked = true;
            nodes.iter()
        });
        assert!(!looked, "within a survey period the last survey stands");
    }

    #[test]
    fn a_pace_swapped_while_its_token_is_out_starts_empty_and_a_stopped_one_never_gives() {
        let t0 = Instant::now();
        let mut pace = Pace::full(0.1);
        assert_eq!(pace.take("a", t0), Grant::Now);
        pace.spent("a", t0);
        pace.swap(1.0, t0);
        assert_eq!(
            pace.take("b", t0),
            Grant::After(Duration::from_secs(1)),
            "drained as upstream drains it"
        );
        assert_eq!(pace.take("b", t0 + Duration::from_secs(1)), Grant::Now);
        pace.swap(0.0, t0);
        assert_eq!(
            pace.take("b", t0 + Duration::from_secs(100)),
            Grant::After(SURVEY_PERIOD),
            "stopped: even the holder asks again"
        );
    }
}
