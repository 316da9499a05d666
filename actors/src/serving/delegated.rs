//! Delegated authentication and authorization: TokenReview and SubjectAccessReview against
//! the API server, with upstream's cache (10 s for a token's verdict, 10 s for an allowed
//! and for a denied decision), bounded so that a flood of distinct tokens cannot grow it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use parking_lot::Mutex;

/// Who a caller is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    /// User name.
    pub user: String,
    /// UID, if the authenticator gave one.
    pub uid: String,
    /// Groups.
    pub groups: Vec<String>,
}

/// What the API server said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Authenticated (or allowed).
    Yes(Caller),
    /// Not authenticated (or not allowed), with the reason given.
    No(String),
}

/// A review could not be asked (the API server is unreachable, or refuses the review).
#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    /// The request failed (described without the response's body).
    #[error("{what} failed: {}", crate::errors::describe(.source))]
    Review {
        /// TokenReview or SubjectAccessReview.
        what: &'static str,
        /// The cause.
        source: kube::Error,
    },
}

/// How long verdicts are kept (`--authentication-token-webhook-cache-ttl`,
/// `--authorization-webhook-cache-{authorized,unauthorized}-ttl`).
pub const CACHE_TTL: Duration = Duration::from_secs(10);
/// Entries kept at most per cache; past it, expired entries go, then all.
const CACHE_CAPACITY: usize = 4096;

struct Cache<K, V> {
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: std::hash::Hash + Eq, V: Clone> Cache<K, V> {
    fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock();
        entries
            .get(key)
            .filter(|(_, at)| at.elapsed() < CACHE_TTL)
            .map(|(v, _)| v.clone())
    }

    fn put(&self, key: K, value: V) {
        let mut entries = self.entries.lock();
        if entries.len() >= CACHE_CAPACITY {
            entries.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
            if entries.len() >= CACHE_CAPACITY {
                entries.clear();
            }
        }
        entries.insert(key, (value, Instant::now()));
    }
}

/// TokenReview and SubjectAccessReview through a kube client, cached.
pub struct DelegatedAuth {
    client: kube::Client,
    tokens: Cache<String, Verdict>,
    access: Cache<(Caller, String, String), Verdict>,
}

impl std::fmt::Debug for DelegatedAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegatedAuth").finish_non_exhaustive()
    }
}

impl DelegatedAuth {
    /// Reviews through `client` (`--authentication-kubeconfig`'s identity).
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            tokens: Cache::new(),
            access: Cache::new(),
        }
    }

    /// Who `token` belongs to.
    pub async fn authenticate_token(&self, token: &str) -> Result<Verdict, DelegationError> {
        if let Some(v) = self.tokens.get(&token.to_string()) {
            return Ok(v);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..TokenReview::default()
        };
        let answer = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|source| DelegationError::Review {
                what: "TokenReview",
                source,
            })?;
        let status = answer.status.unwrap_or_default();
        let verdict = match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Verdict::Yes(Caller {
                user: user.username.unwrap_or_default(),
                uid: user.uid.unwrap_or_default(),
                groups: user.groups.unwrap_or_default(),
            }),
            _ => Verdict::No(status.error.unwrap_or_default()),
        };
        self.tokens.put(token.to_string(), verdict.clone());
        Ok(verdict)
    }

    /// Whether `caller` may `verb` the non-resource `path`.
    pub async fn authorize_path(
        &self,
        caller: &Caller,
        verb: &str,
        path: &str,
    ) -> Result<Verdict, DelegationError> {
        let key = (caller.clone(), verb.to_string(), path.to_string());
        if let Some(v) = self.access.get(&key) {
            return Ok(v);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(caller.user.clone()),
                uid: (!caller.uid.is_empty()).then(|| caller.uid.clone()),
                groups: Some(caller.groups.clone()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..SubjectAccessReviewSpec::default()
            },
            ..SubjectAccessReview::default()
        };
        let answer = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await
            .map_err(|source| DelegationError::Review {
                what: "SubjectAccessReview",
                source,
            })?;
        let status = answer.status.unwrap_or_default();
        let verdict = if status.allowed {
            Verdict::Yes(caller.clone())
        } else {
            Verdict::No(status.reason.unwrap_or_default())
        };
        self.access.put(key, verdict.clone());
        Ok(verdict)
    }
}
