//! `loadgen campaign`'s options and the run from options to report.

use super::matrix::{Cell, Controller, FaultClass, cell};
use super::report::{Verdict, heat_map, markdown, verdict};
use super::run::{ci_sample, plan, run_all, work_dir};
use std::path::PathBuf;
use std::sync::Arc;

/// Which cells to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sample {
    /// Each fault class once and every controller at least once (what CI runs).
    Ci,
    /// Every controller under every fault class.
    Full,
}

/// `loadgen campaign`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct CampaignArgs {
    /// Which cells: `ci` (each class once) or `full` (the whole matrix).
    #[arg(long, value_enum, default_value_t = Sample::Ci)]
    pub sample: Sample,
    /// Seeds, as `FIRST..LAST` (inclusive) or a comma-separated list.
    #[arg(long, default_value = "1")]
    pub seeds: String,
    /// Runs at a time (each is a server and its managers, mostly waiting on faults).
    #[arg(long, default_value_t = 4)]
    pub parallel: usize,
    /// Where scenario files, stress reports and logs go (default: a new temporary folder).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Write every run's result here as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the table here (Markdown).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write the heat map here (SVG).
    #[arg(long)]
    pub heat_map: Option<PathBuf>,
    /// Only these cells of the sample, as `CONTROLLER/CLASS` (for example `job/restart-mid-write`),
    /// comma-separated: to run a cell that failed again, over more seeds.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
}

/// Why a campaign could not be run (its verdict is separate).
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// `--seeds` is not a range or a list of numbers.
    #[error("--seeds {0:?}: expected FIRST..LAST or a comma-separated list of numbers")]
    Seeds(String),
    /// `--only` names no cell of the sample.
    #[error(
        "--only {0:?}: no such cell in the sample; cells are CONTROLLER/CLASS, e.g. replicaset/watch-delay"
    )]
    Only(String),
    /// A cell could not be built.
    #[error(transparent)]
    Cell(#[from] super::matrix::CellError),
    /// Files.
    #[error("campaign files: {0}")]
    Io(#[from] std::io::Error),
    /// The heat map.
    #[error(transparent)]
    HeatMap(#[from] super::report::HeatMapError),
    /// The JSON report.
    #[error("campaign JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Parses `--seeds`.
pub fn parse_seeds(text: &str) -> Result<Vec<u64>, CampaignError> {
    let bad = || CampaignError::Seeds(text.to_string());
    if let Some((first, last)) = text.split_once("..") {
        let first: u64 = first.trim().parse().map_err(|_| bad())?;
        let last: u64 = last.trim().parse().map_err(|_| bad())?;
        if first > last {
            return Err(bad());
        }
        return Ok((first..=last).collect());
    }
    text.split(',')
        .map(|s| s.trim().parse().map_err(|_| bad()))
        .collect()
}

/// The pairs `only` names (`CONTROLLER/CLASS`), or all of them when it is empty.
pub fn only(
    pairs: Vec<(Controller, FaultClass)>,
    only: &[String],
) -> Result<Vec<(Controller, FaultClass)>, CampaignError> {
    if only.is_empty() {
        return Ok(pairs);
    }
    for wanted in only {
        if !pairs
            .iter()
            .any(|(c, f)| format!("{}/{}", c.name(), f.name()) == *wanted)
        {
            return Err(CampaignError::Only(wanted.clone()));
        }
    }
    Ok(pairs
        .into_iter()
        .filter(|(c, f)| only.contains(&format!("{}/{}", c.name(), f.name())))
        .collect())
}

/// Runs the campaign `args` describe with `loadgen` (this binary); prints one line per run on
/// stderr and returns the verdict.
pub fn run(args: &CampaignArgs, command: &str) -> Result<Verdict, CampaignError> {
    let seeds = parse_seeds(&args.seeds)?;
    let pairs: Vec<(Controller, FaultClass)> = match args.sample {
        Sample::Ci => ci_sample(),
        Sample::Full => Controller::ALL
            .iter()
            .flat_map(|c| FaultClass::ALL.iter().map(move |f| (*c, *f)))
            .collect(),
    };
    let pairs = only(pairs, &args.only)?;
    let cells: Vec<Arc<Cell>> = pairs
        .into_iter()
        .map(|(c, f)| cell(c, f).map(Arc::new))
        .collect::<Result<_, _>>()?;
    let dir = work_dir(args.dir.clone())?;
    let loadgen = std::env::current_exe()?;
    let planned = plan(&cells, &seeds, &["on", "off"]);
    eprintln!(
        "campaign: {} cells x {} seeds x gate on/off = {} runs, {} at a time, files in {}",
        cells.len(),
        seeds.len(),
        planned.len(),
        args.parallel,
        dir.display()
    );
    let results = run_all(&loadgen, &dir, planned, args.parallel, &|done, total, r| {
        let outcome = match &r.error {
            Some(e) => format!("error: {e}"),
            None => format!(
                "{} violations{}",
                r.violation_count(),
                if r.converged { "" } else { ", not converged" }
            ),
        };
        eprintln!(
            "campaign [{done}/{total}] {} {} seed {} gate {}: {outcome} ({:.0} s)",
            r.controller, r.class, r.seed, r.gate, r.seconds
        );
    });
    let table = markdown(&results, command);
    println!("{table}");
    if let Some(path) = &args.markdown {
        std::fs::write(path, &table)?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&results)?)?;
    }
    if let Some(path) = &args.heat_map {
        heat_map(&results, path)?;
    }
    Ok(verdict(&results))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_read_as_a_range_or_a_list() {
        assert_eq!(parse_seeds("1..4").expect("range"), vec![1, 2, 3, 4]);
        assert_eq!(parse_seeds("3, 7").expect("list"), vec![3, 7]);
        assert!(parse_seeds("4..1").is_err());
        assert!(parse_seeds("many").is_err());
    }

    #[test]
    fn only_keeps_the_named_cells_and_refuses_unknown_ones() {
        let all = vec![
            (Controller::Job, FaultClass::RestartMidWrite),
            (Controller::ReplicaSet, FaultClass::WatchDelay),
        ];
        let kept = only(all.clone(), &["job/restart-mid-write".to_string()]).expect("known");
        assert_eq!(kept, vec![(Controller::Job, FaultClass::RestartMidWrite)]);
        assert_eq!(only(all.clone(), &[]).expect("none named"), all);
        assert!(only(all, &["job/typo".to_string()]).is_err());
    }
}
