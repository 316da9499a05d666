//! `sim`: run one seed (`sim run --seed N`) or many (`sim explore --seeds 1..10000`).

use clap::{Parser, Subcommand};
use std::process::ExitCode;
use tidemark_engine::ConsistencyMode;
use tidemark_sim::{Outcome, SimConfig, SimError, explore, parse_seeds, run};

#[derive(Parser)]
#[command(about = "Deterministic simulation of Tidemark's shards against loadgen's store")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Common {
    /// The controller run: replicaset, statefulset, daemonset, job or nodelifecycle.
    #[arg(long, default_value = "replicaset")]
    workload: String,
    /// naive, upstream-1.35, upstream-1.36 or tidemark.
    #[arg(long, default_value = "tidemark")]
    mode: String,
    /// Give the shards an old bug back: relist-keeps-plans or proof-never-expires.
    #[arg(long)]
    bug: Option<String>,
    /// The user rescales sets the manager still acts on; a decision on the size a change
    /// replaced less than this many (virtual) milliseconds before it arrived is forgiven.
    #[arg(long)]
    eager_user_ms: Option<u64>,
    /// Shards (1 to 4); drawn from the seed when not given.
    #[arg(long)]
    shards: Option<usize>,
    /// random, or relist-race (faults aimed at a change learned only from a relist).
    #[arg(long, default_value = "random")]
    schedule: String,
    /// Run without faults (checks the harness itself).
    #[arg(long)]
    no_faults: bool,
    /// Trace lines printed with a failure.
    #[arg(long, default_value_t = 40)]
    tail: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Run one seed and print its verdict and trace hash.
    Run {
        /// The seed.
        #[arg(long)]
        seed: u64,
        /// Print every trace line.
        #[arg(long)]
        trace: bool,
        /// If the run fails, take away every fault and user change it does not need and print
        /// the trace of what is left.
        #[arg(long)]
        shrink: bool,
        #[command(flatten)]
        common: Common,
    },
    /// The CI budget: every workload with the gate on over many seeds, every baseline caught,
    /// every seeded bug found; a table, and a non-zero exit if any line misses.
    Budget {
        /// Seeds per workload with the gate on (the baselines get as many).
        #[arg(long, default_value_t = 2_000)]
        seeds: u64,
        /// Threads to run entries on.
        #[arg(long, default_value_t = 2)]
        threads: usize,
    },
    /// Run a range of seeds; print seeds per second and the first failing seed.
    Explore {
        /// Seeds, as `A..B` (B excluded), `A..=B` or `N`.
        #[arg(long, default_value = "1..1000")]
        seeds: String,
        /// Go on after the first failure and count them all.
        #[arg(long)]
        keep_going: bool,
        #[command(flatten)]
        common: Common,
    },
}

fn config(seed: u64, common: &Common) -> Result<SimConfig, SimError> {
    let mode: ConsistencyMode = common.mode.parse()?;
    if let Some(n) = common.shards
        && !(1..=4).contains(&n)
    {
        return Err(SimError::Shards(n));
    }
    let mut config = SimConfig::new(seed, mode);
    config.workload = common.workload.parse()?;
    config.schedule = common.schedule.parse()?;
    config.bug = common.bug.as_deref().map(str::parse).transpose()?;
    config.eager_user = common.eager_user_ms.map(std::time::Duration::from_millis);
    config.shards = common.shards;
    config.faults = !common.no_faults;
    config.trace_tail = common.tail;
    Ok(config)
}

fn report(outcome: &Outcome) {
    println!(
        "seed {} workload {} mode {} shards {}: {:?} after {} events, {:.1} s virtual, trace {:016x}",
        outcome.seed,
        outcome.workload,
        outcome.mode,
        outcome.shards,
        outcome.end,
        outcome.events,
        outcome.virtual_time.as_secs_f64(),
        outcome.trace_hash
    );
    for v in &outcome.violations {
        println!(
            "  violation {:?} at revision {}: {}/{} pod {} (live {}, in flight {}, desired {}, at arrival {})",
            v.kind,
            v.revision,
            v.namespace,
            v.replicaset,
            v.pod,
            v.live,
            v.in_flight,
            v.desired,
            v.at_arrival
        );
    }
}

