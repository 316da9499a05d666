//! Who is calling: a verified client certificate first, then a bearer token, as
//! kube-apiserver's union authenticator orders them.

use http::request::Parts;
use tidemark_tls::{PeerCertificates, client_identity};

use super::Door;
use crate::rbac::UserInfo;

/// Why a request is not authenticated (the 401 body says only "Unauthorized", as upstream).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Unauthenticated {
    /// No certificate and no `Authorization: Bearer`.
    #[error("no credentials")]
    NoCredentials,
    /// A bearer token the server does not accept (unknown, expired, or its account gone).
    #[error("invalid bearer token")]
    InvalidToken,
    /// A certificate without a usable subject.
    #[error("client certificate: {0}")]
    Certificate(String),
}

pub(crate) fn authenticate(door: &Door, parts: &Parts) -> Result<UserInfo, Unauthenticated> {
    if let Some(PeerCertificates(chain)) = parts.extensions.get::<PeerCertificates>()
        && let Some(leaf) = chain.first()
    {
        let id = client_identity(leaf).map_err(|e| Unauthenticated::Certificate(e.to_string()))?;
        let groups: Vec<&str> = id.groups.iter().map(String::as_str).collect();
        return Ok(UserInfo::user(&id.user, &groups));
    }
    let bearer = parts
        .headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim);
    match bearer {
        Some(token) if !token.is_empty() => door
            .user_of_token(token)
            .ok_or(Unauthenticated::InvalidToken),
        _ => Err(Unauthenticated::NoCredentials),
    }
}
