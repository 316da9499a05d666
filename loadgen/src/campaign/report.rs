//! The campaign's report: one row per controller and fault class with gate on and off side by
//! side, a verdict on the campaign's claims, and a heat map of violations.

use super::matrix::{Controller, FaultClass};
use super::run::RunResult;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Totals of one cell under one gate.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Runs.
    pub runs: usize,
    /// Runs with at least one violation.
    pub caught: usize,
    /// Violations over all runs.
    pub violations: usize,
    /// Runs that converged.
    pub converged: usize,
    /// Runs that could not be carried out.
    pub errors: usize,
}

/// Tallies by (controller, class, gate).
pub fn tally(results: &[RunResult]) -> BTreeMap<(String, String, String), Tally> {
    let mut map: BTreeMap<(String, String, String), Tally> = BTreeMap::new();
    for r in results {
        let t = map
            .entry((r.controller.clone(), r.class.clone(), r.gate.clone()))
            .or_default();
        t.runs += 1;
        if r.error.is_some() {
            t.errors += 1;
            continue;
        }
        t.violations += r.violation_count();
        t.caught += usize::from(r.violation_count() > 0);
        t.converged += usize::from(r.converged);
    }
    map
}

/// The campaign's claims: gate on, no violation and every run converged; gate off, caught in
/// every stale-state class somewhere in the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Runs in all.
    pub runs: usize,
    /// Gate-on runs with a violation.
    pub on_violating: usize,
    /// Gate-on runs that did not converge.
    pub on_unconverged: usize,
    /// Runs that could not be carried out.
    pub errors: usize,
    /// Stale-state classes run with the gate off in which no run was caught.
    pub off_uncaught_classes: Vec<String>,
}

impl Verdict {
    /// Whether every claim holds.
    pub fn holds(&self) -> bool {
        self.on_violating == 0
            && self.on_unconverged == 0
            && self.errors == 0
            && self.off_uncaught_classes.is_empty()
    }
}

/// Judges `results`.
pub fn verdict(results: &[RunResult]) -> Verdict {
    let on = results
        .iter()
        .filter(|r| r.gate == "on" && r.error.is_none());
    let on_violating = on.clone().filter(|r| r.violation_count() > 0).count();
    let on_unconverged = on.filter(|r| !r.converged).count();
    let off_uncaught_classes = FaultClass::ALL
        .iter()
        .filter(|class| class.is_stale_state())
        .filter(|class| {
            let off: Vec<&RunResult> = results
                .iter()
                .filter(|r| r.gate == "off" && r.class == class.name() && r.error.is_none())
                .collect();
            !off.is_empty() && off.iter().all(|r| r.violation_count() == 0)
        })
        .map(|class| class.name().to_string())
        .collect();
    Verdict {
        runs: results.len(),
        on_violating,
        on_unconverged,
        errors: results.iter().filter(|r| r.error.is_some()).count(),
        off_uncaught_classes,
    }
}

