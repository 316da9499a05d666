//! Scale-out's invariant, `range-single-writer`: every write a manager makes to an object of a
//! namespace happens while that namespace's range Lease names it. The keyspace is the 64-bit
//! FNV-1a hash of the namespace (KEP-5866's, [`fnv1a64`]) cut into [`RANGES`] equal ranges; range
//! `n`'s Lease is `<prefix>-range-NN`. Checked after the run over the recorded writes, in
//! revision order, as the leader-election invariant is; the cut is written here apart from the
//! engine's, so the two are checked against each other rather than trusted.

use crate::oracle::WriteRecord;
use crate::oracle::leadership::{described, identity_of};
use crate::resource::Resource;
use crate::store::shard_selector::fnv1a64;
use serde::Serialize;
use std::collections::HashMap;

/// How many ranges the ring is cut into.
pub const RANGES: u64 = 64;

/// The range of `namespace`: the top bits of its hash.
pub fn range_of(namespace: &str) -> u64 {
    fnv1a64(namespace) / (u64::MAX / RANGES + 1)
}

/// The range a Lease named `<prefix>-range-NN` stands for.
fn range_of_lease(name: &str, prefix: &str) -> Option<u64> {
    let n = name.strip_prefix(prefix)?.strip_prefix("-range-")?;
    n.parse().ok().filter(|n| *n < RANGES)
}

/// A write to an object of a range whose Lease named another holder (or none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RangeSplit {
    /// The revision of the write.
    pub revision: u64,
    /// The range.
    pub range: u64,
    /// Who wrote.
    pub writer: String,
    /// Who the range's Lease named then (`None`: nobody).
    pub holder: Option<String>,
    /// What was written (`verb resource namespace/name`).
    pub object: String,
}

/// Every write by an identified manager to a namespaced object made while its namespace's range
/// Lease (in `lease_namespace`, named after `prefix`) named someone else. Writes to Leases in
/// `lease_namespace` are how managers compete for ranges and are not checked.
pub fn range_splits(
    writes: &[WriteRecord],
    lease_namespace: &str,
    prefix: &str,
) -> Vec<RangeSplit> {
    let mut ordered: Vec<&WriteRecord> = writes.iter().collect();
    ordered.sort_by_key(|w| w.revision);
    let mut holders: HashMap<u64, Option<&str>> = HashMap::new();
    let mut found = Vec::new();
    for w in ordered {
        if w.resource == Resource::Leases && w.namespace == lease_namespace {
            if let Some(range) = range_of_lease(&w.name, prefix) {
                holders.insert(range, w.lease_holder.as_deref());
            }
            continue;
        }
        if w.namespace.is_empty() {
            continue;
        }
        let Some(writer) = w.user_agent.as_deref().and_then(identity_of) else {
            continue;
        };
        let range = range_of(&w.namespace);
        let holder = holders.get(&range).copied().flatten();
        if holder != Some(writer) {
            found.push(RangeSplit {
                revision: w.revision,
                range,
                writer: writer.to_string(),
                holder: holder.map(str::to_string),
                object: described(w),
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::Verb;

    fn write(
        revision: u64,
        resource: Resource,
        namespace: &str,
        name: &str,
        ua: &str,
    ) -> WriteRecord {
        WriteRecord {
            revision,
            verb: Verb::Update,
            resource,
            namespace: namespace.into(),
            name: name.into(),
            uid: String::new(),
            user_agent: Some(ua.into()),
            lease_holder: None,
            node_marked: false,
            node_evicting_zone: None,
            at_micros: revision * 1000,
        }
    }

    fn lease(revision: u64, range: u64, holder: Option<&str>) -> WriteRecord {
        WriteRecord {
            lease_holder: holder.map(str::to_string),
            ..write(
                revision,
                Resource::Leases,
                "kube-system",
                &format!("tidemark-range-{range:02}"),
                "tidemark/0.1.0 (a.1)",
            )
        }
    }

    #[test]
    fn ranges_cut_the_ring_evenly_and_the_top_range_is_the_last() {
        assert_eq!(fnv1a64("") / (u64::MAX / RANGES + 1), range_of(""));
        assert!(range_of("default") < RANGES);
        assert_eq!(u64::MAX / (u64::MAX / RANGES + 1), RANGES - 1);
        assert_eq!(range_of_lease("tidemark-range-07", "tidemark"), Some(7));
        assert_eq!(range_of_lease("tidemark-range-64", "tidemark"), None);
        assert_eq!(range_of_lease("tidemark", "tidemark"), None);
    }

    #[test]
    fn a_write_by_the_holder_passes_and_one_after_the_range_moved_is_caught() {
        let ns = "team-a";
        let r = range_of(ns);
        let writes = vec![
            lease(1, r, Some("a.1")),
            write(2, Resource::Pods, ns, "p1", "tidemark/0.1.0 (a.1)"),
            lease(3, r, Some("b.1")),
            write(4, Resource::Pods, ns, "p2", "tidemark/0.1.0 (b.1)"),
            write(5, Resource::Pods, ns, "p3", "tidemark/0.1.0 (a.1)"),
        ];
        let found = range_splits(&writes, "kube-system", "tidemark");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].revision, 5);
        assert_eq!(found[0].holder.as_deref(), Some("b.1"));
    }

    #[test]
    fn a_write_to_a_range_nobody_holds_is_caught_and_cluster_scoped_writes_are_not_judged() {
        let writes = vec![
            write(1, Resource::Pods, "team-b", "p1", "tidemark/0.1.0 (a.1)"),
            write(2, Resource::Nodes, "", "node-0", "tidemark/0.1.0 (a.1)"),
            write(3, Resource::Pods, "team-b", "p2", "kubectl/v1.36"),
        ];
        let found = range_splits(&writes, "kube-system", "tidemark");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].holder, None);
    }
}
