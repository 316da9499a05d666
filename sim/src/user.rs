//! The user model: the workload's objects created before the manager starts, then changed on
//! a schedule drawn from the seed while faults are on.

/// The namespace every simulated object lives in.
pub const NAMESPACE: &str = "sim";
/// The user agent of the user's writes.
pub const USER_AGENT: &str = "sim-user";

/// The sets the user made, by index.
#[derive(Debug, Default)]
pub struct User {
    pub(crate) sets: Vec<String>,
    /// Scales sets the manager still acts on (the oracle then forgives a decision made on the
    /// previous size within the delivery allowance).
    pub(crate) eager: bool,
    /// Nodes made so far (`node-0` ..).
    pub(crate) nodes: usize,
    /// Images given so far.
    pub(crate) rolls: usize,
    /// Nodes whose kubelet does not renew their Lease now.
    pub(crate) silent: std::collections::BTreeSet<usize>,
    /// Nodes whose kubelet is gone for good.
    pub(crate) dead_nodes: Vec<String>,
    /// Changes drawn so far.
    pub(crate) drawn: usize,
    /// Changes shrinking dropped, by the order they were drawn in.
    pub(crate) dropped: std::collections::BTreeSet<usize>,
}
