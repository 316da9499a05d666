//! The user model: ReplicaSets created before the manager starts, then scaled on a schedule
//! drawn from the seed while faults are on.

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
}
