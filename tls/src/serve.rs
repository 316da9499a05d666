//! One accept loop for every listener: plain or TLS, a bound on open connections, a
//! handshake deadline, optional header-read and idle deadlines, the client's verified
//! certificates handed to the handler, and a graceful stop.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt as _;

use crate::activity::Activity;
use crate::between_requests::Requests;

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
    /// them races the client's next request). When set, the protocol is chosen up front (HTTP/2
    /// only when TLS negotiated `h2`), so the deadline runs from the first byte: a client that
    /// sends a few bytes and stops cannot hold the connection while the protocol is guessed.
    /// On HTTP/2 it closes a connection on which no request has been open for that long (PING
    /// frames or a HEADERS frame sent a byte at a time do not count).
    pub header_read_timeout: Option<Duration>,
    /// A connection that moves no byte either way for this long is closed (default none): a
    /// client that stops reading its response, or an idle HTTP/2 connection.
    pub idle_timeout: Option<Duration>,
    /// How long a stop waits for requests in flight before it cuts them (default 1 s).
    pub shutdown_grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            max_connections: 4096,
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: None,
            idle_timeout: None,
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
    // Refusals are logged at most once a second, with how many there were.
    let mut refused = 0u64;
    let mut refusals_logged: Option<Instant> = None;
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
                    refused += 1;
                    if refusals_logged.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
                        tracing::warn!(%peer, limit = options.max_connections, refused,
                            "connection limit reached; closing new connections");
                        refusals_logged = Some(Instant::now());
                        refused = 0;
                    }
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
        http(tcp, peer, None, Protocol::Http1, router, watcher, options).await;
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
    let session = stream.get_ref().1;
    let certs = session
        .peer_certificates()
        .filter(|c| !c.is_empty())
        .map(|c| PeerCertificates(c.iter().map(|c| c.clone().into_owned()).collect()));
    let protocol = if session.alpn_protocol() == Some(b"h2") {
        Protocol::Http2
    } else {
        Protocol::Http1
    };
    http(stream, peer, certs, protocol, router, watcher, options).await;
}

/// The protocol of a connection, when it is chosen up front.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

async fn http<S>(
    stream: S,
    peer: SocketAddr,
    certs: Option<PeerCertificates>,
    protocol: Protocol,
    router: Router,
    watcher: hyper_util::server::graceful::Watcher,
    options: ServeOptions,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let requests = Arc::new(Requests::new());
    let in_service = requests.clone();
    let service =
        hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            if let Some(c) = &certs {
                req.extensions_mut().insert(c.clone());
            }
            let router = router.clone();
            let requests = in_service.clone();
            async move {
                let _open = requests.begin();
                let response = router.oneshot(req.map(axum::body::Body::new)).await;
                Ok::<_, Infallible>(match response {
                    Ok(r) => r,
                    Err(never) => match never {},
                })
            }
        });
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let served = async {
        let result: Result<(), Box<dyn std::error::Error + Send + Sync>> =
            match (options.header_read_timeout, protocol) {
                (None, _) => {
                    let builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let conn = builder
                        .serve_connection_with_upgrades(io, service)
                        .into_owned();
                    watcher.watch(conn).await
                }
                (Some(t), Protocol::Http1) => {
                    let mut builder = hyper::server::conn::http1::Builder::new();
                    builder.timer(TokioTimer::new()).header_read_timeout(t);
                    watcher
                        .watch(builder.serve_connection(io, service))
                        .await
                        .map_err(Into::into)
                }
                (Some(_), Protocol::Http2) => {
                    let mut builder =
                        hyper::server::conn::http2::Builder::new(TokioExecutor::new());
                    builder.timer(TokioTimer::new());
                    watcher
                        .watch(builder.serve_connection(io, service))
                        .await
                        .map_err(Into::into)
                }
            };
        if let Err(e) = result {
            tracing::debug!(%peer, error = %e, "connection ended with an error");
        }
    };
    let idle = async {
        match options.idle_timeout {
            Some(idle) => activity.idle_for(idle).await,
            None => std::future::pending().await,
        }
    };
    let unused = async {
        match (options.header_read_timeout, protocol) {
            (Some(deadline), Protocol::Http2) => requests.unused_for(deadline).await,
            _ => std::future::pending().await,
        }
    };
    tokio::select! {
        () = served => {}
        () = idle => {
            tracing::debug!(%peer, "connection idle; closing");
        }
        () = unused => {
            tracing::debug!(%peer, "HTTP/2 connection without a request for the header deadline; closing");
        }
    }
}

