//! The whole run: for each size, Tidemark's, the peer's and the null client's sync and churn
//! phases (each in a child process), reconcile throughput and gate overhead at the largest size the peer runs
//! at, wake latency in this process; then the scale curve and the targets.

use crate::child::{self, PhaseArgs, PhaseKind, PhaseOut, Side};
use crate::churn::summary;
use crate::profile::{Plan, Profile};
use crate::wake::{self, Strategy};
use std::time::Instant;
use tidemark_loadgen::bench::schema::{
    AgainstNull, BenchReport, Better, ChurnRun, Compared, GateRun, NullClientRun, ReconcileRun,
    SCHEMA, ScalePoint, SyncRun, WakeRun, WireRun, WireSide,
};

/// The `bench` command's options.
#[derive(Debug, Clone)]
pub struct Options {
    /// The profile.
    pub profile: Profile,
    /// `--pods`, replacing the profile's sizes.
    pub pods: Option<u64>,
    /// `--replicasets`; default: one per 10 Pods.
    pub replicasets: Option<u64>,
    /// Whether the kube-rs peer runs.
    pub peer: bool,
    /// The command line, for the report.
    pub command_line: String,
}

struct Runner<'a> {
    plan: &'a Plan,
    steps: tidemark_loadgen::progress::Steps,
}

impl Runner<'_> {
    fn phase(
        &self,
        kind: PhaseKind,
        side: Side,
        pods: u64,
        replicasets: u64,
        gate_off: bool,
    ) -> anyhow::Result<PhaseOut> {
        self.phase_over(kind, side, pods, replicasets, gate_off, false)
    }

    /// [`phase`](Self::phase), with the server answering Pods in protobuf when `protobuf`.
    fn phase_over(
        &self,
        kind: PhaseKind,
        side: Side,
        pods: u64,
        replicasets: u64,
        gate_off: bool,
        protobuf: bool,
    ) -> anyhow::Result<PhaseOut> {
        let what = format!(
            "{kind:?} {side:?} {pods} Pods{}{}",
            if gate_off { " gate off" } else { "" },
            if protobuf { " protobuf" } else { "" }
        );
        self.steps.step(&what);
        child::spawn(
            &PhaseArgs {
                kind,
                side,
                pods,
                replicasets,
                gate_off,
                rates: self.plan.rates.clone(),
                step_seconds: self.plan.step_seconds,
            },
            protobuf,
        )
    }
}

fn churn_run(pods: u64, tidemark: &PhaseOut, peer: Option<&PhaseOut>) -> ChurnRun {
    let (t_sustained, t_peak) = summary(&tidemark.churn);
    let peer_summary = peer.map(|p| summary(&p.churn));
    let pick =
        |s: Option<&tidemark_loadgen::bench::schema::ChurnStep>,
         f: fn(&tidemark_loadgen::bench::schema::ChurnStep) -> f64| s.map_or(0.0, f);
    let ps = peer_summary.and_then(|(s, _)| s);
    let peer_has = peer_summary.is_some();
    let cmp = |f: fn(&tidemark_loadgen::bench::schema::ChurnStep) -> f64, better| {
        Compared::new(pick(t_sustained, f), peer_has.then(|| pick(ps, f)), better)
    };
    ChurnRun {
        pods,
        events_per_second: cmp(|s| s.offered_per_second, Better::Higher),
        peak_events_per_second: Compared::new(t_peak, peer_summary.map(|(_, p)| p), Better::Higher),
        latency_p50_us: cmp(|s| s.p50_us, Better::Lower),
        latency_p99_us: cmp(|s| s.p99_us, Better::Lower),
        latency_p999_us: cmp(|s| s.p999_us, Better::Lower),
        tidemark_steps: tidemark.churn.clone(),
        peer_steps: peer.map(|p| p.churn.clone()).unwrap_or_default(),
    }
}

fn sync_run(pods: u64, replicasets: u64, tidemark: &PhaseOut, peer: Option<&PhaseOut>) -> SyncRun {
    let t = tidemark.sync.unwrap_or_default();
    let p = peer.and_then(|p| p.sync);
    SyncRun {
        pods,
        replicasets,
        sync_seconds: Compared::new(t.seconds, p.map(|p| p.seconds), Better::Lower),
        objects_per_second: Compared::new(
            t.objects_per_second,
            p.map(|p| p.objects_per_second),
            Better::Higher,
        ),
        bytes_per_object: Compared::new(
            t.bytes_per_object,
            p.map(|p| p.bytes_per_object),
            Better::Lower,
        ),
        jemalloc_bytes_per_object: Compared::new(
            t.jemalloc_bytes_per_object,
            p.map(|p| p.jemalloc_bytes_per_object),
            Better::Lower,
        ),
    }
}

