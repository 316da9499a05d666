//! The metrics listener cannot be held by its callers: idle and half-sent connections are closed
//! by the header-read deadline and the connection cap, and a burst of concurrent scrapes costs
//! one collection and one render, shared.

use crate::common::{http_get, with_runtime};
use crate::hostile_informers::{client_of, config_for, start_hostile};
use std::time::Duration;
use tidemark_actors::client::RequestTimeouts;
use tidemark_actors::manager::Manager;
use tidemark_actors::metrics::{MetricsState, scrape_serve_options, serve_with};
use tidemark_loadgen::hostile::Hostile;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Whether the server has closed `stream`.
async fn closed(mut stream: TcpStream) -> bool {
    let mut buf = [0u8; 256];
    matches!(
        tokio::time::timeout(Duration::from_millis(200), stream.read(&mut buf)).await,
        Ok(Ok(0) | Err(_))
    )
}

#[test]
fn half_sent_connections_are_closed_and_health_still_answers() {
    with_runtime(|io| async move {
        let server = start_hostile(&io, Hostile::default()).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let manager =
            Manager::start(&config_for(&server, &["replicaset"]), client, &io).expect("manager");
        let options = tidemark_tls::ServeOptions {
            header_read_timeout: Some(Duration::from_millis(500)),
            max_connections: 64,
            ..scrape_serve_options()
        };
        let state = MetricsState::new(manager.source());
        let addr = io
            .spawn(serve_with(
                "127.0.0.1:0".parse().expect("addr"),
                state,
                options,
            ))
            .await
            .expect("join")
            .expect("bound");
        let mut held = Vec::new();
        for _ in 0..200 {
            let mut stream = TcpStream::connect(addr).await.expect("connect");
            let _ = stream.write_all(b"GET /metrics HTTP/1.1\r\nHo").await;
            held.push(stream);
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let open = futures::future::join_all(held.into_iter().map(closed))
            .await
            .into_iter()
            .filter(|closed| !closed)
            .count();
        let (code, body) = http_get(addr, "/healthz").await;
        manager.stop();
        server.shutdown();
        assert_eq!(
            open, 0,
            "half-sent connections still open after the header deadline"
        );
        assert_eq!(code, 200, "{body}");
    });
}

#[test]
fn a_burst_of_concurrent_scrapes_shares_one_render() {
    with_runtime(|io| async move {
        let server = start_hostile(&io, Hostile::default()).await;
        let client = client_of(&io, &server, RequestTimeouts::default());
        let manager =
            Manager::start(&config_for(&server, &["replicaset"]), client, &io).expect("manager");
        let state = MetricsState::new(manager.source());
        let addr = io
            .spawn(serve_with(
                "127.0.0.1:0".parse().expect("addr"),
                state.clone(),
                scrape_serve_options(),
            ))
            .await
            .expect("join")
            .expect("bound");
        let scrapes = futures::future::join_all((0..300).map(|_| http_get(addr, "/metrics"))).await;
        let (collections, renders) = state.work_done();
        manager.stop();
        server.shutdown();
        assert!(scrapes.iter().all(|(code, _)| *code == 200));
        assert!(
            scrapes
                .iter()
                .all(|(_, body)| body.contains("tidemark_shard_restarts")),
            "every scrape got the whole text"
        );
        assert!(
            renders <= 3,
            "300 concurrent scrapes rendered {renders} times"
        );
        assert!(collections <= 3, "and collected {collections} times");
    });
}
