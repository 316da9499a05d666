//! `loadgen stress`: the simulated API server, `tidemark run` as a separate process against it,
//! a scenario's workload and faults over time, then convergence and the oracle's verdict.

use crate::faults::{Faults, ObjectDelay};
use crate::oracle::{ReplicaSetTruth, Verb, ViolationKind};
use crate::report::{FaultEvent, ReportedViolation, StressReport, WriteCounts};
use crate::request_faults::{ErrorRule, LatencyRule, Match};
use crate::resource::Resource;
use crate::scenario::{FaultKind, FaultWindow, Scenario};
use crate::server::{ApiServer, ServerConfig, ServerError, start};
use crate::status::ApiError;
use crate::workload::replicaset_manifest;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::time::Instant;

/// How long the manager gets to sync and settle the seeded workload before the scenario starts.
pub const READY_BOUND: Duration = Duration::from_secs(60);

/// What to run.
#[derive(Debug, Clone)]
pub struct StressOptions {
    /// The scenario.
    pub scenario: Scenario,
    /// Seed of every random choice.
    pub seed: u64,
    /// Stale-cache protection on or off in the manager.
    pub gate: bool,
    /// The `tidemark` binary.
    pub tidemark: PathBuf,
    /// Where logs and the manager's summary go.
    pub work_dir: PathBuf,
}