/// The initial sync and churn over JSON and over protobuf at `pods`: Tidemark's and the null
/// client's (`[tidemark, null]` each: sync phases, then churn phases), and the reflector's sync
/// (JSON only) when it ran.
fn wire_run(
    pods: u64,
    json: [[&PhaseOut; 2]; 2],
    protobuf: [[&PhaseOut; 2]; 2],
    peer: Option<&PhaseOut>,
) -> WireRun {
    let seconds = |p: &PhaseOut| p.sync.unwrap_or_default().seconds;
    let side = |[[t, n], [t_churn, n_churn]]: [[&PhaseOut; 2]; 2]| {
        let (t_sustained, t_peak) = summary(&t_churn.churn);
        let (n_sustained, n_peak) = summary(&n_churn.churn);
        let offered = |s: Option<&tidemark_loadgen::bench::schema::ChurnStep>| {
            s.map_or(0.0, |s| s.offered_per_second)
        };
        WireSide {
            sync_seconds: AgainstNull::new(seconds(t), seconds(n), Better::Lower),
            peer_sync_ratio: peer
                .map(seconds)
                .filter(|_| seconds(t) > 0.0)
                .map(|p| p / seconds(t)),
            jemalloc_bytes_per_object: t.sync.unwrap_or_default().jemalloc_bytes_per_object,
            sustained_events_per_second: Some(AgainstNull::new(
                offered(t_sustained),
                offered(n_sustained),
                Better::Higher,
            )),
            peak_events_per_second: Some(AgainstNull::new(t_peak, n_peak, Better::Higher)),
        }
    };
    WireRun {
        pods,
        json: side(json),
        protobuf: side(protobuf),
    }
}

/// Tidemark's sync and churn at `pods` against the null client's.
fn null_client_run(
    pods: u64,
    tidemark_sync: &PhaseOut,
    tidemark_churn: &ChurnRun,
    null_sync: &PhaseOut,
    null_churn: &PhaseOut,
) -> NullClientRun {
    let (sustained, peak) = summary(&null_churn.churn);
    NullClientRun {
        pods,
        sync_seconds: AgainstNull::new(
            tidemark_sync.sync.unwrap_or_default().seconds,
            null_sync.sync.unwrap_or_default().seconds,
            Better::Lower,
        ),
        sustained_events_per_second: AgainstNull::new(
            tidemark_churn.events_per_second.tidemark,
            sustained.map_or(0.0, |s| s.offered_per_second),
            Better::Higher,
        ),
        peak_events_per_second: AgainstNull::new(
            tidemark_churn.peak_events_per_second.tidemark,
            peak,
            Better::Higher,
        ),
        null_steps: null_churn.churn.clone(),
    }
}

