//! The process-wide table of registered resources, behind the built-in ones.
//!
//! A resource is a fact of the process, as a kube `Scheme` is: every shard, informer and writer
//! must agree on its handle, and it never goes away. So the table only grows, entries are leaked
//! once at registration (bounded by the number of distinct kinds), and reading one after it is
//! registered takes a shared lock and no allocation.

use super::{BUILT_IN, ResourceType};
use serde_json::Value;
use std::any::{Any, TypeId};
use std::sync::{Arc, RwLock};

/// How a registered resource's objects are projected into the cache: a serde type, decoded
/// from each object's JSON.
#[derive(Copy, Clone, Debug)]
pub struct Projection {
    type_id: TypeId,
    type_name: &'static str,
    decode: fn(&Value) -> Result<Arc<dyn Any + Send + Sync>, ProjectionError>,
}

/// A field of an object that does not fit the projection type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct ProjectionError {
    /// Where in the object (`spec.size`; `.` for the object itself).
    pub path: String,
    /// What serde found there.
    pub problem: String,
}

impl Projection {
    /// The projection into `T`.
    pub fn of<T>() -> Self
    where
        T: serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        fn decode<T>(value: &Value) -> Result<Arc<dyn Any + Send + Sync>, ProjectionError>
        where
            T: serde::de::DeserializeOwned + Send + Sync + 'static,
        {
            match serde_path_to_error::deserialize::<_, T>(value) {
                Ok(t) => Ok(Arc::new(t)),
                Err(e) => Err(ProjectionError {
                    path: e.path().to_string(),
                    problem: e.into_inner().to_string(),
                }),
            }
        }
        Self {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
            decode: decode::<T>,
        }
    }

    /// Projects one object.
    pub fn decode(&self, value: &Value) -> Result<Arc<dyn Any + Send + Sync>, ProjectionError> {
        (self.decode)(value)
    }

    /// The Rust type objects are projected into, for error messages.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

/// Why a resource could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegisterError {
    /// The group and plural name a built-in resource, which has its own projection.
    #[error("{plural} in group {group:?} is built in")]
    BuiltIn {
        /// The group asked for.
        group: &'static str,
        /// The plural asked for.
        plural: &'static str,
    },
    /// The resource is registered already with another description or projection type.
    #[error("{plural} in group {group:?} is registered already as {existing}")]
    Conflict {
        /// The group asked for.
        group: &'static str,
        /// The plural asked for.
        plural: &'static str,
        /// What it is registered as.
        existing: String,
    },
    /// A name the API server needs is empty.
    #[error("a resource needs a {0}")]
    Missing(&'static str),
    /// More resources than a handle can index.
    #[error("no more than {} resources can be registered", u16::MAX)]
    Full,
}

/// One registered resource.
#[derive(Debug)]
pub(super) struct Entry {
    pub ty: ResourceType,
    pub api_version: &'static str,
    pub projection: Projection,
    /// Cached whole by every shard (see [`super::Resource::broadcast`]).
    pub broadcast: bool,
}

static REGISTERED: RwLock<Vec<&'static Entry>> = RwLock::new(Vec::new());

fn registered() -> std::sync::RwLockReadGuard<'static, Vec<&'static Entry>> {
    REGISTERED
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How many resources exist, built-in ones included.
pub(super) fn count() -> usize {
    BUILT_IN.len() + registered().len()
}

/// The registered resource at `index` (past the built-ins). Handles are only made by
/// [`register`] and [`find`], so one always names an entry.
pub(super) fn entry(index: usize) -> &'static Entry {
    registered()[index - BUILT_IN.len()]
}

/// The index of the resource served as `group`/`plural`, built-in or registered.
pub(super) fn find(group: &str, plural: &str) -> Option<usize> {
    BUILT_IN
        .iter()
        .position(|ty| ty.is(group, plural))
        .or_else(|| {
            registered()
                .iter()
                .position(|e| e.ty.is(group, plural))
                .map(|i| i + BUILT_IN.len())
        })
}

