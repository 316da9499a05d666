//! A value per resource: the built-in kinds inline (no allocation, one branch on the hot path),
//! registered kinds behind them.

use super::{BUILT_IN, Resource};

const INLINE: usize = BUILT_IN.len();

/// A value per resource, indexed by [`Resource`]. Holds every resource known when it is built; a
/// resource registered later reads as the fill value until it is first written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerResource<T> {
    built_in: [T; INLINE],
    registered: Vec<T>,
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
            built_in: std::array::from_fn(|_| fill.clone()),
            registered: vec![fill.clone(); Resource::count() - INLINE],
            fill,
        }
    }

    /// The value for `resource`, mutably.
    pub fn get_mut(&mut self, resource: Resource) -> &mut T {
        let index = resource.index();
        if index < INLINE {
            return &mut self.built_in[index];
        }
        let index = index - INLINE;
        if index >= self.registered.len() {
            self.registered.resize(index + 1, self.fill.clone());
        }
        &mut self.registered[index]
    }
}

impl<T: Default> PerResource<T> {
    /// Builds the array from a function of the resource; a resource registered later starts
    /// at the default.
    pub fn from_fn(mut f: impl FnMut(Resource) -> T) -> Self {
        Self {
            built_in: std::array::from_fn(|i| f(Resource(i as u16))),
            registered: Resource::all().skip(INLINE).map(f).collect(),
            fill: T::default(),
        }
    }
}

impl<T> PerResource<T> {
    /// The value for `resource`.
    pub fn get(&self, resource: Resource) -> &T {
        let index = resource.index();
        if index < INLINE {
            return &self.built_in[index];
        }
        self.registered.get(index - INLINE).unwrap_or(&self.fill)
    }

    /// Every (resource, value) pair stored (without reading the registry: this runs on the
    /// shard's hot path).
    pub fn iter(&self) -> impl Iterator<Item = (Resource, &T)> {
        (0u16..)
            .map(Resource)
            .zip(self.built_in.iter().chain(self.registered.iter()))
    }

    /// Every (resource, value) pair stored, the values mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (Resource, &mut T)> {
        (0u16..)
            .map(Resource)
            .zip(self.built_in.iter_mut().chain(self.registered.iter_mut()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ResourceType;

    #[test]
    fn a_resource_registered_after_the_array_reads_the_fill_until_written() {
        let mut counts: PerResource<u32> = PerResource::filled(0);
        *counts.get_mut(Resource::Jobs) += 1;
        let late = Resource::register::<serde_json::Value>(ResourceType::namespaced(
            "per-resource.test",
            "v1",
            "Late",
            "lates",
        ))
        .expect("registered");
        assert_eq!(*counts.get(late), 0);
        *counts.get_mut(late) += 2;
        assert_eq!(*counts.get(late), 2);
        assert_eq!(*counts.get(Resource::Jobs), 1);
        assert!(counts.iter().any(|(r, n)| r == late && *n == 2));
    }
}