/// A stream that records its activity.
struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        result
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        result
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        result
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn listener_with(options: ServeOptions) -> (SocketAddr, watch::Sender<bool>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = Router::new().route("/", axum::routing::get(|| async { "ok" }));
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(serve(listener, router, None, options, stopped));
        (addr, stop)
    }

    /// Whether the server has closed `stream` (read gives end of file or an error).
    async fn closed(stream: &mut TcpStream) -> bool {
        let mut byte = [0u8; 64];
        match tokio::time::timeout(Duration::from_millis(50), stream.read(&mut byte)).await {
            Ok(Ok(0) | Err(_)) => true,
            Ok(Ok(_)) | Err(_) => false,
        }
    }

    #[tokio::test]
    async fn half_sent_and_silent_connections_are_closed_by_the_header_deadline() {
        let options = ServeOptions {
            header_read_timeout: Some(Duration::from_millis(300)),
            idle_timeout: Some(Duration::from_secs(5)),
            ..ServeOptions::default()
        };
        let (addr, _stop) = listener_with(options).await;
        let mut silent = TcpStream::connect(addr).await.expect("connect");
        let mut short = TcpStream::connect(addr).await.expect("connect");
        short.write_all(b"GET / HT").await.expect("write");
        let mut half = TcpStream::connect(addr).await.expect("connect");
        half.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .expect("write");
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(closed(&mut silent).await, "nothing sent");
        assert!(
            closed(&mut short).await,
            "fewer bytes than an HTTP/2 preface"
        );
        assert!(closed(&mut half).await, "headers never finished");
    }

    #[tokio::test]
    async fn without_deadlines_a_half_sent_connection_stays_open() {
        let (addr, _stop) = listener_with(ServeOptions::default()).await;
        let mut short = TcpStream::connect(addr).await.expect("connect");
        short.write_all(b"GET / HT").await.expect("write");
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(!closed(&mut short).await);
    }

    #[tokio::test]
    async fn a_connection_that_moves_nothing_is_closed_at_the_idle_deadline() {
        let options = ServeOptions {
            header_read_timeout: Some(Duration::from_secs(5)),
            idle_timeout: Some(Duration::from_millis(300)),
            ..ServeOptions::default()
        };
        let (addr, _stop) = listener_with(options).await;
        let mut quiet = TcpStream::connect(addr).await.expect("connect");
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(closed(&mut quiet).await);
    }

    #[tokio::test]
    async fn an_answered_request_still_works_with_every_deadline_on() {
        let options = ServeOptions {
            header_read_timeout: Some(Duration::from_secs(1)),
            idle_timeout: Some(Duration::from_secs(1)),
            ..ServeOptions::default()
        };
        let (addr, _stop) = listener_with(options).await;
        let mut client = TcpStream::connect(addr).await.expect("connect");
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut response = String::new();
        client.read_to_string(&mut response).await.expect("read");
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.ends_with("ok"), "{response}");
    }

    /// Serves one accepted connection as HTTP/2 (prior knowledge, as after ALPN `h2`).
    async fn h2_listener_with(options: ServeOptions) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let router = Router::new().route("/", axum::routing::get(|| async { "ok" }));
        tokio::spawn(async move {
            let graceful = GracefulShutdown::new();
            while let Ok((tcp, peer)) = listener.accept().await {
                let router = router.clone();
                let watcher = graceful.watcher();
                tokio::spawn(http(
                    tcp,
                    peer,
                    None,
                    Protocol::Http2,
                    router,
                    watcher,
                    options,
                ));
            }
        });
        addr
    }

    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    const EMPTY_SETTINGS: [u8; 9] = [0, 0, 0, 4, 0, 0, 0, 0, 0];
    const PING: [u8; 17] = [0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];

    /// An HTTP/2 client that never asks for anything but pings every 100 ms for `for_ms`.
    async fn pinging_without_a_request(addr: SocketAddr, for_ms: u64) -> TcpStream {
        let mut client = TcpStream::connect(addr).await.expect("connect");
        client.write_all(PREFACE).await.expect("preface");
        client.write_all(&EMPTY_SETTINGS).await.expect("settings");
        for _ in 0..for_ms / 100 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if client.write_all(&PING).await.is_err() {
                break;
            }
        }
        client
    }

    /// Whether the server closed `stream`, reading past whatever frames it sent first.
    async fn closed_after_frames(stream: &mut TcpStream) -> bool {
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }

    #[tokio::test]
    async fn an_http2_connection_that_only_pings_is_closed_at_the_header_deadline() {
        let addr = h2_listener_with(ServeOptions {
            header_read_timeout: Some(Duration::from_millis(300)),
            idle_timeout: Some(Duration::from_secs(5)),
            ..ServeOptions::default()
        })
        .await;
        let mut client = pinging_without_a_request(addr, 1000).await;
        assert!(closed_after_frames(&mut client).await);
    }

    #[tokio::test]
    async fn without_a_header_deadline_an_http2_connection_that_pings_stays_open() {
        let addr = h2_listener_with(ServeOptions {
            idle_timeout: Some(Duration::from_secs(5)),
            ..ServeOptions::default()
        })
        .await;
        let mut client = pinging_without_a_request(addr, 1000).await;
        assert!(!closed_after_frames(&mut client).await);
    }
}
