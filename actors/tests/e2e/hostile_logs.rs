//! The `tidemark` binary's logs never carry a response body, even at `RUST_LOG=trace`: a list
//! page that does not decode and a write answered with something that is not an object both
//! hold a Pod env value, and neither reaches stderr (kube-rs logs both bodies whole).

use crate::hostile_informers::replicaset;
use std::process::{Command, Stdio};
use tidemark_loadgen::hostile::{Hostile, HostileServer, WriteBehaviour};

const SECRET_VALUE: &str = "hunter2-EnvValue-4242";

#[test]
fn bodies_that_do_not_decode_never_reach_the_log() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let stderr = runtime.block_on(async {
        let page = format!(
            r#"{{"kind":"JobList","metadata":{{"resourceVersion":7}},"items":[{{"spec":{{"template":{{"spec":{{"containers":[{{"env":[{{"name":"DB_PASSWORD","value":"{SECRET_VALUE}"}}]}}]}}}}}}}}]}}"#
        );
        let answer = format!(
            r#"{{"metadata":"{SECRET_VALUE}","spec":{{"env":[{{"value":"{SECRET_VALUE}"}}]}}}}"#
        );
        let server = HostileServer::start(Hostile {
            items: vec![("replicasets".into(), vec![replicaset("web", 1)])],
            raw_list: Some(("jobs".into(), page.into_bytes())),
            writes: WriteBehaviour::Answer(answer.into_bytes()),
            ..Hostile::default()
        })
        .await
        .expect("server");
        let child = Command::new(env!("CARGO_BIN_EXE_tidemark"))
            .arg("run")
            .args(["--master", &server.url(), "--leader-elect=false"])
            .args(["--controllers", "replicaset,job", "--shards", "1"])
            .args(["--secure-port", "0", "--duration", "4"])
            .env("RUST_LOG", "trace")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tidemark starts");
        let output = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("output");
        server.shutdown();
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert!(
        !stderr.contains(SECRET_VALUE),
        "a response body reached the log: {}",
        stderr
            .lines()
            .filter(|l| l.contains(SECRET_VALUE))
            .take(3)
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(
        stderr.contains("list failed") && stderr.contains("the list page does not decode"),
        "the undecodable Job page was read and reported: {}",
        stderr.chars().take(4000).collect::<String>()
    );
    assert!(
        stderr.contains("write failed") && stderr.contains("the response does not decode"),
        "the undecodable write answer was read and reported"
    );
}
