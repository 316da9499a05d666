//! What callers hand the store with a write, and what it hands the kubelet emulation.

use std::time::{Duration, Instant};

use crate::store::Key;

/// Which part of an object a PUT replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// The main resource: everything but `status`.
    Main,
    /// `/status`: only `status`.
    Status,
}

/// DeleteOptions preconditions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// Delete only if the uid matches.
    pub uid: Option<String>,
    /// Delete only if the resourceVersion matches.
    pub resource_version: Option<String>,
}

/// A Pod the kubelet emulation should start.
#[derive(Debug, Clone)]
pub struct PodStarted {
    /// Namespace and name.
    pub key: Key,
    /// The Pod's uid, so a re-created Pod of the same name is not confused with it.
    pub uid: String,
    /// When it was created.
    pub at: Instant,
}

/// How a write is carried out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// `dryRun=All`: validate and return the result without storing it or taking a revision.
    pub dry_run: bool,
    /// Validate the object as upstream does (requests over HTTP); in-process writes skip it.
    pub validate: bool,
}

impl WriteOptions {
    /// The options of a request over HTTP: validated, dry run as asked.
    pub fn request(dry_run: bool) -> WriteOptions {
        WriteOptions {
            dry_run,
            validate: true,
        }
    }
}

/// A Pod that got a deletionTimestamp with a grace period: the kubelet emulation removes it.
#[derive(Debug, Clone)]
pub struct PodTerminating {
    /// Namespace and name.
    pub key: Key,
    /// The Pod's uid.
    pub uid: String,
    /// The grace period granted.
    pub grace: Duration,
}
