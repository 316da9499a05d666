//! Malformed objects: a field a controller decides on is present with the wrong type or out of
//! range. kube-apiserver would have refused such an object, so it can only come from a broken or
//! hostile server; the controller takes no action at all for its key (never a default that
//! deletes) until the object changes, and reports it once per object version.

use crate::key::{ObjectKey, Uid};
use crate::resource::Resource;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The reason of the Warning Event on a malformed object.
pub const MALFORMED_REASON: &str = "Malformed";

/// One unusable field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Its path (`spec.replicas`).
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.problem)
    }
}

/// Why one decoded object version cannot be acted on. Every copy of the decoded object shares
/// it, so it is reported once however many reconciles meet it.
#[derive(Debug)]
pub struct Malformed {
    fields: Vec<FieldError>,
    total: usize,
    reported: AtomicBool,
}

impl Malformed {
    /// The record of `fields` (the first few of `total` problems).
    pub fn new(fields: Vec<FieldError>, total: usize) -> Self {
        Self {
            total: total.max(fields.len()),
            fields,
            reported: AtomicBool::new(false),
        }
    }

    /// The problems kept.
    pub fn fields(&self) -> &[FieldError] {
        &self.fields
    }

    /// How many problems were found.
    pub fn total(&self) -> usize {
        self.total
    }

    /// True the first time it is asked: the caller reports this object version.
    pub fn first_report(&self) -> bool {
        !self.reported.swap(true, Ordering::Relaxed)
    }
}

impl PartialEq for Malformed {
    fn eq(&self, other: &Self) -> bool {
        self.fields == other.fields && self.total == other.total
    }
}

impl Eq for Malformed {}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.fields.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        if self.total > self.fields.len() {
            write!(f, " (and {} more)", self.total - self.fields.len())?;
        }
        Ok(())
    }
}

/// A cached projection that knows whether it is malformed.
pub trait Projection {
    /// Its resource.
    const RESOURCE: Resource;
    /// namespace/name.
    fn object_key(&self) -> &ObjectKey;
    /// metadata.uid.
    fn object_uid(&self) -> &Uid;
    /// Why it cannot be acted on, if it cannot.
    fn malformed(&self) -> Option<&Arc<Malformed>>;
}

/// [`Projection`] for a view with `key`, `uid` and `malformed` fields.
macro_rules! projection {
    ($view:ty, $resource:expr) => {
        impl $crate::views::malformed::Projection for $view {
            const RESOURCE: $crate::resource::Resource = $resource;
            fn object_key(&self) -> &$crate::key::ObjectKey {
                &self.key
            }
            fn object_uid(&self) -> &$crate::key::Uid {
                &self.uid
            }
            fn malformed(&self) -> Option<&std::sync::Arc<$crate::views::malformed::Malformed>> {
                self.malformed.as_ref()
            }
        }
    };
}
pub(crate) use projection;
