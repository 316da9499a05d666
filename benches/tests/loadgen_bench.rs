//! `loadgen-bench` end to end on the smoke profile: every phase runs, Tidemark, the kube-rs
//! peer and the null client side by side, and the JSON carries every side and their ratios. (It also makes
//! `cargo test --release` build the binary CI's bench step runs, with the same features.)

use tidemark_loadgen::bench::schema::BenchReport;

fn smoke_run() -> BenchReport {
    let json =
        std::env::temp_dir().join(format!("loadgen-bench-smoke-{}.json", std::process::id()));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_loadgen-bench"))
        .args(["bench", "--profile", "smoke", "--peer", "kube-rs", "--json"])
        .arg(&json)
        .env("CI", "true")
        .status()
        .expect("loadgen-bench starts");
    assert!(status.success(), "loadgen-bench exited with {status}");
    let text = std::fs::read_to_string(&json).expect("the JSON report is written");
    let _ = std::fs::remove_file(&json);
    serde_json::from_str(&text).expect("the report parses")
}

#[test]
fn the_smoke_profile_measures_both_sides_of_every_phase() {
    let report = smoke_run();
    assert_eq!(report.profile, "smoke");
    assert_eq!(
        report.machine.cores,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    let sync = report.sync.first().expect("a sync run");
    assert_eq!(sync.pods, 500);
    assert!(sync.sync_seconds.tidemark > 0.0);
    assert!(sync.sync_seconds.peer.is_some_and(|p| p > 0.0));
    assert!(sync.sync_seconds.ratio.is_some_and(|r| r > 0.0));

    let churn = report.churn.first().expect("a churn run");
    assert!(!churn.tidemark_steps.is_empty() && !churn.peer_steps.is_empty());
    assert!(churn.peak_events_per_second.tidemark > 0.0);

    let null = report.null_client.first().expect("a null-client run");
    assert_eq!(null.pods, 500);
    for figure in [
        &null.sync_seconds,
        &null.sustained_events_per_second,
        &null.peak_events_per_second,
    ] {
        assert!(
            figure.tidemark > 0.0 && figure.null_client > 0.0,
            "{figure:?}"
        );
        assert!(
            figure.times_the_null_client.is_some_and(|t| t > 0.0),
            "{figure:?}"
        );
    }
    assert!(!null.null_steps.is_empty());
    assert!(null.null_steps.iter().all(|s| s.events_per_second > 0.0));

    let reconcile = report.reconcile.expect("reconcile throughput");
    assert!(reconcile.reconciles_per_second.tidemark > 0.0);
    assert!(reconcile.reconciles_per_second.ratio.is_some());

    let wake = report.wake.expect("wake latency");
    assert!(wake.wake_p99_us.tidemark > 0.0 && wake.wake_p99_us.peer.is_some());

    let gate = report.gate.expect("gate overhead");
    assert!(gate.pairs.len() >= 10, "at least ten interleaved pairs");
    assert!(gate.events_per_second.on > 0.0 && gate.events_per_second.off > 0.0);
    assert!(!report.targets.is_empty());
}
