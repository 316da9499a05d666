//! The `tidemark` binary against the simulated API server, as an operator runs it: a graceful
//! stop on SIGTERM while writes are in flight, the Lease released after them (or after the grace
//! period, saying which), exit code 0; a secure port already taken ends the run before the Lease
//! is touched; and logs that never show a Secret's data, a token or an Authorization header.

use crate::common::until;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tidemark_actors::embedded::{DEMO_NAMESPACE, replicaset_manifest};
use tidemark_loadgen::kubeconfig::KubeconfigUser;
use tidemark_loadgen::rbac::UserInfo;
use tidemark_loadgen::request_faults::{LatencyRule, Match};
use tidemark_loadgen::{ApiServer, Resource, ServerConfig, Verb, start};

const SECRET_VALUE: &str = "hunter2-SecretPayload-77";

fn work_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tidemark-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("work dir");
    dir
}

/// A kubeconfig for `server` whose user is an admin with a bearer token; and the token.
fn kubeconfig_with_token(dir: &Path, server: &ApiServer) -> (PathBuf, String) {
    let path = dir.join("kubeconfig");
    let token = server.issue_token(UserInfo::user("admin", &["system:masters"]), None);
    let yaml = server.kubeconfig_for(&KubeconfigUser::Token(token.clone()));
    std::fs::write(&path, yaml).expect("kubeconfig");
    (path, token)
}

fn spawn(kubeconfig: &Path, dir: &Path, extra: &[&str], rust_log: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--metrics-addr", "0", "--secure-port", "0", "--shards", "2"])
        .args(["--leader-elect-identity", "tidemark-test"])
        .arg("--summary-json")
        .arg(dir.join("summary.json"))
        .args(extra)
        .env("RUST_LOG", rust_log)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tidemark starts")
}

fn sigterm(child: &Child) {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
}

fn tidemark_writes(server: &ApiServer) -> usize {
    server
        .writes()
        .iter()
        .filter(|w| {
            // The controllers' writes: not the Lease, nor the Events recording them.
            w.resource != Resource::Leases
                && w.resource != Resource::Events
                && w.user_agent
                    .as_deref()
                    .is_some_and(|a| a.starts_with("tidemark"))
        })
        .count()
}

struct Stopped {
    code: Option<i32>,
    summary: serde_json::Value,
    lease_holder: Option<String>,
    server_writes: usize,
    stderr: String,
}

/// Reads the child's stderr on a thread, so a chatty log never fills the pipe.
fn drain_stderr(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut pipe = child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut pipe, &mut text);
        text
    })
}

/// Starts a manager on 40 Pods to create, each create held `create_millis` by the server, stops
/// it with SIGTERM once writes are in flight, and reports how it ended.
async fn stop_during_writes(grace: &str, create_millis: u64) -> Stopped {
    let server = start(ServerConfig {
        kubelet_ready_after: Duration::from_millis(50),
        ..ServerConfig::default()
    })
    .await
    .expect("server");
    server.faults().requests().add_latency(LatencyRule {
        matching: Match {
            verb: Some("create".into()),
            resource: Some("pods".into()),
        },
        millis: create_millis,
    });
    server
        .create(
            Resource::ReplicaSets,
            DEMO_NAMESPACE,
            replicaset_manifest("web", 40),
        )
        .expect("seed");
    let dir = work_dir(&format!("sigterm-{grace}"));
    let (kubeconfig, _token) = kubeconfig_with_token(&dir, &server);
    // Creates held longer than the run cannot be seen applied: give them 3 s to be sent (the
    // summary's unanswered writes show they were). Each write's deadline is half the gap between
    // lease duration and renew deadline; a 60 s / 20 s Lease keeps the hung writes in flight
    // (20 s) past the SIGTERM instead of failing them at the default 2.5 s.
    let hung = create_millis > 5_000;
    let mut args = vec!["--shutdown-grace-period", grace];
    if hung {
        args.extend([
            "--leader-elect-lease-duration=60s",
            "--leader-elect-renew-deadline=20s",
        ]);
    }
    let mut child = spawn(&kubeconfig, &dir, &args, "warn,tidemark_actors=info");
    let stderr = drain_stderr(&mut child);
    let leading = until(Duration::from_secs(20), || {
        server
            .get(Resource::Leases, "kube-system", "tidemark")
            .is_some_and(|l| l["spec"]["holderIdentity"] == "tidemark-test")
    })
    .await;
    assert!(leading, "the manager takes the Lease");
    let wait = Duration::from_secs(if hung { 3 } else { 20 });
    let writing = until(wait, || tidemark_writes(&server) >= 3).await;
    assert!(writing || hung, "the manager is creating Pods");
    sigterm(&child);
    let mut code = None;
    let exited = until(Duration::from_secs(20), || {
        code = child.try_wait().ok().flatten().map(|s| s.code());
        code.is_some()
    })
    .await;
    if !exited {
        let _ = child.kill();
    }
    let _ = child.wait();
    let stderr = stderr.join().unwrap_or_default();
    let summary = std::fs::read(dir.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let lease_holder = server
        .get(Resource::Leases, "kube-system", "tidemark")
        .and_then(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string));
    let server_writes = tidemark_writes(&server);
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    Stopped {
        code: code.flatten(),
        summary,
        lease_holder,
        server_writes,
        stderr,
    }
}

