//! Who is asking: the user an authenticator hands to the authorizer.

use serde::Serialize;

/// The group every authenticated user is in.
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The group of requests that carried no credentials.
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The group the apiserver allows everything, before RBAC is asked.
pub const PRIVILEGED_GROUP: &str = "system:masters";
/// The group of every ServiceAccount.
pub const ALL_SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

/// An authenticated (or anonymous) user, as `k8s.io/apiserver`'s `user.Info` without extras.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    /// The username RBAC `User` subjects name.
    pub name: String,
    /// Unique across time; not used by RBAC.
    pub uid: String,
    /// RBAC `Group` subjects match these.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// The user a ServiceAccount token authenticates as: `system:serviceaccount:NS:NAME` in the
    /// groups `system:serviceaccounts`, `system:serviceaccounts:NS` and `system:authenticated`.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            name: service_account_username(namespace, name),
            uid: uid.to_string(),
            groups: vec![
                ALL_SERVICE_ACCOUNTS.to_string(),
                format!("{ALL_SERVICE_ACCOUNTS}:{namespace}"),
                ALL_AUTHENTICATED.to_string(),
            ],
        }
    }

    /// A user with `groups`, plus `system:authenticated` when they lack it (as every
    /// authenticator's result is completed upstream). The uid is empty.
    pub fn user(name: &str, groups: &[&str]) -> Self {
        let mut groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
        if !groups.iter().any(|g| g == ALL_AUTHENTICATED) {
            groups.push(ALL_AUTHENTICATED.to_string());
        }
        Self {
            name: name.to_string(),
            uid: String::new(),
            groups,
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The username of ServiceAccount `name` in `namespace`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_account_is_named_and_grouped_as_its_token_authenticates() {
        let sa = UserInfo::service_account("kube-system", "tidemark", "u-1");
        assert_eq!(sa.name, "system:serviceaccount:kube-system:tidemark");
        assert_eq!(sa.uid, "u-1");
        assert_eq!(
            sa.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                "system:authenticated"
            ]
        );
    }

    #[test]
    fn a_user_is_authenticated_once() {
        let alice = UserInfo::user("alice", &["dev"]);
        assert_eq!(alice.groups, ["dev", "system:authenticated"]);
        let bob = UserInfo::user("bob", &["system:authenticated", "ops"]);
        assert_eq!(bob.groups, ["system:authenticated", "ops"]);
        assert!(bob.in_group("ops"));
    }
}
