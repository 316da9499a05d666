//! An operator written only on Tidemark's public API: a `PodSet` custom resource keeps
//! `spec.replicas` Pods made from `spec.template`. The controller is a plain reconcile that
//! reads the cache and returns a plan of writes; the engine tracks every write, parks the key
//! while its Pods are not yet in the cache, and asks for proof before a delete.
//!
//! ```
//! let registration = tidemark_example_podset::registration().expect("PodSets register");
//! assert_eq!(registration.name(), "podset");
//! let builder = tidemark_actors::Manager::builder().controller(registration);
//! assert_eq!(builder.config().controllers, ["podset"]);
//! ```

pub mod controller;
pub mod invariant;

pub use controller::PodSetController;
pub use invariant::{Breach, NoExcessPods};

use serde::Deserialize;
use tidemark_actors::Registration;
use tidemark_engine::{RegisterError, Resource, ResourceType};

/// The API group.
pub const GROUP: &str = "examples.tidemark.dev";
/// The kind, as Pods' ownerReferences name it.
pub const KIND: &str = "PodSet";
/// The resource, as `crd.yaml` defines it.
pub const PODSETS: ResourceType = ResourceType::namespaced(GROUP, "v1", KIND, "podsets");
/// The CustomResourceDefinition to apply before running the operator.
pub const CRD_YAML: &str = include_str!("../crd.yaml");

/// What the controller reads of a PodSet (everything else is skipped while decoding; a field
/// of the wrong type leaves the object malformed, and the controller takes no action for it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PodSet {
    /// The desired state.
    pub spec: PodSetSpec,
    /// The last status written.
    #[serde(default)]
    pub status: PodSetStatus,
}

/// `spec`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct PodSetSpec {
    /// How many Pods to keep.
    pub replicas: u32,
    /// The Pod template: `metadata.labels` and `spec`.
    pub template: serde_json::Value,
}

/// `status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSetStatus {
    /// Live Pods.
    pub replicas: u32,
    /// Live Pods that are ready.
    pub ready_replicas: u32,
    /// The generation these counts answer.
    pub observed_generation: i64,
}

/// Registers the PodSet resource with the engine and returns the controller's registration
/// for [`tidemark_actors::Manager::builder`].
pub fn registration() -> Result<Registration, RegisterError> {
    let podsets = Resource::register::<PodSet>(PODSETS)?;
    Ok(Registration::new(move || PodSetController::new(podsets)))
}
