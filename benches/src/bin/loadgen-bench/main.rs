//! `loadgen-bench` (run as `loadgen bench`): seeds the bench server with N realistic Pods owned
//! by M ReplicaSets and measures Tidemark and the kube-rs peer doing the same work, side by side
//! in one run; writes the JSON report.
//!
//! It lives in the benches crate because it drives Tidemark in process (tidemark-actors), which
//! itself depends on tidemark-loadgen: loadgen cannot depend back on it.

mod child;
mod churn;
mod gate;
mod machine;
mod noop;
mod null_client;
mod peer;
mod profile;
mod reconcile;
mod run;
mod seed;
mod slowdown;
mod sync;
mod targets;
mod wake;

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Million-object benchmark of Tidemark beside kube-rs.
#[derive(Debug, Parser)]
#[command(name = "loadgen-bench", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--peer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Peer {
    /// kube-rs watcher + reflector, and Controller.
    KubeRs,
    /// Tidemark alone.
    None,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the bench and write the JSON report.
    Bench {
        /// Pods (replaces the profile's sizes with this one).
        #[arg(long)]
        pods: Option<u64>,
        /// ReplicaSets owning them (default: one per 10 Pods).
        #[arg(long)]
        replicasets: Option<u64>,
        /// `ci` (a few minutes, with the peer) or `full` (10k, 100k, 1M).
        #[arg(long, value_enum, default_value_t = profile::Profile::Ci)]
        profile: profile::Profile,
        /// The peer measured beside Tidemark.
        #[arg(long, value_enum, default_value_t = Peer::KubeRs)]
        peer: Peer,
        /// Where to write the JSON report.
        #[arg(long)]
        json: PathBuf,
    },
    /// One phase, in a child process (internal).
    #[command(hide = true)]
    Phase(child::PhaseArgs),
}

fn main() -> anyhow::Result<()> {
    tidemark_loadgen::logs::init("error");
    let cli = Cli::parse();
    match cli.command {
        Command::Phase(args) => {
            let out = child::run(&args)?;
            println!("{}", serde_json::to_string(&out)?);
            // Skip tearing down a million cached objects: the parent only needs the figures.
            std::process::exit(0);
        }
        Command::Bench {
            pods,
            replicasets,
            profile,
            peer,
            json,
        } => {
            let command_line = std::iter::once("loadgen bench".to_string())
                .chain(std::env::args().skip(2))
                .collect::<Vec<_>>()
                .join(" ");
            let report = run::run(&run::Options {
                profile,
                pods,
                replicasets,
                peer: peer == Peer::KubeRs,
                command_line,
            })?;
            let text = serde_json::to_string_pretty(&report)?;
            std::fs::write(&json, &text).with_context(|| format!("writing {}", json.display()))?;
            println!(
                "bench: {} profile in {:.0} s; report in {}",
                report.profile,
                report.wall_seconds,
                json.display()
            );
            Ok(())
        }
    }
}
