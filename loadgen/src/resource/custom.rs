//! Custom resources' definitions, interned process-wide so [`Resource::Custom`] stays `Copy`.
//!
//! A definition (names, scope, served version, status subresource, top-level fields) is
//! interned once per process and never changes, so its names are `&'static str` like the
//! built-ins' and a lookup is one atomic load. Which definitions a server serves is its
//! store's business (the CustomResourceDefinitions it holds); two servers may intern
//! different definitions of the same group and plural, and the same definition shares one id.

use std::sync::OnceLock;

use super::{Info, Resource, ResourceType};

/// How many distinct custom resource definitions one process can intern.
pub const MAX_CUSTOM: usize = 256;

/// The handle of an interned custom resource definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomId(u16);

impl CustomId {
    pub(super) fn slot(self) -> usize {
        usize::from(self.0)
    }
}

/// A custom resource as a CustomResourceDefinition declares it (its storage version).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Definition {
    /// `spec.group`.
    pub group: String,
    /// The version served and stored.
    pub version: String,
    /// `spec.names.plural`.
    pub plural: String,
    /// `spec.names.singular` (defaulted to the lowercase kind).
    pub singular: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.names.listKind` (defaulted to `<kind>List`).
    pub list_kind: String,
    /// `spec.names.shortNames`.
    pub short_names: Vec<String>,
    /// Whether `spec.names.categories` has `all`.
    pub in_category_all: bool,
    /// `spec.scope == Namespaced`.
    pub namespaced: bool,
    /// Whether the version declares `subresources.status`.
    pub status: bool,
    /// The top-level fields of the version's schema (with `apiVersion`, `kind`, `metadata`),
    /// empty when the schema keeps unknown fields at the root.
    pub fields: Vec<String>,
}

/// Every slot of the process is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the simulated API server serves at most {MAX_CUSTOM} distinct custom resource definitions per process"
)]
pub struct RegistryFull;

struct Entry {
    definition: Definition,
    info: Info,
}

static SLOTS: [OnceLock<Entry>; MAX_CUSTOM] = [const { OnceLock::new() }; MAX_CUSTOM];
static INTERNING: parking_lot::Mutex<usize> = parking_lot::const_mutex(0);

const UNKNOWN: Info = Info {
    ty: ResourceType::cluster_scoped("", "", "", ""),
    singular: "",
    list_kind: "",
    api_version: "",
    short_names: &[],
    status: false,
    scale: false,
    in_all: false,
    fields: &[],
};

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

fn leak_all(v: &[String]) -> &'static [&'static str] {
    Box::leak(
        v.iter()
            .map(|s| leak(s))
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    )
}

fn info_of(d: &Definition) -> Info {
    let (group, version, kind, plural) = (
        leak(&d.group),
        leak(&d.version),
        leak(&d.kind),
        leak(&d.plural),
    );
    let ty = match d.namespaced {
        true => ResourceType::namespaced(group, version, kind, plural),
        false => ResourceType::cluster_scoped(group, version, kind, plural),
    };
    Info {
        ty,
        singular: leak(&d.singular),
        list_kind: leak(&d.list_kind),
        api_version: leak(&ty.api_version()),
        short_names: leak_all(&d.short_names),
        status: d.status,
        scale: false,
        in_all: d.in_category_all,
        fields: leak_all(&d.fields),
    }
}

/// The resource of `definition`: the interned one if the process has seen it, a new one else.
pub fn intern(definition: &Definition) -> Result<Resource, RegistryFull> {
    let mut used = INTERNING.lock();
    if let Some(i) = SLOTS[..*used]
        .iter()
        .position(|s| s.get().is_some_and(|e| &e.definition == definition))
    {
        return Ok(Resource::Custom(CustomId(i as u16)));
    }
    let i = *used;
    if i >= MAX_CUSTOM {
        return Err(RegistryFull);
    }
    let entry = Entry {
        definition: definition.clone(),
        info: info_of(definition),
    };
    if SLOTS[i].set(entry).is_err() {
        return Err(RegistryFull);
    }
    *used += 1;
    Ok(Resource::Custom(CustomId(i as u16)))
}

/// The definition behind `id`.
pub fn definition(id: CustomId) -> Option<&'static Definition> {
    SLOTS
        .get(id.slot())
        .and_then(OnceLock::get)
        .map(|e| &e.definition)
}

pub(super) fn info(id: CustomId) -> Info {
    SLOTS
        .get(id.slot())
        .and_then(OnceLock::get)
        .map_or(UNKNOWN, |e| e.info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widgets() -> Definition {
        Definition {
            group: "example.com".into(),
            version: "v1alpha1".into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            short_names: vec!["wd".into()],
            namespaced: true,
            status: true,
            ..Definition::default()
        }
    }

    #[test]
    fn the_same_definition_interns_to_the_same_resource_and_another_to_another() {
        let a = intern(&widgets()).unwrap();
        assert_eq!(intern(&widgets()).unwrap(), a);
        let cluster = intern(&Definition {
            namespaced: false,
            ..widgets()
        })
        .unwrap();
        assert_ne!(a, cluster);
        assert_eq!(a.api_version(), "example.com/v1alpha1");
        assert_eq!(a.short_names(), ["wd"]);
        assert!(a.namespaced() && !cluster.namespaced());
        assert!(a.index() >= Resource::ALL.len() && a.index() < Resource::SLOTS);
        assert!(a.preserves_unknown_fields());
    }
}
