//! Object identity: namespace/name keys and UIDs, cheap to clone and hash.

use std::fmt;
use std::sync::Arc;

/// The namespace/name of an object. Cluster-scoped objects have an empty namespace.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ObjectKey {
    namespace: Arc<str>,
    name: Arc<str>,
}

impl ObjectKey {
    /// A key from its parts.
    pub fn new(namespace: impl Into<Arc<str>>, name: impl Into<Arc<str>>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
    /// The namespace ("" when cluster-scoped).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
    /// The namespace, shared.
    pub fn namespace_arc(&self) -> &Arc<str> {
        &self.namespace
    }
    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

pub use crate::uid::{Uid, UidText};
