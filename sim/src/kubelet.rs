//! The kubelet model: a created Pod is bound, Running and Ready after a virtual delay, and a Pod
//! given a deletionTimestamp with a grace period is removed after a shorter one, with the same
//! writes loadgen's kubelet emulation makes (loadgen/src/kubelet.rs).

use std::collections::HashSet;
use std::time::Duration;

/// How often the kubelet looks at the Pods.
pub const TICK: Duration = Duration::from_millis(200);
/// Nodes Pods are spread over.
pub const NODES: usize = 3;

/// What the kubelet has already scheduled, by Pod uid.
#[derive(Debug, Default)]
pub struct Kubelet {
    pub(crate) starting: HashSet<String>,
    pub(crate) removing: HashSet<String>,
    pub(crate) started: usize,
}
