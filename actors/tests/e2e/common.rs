//! Helpers every end-to-end test uses: the runtimes a scenario runs on, a plain HTTP GET for
//! the manager's own endpoints, and waiting for a condition with a deadline.

use std::time::{Duration, Instant};

/// Runs `scenario` inside an actix System, with the manager's I/O runtime beside it (the
/// handle is what `Manager::start` takes).
pub fn with_runtime<F, Fut>(scenario: F)
where
    F: FnOnce(tokio::runtime::Handle) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    tidemark_actors::builder::with_runtimes(scenario).expect("I/O runtime");
}

/// `GET path` on `addr` with HTTP/1.1 and `Connection: close`: the status code and the body.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

/// Polls `done` every 25 ms until it holds (true) or `within` has passed (false).
pub async fn until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}
