//! The `tidemark` binary as a user runs it: start-up, the embedded demo, the summary JSON and the
//! exit code, with protection on and off.

use std::process::Command;

fn run_embedded(extra: &[&str]) -> (i32, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!(
        "tidemark-bin-{}-{}",
        std::process::id(),
        extra.len()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let summary = dir.join("summary.json");
    let status = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args([
            "run",
            "--embedded",
            "--duration",
            "12",
            "--demo-replicasets",
            "6",
        ])
        .args([
            "--demo-pod-watch-delay-ms",
            "1500",
            "--metrics-addr",
            "127.0.0.1:0",
            "--summary-json",
        ])
        .arg(&summary)
        .args(extra)
        .env("RUST_LOG", "error")
        .status()
        .expect("tidemark runs");
    let json = std::fs::read(&summary).expect("summary written");
    let _ = std::fs::remove_dir_all(&dir);
    (
        status.code().unwrap_or(-1),
        serde_json::from_slice(&json).expect("summary is JSON"),
    )
}

#[test]
fn the_embedded_demo_exits_zero_with_no_violation_and_converges() {
    let (code, summary) = run_embedded(&[]);
    assert_eq!(code, 0, "{summary}");
    assert_eq!(summary["violations"], 0);
    assert_eq!(summary["converged"], true);
    assert!(summary["stale_sync_skips"].as_u64() > Some(0), "{summary}");
    for field in ["reconciles", "writes"] {
        assert!(summary[field].as_u64() > Some(0), "{field}: {summary}");
    }
}

#[test]
fn with_protection_off_the_demo_reports_violations_and_exits_non_zero() {
    let (code, summary) = run_embedded(&["--feature-gates", "StaleControllerConsistency=false"]);
    assert_eq!(code, 1, "{summary}");
    assert!(summary["violations"].as_u64() > Some(0), "{summary}");
    assert_eq!(summary["stale_sync_skips"], 0);
}

#[test]
fn a_malformed_feature_gate_is_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args([
            "run",
            "--embedded",
            "--feature-gates",
            "StaleControllerConsistency=maybe",
        ])
        .output()
        .expect("tidemark runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--feature-gates") && stderr.contains("Name=true|false"),
        "{stderr}"
    );
}

/// Runs `tidemark run` with `args` against nothing; returns the exit code and stderr.
fn run_failing(args: &[&str], duration: &str) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .arg("run")
        .args(args)
        .args(["--secure-port", "0", "--duration", duration])
        .env_remove("RUST_BACKTRACE")
        .env("RUST_LOG", "warn")
        .output()
        .expect("tidemark runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_configuration_error_exits_non_zero_with_one_clear_line() {
    let (code, stderr) = run_failing(&["--kubeconfig", "/nonexistent/kubeconfig"], "1");
    assert_eq!(code, 2, "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with("tidemark: ") && lines[0].contains("/nonexistent/kubeconfig"),
        "{stderr}"
    );
    assert!(!stderr.contains("stack backtrace"), "{stderr}");
}

#[test]
fn metrics_over_plain_http_are_refused_against_a_cluster() {
    let (code, stderr) = run_failing(
        &[
            "--master",
            "https://127.0.0.1:1",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
        "1",
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--embedded only"), "{stderr}");
}

#[test]
fn an_unreachable_api_server_is_retried_and_named_and_the_run_does_not_exit_zero() {
    // Port 1 on loopback refuses connections.
    let (code, stderr) = run_failing(
        &[
            "--master",
            "https://127.0.0.1:1",
            "--leader-elect=false",
            "--controllers",
            "replicaset",
        ],
        "3s",
    );
    assert_eq!(code, 1, "{stderr}");
    let retries = stderr
        .lines()
        .filter(|l| l.contains("list failed; retrying"))
        .count();
    assert!(retries >= 2, "retried with backoff: {stderr}");
    assert!(
        stderr.contains("https://127.0.0.1:1"),
        "the URL is in the log: {stderr}"
    );
    assert!(
        stderr.contains("never synced") || stderr.contains("ever synced"),
        "{stderr}"
    );
}

#[test]
fn a_controller_tidemark_does_not_run_is_refused_naming_those_it_runs() {
    let out = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args([
            "run",
            "--embedded",
            "--controllers=replicaset,deployment-controller",
        ])
        .output()
        .expect("tidemark runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--controllers")
            && stderr.contains("deployment-controller is a kube-controller-manager controller Tidemark does not run; Tidemark runs: replicaset"),
        "{stderr}"
    );
}