/// The Markdown table and verdict.
pub fn markdown(results: &[RunResult], command: &str) -> String {
    let tallies = tally(results);
    let v = verdict(results);
    let mut out = String::new();
    let _ = writeln!(out, "Command: `{command}`\n");
    let _ = writeln!(
        out,
        "{} runs; gate on: {} with a violation, {} not converged; runs that could not be carried out: {}; stale-state classes never caught with the gate off: {}.\n",
        v.runs,
        v.on_violating,
        v.on_unconverged,
        v.errors,
        if v.off_uncaught_classes.is_empty() {
            "none".to_string()
        } else {
            v.off_uncaught_classes.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "| controller | fault class | gate on: violations (runs caught / runs) | gate on: converged | gate off: violations (runs caught / runs) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for controller in Controller::ALL {
        for class in FaultClass::ALL {
            let key = |gate: &str| {
                (
                    controller.name().to_string(),
                    class.name().to_string(),
                    gate.to_string(),
                )
            };
            let on = tallies.get(&key("on"));
            let off = tallies.get(&key("off"));
            if on.is_none() && off.is_none() {
                continue;
            }
            let cell = |t: Option<&Tally>| {
                t.map_or("-".to_string(), |t| {
                    let errors = if t.errors > 0 {
                        format!(", {} errors", t.errors)
                    } else {
                        String::new()
                    };
                    format!("{} ({}/{}{errors})", t.violations, t.caught, t.runs)
                })
            };
            let converged = on.map_or("-".to_string(), |t| format!("{}/{}", t.converged, t.runs));
            let _ = writeln!(
                out,
                "| {controller} | {class} | {} | {converged} | {} |",
                cell(on),
                cell(off)
            );
        }
    }
    out
}

/// Why the heat map could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("heat map {path}: {message}")]
pub struct HeatMapError {
    /// The file.
    pub path: String,
    /// What failed.
    pub message: String,
}

/// Draws the violations per controller and fault class, gate on beside gate off, as SVG.
pub fn heat_map(results: &[RunResult], path: &Path) -> Result<(), HeatMapError> {
    let fail = |e: &dyn std::fmt::Display| HeatMapError {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let tallies = tally(results);
    let cell_w = 70i32;
    let cell_h = 30i32;
    let left = 150i32;
    let top = 60i32;
    let classes = FaultClass::ALL.len() as i32;
    let controllers = Controller::ALL.len() as i32;
    let panel = controllers * cell_w + 40;
    let width = (left + 2 * panel) as u32;
    let height = (top + classes * cell_h + 30) as u32;
    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let text = |s: &str, x: i32, y: i32, size: i32| {
        root.draw(&Text::new(
            s.to_string(),
            (x, y),
            ("sans-serif", size).into_font().color(&BLACK),
        ))
    };
    for (p, gate) in ["on", "off"].iter().enumerate() {
        let x0 = left + p as i32 * panel;
        text(
            &format!("gate {gate}: violations (runs caught/runs)"),
            x0,
            10,
            14,
        )
        .map_err(|e| fail(&e))?;
        for (c, controller) in Controller::ALL.iter().enumerate() {
            text(controller.name(), x0 + c as i32 * cell_w + 4, top - 18, 11)
                .map_err(|e| fail(&e))?;
        }
        for (k, class) in FaultClass::ALL.iter().enumerate() {
            let y = top + k as i32 * cell_h;
            if p == 0 {
                text(class.name(), 8, y + 9, 12).map_err(|e| fail(&e))?;
            }
            for (c, controller) in Controller::ALL.iter().enumerate() {
                let x = x0 + c as i32 * cell_w;
                let t = tallies.get(&(
                    controller.name().to_string(),
                    class.name().to_string(),
                    gate.to_string(),
                ));
                let color = match t {
                    None => RGBColor(235, 235, 235),
                    Some(t) if t.errors > 0 => RGBColor(160, 160, 160),
                    Some(t) if t.violations == 0 => RGBColor(200, 235, 200),
                    Some(t) => {
                        let heat = ((t.violations as f64).log10() / 3.0).clamp(0.0, 1.0);
                        RGBColor(255, (200.0 * (1.0 - heat)) as u8 + 20, 60)
                    }
                };
                root.draw(&Rectangle::new(
                    [(x, y), (x + cell_w - 2, y + cell_h - 2)],
                    color.filled(),
                ))
                .map_err(|e| fail(&e))?;
                if let Some(t) = t {
                    text(
                        &format!("{} ({}/{})", t.violations, t.caught, t.runs),
                        x + 4,
                        y + 9,
                        11,
                    )
                    .map_err(|e| fail(&e))?;
                }
            }
        }
    }
    root.present().map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(class: FaultClass, gate: &str, violations: usize, converged: bool) -> RunResult {
        let mut by = BTreeMap::new();
        if violations > 0 {
            by.insert("replicaset-no-over-create".to_string(), violations);
        }
        RunResult {
            controller: "replicaset".into(),
            class: class.name().into(),
            seed: 1,
            gate: gate.into(),
            violations: by,
            converged,
            seconds: 1.0,
            error: None,
        }
    }

    #[test]
    fn the_verdict_holds_when_gate_on_is_clean_and_gate_off_is_caught() {
        let results = vec![
            result(FaultClass::WatchDelay, "on", 0, true),
            result(FaultClass::WatchDelay, "off", 12, true),
        ];
        assert!(verdict(&results).holds());
    }

    #[test]
    fn a_gate_off_class_never_caught_breaks_the_verdict() {
        let results = vec![
            result(FaultClass::Stall, "on", 0, true),
            result(FaultClass::Stall, "off", 0, true),
        ];
        let v = verdict(&results);
        assert_eq!(v.off_uncaught_classes, vec!["stall".to_string()]);
        assert!(!v.holds());
    }

    #[test]
    fn a_gate_on_violation_or_a_run_that_never_converged_breaks_the_verdict() {
        assert!(!verdict(&[result(FaultClass::Drop, "on", 1, true)]).holds());
        assert!(!verdict(&[result(FaultClass::Drop, "on", 0, false)]).holds());
    }

    #[test]
    fn the_table_shows_gate_on_and_off_side_by_side() {
        let md = markdown(
            &[
                result(FaultClass::WatchDelay, "on", 0, true),
                result(FaultClass::WatchDelay, "off", 7, true),
            ],
            "loadgen campaign",
        );
        assert!(
            md.contains("| replicaset | watch-delay | 0 (0/1) | 1/1 | 7 (1/1) |"),
            "{md}"
        );
    }

    #[test]
    fn the_heat_map_is_written() {
        let path = std::env::temp_dir().join(format!("heat-{}.svg", std::process::id()));
        heat_map(&[result(FaultClass::WatchDelay, "off", 7, true)], &path).expect("drawn");
        let svg = std::fs::read_to_string(&path).expect("svg");
        assert!(svg.contains("watch-delay"));
        let _ = std::fs::remove_file(path);
    }
}
