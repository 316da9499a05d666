//! Figures of the manager against a hostile API server (issue 12), measured by hand on the
//! release binary: `cargo run --release -p tidemark-actors --example hostile_figures -- FIGURE`
//! with FIGURE one of `rss`, `relists`, `connections`. `TIDEMARK_BIN` picks another binary (an
//! older build, for "before" figures); by default the `tidemark` beside this example's folder.
//! The bounds these figures show are asserted by the e2e tests (`hostile_io`, `serving_limits`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tidemark_loadgen::hostile::{Hostile, HostileServer, WatchBehaviour};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn binary() -> String {
    std::env::var("TIDEMARK_BIN").unwrap_or_else(|_| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("tidemark")))
            .map_or_else(|| "tidemark".to_string(), |p| p.display().to_string())
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn against(server: &HostileServer, seconds: u64) -> Child {
    Command::new(binary())
        .arg("run")
        .args(["--master", &server.url(), "--leader-elect=false"])
        .args(["--controllers", "replicaset", "--shards", "1"])
        .args(["--secure-port", "0", "--duration", &seconds.to_string()])
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tidemark starts")
}

fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

fn figure_rss_under_a_watch_without_a_newline() {
    runtime().block_on(async {
        let server = HostileServer::start(Hostile {
            watches: WatchBehaviour::EndlessLine {
                chunk: 32 << 10,
                every: Duration::from_millis(2),
            },
            ..Hostile::default()
        })
        .await
        .expect("server");
        let mut child = against(&server, 30);
        let pid = child.id();
        let mut samples = Vec::new();
        for _ in 0..28 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            samples.extend(rss_mib(pid));
        }
        let _ = child.kill();
        let _ = child.wait();
        let max = samples.iter().copied().fold(0.0, f64::max);
        println!(
            "RSS under a newline-less watch ({} MiB sent): first {:.0} MiB, max {:.0} MiB, last {:.0} MiB",
            server.watch_bytes_sent() >> 20,
            samples.first().copied().unwrap_or(0.0),
            max,
            samples.last().copied().unwrap_or(0.0)
        );
        server.shutdown();
    });
}

fn figure_relists_in_12s_of_error_410() {
    runtime().block_on(async {
        let server = HostileServer::start(Hostile {
            watches: WatchBehaviour::Gone,
            ..Hostile::default()
        })
        .await
        .expect("server");
        let mut child = against(&server, 30);
        tokio::time::sleep(Duration::from_secs(12)).await;
        let (replicasets, pods) = (server.lists("replicasets"), server.lists("pods"));
        let _ = child.kill();
        let _ = child.wait();
        println!(
            "lists in 12 s of ERROR 410 on every watch: {replicasets} of ReplicaSets, {pods} of Pods"
        );
        server.shutdown();
    });
}

fn figure_open_connections_after_45s_of_half_sent_connections() {
    runtime().block_on(async {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port();
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
        let mut child = Command::new(binary())
            .args([
                "run",
                "--embedded",
                "--duration",
                "90",
                "--demo-replicasets",
                "2",
            ])
            .args(["--metrics-addr", &addr.to_string()])
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tidemark starts");
        let started = Instant::now();
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "metrics port up"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut held = Vec::new();
        for _ in 0..3000 {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(mut stream) => {
                    let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHo").await;
                    held.push(stream);
                }
                Err(e) => println!("connect failed: {e}"),
            }
        }
        tokio::time::sleep(Duration::from_secs(45)).await;
        let mut open = 0;
        for mut stream in held {
            let mut buf = [0u8; 64];
            let read = tokio::time::timeout(Duration::from_millis(5), stream.read(&mut buf)).await;
            if read.is_err() {
                open += 1;
            }
        }
        let healthz =
            tokio::time::timeout(Duration::from_secs(5), http_get(addr, "/healthz")).await;
        let _ = child.kill();
        let _ = child.wait();
        println!(
            "3000 half-sent connections: {open} still open after 45 s; /healthz then: {healthz:?}"
        );
    });
}

/// One `GET` over plain HTTP; the status code.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> u16 {
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
        return 0;
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return 0;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("rss") => figure_rss_under_a_watch_without_a_newline(),
        Some("relists") => figure_relists_in_12s_of_error_410(),
        Some("connections") => figure_open_connections_after_45s_of_half_sent_connections(),
        _ => {
            eprintln!("usage: hostile_figures rss|relists|connections");
            std::process::exit(2);
        }
    }
}
