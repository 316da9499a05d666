//! A value per resource, in an array indexed by the resource's handle.

use super::Resource;

/// A value per resource, indexed by [`Resource`]. Sized for every resource known when it is
/// built; a resource registered later reads as the fill value until it is first written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerResource<T> {
    values: Vec<T>,
    fill: T,
}

impl<T: Default + Clone> Default for PerResource<T> {
    fn default() -> Self {
        Self::filled(T::default())
    }
}

impl<T: Clone> PerResource<T> {
    /// Every resource starts at `fill`.
    pub fn filled(fill: T) -> Self {
        Self {
            values: vec![fill.clone(); Resource::count()],
            fill,
        }
    }

    /// The value for `resource`, mutably.
    pub fn get_mut(&mut self, resource: Resource) -> &mut T {
        let index = resource.index();
        if index >= self.values.len() {
            self.values.resize(index + 1, self.fill.clone());
        }
        &mut self.values[index]
    }
}

impl<T: Default> PerResource<T> {
    /// Builds the array from a function of the resource; a resource registered later starts
    /// at the default.
    pub fn from_fn(f: impl FnMut(Resource) -> T) -> Self {
        Self {
            values: Resource::all().map(f).collect(),
            fill: T::default(),
        }
    }
}

impl<T> PerResource<T> {
    /// The value for `resource`.
    pub fn get(&self, resource: Resource) -> &T {
        self.values.get(resource.index()).unwrap_or(&self.fill)
    }

    /// Every (resource, value) pair stored (without reading the registry: this runs on the
    /// shard's hot path).
    pub fn iter(&self) -> impl Iterator<Item = (Resource, &T)> {
        (0u16..).map(Resource).zip(self.values.iter())
    }

    /// Every (resource, value) pair stored, the values mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (Resource, &mut T)> {
        (0u16..).map(Resource).zip(self.values.iter_mut())
    }
}
