//! What `tidemark run --embedded` prints, as a user piping it sees it: the summary on stdout, the
//! log on stderr naming the address it serves on, and colour only on a terminal without
//! `NO_COLOR`.

use std::process::Command;

const ESCAPE: u8 = 0x1b;

fn embedded_args() -> [&'static str; 7] {
    [
        "run",
        "--embedded",
        "--duration",
        "3",
        "--demo-replicasets",
        "2",
        "--metrics-addr=127.0.0.1:0",
    ]
}

#[test]
fn a_redirected_log_has_no_escape_and_names_the_bound_metrics_address() {
    let dir = std::env::temp_dir().join(format!("tidemark-output-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log = dir.join("stderr.log");
    let output = Command::new(env!("CARGO_BIN_EXE_tidemark"))
        .args(embedded_args())
        .env_remove("RUST_LOG")
        .env_remove("CLICOLOR_FORCE")
        .env("TERM", "xterm-256color")
        .stderr(std::fs::File::create(&log).expect("log file"))
        .output()
        .expect("tidemark runs");
    let stderr = std::fs::read(&log).expect("read the log");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&stderr)
    );
    assert!(
        !stderr.contains(&ESCAPE),
        "no escape byte in a redirected log"
    );
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(
        stderr.contains("INFO") && stderr.contains("bound=127.0.0.1:"),
        "the metrics endpoint's bound address at info level:\n{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("tidemark summary") && !stdout.contains("INFO"),
        "the summary alone on stdout:\n{stdout}"
    );
}

/// Runs the embedded demo under a pseudo-terminal (util-linux `script`) and returns what the
/// terminal showed.
fn on_a_terminal(no_color: bool) -> Vec<u8> {
    let mut command_line = vec![env!("CARGO_BIN_EXE_tidemark").to_string()];
    command_line.extend(embedded_args().iter().map(|a| a.to_string()));
    let mut script = Command::new("script");
    script
        .args(["--quiet", "--return", "--command"])
        .arg(command_line.join(" "))
        .arg("/dev/null")
        .env_remove("RUST_LOG")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color");
    if no_color {
        script.env("NO_COLOR", "1");
    }
    let output = script.output().expect("script (util-linux) runs");
    assert!(output.status.success(), "{output:?}");
    output.stdout
}

#[test]
fn the_log_is_coloured_on_a_terminal_unless_no_color_is_set() {
    assert!(
        on_a_terminal(false).contains(&ESCAPE),
        "colour on a terminal (else the redirected-log test proves nothing)"
    );
    assert!(!on_a_terminal(true).contains(&ESCAPE), "NO_COLOR honoured");
}
