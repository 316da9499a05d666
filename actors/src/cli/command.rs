//! The `tidemark` command line: its subcommands.

use super::run_args::RunArgs;
use clap::{Parser, Subcommand};

/// `tidemark`.
#[derive(Parser, Debug)]
#[command(
    name = "tidemark",
    version,
    about = "A Kubernetes controller manager that stays correct when its cache lags"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `tidemark`'s subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the controller manager; kube-controller-manager's flags are accepted too.
    Run(RunArgs),
}
