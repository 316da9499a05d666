//! One accept loop for every listener: plain or TLS, a bound on open connections, a
//! handshake deadline, the client's verified certificates handed to the handler, and a
//! graceful stop.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

/// The verified client certificate chain of a TLS connection, leaf first; a request
/// extension, present only when the client sent a certificate the listener's CA signed.
#[derive(Debug, Clone)]
pub struct PeerCertificates(pub Arc<[CertificateDer<'static>]>);

/// Limits of a listener.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// Open connections at most; one more is closed at once (default 4,096).
    pub max_connections: usize,
    /// How long a TLS handshake may take (default 10 s).
    pub handshake_timeout: Duration,
    /// How long an HTTP/1 request's headers may take to arrive, idle keep-alive included
    /// (default none: API clients keep pooled connections idle, and a server that closes
    /// them races the client's next request).
    pub header_read_timeout: Option<Duration>,
    /// How long a stop waits for requests in flight before it cuts them (default 1 s).
    pub shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: None,
            shutdown_grace: Duration::from_secs(1),
        }
    }
}

/// Serves `router` on `listener` until `stop` turns true (or its sender is dropped); HTTPS
/// with `tls`, plain HTTP without. Requests carry [`ConnectInfo<SocketAddr>`] and, when the
/// client sent a verified certificate, [`PeerCertificates`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    options: ServeOptions,
    mut stop: watch::Receiver<bool>,
) {
    let acceptor = tls.map(TlsAcceptor::from);
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let stopped = async move {
        let _ = stop.wait_for(|stopped| *stopped).await;
    };
    tokio::pin!(stopped);
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning on the error.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let Ok(slot) = slots.clone().try_acquire_owned() else {
                    tracing::warn!(%peer, limit = options.max_connections, "connection limit reached; closing");
                    continue;
                };
                let _ = tcp.set_nodelay(true);
                let router = router.clone();
                let acceptor = acceptor.clone();
                let watcher = graceful.watcher();
                connections.spawn(async move {
                    let _slot = slot;
                    connection(tcp, peer, acceptor, router, watcher, options).await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    if tokio::time::timeout(options.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!("requests still open at the end of the grace period; cutting them");
    }
    connections.shutdown().await;
}

async fn connection(
    tcp: TcpStream,
    peer: SocketAddr,
    acceptor: Option<TlsAcceptor>,
    router: Router,
    watcher: hyper_util::server::graceful::Watcher,
    options: ServeOptions,
) {
    let Some(acceptor) = acceptor else {
        http(tcp, peer, None, router, watcher, options).await;
        return;
    };
    let stream = match tokio::time::timeout(options.handshake_timeout, acceptor.accept(tcp)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let certs = stream
        .get_ref()
        .1
        .peer_certificates()
        .filter(|c| !c.is_empty())
        .map(|c| PeerCertificates(c.iter().map(|c| c.clone().into_owned()).collect()));
    http(stream, peer, certs, router, watcher, options).await;
}

async fn http<S>(
    stream: S,
    peer: SocketAddr,
    certs: Option<PeerCertificates>,
    router: Router,
    watcher: hyper_util::server::graceful::Watcher,
    options: ServeOptions,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service =
        hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            if let Some(c) = &certs {
                req.extensions_mut().insert(c.clone());
            }
            let router = router.clone();
            async move {
                let response = router.oneshot(req.map(axum::body::Body::new)).await;
                Ok::<_, Infallible>(match response {
                    Ok(r) => r,
                    Err(never) => match never {},
                })
            }
        });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    if let Some(t) = options.header_read_timeout {
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(t);
    }
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(stream), service)
        .into_owned();
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}