/// The line of `stderr` that contains `text`, by position.
fn line_of(stderr: &str, text: &str) -> Option<usize> {
    stderr.lines().position(|l| l.contains(text))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn sigterm_during_writes_lets_them_finish_releases_the_lease_and_exits_zero() {
    let stopped = runtime().block_on(stop_during_writes("10s", 300));
    let s = &stopped.summary;
    assert_eq!(stopped.code, Some(0), "{s}");
    assert_eq!(
        s["unanswered_at_exit"], 0,
        "every write sent was answered: {s}"
    );
    assert_eq!(s["released_lease"], true, "{s}");
    assert_eq!(
        stopped.lease_holder, None,
        "the Lease names nobody after the stop"
    );
    let sent = s["writes"].as_u64().unwrap_or(0) - s["write_failures"].as_u64().unwrap_or(0);
    assert_eq!(
        stopped.server_writes as u64, sent,
        "the server applied exactly the writes the manager saw answered: {s}"
    );
    let answered = line_of(
        &stopped.stderr,
        "every write in flight was answered; releasing the Lease",
    );
    let released = line_of(&stopped.stderr, "Lease released");
    assert!(
        answered.is_some() && answered < released,
        "the log says the writes were answered, then that the Lease was released: {}",
        stopped.stderr
    );
}

#[test]
fn sigterm_while_writes_hang_releases_the_lease_only_when_the_grace_period_ends_and_says_so() {
    let started = std::time::Instant::now();
    let stopped = runtime().block_on(stop_during_writes("2s", 20_000));
    let s = &stopped.summary;
    assert_eq!(stopped.code, Some(0), "{s}");
    assert!(s["unanswered_at_exit"].as_u64() > Some(0), "{s}");
    assert_eq!(s["released_lease"], true, "{s}");
    assert_eq!(stopped.lease_holder, None);
    let ended = line_of(
        &stopped.stderr,
        "the grace period ended with writes still unanswered; releasing the Lease anyway",
    );
    let released = line_of(&stopped.stderr, "Lease released");
    assert!(
        ended.is_some() && ended < released,
        "the log says the grace period ended before the Lease was released: {}",
        stopped.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "no waiting for the hung writes"
    );
}

#[test]
fn a_secure_port_already_taken_exits_one_without_touching_the_lease() {
    let rt = runtime();
    let (code, stderr, lease_writes) = rt.block_on(async {
        let server = start(ServerConfig::default()).await.expect("server");
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = taken.local_addr().expect("addr").port().to_string();
        let dir = work_dir("port-taken");
        let (kubeconfig, _token) = kubeconfig_with_token(&dir, &server);
        let child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--metrics-addr", "0", "--bind-address", "127.0.0.1"])
            .args(["--secure-port", &port, "--duration", "10"])
            .args(["--leader-elect-identity", "tidemark-test"])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tidemark starts");
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("output");
        drop(taken);
        let lease_writes = server
            .writes()
            .iter()
            .filter(|w| {
                w.resource == Resource::Leases
                    && w.user_agent
                        .as_deref()
                        .is_some_and(|a| a.starts_with("tidemark"))
            })
            .count();
        let lease = server.get(Resource::Leases, "kube-system", "tidemark");
        assert!(lease.is_none(), "no Lease was created: {lease:?}");
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
            lease_writes,
        )
    });
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot serve the secure port"), "{stderr}");
    assert_eq!(lease_writes, 0, "the Lease was never written: {stderr}");
}

#[test]
fn without_a_grace_period_the_stop_cuts_writes_in_flight() {
    let stopped = runtime().block_on(stop_during_writes("0s", 300));
    let s = &stopped.summary;
    assert_eq!(stopped.code, Some(0), "{s}");
    assert!(
        s["unanswered_at_exit"].as_u64() > Some(0),
        "with no time to finish, writes in flight are left unanswered: {s}"
    );
}

#[test]
fn logs_never_show_secret_data_tokens_or_authorization_headers() {
    let rt = runtime();
    let (stdout, stderr, token) = rt.block_on(async {
        let server = start(ServerConfig {
            kubelet_ready_after: Duration::from_millis(50),
            ..ServerConfig::default()
        })
        .await
        .expect("server");
        let mut rs = replicaset_manifest("with-secret", 3);
        rs["spec"]["template"]["spec"]["containers"][0]["env"] = serde_json::json!([
            {"name": "DB_PASSWORD", "value": SECRET_VALUE},
            {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}
        ]);
        server
            .create(Resource::ReplicaSets, DEMO_NAMESPACE, rs)
            .expect("seed");
        let dir = work_dir("secret-logs");
        let (kubeconfig, token) = kubeconfig_with_token(&dir, &server);
        let child = spawn(
            &kubeconfig,
            &dir,
            &["--duration", "4", "--log-format", "json"],
            "trace",
        );
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("output");
        let created = server
            .writes()
            .iter()
            .filter(|w| w.resource == Resource::Pods && w.verb == Verb::Create)
            .count();
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
        assert!(created >= 3, "the run handled the Secret-bearing Pod spec");
        (
            String::from_utf8_lossy(&output.stdout).to_string(),
            String::from_utf8_lossy(&output.stderr).to_string(),
            token,
        )
    });
    let all = format!("{stdout}\n{stderr}");
    assert!(
        stderr.lines().count() > 50,
        "trace logging was on: {stderr}"
    );
    assert!(
        !all.contains(SECRET_VALUE),
        "a Secret value leaked into the logs"
    );
    assert!(
        !all.contains(&token),
        "the bearer token leaked into the logs"
    );
    assert!(
        !all.to_ascii_lowercase().contains("authorization"),
        "an Authorization header leaked into the logs"
    );
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let parsed: Result<serde_json::Value, _> = serde_json::from_str(line);
        assert!(
            parsed.is_ok(),
            "--log-format json writes one JSON object a line: {line}"
        );
    }
}