/// Runs the bench.
pub fn run(options: &Options) -> anyhow::Result<BenchReport> {
    let started = Instant::now();
    let plan = options.profile.plan(options.pods);
    let peer_at = |n: u64| options.peer && n <= plan.peer_max;
    let largest_peer = plan.sizes.iter().copied().filter(|&n| peer_at(n)).max();
    let gate_at = largest_peer
        .or_else(|| plan.sizes.first().copied())
        .unwrap_or(0);
    // Per size: sync and churn, each side; then the gate's interleaved pairs, reconcile, wake
    // latency, and the peer's reconcile.
    let phases: u64 = plan
        .sizes
        .iter()
        .map(|&n| {
            let sides = 1 + u64::from(peer_at(n)) + u64::from(plan.null_client);
            // The null client adds the protobuf churn phases (a sync, then churn), Tidemark's
            // and its own.
            2 * sides + 2 * u64::from(plan.null_client)
        })
        .sum::<u64>()
        + 3
        + u64::from(largest_peer.is_some());
    let runner = Runner {
        plan: &plan,
        steps: tidemark_loadgen::progress::Steps::new("bench", phases),
    };
    let replicasets = |n: u64| options.replicasets.unwrap_or((n / 10).max(1));
    let mut report = BenchReport {
        schema: SCHEMA,
        profile: options.profile.name().into(),
        peer: if options.peer { "kube-rs" } else { "none" }.into(),
        command_line: options.command_line.clone(),
        date: jiff::Timestamp::now().to_string(),
        machine: crate::machine::machine(),
        ..BenchReport::default()
    };
    for &n in &plan.sizes {
        if options.peer && !peer_at(n) {
            report.notes.push(format!(
                "The kube-rs peer did not run at {n} Pods: its reflector needs about 60 KB per Pod (6 GB at 100k), {:.0} GB here.",
                n as f64 * 60e3 / 1e9
            ));
        }
    }
    report.notes.push(
        "Each phase runs in a child process with its own copy of the same seeded server (RSS deltas belong to one side); the server shares the two cores with the side measured.".into(),
    );
    for &n in &plan.sizes {
        let m = replicasets(n);
        let t_sync = runner.phase(PhaseKind::Sync, Side::Tidemark, n, m, false)?;
        let p_sync = if peer_at(n) {
            Some(runner.phase(PhaseKind::Sync, Side::Peer, n, m, false)?)
        } else {
            None
        };
        report.sync.push(sync_run(n, m, &t_sync, p_sync.as_ref()));
        let t_churn = runner.phase(PhaseKind::Churn, Side::Tidemark, n, m, false)?;
        let p_churn = if peer_at(n) {
            Some(runner.phase(PhaseKind::Churn, Side::Peer, n, m, false)?)
        } else {
            None
        };
        let run = churn_run(n, &t_churn, p_churn.as_ref());
        if plan.null_client {
            let null_sync = runner.phase(PhaseKind::Sync, Side::Null, n, m, false)?;
            let null_churn = runner.phase(PhaseKind::Churn, Side::Null, n, m, false)?;
            if null_churn.churn.last().is_some_and(|s| s.kept_up) {
                let offered = null_churn
                    .churn
                    .iter()
                    .map(|s| s.offered_per_second)
                    .fold(0.0, f64::max);
                let asked = plan.rates.iter().copied().fold(0.0, f64::max);
                report.notes.push(format!(
                    "The null client kept up with every churn step at {n} Pods; the generator, on the same cores, offered at most {offered:.0} of the {asked:.0} events/s asked: its figures are a floor of the null client's capacity."
                ));
            }
            report
                .null_client
                .push(null_client_run(n, &t_sync, &run, &null_sync, &null_churn));
            // Over protobuf, the churn phases' own syncs are the sync figures.
            let t_protobuf =
                runner.phase_over(PhaseKind::Churn, Side::Tidemark, n, m, false, true)?;
            let null_protobuf =
                runner.phase_over(PhaseKind::Churn, Side::Null, n, m, false, true)?;
            report.wire.push(wire_run(
                n,
                [[&t_sync, &null_sync], [&t_churn, &null_churn]],
                [[&t_protobuf, &null_protobuf], [&t_protobuf, &null_protobuf]],
                p_sync.as_ref(),
            ));
        }
        report.scale.push(ScalePoint {
            pods: n,
            bytes_per_object: report
                .sync
                .last()
                .map_or(0.0, |s| s.bytes_per_object.tidemark),
            events_per_second: run.peak_events_per_second.tidemark,
            sync_seconds: report.sync.last().map_or(0.0, |s| s.sync_seconds.tidemark),
        });
        report.churn.push(run);
    }
    let m = replicasets(gate_at);
    let gate_pairs = runner
        .phase(PhaseKind::Gate, Side::Tidemark, gate_at, m, false)?
        .gate_pairs;
    let rec_on = runner
        .phase(PhaseKind::Reconcile, Side::Tidemark, gate_at, m, false)?
        .reconciles_per_second
        .unwrap_or(0.0);
    let rec_peer = match largest_peer {
        Some(n) => {
            runner
                .phase(PhaseKind::Reconcile, Side::Peer, n, m, false)?
                .reconciles_per_second
        }
        None => None,
    };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    report.reconcile = Some(ReconcileRun {
        pods: gate_at,
        keys: m,
        concurrency: cores,
        reconciles_per_second: Compared::new(rec_on, rec_peer, Better::Higher),
    });
    report.gate = Some(GateRun::new(gate_at, cores, gate_pairs));
    runner.steps.step("wake latency");
    let slow = crate::slowdown::Slowdown::from_env();
    let park = wake::measure(plan.wake_keys, Strategy::Park);
    drop(slow);
    let backoff = wake::measure(plan.wake_keys, Strategy::Backoff);
    let us = |h: &hdrhistogram::Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    report.wake = Some(WakeRun {
        keys: plan.wake_keys,
        wake_p50_us: Compared::new(us(&park, 0.5), Some(us(&backoff, 0.5)), Better::Lower),
        wake_p99_us: Compared::new(us(&park, 0.99), Some(us(&backoff, 0.99)), Better::Lower),
        tidemark_distribution: wake::distribution(&park),
        backoff_distribution: wake::distribution(&backoff),
    });
    report.wall_seconds = started.elapsed().as_secs_f64();
    runner.steps.finish("every phase measured");
    report.targets = crate::targets::all(&report);
    Ok(report)
}
