//! `loadgen stress`: the simulated API server, `tidemark run` as a separate process against it,
//! a scenario's workload and faults over time, then convergence and the oracle's verdict.

pub mod compare;
pub mod findings;
pub mod left_by_kcm;
pub mod managers;
pub mod mode;
pub mod orphans;
pub mod phases;
pub mod replicas;
pub mod report;
pub mod run_as;
pub mod seed;
pub mod summary;

use crate::apiserver::server::{ApiServer, ServerConfig, ServerError, start};
use crate::apiserver::status::ApiError;
use crate::faults::request_faults::{ErrorRule, LatencyRule, Match};
use crate::faults::{Faults, ObjectDelay};
use crate::oracle::ReplicaSetTruth;
use crate::oracle::node::{evictions_too_fast, live_nodes_marked, no_execute_taintings};
use crate::resource::Resource;
use crate::scenario::timeline::{Action, Plan};
use crate::scenario::{FaultKind, FaultWindow, Scenario};
use crate::scenario::{SetNamespaces, WorkloadKind};
use crate::stress::managers::{ManagerError, Managers};
use crate::stress::mode::Mode;
use crate::stress::report::{FaultEvent, NodeTaintingReport, ReportedViolation, StressReport};
use std::path::PathBuf;
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
    /// The managers' protections: `on`, `off`, or a consistency mode.
    pub gate: Mode,
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
    /// A manager could not be started, or exited before the run ended.
    #[error(transparent)]
    Manager(#[from] ManagerError),
    /// The workload could not be seeded or driven.
    #[error("workload: {0}")]
    Workload(#[from] ApiError),
    /// The manager's identity could not be set up.
    #[error("identity: {0}")]
    Identity(#[from] crate::stress::run_as::RunAsError),
}

/// The `tidemark` beside the running `loadgen` binary (cargo builds and installs both into one
/// folder), else `tidemark` on `PATH`.
pub fn default_tidemark() -> PathBuf {
    crate::sibling::sibling("tidemark")
}

/// The Lease the managers compete for.
pub const LEASE: (&str, &str) = ("kube-system", "tidemark");

async fn wait_converged(
    server: &ApiServer,
    kind: WorkloadKind,
    namespaces: &SetNamespaces,
    bound: Duration,
    managers: &mut Managers,
) -> Result<Option<Duration>, StressError> {
    let started = Instant::now();
    loop {
        if crate::oracle::truth::truth(server, kind)
            .iter()
            .filter(|t| namespaces.contains(&t.namespace))
            .all(ReplicaSetTruth::is_converged)
        {
            return Ok(Some(started.elapsed()));
        }
        if started.elapsed() >= bound {
            return Ok(None);
        }
        managers.check_alive()?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The manager a `kill-manager`, `pause-manager` or `add-manager` fault aims at: `leader` is
/// whoever the Lease names now (the first manager if none), otherwise an index.
fn target(server: &ApiServer, managers: &Managers, fault: &FaultWindow) -> usize {
    match fault.target.as_deref() {
        Some("leader") | None => server
            .get(Resource::Leases, LEASE.0, LEASE.1)
            .and_then(|lease| {
                lease["spec"]["holderIdentity"]
                    .as_str()
                    .and_then(|holder| managers.index_of(holder))
            })
            .unwrap_or(0),
        Some(index) => index.parse().unwrap_or(0),
    }
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
        (FaultKind::KillManager | FaultKind::PauseManager | FaultKind::AddManager, _) => {
            "manager faults are applied by the driver".into()
        }
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
        (FaultKind::CorruptObjects, on) => {
            crate::faults::corrupt::apply(server, resource, fault.count.max(1) as usize, on)
        }
        (FaultKind::ApiErrors | FaultKind::Latency | FaultKind::LoseWriteResponses, false) => {
            faults.requests().clear();
            "request faults cleared".into()
        }
    }
}

/// Runs a scenario to its verdict.
pub async fn run(options: StressOptions) -> Result<StressReport, StressError> {
    let scenario = &options.scenario;
    let run_started = Instant::now();
    std::fs::create_dir_all(&options.work_dir)?;
    phases::stress(&options, phases::StressPhase::Starting);
    let server = start(ServerConfig {
        kubelet_ready_after: Duration::from_millis(scenario.server.kubelet_ready_after_ms),
        bookmark_interval: Duration::from_millis(scenario.server.bookmark_interval_ms),
        node_count: scenario.server.nodes,
        lease_renew_interval: Duration::from_millis(scenario.server.lease_renew_interval_ms),
        sharded_list_and_watch: scenario.server.sharded_list_and_watch,
        ..ServerConfig::default()
    })
    .await?;
    server.faults().requests().seed(options.seed);
    // `[adoption]` and `[takeover]` seed one namespace (the scenario rejects more with them).
    let namespace = scenario.workload.namespace.as_str();
    let namespaces = scenario.workload.set_namespaces();
    let w = &scenario.workload;
    let plan = crate::scenario::timeline::plan(scenario, options.seed);
    let takeover = match &scenario.takeover {
        Some(takeover) => {
            let initial = plan.initial.first().copied().unwrap_or(1);
            let seeded = crate::stress::left_by_kcm::seed(
                &server,
                namespace,
                takeover,
                w.kind,
                w.replicasets,
                initial,
            )
            .await?;
            Some((takeover.quiet_seconds, seeded))
        }
        None => {
            match &scenario.adoption {
                Some(adoption) => {
                    crate::stress::orphans::seed_orphans(&server, namespace, w, adoption)?
                }
                None => crate::stress::seed::seed_workload(&server, w, &plan)?,
            }
            None
        }
    };
    if let Some(label) = &w.node_label {
        crate::scenario::user::label_nodes(&server, label, &plan.node_order, usize::MAX)?;
    }
    let identity = crate::stress::run_as::set_up(&server, &options.work_dir)?;
    let mut managers = Managers::new(
        &options.tidemark,
        &identity.kubeconfig,
        &identity.serving,
        &scenario.manager,
        options.gate,
        &options.work_dir,
    );
    let managers_started = crate::clock::wall_micros();
    if let Err(e) = managers.start_all_but(&scenario.added_managers()) {
        managers.stop_all().await;
        server.shutdown().await;
        return Err(e.into());
    }
    let mut at_run_start = Vec::new();
    let result = drive(&options, plan, &server, &mut managers, &mut at_run_start).await;
    phases::stress(&options, phases::StressPhase::Verdict);
    let (scrape_violations, scraped) =
        crate::stress::run_as::scrape(&server, &managers, &identity).await;
    let replicas = crate::stress::replicas::received(&server, &managers, &scraped, &at_run_start);
    managers.stop_all().await;
    let (convergence, faults) = match result {
        Ok(r) => r,
        Err(e) => {
            server.shutdown().await;
            return Err(e);
        }
    };
    let mut violations = findings::reported(&server);
    violations.extend(scrape_violations);
    let (requests, forbidden) = crate::stress::run_as::requests_of(&server, &identity);
    violations.extend(forbidden);
    if scenario.manager.scale_out {
        violations.extend(findings::leader_violations_cluster_scoped(&server));
        violations.extend(findings::range_violations(&server));
    } else if scenario.manager.leader_elect {
        violations.extend(findings::leader_violations(&server));
    }
    let runs_node_lifecycle = scenario
        .manager
        .controllers
        .as_ref()
        .is_none_or(|c| c.iter().any(|c| c == "nodelifecycle"));
    let mut node_taintings = Vec::new();
    if runs_node_lifecycle {
        node_taintings = no_execute_taintings(&server.writes())
            .into_iter()
            .map(|t| NodeTaintingReport {
                at_seconds: t.at_micros.saturating_sub(managers_started) as f64 / 1e6,
                node: t.node,
                zone: t.zone,
                revision: t.revision,
            })
            .collect();
        let grace = Duration::from_secs_f64(scenario.manager.node_monitor_grace_seconds.max(0.0));
        violations.extend(
            live_nodes_marked(&server.writes(), grace)
                .into_iter()
                .map(|v| ReportedViolation {
                    invariant: "nodelifecycle-no-live-node-marked".into(),
                    object: v.node,
                    revision: v.revision,
                    detail: format!(
                        "marked by {} {} ms after its Lease was renewed",
                        v.writer.as_deref().unwrap_or("unknown client"),
                        v.renewed_ago_ms
                    ),
                }),
        );
        // A zone's next token refills from when the last tainting was seen, after it
        // committed: commits are a whole period apart, with nothing in flight to allow for.
        let in_flight = Duration::ZERO;
        violations.extend(
            evictions_too_fast(&server.writes(), scenario.manager.node_eviction_rate, in_flight)
                .into_iter()
                .map(|v| ReportedViolation {
                    invariant: "nodelifecycle-eviction-rate".into(),
                    object: v.node,
                    revision: v.revision,
                    detail: format!(
                        "tainted NoExecute by {} {} ms after {} of zone {:?}, faster than {} per second",
                        v.writer.as_deref().unwrap_or("unknown client"),
                        v.after_ms,
                        v.previous,
                        v.zone,
                        scenario.manager.node_eviction_rate
                    ),
                }),
        );
    }
    if let Some(adoption) = &scenario.adoption {
        tracing::info!(
            patched = crate::stress::orphans::patched_by_managers(&server, namespace),
            seeded = adoption.orphans * scenario.workload.replicasets,
            "adoption: orphans the managers patched"
        );
        violations.extend(crate::stress::orphans::unadopted(
            &server,
            namespace,
            scenario.workload.kind.resource(),
        ));
    }
    if let Some((quiet_seconds, seeded)) = &takeover {
        violations.extend(crate::stress::left_by_kcm::disruptions(
            &server.writes(),
            seeded,
            managers_started + (quiet_seconds * 1e6) as u64,
        ));
        violations.extend(crate::stress::left_by_kcm::unfinished_jobs(
            &server, namespace, seeded,
        ));
    }
    if scenario.workload.kind == WorkloadKind::Statefulset {
        violations.extend(
            crate::oracle::claim_retention::claims_out_of_policy_in(server.store())
                .into_iter()
                .filter(|c| namespaces.contains(&c.namespace))
                .map(|c| ReportedViolation {
                    invariant: "statefulset-claims-match-retention-policy".into(),
                    object: format!("{}/{}", c.namespace, c.set),
                    revision: server.current_revision(),
                    detail: c.detail,
                }),
        );
    }
    let bound = Duration::from_secs_f64(scenario.invariants.convergence_bound_seconds.max(0.0));
    if convergence.is_none() {
        let revision = server.current_revision();
        for rs in crate::oracle::truth::truth(&server, scenario.workload.kind)
            .iter()
            .filter(|t| namespaces.contains(&t.namespace) && !t.is_converged())
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
        gate: options.gate.name().into(),
        violations,
        converged: convergence.is_some(),
        convergence_seconds: convergence.unwrap_or(bound).as_secs_f64(),
        writes: findings::manager_writes(&server),
        stale_sync_skips: managers.summed_summary("stale_sync_skips"),
        live_reads: managers.summed_summary("live_reads"),
        reconciles: managers.summed_summary("reconciles"),
        duration_seconds: run_started.elapsed().as_secs_f64(),
        faults,
        manager_log: managers.logs(),
        node_taintings,
        requests,
        replicas,
        watch_traffic: crate::stress::replicas::server_watch_traffic(&server),
    };
    phases::stress_done(&options, &report);
    server.shutdown().await;
    Ok(report)
}

/// Applies a fault aimed at a manager process; returns what happened.
fn apply_manager_fault(
    server: &ApiServer,
    managers: &mut Managers,
    fault: &FaultWindow,
    on: bool,
    aimed: &mut Vec<(String, usize)>,
) -> Result<String, StressError> {
    let key = format!("{:?}@{}", fault.kind, fault.from_seconds);
    let index = match aimed.iter().find(|(k, _)| *k == key) {
        Some((_, i)) => *i,
        None => {
            let i = target(server, managers, fault);
            aimed.push((key, i));
            i
        }
    };
    Ok(match (fault.kind, on) {
        (FaultKind::KillManager, true) => {
            managers.kill(index);
            format!("manager {index} killed (SIGKILL)")
        }
        (FaultKind::KillManager, false) => {
            managers.start(index)?;
            format!("manager {index} restarted")
        }
        (FaultKind::PauseManager, true) => {
            managers.pause(index);
            format!("manager {index} paused (SIGSTOP)")
        }
        (FaultKind::PauseManager, false) => {
            managers.resume(index);
            format!("manager {index} resumed (SIGCONT)")
        }
        (FaultKind::AddManager, true) if managers.is_running(index) => {
            format!("manager {index} already runs: not added")
        }
        (FaultKind::AddManager, true) => {
            managers.start(index)?;
            format!("manager {index} added")
        }
        (FaultKind::AddManager, false) => format!("manager {index} keeps running"),
        _ => apply_fault(server, fault, on),
    })
}

async fn drive(
    options: &StressOptions,
    plan: Plan,
    server: &ApiServer,
    managers: &mut Managers,
    at_run_start: &mut Vec<crate::store::watch_traffic::ClientWatchFigures>,
) -> Result<(Option<Duration>, Vec<FaultEvent>), StressError> {
    let scenario = &options.scenario;
    let namespaces = scenario.workload.set_namespaces();
    let kind = scenario.workload.kind;
    phases::stress(options, phases::StressPhase::Settling);
    if kind == WorkloadKind::Job {
        // A Job settles by finishing: the scenario starts while its Jobs run.
        tokio::time::sleep(Duration::from_secs(2)).await;
        managers.check_alive()?;
    } else if wait_converged(server, kind, &namespaces, READY_BOUND, managers)
        .await?
        .is_none()
    {
        tracing::warn!("the manager did not settle the seeded workload before the scenario");
    }
    let owners = Plan {
        actions: Vec::new(),
        ..plan.clone()
    };
    let mut user = crate::scenario::user::User::new(server, namespaces.clone(), plan.pick_seed)
        .with_nodes(scenario.workload.node_label.clone(), plan.node_order);
    let mut actions = plan.actions.into_iter().peekable();
    let mut events = Vec::new();
    let mut aimed = Vec::new();
    phases::stress(options, phases::StressPhase::Running);
    *at_run_start = server.watch_traffic_by_client();
    let t0 = Instant::now();
    while let Some((at, _)) = actions.peek() {
        let at = *at;
        tokio::time::sleep_until(t0 + at).await;
        managers.check_alive()?;
        while let Some((_, action)) = actions.next_if(|(when, _)| *when <= at) {
            match action {
                Action::Scale { name, replicas } => user.scale(kind, &name, replicas)?,
                Action::CreateOwners => {
                    crate::stress::seed::seed_workload(server, &scenario.workload, &owners)?;
                    tracing::info!(
                        revision = server.current_revision(),
                        "user: the sets are created"
                    );
                    events.push(FaultEvent {
                        at_seconds: t0.elapsed().as_secs_f64(),
                        revision: server.current_revision(),
                        what: "the sets are created".into(),
                    });
                }
                Action::Event(event) => {
                    let what = user.act(&event)?;
                    tracing::info!(revision = server.current_revision(), %what, "user");
                    events.push(FaultEvent {
                        at_seconds: t0.elapsed().as_secs_f64(),
                        revision: server.current_revision(),
                        what,
                    });
                }
                Action::Fault { window, on } => {
                    let what = match window.kind {
                        FaultKind::KillManager
                        | FaultKind::PauseManager
                        | FaultKind::AddManager => {
                            apply_manager_fault(server, managers, &window, on, &mut aimed)?
                        }
                        _ => apply_fault(server, &window, on),
                    };
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
    phases::stress(options, phases::StressPhase::Converging);
    let bound = Duration::from_secs_f64(scenario.invariants.convergence_bound_seconds.max(0.0));
    let convergence = wait_converged(server, kind, &namespaces, bound, managers).await?;
    Ok((convergence, events))
}
