//! The bench profiles: which sizes run, with or without the peer, and how long each churn step
//! lasts. `ci` fits in a few minutes on 2 cores with the peer; `full` is the scale curve.

use clap::ValueEnum;

/// `--profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// About 2 minutes: 10k and 30k Pods, the peer at both.
    Ci,
    /// The scale curve: 10k, 100k and 1M Pods, the peer up to 100k.
    Full,
    /// Seconds: 500 Pods and two short churn steps, to test that every phase runs end to end
    /// (the figures mean nothing at this size).
    Smoke,
}

/// What a profile runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Pod counts of the scale curve.
    pub sizes: Vec<u64>,
    /// The peer runs at sizes up to this (its reflector needs ~60 KB per Pod).
    pub peer_max: u64,
    /// Whether the null client (the same reads, thrown away) runs, at every size: it caches
    /// nothing, so a million Pods cost it only the server's copy.
    pub null_client: bool,
    /// Offered churn rates, events per second, in order.
    pub rates: Vec<f64>,
    /// Seconds per churn step.
    pub step_seconds: f64,
    /// Keys of the wake measurement.
    pub wake_keys: u64,
}

impl Profile {
    /// The profile's name in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Ci => "ci",
            Profile::Full => "full",
            Profile::Smoke => "smoke",
        }
    }

    /// What it runs; `pods` (from `--pods`) replaces the sizes with one.
    pub fn plan(self, pods: Option<u64>) -> Plan {
        let mut plan = match self {
            Profile::Ci => Plan {
                sizes: vec![10_000, 30_000],
                peer_max: 30_000,
                null_client: true,
                rates: vec![
                    10_000.0, 25_000.0, 50_000.0, 100_000.0, 150_000.0, 200_000.0,
                ],
                step_seconds: 1.5,
                wake_keys: 2_000,
            },
            Profile::Full => Plan {
                sizes: vec![10_000, 100_000, 1_000_000],
                peer_max: 100_000,
                null_client: true,
                rates: vec![
                    10_000.0, 25_000.0, 50_000.0, 100_000.0, 150_000.0, 200_000.0, 300_000.0,
                ],
                step_seconds: 2.0,
                wake_keys: 5_000,
            },
            Profile::Smoke => Plan {
                sizes: vec![500],
                peer_max: 500,
                null_client: true,
                rates: vec![500.0, 1_000.0],
                step_seconds: 0.5,
                wake_keys: 100,
            },
        };
        if let Some(n) = pods {
            plan.sizes = vec![n];
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_full_profile_runs_the_peer_below_a_million_only() {
        let plan = Profile::Full.plan(None);
        assert_eq!(plan.sizes, [10_000, 100_000, 1_000_000]);
        assert!(plan.sizes.iter().filter(|&&n| n <= plan.peer_max).count() == 2);
    }

    #[test]
    fn the_null_client_runs_at_every_size_of_every_profile() {
        assert!(
            [Profile::Ci, Profile::Full, Profile::Smoke]
                .into_iter()
                .all(|p| p.plan(None).null_client)
        );
    }

    #[test]
    fn pods_on_the_command_line_replace_the_sizes() {
        assert_eq!(Profile::Ci.plan(Some(500)).sizes, [500]);
    }
}