/// Shrinks a failing run and prints what it did not need and the trace of what is left;
/// whether the run passed.
fn shrink_and_report(config: &SimConfig) -> bool {
    let Some(shrunk) = tidemark_sim::shrink(config) else {
        println!("seed {} passes: nothing to shrink", config.seed);
        return true;
    };
    println!(
        "shrunk in {} runs; not needed for the failure: {:?}",
        shrunk.runs, shrunk.removed
    );
    report(&shrunk.outcome);
    let trace = shrunk.outcome.full.as_deref().unwrap_or_default();
    println!("trace of what is left ({} lines):", trace.len());
    trace.iter().for_each(|line| println!("{line}"));
    false
}

/// Runs and prints the budget; whether every line met its expectation.
fn budget(seeds: u64, threads: usize) -> bool {
    use tidemark_sim::budget::{Expect, plan, replay, run_budget};
    let (rows, elapsed) = run_budget(plan(seeds), threads);
    let total: u64 = rows.iter().map(|r| r.found.runs).sum();
    println!(
        "{:<14} {:<14} {:<12} {:<26} {:>7} {:>9} {:>8}  verdict",
        "workload", "mode", "schedule", "seeded bug", "seeds", "first bad", "seeds/s"
    );
    for row in &rows {
        let e = &row.entry;
        let expect = match e.expect {
            Expect::Clean => "must pass every seed".to_string(),
            Expect::CaughtWithin(n) => format!("must be caught within {n}"),
        };
        println!(
            "{:<14} {:<14} {:<12} {:<26} {:>7} {:>9} {:>8.0}  {} ({expect})",
            e.workload.name(),
            e.mode.to_string(),
            e.schedule.name(),
            e.bug.map_or("-".to_string(), |b| b.to_string()),
            row.found.runs,
            row.found
                .seeds_to_first_failure
                .map_or("-".to_string(), |n| n.to_string()),
            row.found.seeds_per_second(),
            if row.met() { "ok" } else { "MISSED" },
        );
        if !row.met()
            && let Some(line) = replay(row)
        {
            println!("    replay: {line}");
        }
    }
    println!(
        "{total} seeds in {:.1} s on {threads} threads: {:.0} seeds/s",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    rows.iter().all(|r| r.met())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The engine's own reasons (why a key parked, why a plan was held), on stderr when
    // `RUST_LOG` asks for them.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .without_time()
            .init();
    }
    let result = match cli.command {
        Command::Run {
            seed,
            trace,
            shrink,
            common,
        } => config(seed, &common).map(|mut config| {
            if shrink {
                return shrink_and_report(&config);
            }
            config.full_trace = trace;
            let outcome = run(&config);
            report(&outcome);
            if let Some(full) = &outcome.full {
                full.iter().for_each(|line| println!("{line}"));
            } else if !outcome.passed() {
                println!("last {} events:", outcome.tail.len());
                outcome.tail.iter().for_each(|line| println!("  {line}"));
            }
            outcome.passed()
        }),
        Command::Budget { seeds, threads } => Ok(budget(seeds, threads)),
        Command::Explore {
            seeds,
            keep_going,
            common,
        } => parse_seeds(&seeds).and_then(|range| {
            let config = config(range.start, &common)?;
            let found = explore(&config, range, keep_going);
            println!(
                "{} seeds in {:.2} s: {:.0} seeds/s, {} failed",
                found.runs,
                found.elapsed.as_secs_f64(),
                found.seeds_per_second(),
                found.failures
            );
            if let (Some(first), Some(n)) = (&found.first_failure, found.seeds_to_first_failure) {
                println!("first failure after {n} seeds:");
                report(first);
                println!("last {} events:", first.tail.len());
                first.tail.iter().for_each(|line| println!("  {line}"));
                let mut replay = format!(
                    "sim run --seed {} --workload {} --mode {}",
                    first.seed, first.workload, first.mode
                );
                if let Some(bug) = &common.bug {
                    replay.push_str(&format!(" --bug {bug}"));
                }
                if config.schedule != tidemark_sim::Schedule::Random {
                    replay.push_str(&format!(" --schedule {}", config.schedule));
                }
                if let Some(ms) = common.eager_user_ms {
                    replay.push_str(&format!(" --eager-user-ms {ms}"));
                }
                println!("replay: {replay}");
                println!("shrink: {replay} --shrink");
            }
            Ok(found.failures == 0)
        }),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("sim: {e}");
            ExitCode::from(2)
        }
    }
}
