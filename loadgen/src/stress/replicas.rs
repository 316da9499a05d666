//! What each manager slot received over a run, for the stress report: the watch traffic the
//! server sent its processes (told apart by their User-Agent) and what its last process reported
//! on `/metrics` at the end (watch events and bytes, cached objects, heap, ranges held). A
//! metric the manager does not serve is `None`, not zero.

use crate::apiserver::server::ApiServer;
use crate::oracle::leadership::identity_of;
use crate::store::watch_traffic::ClientWatchFigures;
use crate::stress::managers::Managers;
use crate::stress::report::{
    ClientWatchReport, ReplicaReport, SelectorWatchReport, WatchTrafficReport,
};
use crate::stress::run_as::Scraped;

/// One sample of a Prometheus text exposition: its labels and value.
struct Sample<'a> {
    labels: Vec<(&'a str, &'a str)>,
    value: f64,
}

/// The samples of the metric `name` in `body` (exactly that name: `x_total` is not `x`).
/// Lines that do not parse are skipped.
fn samples<'a>(body: &'a str, name: &str) -> Vec<Sample<'a>> {
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (labels, rest) = match rest.strip_prefix('{') {
                Some(inner) => {
                    let close = inner.find('}')?;
                    (parse_labels(&inner[..close]), &inner[close + 1..])
                }
                None if rest.starts_with(' ') => (Vec::new(), rest),
                None => return None,
            };
            let value = rest.split_whitespace().next()?.parse().ok()?;
            Some(Sample { labels, value })
        })
        .collect()
}

/// `a="x",b="y"` (values without escaped quotes or commas, as the manager's labels are).
fn parse_labels(text: &str) -> Vec<(&str, &str)> {
    text.split(',')
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            Some((key.trim(), value.trim().trim_matches('"')))
        })
        .collect()
}

fn label<'a>(sample: &Sample<'a>, key: &str) -> Option<&'a str> {
    sample
        .labels
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| *v)
}

/// The sum of every sample of `name`, `None` when the body has none.
fn total(body: &str, name: &str) -> Option<u64> {
    let found = samples(body, name);
    (!found.is_empty()).then(|| found.iter().map(|s| s.value.max(0.0) as u64).sum())
}

/// What the manager `body` came from reported about itself.
fn scraped_into(body: &str, report: &mut ReplicaReport) {
    report.watch_events = total(body, "tidemark_watch_events_total");
    report.watch_bytes = total(body, "tidemark_watch_bytes_total");
    report.cached_objects = total(body, "tidemark_cached_objects");
    report.heap_allocated_bytes = total(body, "tidemark_heap_allocated_bytes");
    report.ranges_held = total(body, "tidemark_ranges_held");
    for s in samples(body, "tidemark_range_handovers_total") {
        let change = label(&s, "change").unwrap_or("unknown").to_string();
        *report.range_handovers.entry(change).or_default() += s.value.max(0.0) as u64;
    }
    let fallback = samples(body, "tidemark_shard_selector_fallback");
    if !fallback.is_empty() {
        report.shard_selector_fallback = Some(
            fallback
                .iter()
                .filter(|s| s.value > 0.0)
                .filter_map(|s| label(s, "resource").map(str::to_string))
                .collect(),
        );
    }
}

/// Adds to `report` the watch traffic of the clients whose User-Agent names one of
/// `incarnations`.
fn attribute(
    by_client: &[ClientWatchFigures],
    incarnations: &[String],
    report: &mut ReplicaReport,
) {
    for f in by_client {
        let ours =
            identity_of(&f.user_agent).is_some_and(|id| incarnations.iter().any(|i| i == id));
        if ours {
            report.server_watch_events += f.events;
            report.server_watch_bytes += f.bytes;
            let count = report
                .server_watch_by_resource
                .entry(f.resource.plural().to_string())
                .or_default();
            count.events += f.events;
            count.bytes += f.bytes;
        }
    }
}

/// Each manager slot's report: the server's watch traffic to its incarnations (in all, and
/// since `at_run_start`, the counts when the scenario's run began), and what the scrape of its
/// last one read.
pub fn received(
    server: &ApiServer,
    managers: &Managers,
    scraped: &[Scraped],
    at_run_start: &[ClientWatchFigures],
) -> Vec<ReplicaReport> {
    let by_client = server.watch_traffic_by_client();
    (0..managers.len())
        .map(|index| {
            let incarnations = managers.incarnations(index);
            let mut report = ReplicaReport {
                index,
                running_at_end: managers.is_running(index),
                ..ReplicaReport::default()
            };
            attribute(&by_client, &incarnations, &mut report);
            let mut before = ReplicaReport::default();
            attribute(at_run_start, &incarnations, &mut before);
            report.running_watch_events = report
                .server_watch_events
                .saturating_sub(before.server_watch_events);
            report.running_watch_bytes = report
                .server_watch_bytes
                .saturating_sub(before.server_watch_bytes);
            if let Some(s) = scraped
                .iter()
                .find(|s| incarnations.last() == Some(&s.identity))
            {
                scraped_into(&s.body, &mut report);
            }
            report.incarnations = incarnations;
            report
        })
        .collect()
}

