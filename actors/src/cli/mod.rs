//! `tidemark`'s command line as a library, so tests parse it as the binary does: Tidemark's flags
//! and kube-controller-manager's, Go durations and booleans, `--controllers` and `-v`.

pub mod command;
pub mod controller_names;
pub mod controllers;
pub mod go_duration;
pub mod logging;
pub mod not_run_flags;
pub mod run_args;
pub mod upstream_values;

#[cfg(test)]
mod kubeadm_tests;
#[cfg(test)]
mod run_args_tests;

pub use command::{Cli, Command};
pub use controllers::{ControllersError, resolve_controllers};
pub use go_duration::{GoDuration, GoDurationError, parse_duration_or_seconds, parse_go_duration};
pub use logging::{LogFormat, filter_for_verbosity, init_logs};
pub use not_run_flags::NotRunFlags;
pub use run_args::RunArgs;
pub use upstream_values::{PROTOBUF, UpstreamValueError, parse_content_type, parse_resource_lock};
