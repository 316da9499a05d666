//! Pod writes that reached the server and have not committed yet, as the oracle sees them: what a
//! controller's decision is judged against besides the state at its arrival (two creates sent
//! for one missing Pod both count, however long each waits before it commits), and the verdict
//! reached at that arrival, applied when the write commits.

use std::collections::HashMap;

use serde_json::Value;

use crate::meta::{controller_uid, meta_str};
use crate::oracle::Violation;
use crate::store::{RequestId, Verb};

/// What a controller decided to do to a Pod, judged against one state of the store.
#[derive(Debug, Clone, Copy)]
pub enum Decision<'a> {
    /// Create this Pod (the request's body, or the committed Pod).
    Create(&'a Value),
    /// Delete this Pod, live at that state.
    Delete(&'a Value),
}

impl<'a> Decision<'a> {
    /// The Pod.
    pub fn pod(&self) -> &'a Value {
        match self {
            Decision::Create(p) | Decision::Delete(p) => p,
        }
    }
}

/// An arrived, uncommitted Pod write.
#[derive(Debug, Clone)]
struct Pending {
    verb: Verb,
    namespace: String,
    /// The Pod deleted (creates may get their name from `generateName` only at commit).
    name: Option<String>,
    /// The controlling owner's uid.
    owner: Option<String>,
    /// What the write breaks, judged at its arrival; applied if it commits.
    verdicts: Vec<Violation>,
}

/// The Pod writes in flight.
#[derive(Debug, Default)]
pub struct InFlight {
    next: u64,
    pending: HashMap<RequestId, Pending>,
}

impl InFlight {
    /// Creates of Pods controlled by `owner` in flight, minus deletes of them: what the owner
    /// will have beyond its live Pods once they commit.
    pub fn net_creates(&self, owner: &str) -> i64 {
        self.pending
            .values()
            .filter(|p| p.owner.as_deref() == Some(owner))
            .map(|p| match p.verb {
                Verb::Create => 1,
                Verb::Delete => -1,
                Verb::Update | Verb::UpdateStatus => 0,
            })
            .sum()
    }

    /// Creates of Pods controlled by `owner` in flight.
    pub fn creates(&self, owner: &str) -> i64 {
        self.pending
            .values()
            .filter(|p| p.verb == Verb::Create && p.owner.as_deref() == Some(owner))
            .count() as i64
    }

    /// Records the arrival of `decision` in `namespace` and its verdicts; returns its number.
    pub fn arrive(
        &mut self,
        namespace: &str,
        decision: Decision<'_>,
        verdicts: Vec<Violation>,
    ) -> RequestId {
        self.next += 1;
        let id = RequestId(self.next);
        let pod = decision.pod();
        let (verb, name) = match decision {
            Decision::Create(_) => (Verb::Create, None),
            Decision::Delete(p) => (Verb::Delete, Some(meta_str(p, "name").to_string())),
        };
        self.pending.insert(
            id,
            Pending {
                verb,
                namespace: namespace.to_string(),
                name,
                owner: controller_uid(pod).map(str::to_string),
                verdicts,
            },
        );
        id
    }

    /// The write `id` commits as `verb` of the Pod `namespace/name`: its verdicts, if this
    /// commit is the one it arrived as (a delete of another Pod in the same request is not).
    pub fn commit(
        &mut self,
        id: RequestId,
        verb: Verb,
        namespace: &str,
        name: &str,
    ) -> Option<Vec<Violation>> {
        let p = self.pending.get(&id)?;
        let same = p.verb == verb
            && p.namespace == namespace
            && p.name.as_deref().is_none_or(|n| n == name);
        if !same {
            return None;
        }
        self.pending.remove(&id).map(|p| p.verdicts)
    }

    /// The request `id` ended; if it never committed, it is no longer in flight.
    pub fn depart(&mut self, id: RequestId) {
        self.pending.remove(&id);
    }

    /// How many writes are in flight.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, owner: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns",
            "ownerReferences": [{"uid": owner, "controller": true}]}})
    }

    #[test]
    fn creates_and_deletes_in_flight_are_counted_per_owner_until_they_commit_or_end() {
        let mut f = InFlight::default();
        let a = f.arrive("ns", Decision::Create(&pod("", "rs-1")), vec![]);
        let b = f.arrive("ns", Decision::Create(&pod("", "rs-1")), vec![]);
        f.arrive("ns", Decision::Delete(&pod("x", "rs-1")), vec![]);
        f.arrive("ns", Decision::Create(&pod("", "rs-2")), vec![]);
        assert_eq!(f.net_creates("rs-1"), 1);
        assert_eq!(f.creates("rs-1"), 2);
        assert!(f.commit(a, Verb::Create, "ns", "web-abcde").is_some());
        f.depart(b);
        assert_eq!(f.creates("rs-1"), 0);
        assert_eq!(f.net_creates("rs-1"), -1);
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn a_delete_is_matched_only_by_the_commit_of_its_own_pod() {
        let mut f = InFlight::default();
        let d = f.arrive("ns", Decision::Delete(&pod("x", "rs-1")), vec![]);
        assert!(f.commit(d, Verb::Delete, "ns", "y").is_none());
        assert!(f.commit(d, Verb::Create, "ns", "x").is_none());
        assert!(f.commit(d, Verb::Delete, "ns", "x").is_some());
        assert!(f.is_empty());
    }
}
