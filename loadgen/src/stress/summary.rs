//! What `loadgen stress` prints for a person: the verdict and the figures behind it in a few
//! lines, the first violations, and where the managers' logs are (the JSON report has it all).

use crate::stress::report::{ReplicaReport, StressReport};
use std::fmt::Write as _;

/// How many violations the summary lists before counting the rest.
const LISTED: usize = 10;

/// The summary of `report`, one fact a line, ending in a newline.
pub fn summary(report: &StressReport) -> String {
    let mut out = String::new();
    let verdict = if report.passed() { "passed" } else { "FAILED" };
    let _ = writeln!(
        out,
        "stress {} seed {} gate {}: {verdict}",
        report.scenario, report.seed, report.gate
    );
    let _ = writeln!(out, "  violations: {}", report.violations.len());
    for v in report.violations.iter().take(LISTED) {
        let _ = writeln!(
            out,
            "    {} {} at revision {}: {}",
            v.invariant, v.object, v.revision, v.detail
        );
    }
    if report.violations.len() > LISTED {
        let _ = writeln!(
            out,
            "    ... and {} more (the JSON report, --json, lists them all)",
            report.violations.len() - LISTED
        );
    }
    let convergence = if report.converged {
        format!(
            "converged {:.1} s after the last step and fault",
            report.convergence_seconds
        )
    } else {
        format!(
            "NOT converged within {:.0} s after the last step and fault",
            report.convergence_seconds
        )
    };
    let _ = writeln!(out, "  {convergence}");
    let w = &report.writes;
    let _ = writeln!(
        out,
        "  manager writes: {} create, {} update, {} patch, {} delete; {} reconciles, {} stale sync skips, {} live reads",
        w.create,
        w.update,
        w.patch,
        w.delete,
        report.reconciles,
        report.stale_sync_skips,
        report.live_reads
    );
    let _ = writeln!(
        out,
        "  {} fault changes; {:.1} s in all; manager logs: {}",
        report.faults.len(),
        report.duration_seconds,
        report.manager_log
    );
    if report.replicas.len() > 1 {
        for r in &report.replicas {
            let _ = writeln!(out, "  {}", replica_line(r));
        }
    }
    out
}

/// What one of several manager slots received, on a line.
fn replica_line(r: &ReplicaReport) -> String {
    if r.incarnations.is_empty() {
        return format!("tidemark-{}: never started", r.index);
    }
    let mut line = format!(
        "tidemark-{} ({}): {} watch events, {:.1} MB",
        r.index,
        r.incarnations.join(", "),
        r.server_watch_events,
        r.server_watch_bytes as f64 / 1e6
    );
    if let Some(held) = r.ranges_held {
        let _ = write!(line, "; {held} ranges held");
    }
    if let Some(cached) = r.cached_objects {
        let _ = write!(line, "; {cached} objects cached");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stress::report::{ReportedViolation, WriteCounts};

    fn report(violations: usize) -> StressReport {
        StressReport {
            scenario: "tiny".into(),
            seed: 1,
            gate: "off".into(),
            violations: (0..violations)
                .map(|i| ReportedViolation {
                    invariant: "replicaset-no-over-create".into(),
                    object: format!("stress/rs-{i}"),
                    revision: 10 + i as u64,
                    detail: "pod p written by tidemark".into(),
                })
                .collect(),
            converged: true,
            convergence_seconds: 1.25,
            writes: WriteCounts::default(),
            stale_sync_skips: 0,
            live_reads: 0,
            reconciles: 3,
            duration_seconds: 9.0,
            faults: Vec::new(),
            node_taintings: Vec::new(),
            manager_log: "/tmp/tidemark-0.log".into(),
            requests: Vec::new(),
            replicas: Vec::new(),
            watch_traffic: Default::default(),
        }
    }

    #[test]
    fn the_summary_leads_with_the_verdict_and_lists_the_first_violations() {
        let text = summary(&report(12));
        let first = text.lines().next().expect("a line");
        assert_eq!(first, "stress tiny seed 1 gate off: FAILED");
        assert!(text.contains("violations: 12"));
        assert!(text.contains("stress/rs-9 at revision 19"));
        assert!(
            !text.contains("stress/rs-10 "),
            "only the first ten: {text}"
        );
        assert!(text.contains("and 2 more"));
        assert!(text.contains("/tmp/tidemark-0.log"));
    }

    #[test]
    fn with_several_managers_each_gets_a_line_of_what_it_received() {
        let mut r = report(0);
        r.replicas = vec![
            ReplicaReport {
                index: 0,
                incarnations: vec!["tidemark-0.1".into(), "tidemark-0.2".into()],
                server_watch_events: 1200,
                server_watch_bytes: 2_500_000,
                ranges_held: Some(32),
                ..ReplicaReport::default()
            },
            ReplicaReport {
                index: 1,
                ..ReplicaReport::default()
            },
        ];
        let text = summary(&r);
        assert!(
            text.contains(
                "tidemark-0 (tidemark-0.1, tidemark-0.2): 1200 watch events, 2.5 MB; 32 ranges held\n"
            ),
            "{text}"
        );
        assert!(text.contains("tidemark-1: never started"), "{text}");
        assert!(
            !summary(&report(0)).contains("watch events"),
            "one manager: no line"
        );
    }

    #[test]
    fn a_clean_run_says_passed() {
        assert!(summary(&report(0)).starts_with("stress tiny seed 1 gate off: passed\n"));
    }
}
