//! The `loadgen` command: runs the simulated API server until Ctrl-C, runs stress scenarios,
//! runs the bench (`loadgen bench` executes `loadgen-bench`, built beside it by the benches
//! crate, which can depend on Tidemark itself) and renders its report. Reports and summaries go
//! to stdout, logs and progress to stderr.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tidemark_loadgen::{Resource, ServerConfig};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Simulated Kubernetes API server with fault injection and an invariant oracle.
#[derive(Debug, Parser)]
#[command(name = "loadgen", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the simulated API server until Ctrl-C.
    Apiserver {
        /// Address of the API listener.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Address of the admin (fault injection) listener.
        #[arg(long, default_value = "127.0.0.1:0")]
        admin_listen: SocketAddr,
        /// Where to write a kubeconfig for the server.
        #[arg(long)]
        kubeconfig_out: Option<PathBuf>,
        /// Watch delay for pods, in milliseconds.
        #[arg(long, default_value_t = 0)]
        pod_watch_delay_ms: u64,
        /// Serve plain HTTP with no authentication and no RBAC (the default is HTTPS with a
        /// generated CA, credentials required and RBAC enforced, as kube-apiserver).
        #[arg(long)]
        plain_http: bool,
        /// More names or addresses for the serving certificate (loopback is always in it).
        #[arg(long, value_delimiter = ',')]
        tls_san: Vec<String>,
        /// Do not emulate the kubelet (Pods stay Pending).
        #[arg(long)]
        no_kubelet: bool,
    },
    /// Run a stress scenario: the server, `tidemark run` as a separate process, the workload and
    /// faults, then convergence and the oracle. Exits 0 only with no violation and convergence.
    Stress {
        /// A built-in scenario's name (`--list` shows them) or a TOML file.
        #[arg(long, required_unless_present = "list")]
        scenario: Option<String>,
        /// List the built-in scenarios, each with its first sentence, and exit.
        #[arg(long, conflicts_with = "scenario")]
        list: bool,
        /// Seed of every random choice.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The managers' protection: on, off, a consistency mode, or all four modes side by side.
        #[arg(long, value_enum, default_value_t = Gate::On)]
        gate: Gate,
        /// Write the JSON report here; `-` writes it to stdout (and the summary to stderr).
        #[arg(long)]
        json: Option<PathBuf>,
        /// The tidemark binary (default: the one beside loadgen, else `tidemark` on PATH).
        #[arg(long)]
        tidemark: Option<PathBuf>,
    },
    /// The fault campaign: every controller under every fault class (or the CI sample), over
    /// seeds, gate on and off, each run a `loadgen stress`; prints the table and exits 1 unless
    /// gate on had no violation and converged everywhere and gate off was caught in every
    /// stale-state class.
    Campaign(tidemark_loadgen::campaign::cli::CampaignArgs),
    /// Measure Tidemark beside kube-rs (runs `loadgen-bench bench` with these arguments:
    /// `--pods N [--replicasets M] [--profile ci|full] [--peer kube-rs|none] --json OUT`).
    #[command(disable_help_flag = true)]
    Bench {
        /// Passed to `loadgen-bench bench`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Render a bench report: markdown tables, SVG and PNG plots, and the regression check against a
    /// baseline (exit 1 when a ratio falls more than 20% below it or bytes per object rise more
    /// than 20% above it).
    Report {
        /// The bench JSON.
        #[arg(long = "in")]
        input: PathBuf,
        /// The baseline JSON.
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Where to write the markdown section.
        #[arg(long)]
        markdown: Option<PathBuf>,
        /// Where to write the plots.
        #[arg(long)]
        plots: Option<PathBuf>,
    },
    /// Least privilege, proven from the request log: the union of the managers' requests over
    /// stress reports against the grants of an RBAC manifest. Exits 1 when a grant was never
    /// used, a wildcard is granted, or a request was refused.
    RbacAudit {
        /// The RBAC manifest (default: the embedded deploy/rbac.yaml).
        #[arg(long)]
        rbac: Option<PathBuf>,
        /// The ServiceAccount, `namespace/name`.
        #[arg(long, default_value = "kube-system/tidemark")]
        service_account: String,
        /// Stress reports (`loadgen stress --json`).
        #[arg(required = true)]
        reports: Vec<PathBuf>,
    },
}

/// `--gate`: `on`/`off` (the feature gate and the scenario's protections), a consistency mode of
/// `tidemark run --consistency-mode`, or `all` (the four modes side by side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Gate {
    On,
    Off,
    Naive,
    #[value(name = "upstream-1.35")]
    Upstream135,
    #[value(name = "upstream-1.36")]
    Upstream136,
    Tidemark,
    All,
}

