//! Leader election as the simulated manager runs it: the engine's [`Elector`] over a Lease in
//! the store, with timings short enough for a 30 s run. Each process incarnation (a run's
//! epoch) has its own identity, as a restarted kube-controller-manager does, and writes with a
//! User-Agent naming it, so the oracle can tell whose write committed while whom the Lease named.

use std::time::Duration;
use tidemark_engine::ElectorConfig;

/// The Lease's namespace.
pub const LEASE_NAMESPACE: &str = "kube-system";
/// The Lease's name.
pub const LEASE_NAME: &str = "tidemark";

/// The identity of process incarnation `epoch`.
pub fn identity(epoch: u64) -> String {
    format!("tidemark-sim.{epoch}")
}

/// The User-Agent of process incarnation `epoch`'s writes, as the runtime sends it.
pub fn user_agent(epoch: u64) -> String {
    format!("tidemark/0.1.0 ({})", identity(epoch))
}

/// The election's timings: a Lease of 8 s, a renew deadline of 4 s, a round every second; a
/// write's deadline is then 2 s (the same ratios as kube-controller-manager's 15/10/2 s).
pub fn elector_config(epoch: u64) -> ElectorConfig {
    ElectorConfig {
        identity: identity(epoch),
        lease_duration: Duration::from_secs(8),
        renew_deadline: Duration::from_secs(4),
        retry_period: Duration::from_secs(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writes::WRITE_DEADLINE;

    #[test]
    fn the_timings_keep_two_leaders_apart_and_give_writes_the_simulated_deadline() {
        let config = elector_config(3);
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.write_deadline(), WRITE_DEADLINE);
    }

    #[test]
    fn the_oracle_reads_the_identity_from_the_user_agent() {
        assert_eq!(
            loadgen::oracle::leadership::identity_of(&user_agent(2)),
            Some(identity(2).as_str())
        );
    }
}
