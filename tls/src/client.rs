//! A one-request HTTPS client for the manager's own secure port: what the tests and the
//! stress runner use to scrape `/metrics` as Prometheus would, verifying the server against
//! the roots given (never skipping verification).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt as _;
use hyper_util::rt::TokioIo;
use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, ServerName};

use crate::TlsError;

/// The answer of [`https_get`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpsResponse {
    /// The status code.
    pub status: u16,
    /// The body, as text (lossy).
    pub body: String,
}

/// What an HTTPS GET needs besides the address.
#[derive(Debug, Clone)]
pub struct HttpsGet<'a> {
    /// The name the server's certificate must carry (`localhost`, `127.0.0.1`, ...).
    pub server_name: &'a str,
    /// The path and query.
    pub path: &'a str,
    /// `Authorization: Bearer` value, if any.
    pub bearer: Option<&'a str>,
    /// The trust roots.
    pub roots: &'a [CertificateDer<'static>],
    /// Everything (connect, handshake, response) within this.
    pub timeout: Duration,
}

/// One `GET` over HTTPS (HTTP/1.1), within `request.timeout`.
pub async fn https_get(
    addr: SocketAddr,
    request: &HttpsGet<'_>,
) -> Result<HttpsResponse, TlsError> {
    tokio::time::timeout(request.timeout, get(addr, request))
        .await
        .map_err(|_| {
            TlsError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "HTTPS GET timed out",
            ))
        })?
}

async fn get(addr: SocketAddr, request: &HttpsGet<'_>) -> Result<HttpsResponse, TlsError> {
    let mut roots = RootCertStore::empty();
    for r in request.roots {
        roots.add(r.clone())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(request.server_name.to_string())
        .map_err(|e| TlsError::Parse(format!("server name {:?}: {e}", request.server_name)))?;
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(TlsError::Io)?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(TlsError::Io)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| TlsError::Http(e.to_string()))?;
    tokio::spawn(connection);
    let mut builder =
        http::Request::get(request.path).header(http::header::HOST, request.server_name);
    if let Some(token) = request.bearer {
        builder = builder.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let req = builder
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .map_err(|e| TlsError::Http(e.to_string()))?;
    let response = sender
        .send_request(req)
        .await
        .map_err(|e| TlsError::Http(e.to_string()))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| TlsError::Http(e.to_string()))?
        .to_bytes();
    Ok(HttpsResponse {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        CertificateAuthority, ServeOptions, ServerIdentity, certificates_from_pem, serve,
        server_config,
    };

    async fn served(ca: &CertificateAuthority) -> (SocketAddr, tokio::sync::watch::Sender<bool>) {
        let issued = ca
            .issue_server(&["localhost".into()])
            .expect("serving cert");
        let tls = server_config(
            ServerIdentity::from_issued(&issued).expect("identity"),
            None,
        )
        .expect("config");
        let router = axum::Router::new().route("/hello", axum::routing::get(|| async { "hi" }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        tokio::spawn(serve(
            listener,
            router,
            Some(tls),
            ServeOptions::default(),
            stopped,
        ));
        (addr, stop)
    }

    #[tokio::test]
    async fn a_router_served_over_tls_answers_a_client_that_trusts_its_ca() {
        let ca = CertificateAuthority::generate("ca").expect("ca");
        let (addr, stop) = served(&ca).await;
        let roots = certificates_from_pem(ca.cert_pem()).expect("roots");
        let get = HttpsGet {
            server_name: "localhost",
            path: "/hello",
            bearer: None,
            roots: &roots,
            timeout: Duration::from_secs(5),
        };
        let response = https_get(addr, &get).await.expect("answered");
        assert_eq!(
            response,
            HttpsResponse {
                status: 200,
                body: "hi".into()
            }
        );
        stop.send_replace(true);
    }

    #[tokio::test]
    async fn a_client_that_does_not_trust_the_ca_is_refused_at_the_handshake() {
        let ca = CertificateAuthority::generate("ca").expect("ca");
        let (addr, stop) = served(&ca).await;
        let stranger = CertificateAuthority::generate("other").expect("ca");
        let roots = certificates_from_pem(stranger.cert_pem()).expect("roots");
        let get = HttpsGet {
            server_name: "localhost",
            path: "/hello",
            bearer: None,
            roots: &roots,
            timeout: Duration::from_secs(5),
        };
        assert!(matches!(https_get(addr, &get).await, Err(TlsError::Io(_))));
        stop.send_replace(true);
    }
}