/// Registers `ty` projected by `projection`, cached whole by every shard if `broadcast`; the
/// same registration again returns the same index.
pub(super) fn register(
    ty: ResourceType,
    projection: Projection,
    broadcast: bool,
) -> Result<usize, RegisterError> {
    for (needed, value) in [
        ("kind", ty.kind),
        ("plural", ty.plural),
        ("version", ty.version),
    ] {
        if value.is_empty() {
            return Err(RegisterError::Missing(needed));
        }
    }
    if BUILT_IN.iter().any(|b| b.is(ty.group, ty.plural)) {
        return Err(RegisterError::BuiltIn {
            group: ty.group,
            plural: ty.plural,
        });
    }
    let mut table = REGISTERED
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(i) = table.iter().position(|e| e.ty.is(ty.group, ty.plural)) {
        let existing = table[i];
        if existing.ty == ty
            && existing.broadcast == broadcast
            && existing.projection.type_id == projection.type_id
        {
            return Ok(i + BUILT_IN.len());
        }
        return Err(RegisterError::Conflict {
            group: ty.group,
            plural: ty.plural,
            existing: format!(
                "{:?} projected into {}{}",
                existing.ty,
                existing.projection.type_name,
                if existing.broadcast {
                    ", broadcast"
                } else {
                    ""
                }
            ),
        });
    }
    if BUILT_IN.len() + table.len() >= usize::from(u16::MAX) {
        return Err(RegisterError::Full);
    }
    let api_version: &'static str = Box::leak(ty.api_version().into_boxed_str());
    table.push(Box::leak(Box::new(Entry {
        ty,
        api_version,
        projection,
        broadcast,
    })));
    Ok(BUILT_IN.len() + table.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::super::Resource;
    use super::*;

    #[derive(serde::Deserialize)]
    struct Gadget {
        #[allow(dead_code)]
        size: u32,
    }

    const GADGETS: ResourceType =
        ResourceType::namespaced("registry.test", "v1", "Gadget", "gadgets");

    #[test]
    fn registering_twice_gives_the_same_handle_and_another_type_is_a_conflict() {
        let first = Resource::register::<Gadget>(GADGETS).expect("registered");
        let again = Resource::register::<Gadget>(GADGETS).expect("the same");
        assert_eq!(first, again);
        assert_eq!(Resource::find("registry.test", "gadgets"), Some(first));
        assert!(matches!(
            Resource::register::<Value>(GADGETS),
            Err(RegisterError::Conflict { .. })
        ));
        assert!(Resource::all().any(|r| r == first));
    }

    #[test]
    fn a_broadcast_resource_is_cached_whole_and_cannot_be_registered_the_other_way() {
        let zones = ResourceType::cluster_scoped("registry.test", "v1", "Zone", "zones");
        let handle = Resource::register_broadcast::<Value>(zones).expect("registered");
        assert!(handle.broadcast() && !handle.namespaced());
        assert!(matches!(
            Resource::register::<Value>(zones),
            Err(RegisterError::Conflict { .. })
        ));
        let gadgets = Resource::register::<Gadget>(GADGETS).expect("registered");
        assert!(!gadgets.broadcast());
    }

    #[test]
    fn a_built_in_or_nameless_resource_cannot_be_registered() {
        let pods = ResourceType::namespaced("", "v1", "Pod", "pods");
        assert_eq!(
            Resource::register::<Value>(pods),
            Err(RegisterError::BuiltIn {
                group: "",
                plural: "pods"
            })
        );
        let nameless = ResourceType::namespaced("registry.test", "v1", "Thing", "");
        assert_eq!(
            Resource::register::<Value>(nameless),
            Err(RegisterError::Missing("plural"))
        );
    }

    #[test]
    fn a_projection_decodes_its_type_and_reports_the_field_it_could_not() {
        let p = Projection::of::<Gadget>();
        assert!(p.decode(&serde_json::json!({"size": 3})).is_ok());
        let error = p
            .decode(&serde_json::json!({"size": "three"}))
            .expect_err("a string is not a u32");
        assert_eq!(error.path, "size");
        assert!(error.problem.contains("invalid type"), "{error}");
    }
}