/// Why a stress run could not be carried out (as opposed to finding violations).
#[derive(Debug, thiserror::Error)]
pub enum StressError {
    /// The simulated API server did not start.
    #[error(transparent)]
    Server(#[from] ServerError),
    /// Files in the work directory.
    #[error("work directory: {0}")]
    Io(#[from] std::io::Error),
    /// The manager could not be started.
    #[error("starting {path}: {source}")]
    Spawn {
        /// The binary.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The manager exited before the run ended.
    #[error("tidemark exited early ({status}); log: {log}")]
    ManagerDied {
        /// Its exit status.
        status: String,
        /// Its log file.
        log: String,
    },
    /// The workload could not be seeded or driven.
    #[error("workload: {0}")]
    Workload(#[from] ApiError),
}

/// The `tidemark` beside the running `loadgen` binary (both are built into one target folder).
pub fn default_tidemark() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("tidemark")))
        .unwrap_or_else(|| PathBuf::from("tidemark"))
}

async fn wait_converged(
    server: &ApiServer,
    namespace: &str,
    bound: Duration,
    child: &mut Child,
    log: &str,
) -> Result<Option<Duration>, StressError> {
    let started = Instant::now();
    loop {
        if server
            .replicaset_truth()
            .iter()
            .filter(|t| t.namespace == namespace)
            .all(ReplicaSetTruth::is_converged)
        {
            return Ok(Some(started.elapsed()));
        }
        if started.elapsed() >= bound {
            return Ok(None);
        }
        check_alive(child, log)?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn check_alive(child: &mut Child, log: &str) -> Result<(), StressError> {
    match child.try_wait() {
        Ok(Some(status)) => Err(StressError::ManagerDied {
            status: status.to_string(),
            log: log.to_string(),
        }),
        _ => Ok(()),
    }
}

/// One scheduled change of the timeline.
enum Action {
    Scale {
        name: String,
        replicas: i32,
    },
    /// A fault window starts (`on`) or ends.
    Fault {
        window: FaultWindow,
        on: bool,
    },
}

fn timeline(scenario: &Scenario, seed: u64) -> Vec<(Duration, Action)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let w = &scenario.workload;
    let mut actions = Vec::new();
    for (k, step) in w.steps.iter().enumerate() {
        let at = Duration::from_secs_f64(w.step_every_seconds.max(0.0) * k as f64);
        let mut order: Vec<usize> = (0..w.replicasets).collect();
        rng.shuffle(&mut order);
        for i in order {
            let jitter = if w.jitter > 0 {
                rng.i32(-w.jitter..=w.jitter)
            } else {
                0
            };
            actions.push((
                at,
                Action::Scale {
                    name: format!("rs-{i}"),
                    replicas: (step + jitter).max(0),
                },
            ));
        }
    }
    for fault in &scenario.faults {
        actions.push((
            fault.from(),
            Action::Fault {
                window: fault.clone(),
                on: true,
            },
        ));
        if fault.until() > fault.from() {
            actions.push((
                fault.until(),
                Action::Fault {
                    window: fault.clone(),
                    on: false,
                },
            ));
        }
    }
    actions.sort_by_key(|(at, _)| *at);
    actions
}

fn matching(fault: &FaultWindow) -> Match {
    Match {
        verb: fault.verb.clone(),
        resource: fault.resource.clone(),
    }
}

fn apply_fault(server: &ApiServer, fault: &FaultWindow, on: bool) -> String {
    let faults: &Faults = server.faults();
    let resource = fault.resource().unwrap_or(Resource::Pods);
    match (fault.kind, on) {
        (FaultKind::ObjectWatchDelay, on) => {
            let (label, value) = (
                fault.label.clone().unwrap_or_default(),
                fault.value.clone().unwrap_or_default(),
            );
            let millis = if on { fault.millis } else { 0 };
            faults.set_object_watch_delay(ObjectDelay {
                resource: resource.plural().into(),
                label: label.clone(),
                value: value.clone(),
                millis,
            });
            format!("watch delay {resource} {label}={value} {millis} ms")
        }
        (FaultKind::WatchJitter, on) => {
            let millis = if on { fault.millis } else { 0 };
            faults.set_watch_jitter(resource, Duration::from_millis(millis));
            format!("watch jitter {resource} up to {millis} ms")
        }
        (FaultKind::StopLeaseRenewal, on) => {
            for node in &fault.nodes {
                if on {
                    server.stop_lease_renewal(node);
                } else {
                    server.resume_lease_renewal(node);
                }
            }
            format!(
                "node Lease renewal {} for {:?}",
                if on { "stopped" } else { "resumed" },
                fault.nodes
            )
        }
        (FaultKind::WatchDelay, true) => {
            faults.set_watch_delay(resource, Duration::from_millis(fault.millis));
            format!("watch delay {resource} {} ms on", fault.millis)
        }
        (FaultKind::WatchDelay, false) => {
            faults.set_watch_delay(resource, Duration::ZERO);
            format!("watch delay {resource} off")
        }
        (FaultKind::WatchStall, on) => {
            faults.set_watch_stall(resource, on);
            format!("watch stall {resource} {}", if on { "on" } else { "off" })
        }
        (FaultKind::DropWatches, true) => {
            faults.drop_watches();
            "watches dropped".into()
        }
        (FaultKind::ExpireWatches, true) => {
            faults.expire_next_watches(resource, fault.count);
            format!("next {} {resource} watches get 410", fault.count)
        }
        (FaultKind::DropWatches | FaultKind::ExpireWatches, false) => "one-shot fault over".into(),
        (FaultKind::ApiErrors, true) => {
            faults.requests().add_error(ErrorRule {
                matching: matching(fault),
                fraction: fault.fraction,
                code: fault.code,
                retry_after_seconds: fault.retry_after_seconds,
            });
            format!(
                "{} on {:.0}% of {:?} {:?} requests",
                fault.code,
                fault.fraction * 100.0,
                fault.verb,
                fault.resource
            )
        }
        (FaultKind::Latency, true) => {
            faults.requests().add_latency(LatencyRule {
                matching: matching(fault),
                millis: fault.millis,
            });
            format!(
                "{} ms latency on {:?} {:?} requests",
                fault.millis, fault.verb, fault.resource
            )
        }
        (FaultKind::LoseWriteResponses, true) => {
            faults.requests().lose_write_responses(fault.fraction);
            format!("{:.0}% of write responses lost", fault.fraction * 100.0)
        }
        (FaultKind::DropWatchesAfter, on) => {
            faults.set_drop_watches_after(resource, if on { fault.count } else { 0 });
            match on {
                true => format!("{resource} watches dropped after {} events", fault.count),
                false => format!("{resource} watches no longer dropped"),
            }
        }
        (FaultKind::LaggingReplica, true) => {
            faults.set_lagging_replica(resource, Duration::from_millis(fault.millis));
            format!(
                "clients redirected to a replica whose {resource} cache lags {} ms",
                fault.millis
            )
        }
        (FaultKind::LaggingReplica, false) => {
            faults.set_lagging_replica(resource, Duration::ZERO);
            "clients back on the primary".into()
        }
        (FaultKind::ApiErrors | FaultKind::Latency | FaultKind::LoseWriteResponses, false) => {
            faults.requests().clear();
            "request faults cleared".into()
        }
    }
}

fn reported(server: &ApiServer) -> Vec<ReportedViolation> {
    server
        .violations()
        .into_iter()
        .map(|v| ReportedViolation {
            invariant: match v.kind {
                ViolationKind::OverCreate => "replicaset-no-over-create",
                ViolationKind::WantedPodDeleted => "replicaset-no-wanted-pod-deleted",
            }
            .to_string(),
            object: format!("{}/{}", v.namespace, v.replicaset),
            revision: v.revision,
            detail: format!(
                "pod {} written by {} with {} live of {} desired",
                v.pod,
                v.user_agent.as_deref().unwrap_or("unknown client"),
                v.live,
                v.desired
            ),
        })
        .collect()
}

fn manager_writes(server: &ApiServer) -> WriteCounts {
    let mut counts = WriteCounts::default();
    for w in server.writes() {
        if !w
            .user_agent
            .as_deref()
            .is_some_and(|a| a.starts_with("tidemark"))
        {
            continue;
        }
        match w.verb {
            Verb::Create => counts.create += 1,
            Verb::Update | Verb::UpdateStatus => counts.update += 1,
            Verb::Delete => counts.delete += 1,
        }
    }
    counts
}

/// SIGTERM, then up to 10 s for a graceful exit (on the async clock: this runs on the runtime's
/// worker), then SIGKILL.
async fn stop(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    for _ in 0..200 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs a scenario to its verdict.
pub async fn run(options: StressOptions) -> Result<StressReport, StressError> {
    let scenario = &options.scenario;
    let run_started = Instant::now();
    std::fs::create_dir_all(&options.work_dir)?;
    let server = start(ServerConfig {
        kubelet_ready_after: Duration::from_millis(scenario.server.kubelet_ready_after_ms),
        bookmark_interval: Duration::from_millis(scenario.server.bookmark_interval_ms),
        ..ServerConfig::default()
    })
    .await?;
    server.faults().requests().seed(options.seed);
    let namespace = scenario.workload.namespace.as_str();
    for i in 0..scenario.workload.replicasets {
        server.create(
            Resource::ReplicaSets,
            namespace,
            replicaset_manifest(
                namespace,
                &format!("rs-{i}"),
                scenario.workload.initial_replicas,
            ),
        )?;
    }
    let kubeconfig = options.work_dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig)?;
    let summary_path = options.work_dir.join("tidemark-summary.json");
    let log_path = options.work_dir.join("tidemark.log");
    let log_text = log_path.display().to_string();
    let log = std::fs::File::create(&log_path)?;
    let gate = if options.gate { "true" } else { "false" };
    let mut child = Command::new(&options.tidemark)
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--shards", &scenario.manager.shards.to_string()])
        .args(["--kube-api-qps", &scenario.manager.qps.to_string()])
        .args(["--kube-api-burst", &scenario.manager.burst.to_string()])
        .args([
            "--feature-gates",
            &format!("StaleControllerConsistency={gate}"),
        ])
        .args(["--metrics-addr", "127.0.0.1:0"])
        .arg("--summary-json")
        .arg(&summary_path)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .map_err(|source| StressError::Spawn {
            path: options.tidemark.clone(),
            source,
        })?;
    let result = drive(&options, &server, &mut child, &log_text).await;
    stop(&mut child).await;
    let (convergence, faults) = match result {
        Ok(r) => r,
        Err(e) => {
            server.shutdown().await;
            return Err(e);
        }
    };
    let summary: serde_json::Value = std::fs::read(&summary_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let mut violations = reported(&server);
    let bound = Duration::from_secs_f64(scenario.invariants.convergence_bound_seconds.max(0.0));
    if convergence.is_none() {
        let revision = server.current_revision();
        for rs in server
            .replicaset_truth()
            .iter()
            .filter(|t| t.namespace == namespace && !t.is_converged())
        {
            violations.push(ReportedViolation {
                invariant: "liveness".into(),
                object: format!("{}/{}", rs.namespace, rs.name),
                revision,
                detail: format!(
                    "not converged {}s after faults stopped: {} live of {} desired, status {} for generation {} (observed {})",
                    bound.as_secs_f64(), rs.live_pods, rs.spec_replicas, rs.status_replicas, rs.generation, rs.observed_generation
                ),
            });
        }
    }
    let report = StressReport {
        scenario: scenario.name.clone(),
        seed: options.seed,
        gate: if options.gate { "on" } else { "off" }.into(),
        violations,
        converged: convergence.is_some(),
        convergence_seconds: convergence.unwrap_or(bound).as_secs_f64(),
        writes: manager_writes(&server),
        stale_sync_skips: summary["stale_sync_skips"].as_u64().unwrap_or(0),
        live_reads: summary["live_reads"].as_u64().unwrap_or(0),
        duration_seconds: run_started.elapsed().as_secs_f64(),
        faults,
        manager_log: log_text,
    };
    server.shutdown().await;
    Ok(report)
}

async fn drive(
    options: &StressOptions,
    server: &ApiServer,
    child: &mut Child,
    log: &str,
) -> Result<(Option<Duration>, Vec<FaultEvent>), StressError> {
    let scenario = &options.scenario;
    let namespace = scenario.workload.namespace.as_str();
    if wait_converged(server, namespace, READY_BOUND, child, log)
        .await?
        .is_none()
    {
        tracing::warn!("the manager did not settle the seeded workload before the scenario");
    }
    let mut actions = timeline(scenario, options.seed).into_iter().peekable();
    let mut events = Vec::new();
    let t0 = Instant::now();
    while let Some((at, _)) = actions.peek() {
        let at = *at;
        tokio::time::sleep_until(t0 + at).await;
        check_alive(child, log)?;
        while let Some((_, action)) = actions.next_if(|(when, _)| *when <= at) {
            match action {
                Action::Scale { name, replicas } => {
                    server.scale_replicaset(namespace, &name, replicas)?
                }
                Action::Fault { window, on } => {
                    let what = apply_fault(server, &window, on);
                    tracing::info!(revision = server.current_revision(), %what, "fault");
                    events.push(FaultEvent {
                        at_seconds: t0.elapsed().as_secs_f64(),
                        revision: server.current_revision(),
                        what,
                    });
                }
            }
        }
    }
    tokio::time::sleep_until(t0 + scenario.active_duration()).await;
    let bound = Duration::from_secs_f64(scenario.invariants.convergence_bound_seconds.max(0.0));
    let convergence = wait_converged(server, namespace, bound, child, log).await?;
    Ok((convergence, events))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario() -> Scenario {
        Scenario::load("replicaset-watch-delay").expect("shipped scenario")
    }

    #[test]
    fn the_timeline_is_reproducible_from_the_seed() {
        let names = |seed| -> Vec<(Duration, String, i32)> {
            timeline(&scenario(), seed)
                .into_iter()
                .filter_map(|(at, a)| match a {
                    Action::Scale { name, replicas } => Some((at, name, replicas)),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(names(1), names(1));
        assert_ne!(names(1), names(2), "another seed, another order or jitter");
        assert_eq!(names(1).len(), 20 * 4);
    }

    #[test]
    fn faults_start_and_stop_in_time_order() {
        let actions = timeline(&scenario(), 7);
        let at: Vec<_> = actions.iter().map(|(t, _)| *t).collect();
        assert!(at.windows(2).all(|w| w[0] <= w[1]));
        let offs = actions
            .iter()
            .filter(|(_, a)| matches!(a, Action::Fault { on: false, .. }))
            .count();
        assert_eq!(offs, 1);
    }
}
