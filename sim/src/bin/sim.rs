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
        #[command(flatten)]
        common: Common,
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
            common,
        } => config(seed, &common).map(|mut config| {
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
