//! The door of the simulated API server, as strict as kube-apiserver's: HTTPS with a CA made
//! at start, who is calling (a client certificate's CN and O, or a bearer token), RBAC on
//! every request with upstream's 401 and 403 bodies, and the reviews and TokenRequest that
//! delegated authentication and ServiceAccounts need.
//!
//! Anonymous requests are refused (`--anonymous-auth=false`, as hardened clusters run): a
//! request without valid credentials gets 401, whatever its path.

mod authn;
mod credentials;
mod layer;
mod reviews;
mod tokens;

pub use credentials::ServerCredentials;
pub use layer::layer;
pub(crate) use reviews::{review, token_request};
pub(crate) use tokens::new_token;
pub use tokens::{TokenError, Tokens};

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::rbac::{Attributes, Decision, RbacPolicy, RequestLog, UserInfo};
use crate::resource::Resource;
use crate::store::Store;

/// Who may pass, and the record of who did.
pub struct Door {
    store: Arc<Store>,
    /// Bearer tokens the server accepts.
    pub tokens: Tokens,
    /// Every authenticated request: user, attributes, decision.
    pub log: RequestLog,
    /// The RBAC index and the RBAC revision it was built at.
    policy: Mutex<(u64, Arc<RbacPolicy>)>,
}

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Door").finish_non_exhaustive()
    }
}

impl Door {
    /// A door over `store`'s RBAC objects.
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            tokens: Tokens::default(),
            log: RequestLog::default(),
            policy: Mutex::new((
                u64::MAX,
                Arc::new(RbacPolicy::from_objects(&[], &[], &[], &[])),
            )),
        }
    }

    fn rbac_revision(&self) -> u64 {
        Resource::RBAC
            .iter()
            .map(|r| self.store.resource_revision(*r))
            .max()
            .unwrap_or(0)
    }

    /// The RBAC index of the current RBAC objects, rebuilt only after one of them changed.
    pub fn policy(&self) -> Arc<RbacPolicy> {
        let revision = self.rbac_revision();
        let mut cached = self.policy.lock();
        if cached.0 != revision {
            let objects = |r: Resource| -> Vec<Value> {
                self.store
                    .all(r, None)
                    .0
                    .iter()
                    .map(|s| s.value.clone())
                    .collect()
            };
            let policy = RbacPolicy::from_objects(
                &objects(Resource::ClusterRoles),
                &objects(Resource::ClusterRoleBindings),
                &objects(Resource::Roles),
                &objects(Resource::RoleBindings),
            );
            *cached = (revision, Arc::new(policy));
        }
        cached.1.clone()
    }

    /// Whether RBAC lets `user` do `attrs`.
    pub fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        self.policy().authorize(user, attrs)
    }

    /// The user a bearer token stands for, if the token is valid now.
    pub fn user_of_token(&self, token: &str) -> Option<UserInfo> {
        self.tokens.authenticate(token, &self.store)
    }
}
