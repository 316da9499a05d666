//! The Kubernetes resources the workspace speaks of, described once: the engine caches and
//! writes them, the simulated API server serves them, and both take their names from here.
//!
//! Only names and scope live here, no behaviour: the simulated server judges the engine, so
//! the two share what the Kubernetes API fixes (how a kind is spelled on the wire) and nothing
//! either of them decides.
//!
//! ```
//! use tidemark_kinds::{ResourceType, builtin};
//!
//! assert_eq!(builtin::REPLICA_SETS.api_version(), "apps/v1");
//! assert_eq!(builtin::find("", "pods"), Some(builtin::PODS));
//!
//! const WIDGETS: ResourceType = ResourceType::namespaced("example.com", "v1", "Widget", "widgets");
//! assert_eq!(WIDGETS.api_version(), "example.com/v1");
//! ```

pub mod builtin;

/// A resource as the API names it: group, version, kind, the plural in its URLs, and whether
/// its objects live in a namespace.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourceType {
    /// The API group ("" for core).
    pub group: &'static str,
    /// The served version (`v1`).
    pub version: &'static str,
    /// The object kind (`Pod`).
    pub kind: &'static str,
    /// The plural name in URLs and metrics labels (`pods`).
    pub plural: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
}

impl ResourceType {
    /// A namespaced resource.
    pub const fn namespaced(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        plural: &'static str,
    ) -> Self {
        Self {
            group,
            version,
            kind,
            plural,
            namespaced: true,
        }
    }

    /// A cluster-scoped resource.
    pub const fn cluster_scoped(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        plural: &'static str,
    ) -> Self {
        Self {
            namespaced: false,
            ..Self::namespaced(group, version, kind, plural)
        }
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether this is the resource served as `group` and `plural`.
    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.group == group && self.plural == plural
    }
}
