//! `-v N` / `--v=N` and `--logging-format`: kube-controller-manager's klog verbosity mapped onto
//! `tracing` filters, and the subscriber the binary installs: on stderr (the summary goes to
//! stdout), coloured only on a terminal that takes colour and with `NO_COLOR` unset. `RUST_LOG`,
//! when set, wins.

/// How log lines are written (`--logging-format`, alias `--log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// For people.
    #[default]
    Text,
    /// One JSON object a line, for log pipelines.
    Json,
}

/// The filter for klog verbosity `v` (a target matches a directive by prefix: `tidemark` covers
/// the binary and every `tidemark_*` crate): 0-1 info from the tidemark crates (the addresses
/// the binary and the embedded server bound among it), warn from the rest; 2-3 debug from the
/// tidemark crates; 4-5 trace from the tidemark crates and info from kube; 6 and up trace from
/// everything, kube's and hyper's requests included.
pub fn filter_for_verbosity(v: u8) -> &'static str {
    match v {
        0..=1 => "warn,tidemark=info",
        2..=3 => "warn,tidemark=debug,tidemark_actors=debug,tidemark_engine=debug",
        4..=5 => {
            "warn,tidemark=trace,tidemark_actors=trace,tidemark_engine=trace,kube=info,kube_client=info,kube_runtime=info"
        }
        _ => "trace",
    }
}

/// Whether log lines on stderr get colour: only on a terminal that takes it, never with
/// `NO_COLOR` set (`CLICOLOR_FORCE` forces it), so a redirected log greps cleanly.
pub fn colour_on_stderr() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}

/// Installs the global subscriber on stderr: `RUST_LOG` if set and valid, else the filter for
/// verbosity `v`, never kube-rs' response bodies ([`crate::client::loggable`]). Does nothing
/// when a subscriber is already installed.
pub fn init_logs(format: LogFormat, v: u8) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let no_bodies = tracing_subscriber::filter::filter_fn(crate::client::loggable);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter_for_verbosity(v)));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_on_stderr())
        .with_writer(std::io::stderr);
    let _already_installed = match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .finish()
            .with(no_bodies)
            .try_init(),
        LogFormat::Text => builder.finish().with(no_bodies).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verbosity_maps_onto_a_filter_tracing_accepts() {
        for v in 0..=10 {
            let text = filter_for_verbosity(v);
            assert!(
                tracing_subscriber::EnvFilter::try_new(text).is_ok(),
                "-v {v}: {text}"
            );
        }
    }

    #[test]
    fn higher_verbosity_opens_more() {
        assert_eq!(filter_for_verbosity(0), filter_for_verbosity(1));
        assert!(
            filter_for_verbosity(0).contains("tidemark=info"),
            "the binary's own lines (the addresses it serves on) show at the default level"
        );
        assert!(filter_for_verbosity(2).contains("tidemark_engine=debug"));
        assert!(filter_for_verbosity(4).contains("kube=info"));
        assert!(filter_for_verbosity(4).contains("tidemark_actors=trace"));
        assert_eq!(filter_for_verbosity(6), "trace");
        assert_eq!(filter_for_verbosity(u8::MAX), "trace");
    }
}
