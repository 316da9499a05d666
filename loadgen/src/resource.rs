//! The kinds of object the simulated API server serves, and their names on the wire.

use std::fmt;

/// A kind of object the server stores. The store is generic over this enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// core/v1 `pods`.
    Pods,
    /// apps/v1 `replicasets`.
    ReplicaSets,
}

impl Resource {
    /// Every resource, in a fixed order (the order of [`Resource::index`]).
    pub const ALL: [Resource; 2] = [Resource::Pods, Resource::ReplicaSets];

    /// A dense index, for per-resource arrays.
    pub fn index(self) -> usize {
        match self {
            Resource::Pods => 0,
            Resource::ReplicaSets => 1,
        }
    }

    /// The plural resource name used in URLs, e.g. `pods`.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Pods => "pods",
            Resource::ReplicaSets => "replicasets",
        }
    }

    /// The singular name, e.g. `pod`.
    pub fn singular(self) -> &'static str {
        match self {
            Resource::Pods => "pod",
            Resource::ReplicaSets => "replicaset",
        }
    }

    /// The object kind, e.g. `Pod`.
    pub fn kind(self) -> &'static str {
        match self {
            Resource::Pods => "Pod",
            Resource::ReplicaSets => "ReplicaSet",
        }
    }

    /// The kind of a list of these objects, e.g. `PodList`.
    pub fn list_kind(self) -> &'static str {
        match self {
            Resource::Pods => "PodList",
            Resource::ReplicaSets => "ReplicaSetList",
        }
    }

    /// The API group, empty for the core group.
    pub fn group(self) -> &'static str {
        match self {
            Resource::Pods => "",
            Resource::ReplicaSets => "apps",
        }
    }

    /// The API version within the group, e.g. `v1`.
    pub fn version(self) -> &'static str {
        "v1"
    }

    /// The `apiVersion` field of objects, e.g. `v1` or `apps/v1`.
    pub fn api_version(self) -> &'static str {
        match self {
            Resource::Pods => "v1",
            Resource::ReplicaSets => "apps/v1",
        }
    }

    /// Short names that kubectl accepts, e.g. `po`.
    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Resource::Pods => &["po"],
            Resource::ReplicaSets => &["rs"],
        }
    }

    /// Finds a resource from its group and plural name.
    pub fn from_group_plural(group: &str, plural: &str) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|r| r.group() == group && r.plural() == plural)
    }

    /// Finds a resource from its plural name alone.
    pub fn from_plural(plural: &str) -> Option<Resource> {
        Resource::ALL.into_iter().find(|r| r.plural() == plural)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.plural())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_is_found_by_its_group_and_plural() {
        for r in Resource::ALL {
            assert_eq!(Resource::from_group_plural(r.group(), r.plural()), Some(r));
            assert_eq!(Resource::ALL[r.index()], r);
        }
        assert_eq!(Resource::from_group_plural("", "replicasets"), None);
    }
}
