//! A count of every request each user made, with its full attributes (names included: the
//! audit decides whether a rule needed them) and whether it was allowed.

use super::attributes::Attributes;
use super::user::UserInfo;
use ahash::AHashMap;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// One kind of request one user made, and how often.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RequestLogEntry {
    /// The username.
    pub user: String,
    /// What was asked.
    pub request: Attributes,
    /// Whether the authorizer allowed it.
    pub allowed: bool,
    /// How many times.
    pub count: u64,
}

/// Counts per (allowed, denied).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    allowed: u64,
    denied: u64,
}

/// The log, shared by every request handler. A repeated request costs two lookups under the
/// lock and no allocation.
#[derive(Debug, Default)]
pub struct RequestLog {
    by_user: Mutex<AHashMap<String, AHashMap<Attributes, Counts>>>,
}

impl RequestLog {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one request of `user`.
    pub fn record(&self, user: &UserInfo, attrs: &Attributes, allowed: bool) {
        let mut by_user = self.by_user.lock();
        let requests = match by_user.get_mut(user.name.as_str()) {
            Some(requests) => requests,
            None => by_user.entry(user.name.clone()).or_default(),
        };
        let counts = match requests.get_mut(attrs) {
            Some(counts) => counts,
            None => requests.entry(attrs.clone()).or_default(),
        };
        if allowed {
            counts.allowed += 1;
        } else {
            counts.denied += 1;
        }
    }

    /// Every entry, sorted by user, request, then denied before allowed.
    pub fn entries(&self) -> Vec<RequestLogEntry> {
        let by_user = self.by_user.lock();
        let mut out: Vec<RequestLogEntry> = by_user
            .iter()
            .flat_map(|(user, requests)| entries_of(user, requests))
            .collect();
        drop(by_user);
        out.sort();
        out
    }

    /// The entries of the user named `name`, sorted.
    pub fn for_user(&self, name: &str) -> Vec<RequestLogEntry> {
        let by_user = self.by_user.lock();
        let mut out: Vec<RequestLogEntry> = by_user
            .get(name)
            .map(|requests| entries_of(name, requests).collect())
            .unwrap_or_default();
        drop(by_user);
        out.sort();
        out
    }
}

fn entries_of<'a>(
    user: &'a str,
    requests: &'a AHashMap<Attributes, Counts>,
) -> impl Iterator<Item = RequestLogEntry> + 'a {
    requests.iter().flat_map(move |(request, counts)| {
        [(false, counts.denied), (true, counts.allowed)]
            .into_iter()
            .filter(|&(_, count)| count > 0)
            .map(move |(allowed, count)| RequestLogEntry {
                user: user.to_string(),
                request: request.clone(),
                allowed,
                count,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rbac::attributes::request_attributes;
    use http::Method;

    #[test]
    fn repeated_requests_are_counted_per_user_and_outcome() {
        let log = RequestLog::new();
        let alice = UserInfo::user("alice", &[]);
        let bob = UserInfo::user("bob", &[]);
        let list = request_attributes(&Method::GET, "/api/v1/pods", None);
        let get = request_attributes(&Method::GET, "/api/v1/namespaces/a/pods/p", None);
        log.record(&alice, &list, true);
        log.record(&alice, &list, true);
        log.record(&alice, &list, false);
        log.record(&bob, &get, true);
        let alices = log.for_user("alice");
        assert_eq!(alices.len(), 2);
        assert_eq!((alices[0].allowed, alices[0].count), (false, 1));
        assert_eq!((alices[1].allowed, alices[1].count), (true, 2));
        assert_eq!(log.entries().len(), 3);
        assert_eq!(log.entries()[2].user, "bob");
        assert!(log.for_user("carol").is_empty());
    }

    #[test]
    fn entries_round_trip_through_json() {
        let log = RequestLog::new();
        let user = UserInfo::user("alice", &[]);
        log.record(
            &user,
            &request_attributes(&Method::GET, "/healthz", None),
            true,
        );
        log.record(
            &user,
            &request_attributes(&Method::PUT, "/api/v1/nodes/n1/status", None),
            false,
        );
        let entries = log.entries();
        let json = serde_json::to_string(&entries).expect("entries serialise");
        let back: Vec<RequestLogEntry> = serde_json::from_str(&json).expect("and come back");
        assert_eq!(back, entries);
    }
}
