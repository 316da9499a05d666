//! Logs of the command-line tools (`loadgen`, `loadgen-bench`): on stderr, because stdout carries
//! reports; coloured only on a terminal that takes colour and with `NO_COLOR` unset; written
//! above the live progress line ([`crate::progress`]) instead of through it.

use std::io::Write;

/// Whether log lines on stderr get colour: only on a terminal that takes it, never with
/// `NO_COLOR` set (`CLICOLOR_FORCE` forces it), so a redirected log greps cleanly.
pub fn colour_on_stderr() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}

/// Installs the global subscriber: `RUST_LOG` if set and valid, else `default_filter`. Does
/// nothing when a subscriber is already installed.
pub fn init(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let _already_installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_on_stderr())
        .with_writer(|| AboveProgress)
        .try_init();
}

/// Stderr, with the live progress line taken down while a log line is written.
struct AboveProgress;

impl Write for AboveProgress {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        crate::progress::suspended(|| std::io::stderr().write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        crate::progress::suspended(|| std::io::stderr().write_all(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
