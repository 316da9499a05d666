//! Bearer tokens: static ones (a `--token-auth-file` entry) and ServiceAccount tokens from
//! TokenRequest, each with an expiry, and bound to the ServiceAccount's UID so that deleting
//! the ServiceAccount invalidates them (as bound tokens are).

use std::time::{Duration, Instant};

use ahash::AHashMap;
use parking_lot::RwLock;

use crate::rbac::UserInfo;
use crate::resource::Resource;
use crate::store::Store;

/// Why a token could not be issued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The ServiceAccount does not exist.
    #[error("serviceaccounts \"{0}\" not found")]
    NoServiceAccount(String),
}

#[derive(Debug, Clone)]
struct Entry {
    user: UserInfo,
    expires: Option<Instant>,
    /// (namespace, name, uid) of the ServiceAccount the token is bound to.
    bound: Option<(String, String, String)>,
}

/// The tokens a server accepts.
#[derive(Debug, Default)]
pub struct Tokens {
    by_token: RwLock<AHashMap<String, Entry>>,
}

/// A random bearer token, 64 hex digits.
pub(crate) fn new_token() -> String {
    // Unguessable enough for a test server on loopback; never a credential anywhere else.
    let mut rng = fastrand::Rng::new();
    (0..4).map(|_| format!("{:016x}", rng.u64(..))).collect()
}

impl Tokens {
    /// A token for `user`, valid for `ttl` (forever with `None`).
    pub fn issue(&self, user: UserInfo, ttl: Option<Duration>) -> String {
        let token = new_token();
        self.by_token.write().insert(
            token.clone(),
            Entry {
                user,
                expires: ttl.map(|t| Instant::now() + t),
                bound: None,
            },
        );
        token
    }

    /// A token for ServiceAccount `namespace/name`, bound to its current UID.
    pub fn issue_for_service_account(
        &self,
        store: &Store,
        namespace: &str,
        name: &str,
        ttl: Duration,
    ) -> Result<String, TokenError> {
        let sa = store
            .get(Resource::ServiceAccounts, namespace, name)
            .ok_or_else(|| TokenError::NoServiceAccount(name.to_string()))?;
        let uid = sa.value["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let token = new_token();
        self.by_token.write().insert(
            token.clone(),
            Entry {
                user: UserInfo::service_account(namespace, name, &uid),
                expires: Some(Instant::now() + ttl),
                bound: Some((namespace.to_string(), name.to_string(), uid)),
            },
        );
        Ok(token)
    }

    /// Makes `token` invalid at once.
    pub fn revoke(&self, token: &str) -> bool {
        self.by_token.write().remove(token).is_some()
    }

    /// The user of `token`, if it is known, not expired, and its ServiceAccount still the one
    /// it was issued for.
    pub fn authenticate(&self, token: &str, store: &Store) -> Option<UserInfo> {
        let entry = self.by_token.read().get(token).cloned()?;
        if entry.expires.is_some_and(|e| Instant::now() >= e) {
            return None;
        }
        if let Some((ns, name, uid)) = &entry.bound {
            let sa = store.get(Resource::ServiceAccounts, ns, name)?;
            if sa.value["metadata"]["uid"].as_str() != Some(uid.as_str()) {
                return None;
            }
        }
        Some(entry.user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store_with_service_account() -> Store {
        let store = Store::new(1000, None);
        store
            .create(
                Resource::ServiceAccounts,
                "kube-system",
                json!({"metadata": {"name": "tidemark"}}),
                None,
            )
            .expect("service account");
        store
    }

    #[test]
    fn a_service_account_token_names_the_account_until_it_is_revoked() {
        let store = store_with_service_account();
        let tokens = Tokens::default();
        let t = tokens
            .issue_for_service_account(&store, "kube-system", "tidemark", Duration::from_secs(60))
            .expect("issued");
        let user = tokens.authenticate(&t, &store).expect("valid");
        assert_eq!(user.name, "system:serviceaccount:kube-system:tidemark");
        assert!(tokens.revoke(&t));
        assert!(tokens.authenticate(&t, &store).is_none());
    }

    #[test]
    fn deleting_the_service_account_invalidates_its_tokens() {
        let store = store_with_service_account();
        let tokens = Tokens::default();
        let t = tokens
            .issue_for_service_account(&store, "kube-system", "tidemark", Duration::from_secs(60))
            .expect("issued");
        store
            .delete(
                Resource::ServiceAccounts,
                "kube-system",
                "tidemark",
                &Default::default(),
                None,
            )
            .expect("deleted");
        store
            .create(
                Resource::ServiceAccounts,
                "kube-system",
                json!({"metadata": {"name": "tidemark"}}),
                None,
            )
            .expect("re-created with a new uid");
        assert!(tokens.authenticate(&t, &store).is_none());
    }

    #[test]
    fn an_expired_token_is_refused() {
        let store = Store::new(10, None);
        let tokens = Tokens::default();
        let t = tokens.issue(UserInfo::user("jane", &[]), Some(Duration::ZERO));
        assert!(tokens.authenticate(&t, &store).is_none());
        assert!(tokens.authenticate("unknown", &store).is_none());
    }

    #[test]
    fn a_token_for_a_missing_service_account_is_not_issued() {
        let store = Store::new(10, None);
        let err = Tokens::default()
            .issue_for_service_account(&store, "default", "ghost", Duration::from_secs(1))
            .expect_err("no such account");
        assert_eq!(err, TokenError::NoServiceAccount("ghost".into()));
    }
}