impl Gate {
    /// The one mode to run; `None` for `all`.
    fn mode(self) -> Option<tidemark_loadgen::stress::mode::Mode> {
        use tidemark_loadgen::stress::mode::Mode;
        match self {
            Gate::On => Some(Mode::On),
            Gate::Off => Some(Mode::Off),
            Gate::Naive => Some(Mode::Naive),
            Gate::Upstream135 => Some(Mode::Upstream135),
            Gate::Upstream136 => Some(Mode::Upstream136),
            Gate::Tidemark => Some(Mode::Tidemark),
            Gate::All => None,
        }
    }
}

fn main() -> std::process::ExitCode {
    tidemark_loadgen::logs::init("info");
    match run_command(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One line a user can read; the chain of causes with `{:#}`, a backtrace when asked.
            if std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0") {
                eprintln!("loadgen: {e:?}");
            } else {
                eprintln!("loadgen: {e:#}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}

fn run_command(cli: Cli) -> anyhow::Result<()> {
    match &cli.command {
        Command::Stress { list: true, .. } => {
            print!("{}", tidemark_loadgen::scenario::catalog::listing());
            return Ok(());
        }
        Command::Bench { args } => return bench(args),
        Command::Report {
            input,
            baseline,
            markdown,
            plots,
        } => {
            return report(
                input,
                baseline.as_deref(),
                markdown.as_deref(),
                plots.as_deref(),
            );
        }
        Command::RbacAudit {
            rbac,
            service_account,
            reports,
        } => return rbac_audit(rbac.as_deref(), service_account, reports),
        _ => {}
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(run(cli))
}

fn rbac_audit(
    rbac: Option<&std::path::Path>,
    service_account: &str,
    reports: &[PathBuf],
) -> anyhow::Result<()> {
    use tidemark_loadgen::rbac::{RequestLogEntry, UserInfo, audit, parse_manifests};
    let text = match rbac {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?
        }
        None => tidemark_loadgen::rbac::deploy::TIDEMARK_RBAC_YAML.to_string(),
    };
    let manifests = parse_manifests(&text).context("the RBAC manifest")?;
    let (ns, name) = service_account
        .split_once('/')
        .context("--service-account is namespace/name")?;
    let user = UserInfo::service_account(ns, name, "");
    let mut merged: std::collections::BTreeMap<(String, String, bool), RequestLogEntry> =
        Default::default();
    for path in reports {
        let report: serde_json::Value = serde_json::from_slice(
            &std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        )
        .with_context(|| format!("{} is not JSON", path.display()))?;
        let entries: Vec<RequestLogEntry> = serde_json::from_value(report["requests"].clone())
            .with_context(|| format!("{}: no request log", path.display()))?;
        for e in entries {
            let key = (
                e.user.clone(),
                serde_json::to_string(&e.request)?,
                e.allowed,
            );
            merged
                .entry(key)
                .and_modify(|m| m.count += e.count)
                .or_insert(e);
        }
    }
    let used: Vec<RequestLogEntry> = merged.into_values().collect();
    let report = audit(&manifests, &user, &used);
    println!("{report}");
    if !report.is_clean() {
        anyhow::bail!("the RBAC manifest is not least privilege for what the managers did");
    }
    Ok(())
}

fn bench(args: &[String]) -> anyhow::Result<()> {
    let exe = tidemark_loadgen::sibling::sibling("loadgen-bench");
    let status = std::process::Command::new(&exe)
        .arg("bench")
        .args(args)
        .status()
        .with_context(|| {
            format!(
                "running {}: not beside loadgen nor on PATH (from a checkout: cargo build --release -p tidemark-benches --bin loadgen-bench, or cargo install --locked --path benches --bin loadgen-bench)",
                exe.display()
            )
        })?;
    std::process::exit(status.code().unwrap_or(1));
}

fn report(
    input: &std::path::Path,
    baseline: Option<&std::path::Path>,
    markdown: Option<&std::path::Path>,
    plots: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use tidemark_loadgen::bench::{regression, report, schema::BenchReport};
    let read = |p: &std::path::Path| -> anyhow::Result<BenchReport> {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
    };
    let current = read(input)?;
    let mut text = report::markdown(&current);
    let mut failed = false;
    if let Some(b) = baseline {
        let rows = regression::check(&current, &read(b)?);
        failed = rows.iter().any(|r| !r.ok);
        text.push_str(&format!(
            "\n### Regression check against `{}`\n\n{}",
            b.display(),
            regression::markdown(&rows)
        ));
    }
    if let Some(dir) = plots {
        for file in tidemark_loadgen::bench::plots::write_all(&current, dir)? {
            eprintln!("plot: {}", file.display());
        }
        // Links relative to the markdown file when the plots are beside or below it.
        let base = markdown
            .and_then(std::path::Path::parent)
            .unwrap_or(std::path::Path::new(""));
        let link_dir = dir.strip_prefix(base).unwrap_or(dir);
        text.push('\n');
        text.push_str(&tidemark_loadgen::bench::plots::markdown(
            &current, link_dir,
        ));
    }
    if let Some(path) = markdown {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{text}");
    if failed {
        eprintln!(
            "regression check FAILED: a ratio fell more than 20% below the baseline or bytes per object rose more than 20% above it"
        );
        std::process::exit(1);
    }
    Ok(())
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Bench { .. } | Command::Report { .. } | Command::RbacAudit { .. } => Ok(()),
        Command::Apiserver {
            listen,
            admin_listen,
            kubeconfig_out,
            pod_watch_delay_ms,
            plain_http,
            tls_san,
            no_kubelet,
        } => {
            let config = ServerConfig {
                listen,
                admin_listen,
                plain_http,
                extra_hosts: tls_san,
                kubelet_enabled: !no_kubelet,
                watch_delays: vec![(Resource::Pods, Duration::from_millis(pod_watch_delay_ms))],
                ..ServerConfig::default()
            };
            let server = tidemark_loadgen::start(config).await?;
            println!("api: {}", server.url());
            println!("admin: http://{}", server.admin_addr());
            if let Some(path) = kubeconfig_out {
                server
                    .write_kubeconfig(&path)
                    .with_context(|| format!("writing kubeconfig to {}", path.display()))?;
                println!("kubeconfig: {}", path.display());
            }
            tokio::signal::ctrl_c()
                .await
                .context("waiting for Ctrl-C")?;
            server.shutdown().await;
            Ok(())
        }
        Command::Campaign(args) => {
            let command = std::env::args().collect::<Vec<_>>().join(" ");
            let verdict = tidemark_loadgen::campaign::cli::run(&args, &command)?;
            if !verdict.holds() {
                anyhow::bail!("campaign verdict: {verdict:?}");
            }
            Ok(())
        }
        Command::Stress {
            scenario,
            seed,
            gate,
            json,
            tidemark,
            list: _,
        } => {
            let name = scenario.context("--scenario NAME|FILE or --list")?;
            let scenario = tidemark_loadgen::scenario::Scenario::load(&name)?;
            let work_dir = std::env::temp_dir().join(format!(
                "loadgen-stress-{}-{}",
                scenario.name,
                std::process::id()
            ));
            let options = tidemark_loadgen::stress::StressOptions {
                scenario,
                seed,
                gate: gate
                    .mode()
                    .unwrap_or(tidemark_loadgen::stress::mode::Mode::Tidemark),
                tidemark: tidemark.unwrap_or_else(tidemark_loadgen::stress::default_tidemark),
                work_dir,
            };
            if gate.mode().is_none() {
                return compare_modes(options, json.as_deref()).await;
            }
            let run = tidemark_loadgen::stress::phases::stress_run(&options);
            let report = match tidemark_loadgen::stress::run(options).await {
                Ok(report) => report,
                Err(e) => {
                    tidemark_loadgen::progress::finish(&run, "could not be carried out");
                    return Err(e.into());
                }
            };
            let summary = tidemark_loadgen::stress::summary::summary(&report);
            match json {
                Some(path) if path.as_os_str() == "-" => {
                    println!("{}", serde_json::to_string_pretty(&report)?);
                    eprint!("{summary}");
                }
                Some(path) => {
                    std::fs::write(&path, serde_json::to_string_pretty(&report)?)
                        .with_context(|| format!("writing {}", path.display()))?;
                    print!("{summary}");
                    println!("report: {}", path.display());
                }
                None => print!("{summary}"),
            }
            if !report.passed() {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// `loadgen stress --gate all`: prints the table (and writes every report with `--json`); exits 1
/// when the `tidemark` mode did not pass.
async fn compare_modes(
    options: tidemark_loadgen::stress::StressOptions,
    json: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let comparison = tidemark_loadgen::stress::compare::run_all(options).await;
    if let Some(path) = json {
        std::fs::write(path, serde_json::to_string_pretty(&comparison)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!("{}", comparison.markdown());
    if !comparison.tidemark_passed() {
        std::process::exit(1);
    }
    Ok(())
}