/// The server's watch figures as it counts them: by resource and `shardSelector`, and by client.
pub fn server_watch_traffic(server: &ApiServer) -> WatchTrafficReport {
    WatchTrafficReport {
        by_selector: server
            .watch_traffic()
            .into_iter()
            .map(|f| SelectorWatchReport {
                resource: f.resource.plural().to_string(),
                shard_selector: f.shard_selector,
                events: f.events,
                bytes: f.bytes,
            })
            .collect(),
        by_client: server
            .watch_traffic_by_client()
            .into_iter()
            .map(|f| ClientWatchReport {
                user_agent: f.user_agent,
                resource: f.resource.plural().to_string(),
                events: f.events,
                bytes: f.bytes,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Resource;

    const BODY: &str = "\
# HELP tidemark_watch_events Watch events delivered to the shards
# TYPE tidemark_watch_events counter
tidemark_watch_events_total{group=\"\",resource=\"pods\"} 120
tidemark_watch_events_total{group=\"apps\",resource=\"replicasets\"} 30
tidemark_watch_events_created 1.7e9
tidemark_cached_objects{group=\"\",resource=\"pods\"} 40
tidemark_heap_allocated_bytes 5242880
tidemark_ranges_held 16
tidemark_range_handovers_total{change=\"acquired\"} 17
tidemark_range_handovers_total{change=\"lost\"} 1
tidemark_shard_selector_fallback{resource=\"pods\"} 1
tidemark_shard_selector_fallback{resource=\"replicasets\"} 0
";

    #[test]
    fn the_scale_out_metrics_are_read_and_summed_over_resources() {
        let mut report = ReplicaReport::default();
        scraped_into(BODY, &mut report);
        assert_eq!(report.watch_events, Some(150));
        assert_eq!(report.cached_objects, Some(40));
        assert_eq!(report.heap_allocated_bytes, Some(5_242_880));
        assert_eq!(report.ranges_held, Some(16));
        assert_eq!(report.range_handovers.get("acquired"), Some(&17));
        assert_eq!(report.range_handovers.get("lost"), Some(&1));
        assert_eq!(
            report.shard_selector_fallback,
            Some(vec!["pods".to_string()])
        );
    }

    #[test]
    fn a_restarted_replica_is_sent_what_its_incarnations_were_and_nothing_of_the_others() {
        let figures = |agent: &str, resource, events| ClientWatchFigures {
            user_agent: agent.into(),
            resource,
            events,
            bytes: events * 100,
        };
        let by_client = vec![
            figures("tidemark/0.1.0 (tidemark-1.1)", Resource::Pods, 10),
            figures("tidemark/0.1.0 (tidemark-1.2)", Resource::Pods, 5),
            figures("tidemark/0.1.0 (tidemark-1.2)", Resource::ReplicaSets, 2),
            figures("tidemark/0.1.0 (tidemark-11.1)", Resource::Pods, 70),
            figures("kubectl/v1.36", Resource::Pods, 90),
        ];
        let mut report = ReplicaReport::default();
        let incarnations = ["tidemark-1.1".to_string(), "tidemark-1.2".to_string()];
        attribute(&by_client, &incarnations, &mut report);
        assert_eq!(report.server_watch_events, 17);
        assert_eq!(report.server_watch_bytes, 1700);
        let pods = report.server_watch_by_resource.get("pods");
        assert_eq!(pods.map(|c| c.events), Some(15));
    }

    #[test]
    fn a_metric_the_manager_does_not_serve_is_not_reported_rather_than_zero() {
        let mut report = ReplicaReport::default();
        scraped_into("workqueue_depth{name=\"replicaset\"} 0\n", &mut report);
        assert_eq!(report.watch_bytes, None);
        assert_eq!(report.ranges_held, None);
        assert_eq!(report.shard_selector_fallback, None);
        assert!(report.range_handovers.is_empty());
    }

    #[test]
    fn a_name_is_matched_whole_and_a_garbled_line_is_skipped() {
        let body = "tidemark_ranges_held_max 9\ntidemark_ranges_held{x=\"1\" 3\ntidemark_ranges_held nan-ish\n";
        assert_eq!(total(body, "tidemark_ranges_held"), None);
    }
}
