//! The leader-election invariant: every write a manager makes as leader happens while the Lease
//! names it. Checked after the run over the recorded writes, in revision order: the holder at a
//! revision is the one the last Lease write before it named. Identities name process
//! incarnations (`tidemark-0.1`, then `tidemark-0.2` after a restart), so a killed process's write
//! that commits after its successor took the Lease is caught too.

use crate::oracle::WriteRecord;
use crate::resource::Resource;
use serde::Serialize;

/// A write by a manager that the Lease did not name at that revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SplitLeadership {
    /// The revision of the write.
    pub revision: u64,
    /// Who wrote.
    pub writer: String,
    /// Who the Lease named then (`None`: nobody).
    pub holder: Option<String>,
    /// What was written (`verb resource namespace/name`).
    pub object: String,
}

/// A write as the Lease invariants report it: `verb resource namespace/name`.
pub fn described(w: &WriteRecord) -> String {
    format!(
        "{:?} {} {}/{}",
        w.verb,
        w.resource.plural(),
        w.namespace,
        w.name
    )
}

/// The identity a `tidemark/<version> (<identity>)` User-Agent carries.
pub fn identity_of(user_agent: &str) -> Option<&str> {
    let rest = user_agent.strip_prefix("tidemark/")?;
    let open = rest.find('(')?;
    let close = rest[open..].find(')')? + open;
    Some(&rest[open + 1..close]).filter(|id| !id.is_empty())
}

/// Whether two identities are incarnations of one manager (`tidemark-0.1` and `tidemark-0.2`).
pub fn same_manager(a: &str, b: &str) -> bool {
    let manager = |id: &str| {
        id.rsplit_once('.')
            .map_or(id.to_string(), |(m, _)| m.to_string())
    };
    manager(a) == manager(b)
}

/// Every write by an identified manager made while the Lease `namespace/name` named someone else.
/// Writes to the Lease itself are how managers compete for it and are not checked.
pub fn split_leadership(
    writes: &[WriteRecord],
    namespace: &str,
    name: &str,
) -> Vec<SplitLeadership> {
    let mut ordered: Vec<&WriteRecord> = writes.iter().collect();
    ordered.sort_by_key(|w| w.revision);
    let mut holder: Option<&str> = None;
    let mut found = Vec::new();
    for w in ordered {
        if w.resource == Resource::Leases && w.namespace == namespace && w.name == name {
            holder = w.lease_holder.as_deref();
            continue;
        }
        let Some(writer) = w.user_agent.as_deref().and_then(identity_of) else {
            continue;
        };
        if holder != Some(writer) {
            found.push(SplitLeadership {
                revision: w.revision,
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
        name: &str,
        agent: &str,
        holder: Option<&str>,
    ) -> WriteRecord {
        WriteRecord {
            revision,
            verb: Verb::Create,
            resource,
            namespace: if resource == Resource::Leases {
                "kube-system"
            } else {
                "ns"
            }
            .into(),
            name: name.into(),
            uid: format!("uid-{revision}"),
            user_agent: Some(agent.into()),
            lease_holder: holder.map(str::to_string),
            node_marked: false,
            node_evicting_zone: None,
            at_micros: revision * 1000,
        }
    }

    #[test]
    fn the_identity_is_read_from_the_user_agent() {
        assert_eq!(
            identity_of("tidemark/0.1.0 (tidemark-1)"),
            Some("tidemark-1")
        );
        assert_eq!(identity_of("tidemark/0.1.0"), None);
        assert_eq!(identity_of("kubectl/1.36 (tidemark-1)"), None);
    }

    #[test]
    fn writes_of_the_named_holder_pass_and_a_deposed_leader_is_caught() {
        let a = "tidemark/0.1.0 (a)";
        let b = "tidemark/0.1.0 (b)";
        let writes = vec![
            write(10, Resource::Leases, "tidemark", a, Some("a")),
            write(11, Resource::Pods, "p1", a, None),
            write(20, Resource::Leases, "tidemark", b, Some("b")),
            write(21, Resource::Pods, "p2", b, None),
            write(22, Resource::Pods, "p3", a, None),
            write(23, Resource::Leases, "kube-node-lease-x", "loadgen", None),
        ];
        let found = split_leadership(&writes, "kube-system", "tidemark");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].revision, 22);
        assert_eq!(found[0].writer, "a");
        assert_eq!(found[0].holder.as_deref(), Some("b"));
    }

    #[test]
    fn a_killed_incarnation_writing_after_its_restart_took_the_lease_is_caught() {
        let killed = "tidemark/0.1.0 (tidemark-0.1)";
        let restarted = "tidemark/0.1.0 (tidemark-0.2)";
        let writes = vec![
            write(
                10,
                Resource::Leases,
                "tidemark",
                killed,
                Some("tidemark-0.1"),
            ),
            write(11, Resource::Pods, "p1", killed, None),
            write(
                20,
                Resource::Leases,
                "tidemark",
                restarted,
                Some("tidemark-0.2"),
            ),
            write(21, Resource::Pods, "p2", killed, None),
            write(22, Resource::Pods, "p3", restarted, None),
        ];
        let found = split_leadership(&writes, "kube-system", "tidemark");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].revision, found[0].writer.as_str()),
            (21, "tidemark-0.1")
        );
        assert!(same_manager(
            &found[0].writer,
            found[0].holder.as_deref().unwrap_or("")
        ));
        assert!(!same_manager("tidemark-0.1", "tidemark-1.1"));
    }

    #[test]
    fn a_write_before_any_lease_or_after_a_release_is_caught() {
        let a = "tidemark/0.1.0 (a)";
        let writes = vec![
            write(5, Resource::Pods, "early", a, None),
            write(10, Resource::Leases, "tidemark", a, Some("a")),
            write(11, Resource::Leases, "tidemark", a, None),
            write(12, Resource::Pods, "late", a, None),
        ];
        let found = split_leadership(&writes, "kube-system", "tidemark");
        assert_eq!(
            found.iter().map(|f| f.revision).collect::<Vec<_>>(),
            vec![5, 12]
        );
    }
}
