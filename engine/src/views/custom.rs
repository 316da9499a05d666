//! A cached object of a registered resource: the metadata the engine routes and gates on, and
//! the user's projection of the rest, decoded with serde.

use crate::key::{ObjectKey, Uid};
use crate::labels::Labels;
use crate::reconcile_error::ReconcileError;
use crate::resource::Resource;
use crate::rv::ResourceVersion;
use crate::views::checked::{Checker, Field};
use crate::views::malformed::Malformed;
use crate::views::meta::{DecodeError, OwnerRef, controller_ref, parse_json, read_meta};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// An object of a resource registered with [`Resource::register`]. Copies share the projection.
#[derive(Clone)]
pub struct CustomObject {
    /// Its resource.
    pub resource: Resource,
    /// namespace/name.
    pub key: ObjectKey,
    /// metadata.uid.
    pub uid: Uid,
    /// metadata.resourceVersion, when comparable.
    pub resource_version: Option<ResourceVersion>,
    /// metadata.generation (0 if absent).
    pub generation: i64,
    /// metadata.deletionTimestamp is set.
    pub terminating: bool,
    /// metadata.labels.
    pub labels: Labels,
    /// The controlling ownerReference; the object is routed with its owner.
    pub controller: Option<OwnerRef>,
    /// Why no controller may act on it: unusable metadata, or a field that does not fit the
    /// projection type. Such an object is cached all the same, without a projection.
    pub malformed: Option<Arc<Malformed>>,
    projection: Option<Arc<dyn Any + Send + Sync>>,
}

impl CustomObject {
    /// Decodes one object of `resource` from JSON: an error only when it has no identity or
    /// `resource` is not registered.
    pub fn from_json(resource: Resource, bytes: &[u8]) -> Result<Self, DecodeError> {
        let projection = resource.projection().ok_or_else(|| {
            DecodeError::Malformed(format!("{resource} is not a registered resource"))
        })?;
        let value = parse_json(bytes)?;
        let mut c = Checker::default();
        let meta = read_meta(&value, &mut c)?;
        let root = Field::root(&value);
        let controller = controller_ref(&root, &mut c);
        let labels = root.get(&mut c, "metadata.labels").string_map(&mut c);
        let projected = match projection.decode(&value) {
            Ok(p) => Some(p),
            Err(e) => {
                c.record(&e.path, e.problem);
                None
            }
        };
        Ok(Self {
            resource,
            key: meta.key,
            uid: meta.uid,
            resource_version: meta.resource_version,
            generation: meta.generation,
            terminating: meta.terminating,
            labels: Labels::from_map(labels),
            controller,
            malformed: c.finish(),
            projection: projected,
        })
    }

    /// The key of its controlling owner, if that is of `kind` (in the object's namespace).
    pub fn owner_key(&self, kind: &str) -> Option<ObjectKey> {
        self.controller
            .as_ref()
            .filter(|o| &*o.kind == kind)
            .map(|o| ObjectKey::new(self.key.namespace_arc().clone(), o.name.clone()))
    }

    /// The user's projection, if the object decoded into `T` (the type it was registered with).
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.projection.as_deref()?.downcast_ref()
    }

    /// The projection `controller` decides on, or the error that stops it acting on this key:
    /// [`ReconcileError::Malformed`] (no action until the object changes) when a field did not
    /// fit, [`ReconcileError::Unbuildable`] when `T` is not the registered type.
    pub fn read<T: 'static>(&self, controller: &'static str) -> Result<&T, ReconcileError> {
        if let Some(malformed) = &self.malformed {
            return Err(ReconcileError::Malformed {
                controller,
                resource: self.resource,
                key: self.key.clone(),
                uid: self.uid.clone(),
                malformed: malformed.clone(),
            });
        }
        self.get().ok_or_else(|| ReconcileError::Unbuildable {
            controller,
            key: self.key.clone(),
            message: format!(
                "{} is not projected into {}",
                self.resource,
                std::any::type_name::<T>()
            ),
        })
    }
}

impl PartialEq for CustomObject {
    /// The same object version: the projection is a function of it.
    fn eq(&self, other: &Self) -> bool {
        self.resource == other.resource
            && self.key == other.key
            && self.uid == other.uid
            && self.resource_version == other.resource_version
            && self.terminating == other.terminating
    }
}

impl fmt::Debug for CustomObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomObject")
            .field("resource", &self.resource)
            .field("key", &self.key)
            .field("uid", &self.uid)
            .field("resource_version", &self.resource_version)
            .field("malformed", &self.malformed.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceType;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Sprocket {
        spec: SprocketSpec,
    }
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct SprocketSpec {
        teeth: u32,
    }

    fn sprockets() -> Resource {
        Resource::register::<Sprocket>(ResourceType::namespaced(
            "custom.test",
            "v1",
            "Sprocket",
            "sprockets",
        ))
        .expect("registered")
    }

    fn sprocket(teeth: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "apiVersion": "custom.test/v1", "kind": "Sprocket",
            "metadata": {"name": "s", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                         "labels": {"app": "a"},
                         "ownerReferences": [{"kind": "Gear", "name": "g", "uid": "g1",
                                              "controller": true}]},
            "spec": {"teeth": teeth}
        }))
        .expect("json")
    }

    #[test]
    fn a_custom_object_keeps_its_metadata_and_its_typed_projection() {
        let o = CustomObject::from_json(sprockets(), &sprocket(12.into())).expect("decodes");
        assert_eq!(o.key, ObjectKey::new("ns", "s"));
        assert_eq!(o.resource_version, ResourceVersion::new(7));
        assert_eq!(o.controller.as_ref().map(|c| &*c.name), Some("g"));
        assert_eq!(
            o.get::<Sprocket>(),
            Some(&Sprocket {
                spec: SprocketSpec { teeth: 12 }
            })
        );
        assert!(o.malformed.is_none());
        assert!(o.get::<String>().is_none(), "another type is not there");
    }

    #[test]
    fn a_field_that_does_not_fit_the_type_is_cached_malformed_without_a_projection() {
        let o = CustomObject::from_json(sprockets(), &sprocket("many".into()))
            .expect("identity is readable");
        let malformed = o.malformed.as_ref().expect("malformed");
        assert_eq!(malformed.fields()[0].path, "spec.teeth");
        assert!(o.get::<Sprocket>().is_none());
        assert!(matches!(
            o.read::<Sprocket>("gears"),
            Err(ReconcileError::Malformed { .. })
        ));
    }

    #[test]
    fn a_built_in_resource_is_not_decoded_as_custom() {
        assert!(CustomObject::from_json(Resource::Pods, &sprocket(1.into())).is_err());
    }
}
