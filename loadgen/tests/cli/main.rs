//! The `loadgen` command as a newcomer meets it: `stress --list`, an unknown scenario's message,
//! and an installed copy (the binary and `tidemark` copied out of the checkout) running a
//! scenario from another directory, its stdout one JSON document and its log free of escapes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn loadgen() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_loadgen"));
    command.env_remove("CLICOLOR_FORCE").env_remove("RUST_LOG");
    command
}

/// The scenario files of the source tree, by name.
fn shipped_names() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("the scenarios folder")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_string))
        .collect();
    names.sort();
    names
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts `--list` output names every shipped scenario, each with a description.
fn assert_lists_every_scenario(output: &Output) {
    assert!(output.status.success(), "{}", text(&output.stderr));
    let listing = text(&output.stdout);
    let listed: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(listed, shipped_names(), "{listing}");
    for line in listing.lines() {
        let description = line.split_once("  ").map(|(_, d)| d.trim()).unwrap_or("");
        assert!(description.len() > 10, "a one-line description: {line}");
        assert!(!description.contains('\n'));
    }
}

#[test]
fn stress_list_prints_every_built_in_scenario_with_its_first_sentence() {
    let output = loadgen()
        .args(["stress", "--list"])
        .output()
        .expect("loadgen runs");
    assert_lists_every_scenario(&output);
    let listing = text(&output.stdout);
    assert!(
        listing.contains("replicaset-watch-delay") && listing.contains("20 ReplicaSets scaled"),
        "{listing}"
    );
}

#[test]
fn an_unknown_scenario_names_the_built_in_ones_and_fails() {
    let output = loadgen()
        .args(["stress", "--scenario", "nonexistent"])
        .output()
        .expect("loadgen runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty(), "nothing on stdout");
    let message = text(&output.stderr);
    assert!(message.contains("no scenario \"nonexistent\""), "{message}");
    for name in shipped_names() {
        assert!(message.contains(&name), "{name} missing from: {message}");
    }
    assert!(message.contains("loadgen stress --list"), "{message}");
}

/// A folder of its own under the system's temp dir, outside the checkout.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("loadgen-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Copies `loadgen` and the `tidemark` built beside it into `bin`, as `cargo install` puts them.
fn install_into(bin: &Path) -> PathBuf {
    std::fs::create_dir_all(bin).expect("bin dir");
    let built = Path::new(env!("CARGO_BIN_EXE_loadgen"));
    let tidemark = built.with_file_name("tidemark");
    assert!(
        tidemark.is_file(),
        "{} is not built: cargo build --release -p tidemark-actors (cargo test --workspace builds it)",
        tidemark.display()
    );
    for from in [built, tidemark.as_path()] {
        let to = bin.join(from.file_name().expect("a file name"));
        std::fs::copy(from, &to).expect("copy the binary");
    }
    bin.join("loadgen")
}

const TINY: &str = r#"name = "tiny"
description = "One ReplicaSet scaled 1 -> 2 under a short Pod watch delay."

[workload]
replicasets = 1
steps = [1, 2]
step_every_seconds = 0.5

[[faults]]
kind = "watch-delay"
resource = "pods"
millis = 300
from_seconds = 0
until_seconds = 1

[invariants]
check = ["replicaset-no-over-create"]
convergence_bound_seconds = 15
"#;

#[test]
fn an_installed_loadgen_runs_a_scenario_from_another_directory_with_json_on_stdout() {
    let root = scratch("installed");
    let loadgen = install_into(&root.join("bin"));
    let work = root.join("work");
    std::fs::create_dir_all(&work).expect("work dir");

    // The scenarios come from the binary: the checkout's path is nowhere in it (it was, when
    // scenarios were read from `CARGO_MANIFEST_DIR/scenarios` at run time).
    let binary = std::fs::read(&loadgen).expect("read the binary");
    let needle = env!("CARGO_MANIFEST_DIR");
    assert!(
        !binary.windows(needle.len()).any(|w| w == needle.as_bytes()),
        "the binary names {needle}"
    );
    let listed = Command::new(&loadgen)
        .args(["stress", "--list"])
        .current_dir(&work)
        .output()
        .expect("the installed loadgen runs");
    assert_lists_every_scenario(&listed);

    std::fs::write(work.join("tiny.toml"), TINY).expect("write the scenario");
    let log = work.join("stress.log");
    let output = Command::new(&loadgen)
        .args(["stress", "--scenario", "tiny.toml", "--json", "-"])
        .current_dir(&work)
        .env_remove("CLICOLOR_FORCE")
        .env_remove("RUST_LOG")
        .stderr(std::fs::File::create(&log).expect("log file"))
        .output()
        .expect("the installed loadgen runs");
    let stderr = std::fs::read(&log).expect("read the log");
    assert!(output.status.success(), "{}", text(&stderr));
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("stdout is one JSON document");
    assert_eq!(report["scenario"], "tiny");
    assert_eq!(report["converged"], true, "{report}");

    assert!(
        !stderr.contains(&0x1b),
        "no escape byte in the redirected log"
    );
    let stderr = text(&stderr);
    for phase in [
        "starting the API server",
        "waiting for the managers to settle",
        "running the scenario's 2 steps and 1 fault windows (1 s)",
        "waiting for every set to converge (at most 15 s)",
        "verdict: passed",
    ] {
        assert!(stderr.contains(phase), "{phase:?} missing from:\n{stderr}");
    }
    assert!(
        stderr.contains("stress tiny seed 1 gate on: passed"),
        "the summary"
    );

    let manager_log =
        std::fs::read(report["manager_log"].as_str().expect("a log path")).expect("manager log");
    assert!(
        !manager_log.contains(&0x1b),
        "no escape byte in the manager's log"
    );
    let manager_log = text(&manager_log);
    assert!(
        manager_log.contains("over HTTPS bound=127.0.0.1:"),
        "the secure port's address at info level:\n{manager_log}"
    );
    let _ = std::fs::remove_dir_all(&root);
}
