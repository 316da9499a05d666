//! `loadgen stress --gate all`: one scenario and seed under every consistency mode (two runs at
//! a time, each with its own server and managers), and the table that shows them side by side.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::stress::mode::Mode;
use crate::stress::report::StressReport;
use crate::stress::{StressOptions, run};

/// How many modes run at once: each run mostly waits out watch delays, not on the cores.
const AT_ONCE: usize = 2;

/// One mode's line of the table.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModeRow {
    /// The mode's name.
    pub mode: String,
    /// Violations found, by invariant.
    pub violations: BTreeMap<String, usize>,
    /// Every set converged within the bound.
    pub converged: bool,
    /// Why the run could not be carried out (for example a manager that refused the mode).
    pub error: Option<String>,
}

impl ModeRow {
    fn of(mode: Mode, outcome: &Result<StressReport, String>) -> ModeRow {
        let mut violations = BTreeMap::new();
        let (converged, error) = match outcome {
            Ok(report) => {
                for v in &report.violations {
                    *violations.entry(v.invariant.clone()).or_insert(0) += 1;
                }
                (report.converged, None)
            }
            Err(e) => (false, Some(e.clone())),
        };
        ModeRow {
            mode: mode.name().into(),
            violations,
            converged,
            error,
        }
    }

    /// No violation, converged, and the run was carried out.
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.converged && self.violations.is_empty()
    }
}

/// Every mode's run of one scenario and seed.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// One row per mode, weakest first.
    pub rows: Vec<ModeRow>,
    /// The full report of every run that was carried out.
    pub reports: Vec<StressReport>,
}

impl Comparison {
    /// The `tidemark` mode passed (the other modes are expected to be caught in some scenarios).
    pub fn tidemark_passed(&self) -> bool {
        self.rows
            .iter()
            .any(|r| r.mode == Mode::Tidemark.name() && r.passed())
    }

    /// The table in markdown: a column per invariant any mode broke.
    pub fn markdown(&self) -> String {
        let invariants: BTreeSet<&String> =
            self.rows.iter().flat_map(|r| r.violations.keys()).collect();
        let mut text = format!(
            "{} seed {}\n\n| mode |{} converged |\n|---|{}---|\n",
            self.scenario,
            self.seed,
            invariants
                .iter()
                .map(|i| format!(" {i} |"))
                .collect::<String>(),
            "---|".repeat(invariants.len()),
        );
        for row in &self.rows {
            let cells: String = invariants
                .iter()
                .map(|i| match (&row.error, row.violations.get(*i)) {
                    (Some(_), _) => " - |".to_string(),
                    (None, n) => format!(" {} |", n.copied().unwrap_or(0)),
                })
                .collect();
            let converged = match &row.error {
                Some(e) => format!("error: {}", e.replace('|', "/")),
                None => if row.converged { "yes" } else { "no" }.to_string(),
            };
            text.push_str(&format!("| {} |{cells} {converged} |\n", row.mode));
        }
        text
    }
}

/// Runs `base`'s scenario and seed under every mode of [`Mode::COMPARED`]; each run writes into
/// its own folder under `base.work_dir`.
pub async fn run_all(base: StressOptions) -> Comparison {
    let mut rows = Vec::new();
    let mut reports = Vec::new();
    for modes in Mode::COMPARED.chunks(AT_ONCE) {
        let runs = modes.iter().map(|mode| {
            let mut options = base.clone();
            options.gate = *mode;
            options.work_dir = base.work_dir.join(mode.name());
            run(options)
        });
        let outcomes = futures::future::join_all(runs).await;
        for (mode, outcome) in modes.iter().zip(outcomes) {
            let outcome = outcome.map_err(|e| e.to_string());
            rows.push(ModeRow::of(*mode, &outcome));
            if let Ok(report) = outcome {
                reports.push(report);
            }
        }
    }
    Comparison {
        scenario: base.scenario.name.clone(),
        seed: base.seed,
        rows,
        reports,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(mode: Mode, found: &[(&str, usize)], converged: bool) -> ModeRow {
        ModeRow {
            mode: mode.name().into(),
            violations: found.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            converged,
            error: None,
        }
    }

    #[test]
    fn the_table_has_a_column_per_invariant_any_mode_broke() {
        let comparison = Comparison {
            scenario: "s".into(),
            seed: 1,
            rows: vec![
                row(Mode::Naive, &[("replicaset-no-over-create", 12)], false),
                row(
                    Mode::Upstream135,
                    &[("replicaset-no-wanted-pod-deleted", 3)],
                    true,
                ),
                row(Mode::Tidemark, &[], true),
            ],
            reports: vec![],
        };
        let table = comparison.markdown();
        assert!(
            table.contains(
                "| mode | replicaset-no-over-create | replicaset-no-wanted-pod-deleted | converged |"
            ),
            "{table}"
        );
        assert!(table.contains("| naive | 12 | 0 | no |"), "{table}");
        assert!(table.contains("| tidemark | 0 | 0 | yes |"), "{table}");
        assert!(comparison.tidemark_passed());
    }

    #[test]
    fn a_run_that_could_not_be_carried_out_says_why_and_does_not_pass() {
        let failed = ModeRow::of(Mode::Tidemark, &Err("tidemark-0 exited early".into()));
        assert!(!failed.passed());
        let comparison = Comparison {
            scenario: "s".into(),
            seed: 1,
            rows: vec![failed],
            reports: vec![],
        };
        assert!(!comparison.tidemark_passed());
        assert!(
            comparison
                .markdown()
                .contains("| tidemark | error: tidemark-0 exited early |")
        );
    }
}
