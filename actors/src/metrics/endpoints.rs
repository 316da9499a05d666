//! The HTTP side: `/metrics`, `/healthz`, `/readyz` and `/livez`, and the plain listener of
//! `--metrics-addr` with the limits every scrape listener has.

use super::text_format::{
    OPENMETRICS_CONTENT_TYPE, TEXT_CONTENT_TYPE, to_text_format, wants_openmetrics,
};
use super::{HEALTH_TIMEOUT, MetricsState};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::net::SocketAddr;
use std::time::Duration;

/// OpenMetrics for a scraper that asks for it, else the text format 0.0.4, as
/// kube-controller-manager negotiates.
async fn metrics(State(state): State<MetricsState>, headers: header::HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    match state.render().await {
        Ok(text) if wants_openmetrics(accept) => (
            [(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)],
            axum::body::Body::from(text),
        )
            .into_response(),
        Ok(text) => (
            [(header::CONTENT_TYPE, TEXT_CONTENT_TYPE)],
            axum::body::Body::from(to_text_format(&String::from_utf8_lossy(&text))),
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "encoding failed").into_response(),
    }
}

/// Alive when every shard's event loop answers within [`HEALTH_TIMEOUT`] (the I/O runtime is
/// turning, or this handler would not run).
async fn healthz(State(state): State<MetricsState>) -> Response {
    match state.stats().await {
        Some(stats) if stats.shards_answering == stats.shards_total => "ok".into_response(),
        Some(stats) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "{} of {} shards answered\n",
                stats.shards_answering, stats.shards_total
            ),
        )
            .into_response(),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("shards did not answer within {HEALTH_TIMEOUT:?}\n"),
        )
            .into_response(),
    }
}

/// Ready when every cache has synced from a consistent list and, with leader election on, this
/// process leads; under scale-out, when it holds a range or leads (a replica holding no range
/// yet has nothing to do). The detail lists each check, each range held, and why the manager is
/// degraded, if it is.
async fn readyz(State(state): State<MetricsState>) -> Response {
    let informers = state.informers();
    let mut detail = String::new();
    for i in &informers {
        detail.push_str(&format!(
            "[{}] informer {} synced\n",
            if i.synced { "+" } else { "-" },
            i.resource
        ));
        if let Some((times, why)) = &i.failure {
            detail.push_str(&format!(
                "    {why} ({times} in a row; retrying with backoff)\n"
            ));
        }
    }
    let leader = state.source.leader();
    let mut leading = leader.acting();
    if leader.enabled {
        detail.push_str(&format!(
            "[{}] leader ({})\n",
            if leading { "+" } else { "-" },
            leader.identity
        ));
    }
    if let Some(ranges) = state.source.ranges() {
        let held = ranges.held.lock().clone();
        detail.push_str(&format!(
            "[{}] ranges held: {} of {}\n",
            if held.is_empty() { "-" } else { "+" },
            held.len(),
            tidemark_engine::ranges::RANGES
        ));
        for range in &held {
            detail.push_str(&format!("[+] range {:02}\n", range.0));
        }
        if let Some(why) = ranges.last_failure.lock().as_ref() {
            detail.push_str(&format!("    {why}\n"));
        }
        leading = leading || !held.is_empty();
    }
    let mut shards_answer = false;
    let mut shards_up = false;
    match state.stats().await {
        Some(stats) => {
            shards_answer = stats.shards_answering == stats.shards_total;
            detail.push_str(&format!(
                "[{}] shards answering ({} of {})\n",
                if shards_answer { "+" } else { "-" },
                stats.shards_answering,
                stats.shards_total
            ));
            let down: Vec<_> = stats.shards.iter().filter(|s| s.down.is_some()).collect();
            shards_up = down.is_empty();
            for shard in &stats.shards {
                if let Some(d) = &shard.down {
                    detail.push_str(&format!(
                        "[-] shard {} down for {:.1}s after a panic ({}; {} restarts): {}\n",
                        shard.shard,
                        d.since.elapsed().as_secs_f64(),
                        if d.relist_asked {
                            "relisting its caches"
                        } else {
                            "waiting to relist"
                        },
                        shard.restarts,
                        d.reason
                    ));
                }
            }
            for why in stats.degraded() {
                detail.push_str(&format!("[!] degraded: {why}\n"));
            }
        }
        None => detail.push_str(&format!(
            "[-] shards did not answer within {HEALTH_TIMEOUT:?}\n"
        )),
    }
    if informers.iter().all(|i| i.synced) && leading && shards_answer && shards_up {
        (StatusCode::OK, format!("{detail}ok\n")).into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{detail}readyz check failed\n"),
        )
            .into_response()
    }
}

/// Alive while the I/O runtime turns (this handler runs on it): what the kubelet restarts on.
async fn livez() -> Response {
    "ok".into_response()
}

/// The router: `/metrics`, `/healthz`, `/readyz`, `/livez`.
pub fn router(state: MetricsState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/livez", get(livez))
        .with_state(state)
}

/// The limits of a listener that serves scrapes and probes: a request's headers within 10 s
/// (keep-alive idle included), a connection that moves nothing for 60 s closed, at most 512
/// connections (far below the process' file limit, so the controller's own connections to the
/// API server never starve).
pub fn scrape_serve_options() -> tidemark_tls::ServeOptions {
    tidemark_tls::ServeOptions {
        header_read_timeout: Some(Duration::from_secs(10)),
        idle_timeout: Some(Duration::from_secs(60)),
        max_connections: 512,
        ..tidemark_tls::ServeOptions::default()
    }
}

/// Binds `addr` and serves the endpoint over plain HTTP on the current tokio runtime, with
/// [`scrape_serve_options`]; returns the bound address.
pub async fn serve(addr: SocketAddr, state: MetricsState) -> std::io::Result<SocketAddr> {
    serve_with(addr, state, scrape_serve_options()).await
}

/// [`serve`] with other limits.
pub async fn serve_with(
    addr: SocketAddr,
    state: MetricsState,
    options: tidemark_tls::ServeOptions,
) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    // Serves until the runtime stops: the sender is kept by the task itself.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let _stop = stop;
        tidemark_tls::serve(listener, router(state), None, options, stopped).await;
    });
    Ok(bound)
}
