//! The custom resources a store serves: one per CustomResourceDefinition it holds, registered
//! and unregistered by the commits of those CRDs, resolved by group and plural, kind or name.

use serde_json::Value;

use crate::apiserver::status::ApiError;
use crate::crd;
use crate::resource::{Resource, custom};
use crate::store::{Inner, Key, Store};

/// The custom resource a stored CRD declares, if it is a valid one.
pub(crate) fn declared(crd: &Value) -> Option<Resource> {
    crd::definition(crd)
        .ok()
        .and_then(|d| custom::intern(&d).ok())
}

fn invalid(crd: &Value, causes: Vec<crate::apiserver::status::StatusCause>) -> ApiError {
    let name = crd["metadata"]["name"].as_str().unwrap_or("");
    ApiError::invalid_causes(Resource::CustomResourceDefinitions.kind(), name, causes)
}

/// Checks a CRD about to be created and gives it the status of an established one.
pub(crate) fn admit_create(crd: &mut Value) -> Result<(), ApiError> {
    let d = crd::definition(crd).map_err(|causes| invalid(crd, causes))?;
    custom::intern(&d).map_err(|e| ApiError::Internal {
        message: e.to_string(),
    })?;
    if let Value::Object(m) = crd {
        m.insert("status".into(), crd::established_status(&d));
    }
    Ok(())
}

/// Checks an update of a CRD: still valid, and declaring the resource it declared (the
/// simulator does not migrate objects between definitions: delete and re-create instead).
pub(crate) fn admit_update(old: &Value, new: &Value) -> Result<(), ApiError> {
    let d = crd::definition(new).map_err(|causes| invalid(new, causes))?;
    if crd::definition(old).ok().as_ref() != Some(&d) {
        return Err(ApiError::invalid(
            Resource::CustomResourceDefinitions.kind(),
            new["metadata"]["name"].as_str().unwrap_or(""),
            "spec: Forbidden: the simulated API server does not change the names, scope, versions or subresources of an established CustomResourceDefinition (delete and re-create it)",
        ));
    }
    Ok(())
}

impl Store {
    /// Registers or unregisters the resource of a CRD write (called inside the commit).
    pub(crate) fn track_crd(&self, prev: Option<&Value>, new: Option<&Value>) {
        let before = prev.and_then(declared);
        let after = new.and_then(declared);
        if before == after {
            return;
        }
        let mut customs = self.customs.write();
        if let Some(b) = before {
            customs.retain(|r| *r != b);
        }
        if let Some(a) = after
            && !customs.contains(&a)
        {
            customs.push(a);
        }
    }

    /// Removes every object of the resource `crd` declares (upstream's
    /// `customresourcecleanup` finalizer), before the CRD itself goes.
    pub(crate) fn remove_custom_objects(&self, inner: &mut Inner, crd: &Value) {
        let Some(r) = declared(crd).filter(|r| self.customs.read().contains(r)) else {
            return;
        };
        let keys: Vec<Key> = inner.objects[r.index()].keys().cloned().collect();
        for k in keys {
            if inner.objects[r.index()].contains_key(&k) {
                self.remove(inner, r, k, None, Some("apiextensions-apiserver"));
            }
        }
    }

    /// The custom resources served now, in the order their CRDs were created.
    pub fn custom_resources(&self) -> Vec<Resource> {
        self.customs.read().clone()
    }

    /// Every resource served now: the built-ins, then the custom resources.
    pub fn served_resources(&self) -> Vec<Resource> {
        let mut all = Resource::ALL.to_vec();
        all.extend(self.customs.read().iter().copied());
        all
    }

    /// The resource served at `group`/`plural` (built-in or custom).
    pub fn resource_for(&self, group: &str, plural: &str) -> Option<Resource> {
        Resource::from_group_plural(group, plural).or_else(|| {
            self.customs
                .read()
                .iter()
                .copied()
                .find(|r| r.group() == group && r.plural() == plural)
        })
    }

    /// The resource of objects with `apiVersion` and `kind` (for manifests).
    pub fn resource_for_kind(&self, api_version: &str, kind: &str) -> Option<Resource> {
        let custom = self.customs.read().iter().copied().find(|r| {
            r.kind() == kind && (api_version.is_empty() || r.api_version() == api_version)
        });
        custom.or_else(|| {
            Resource::from_kind(kind)
                .filter(|r| api_version.is_empty() || r.api_version() == api_version)
        })
    }

    /// The resource with this plural name, built-ins first (for the admin endpoint).
    pub fn resource_named(&self, plural: &str) -> Option<Resource> {
        Resource::from_plural(plural).or_else(|| {
            self.customs
                .read()
                .iter()
                .copied()
                .find(|r| r.plural() == plural)
        })
    }
}
