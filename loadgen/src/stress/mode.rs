//! Which protections the managers of a stress run have: `--gate on|off` as always, or one of the
//! consistency modes of `tidemark run --consistency-mode` that `--gate all` compares side by side.

use crate::scenario::Protection;

/// What `loadgen stress --gate` asks of the managers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Every protection on (`StaleControllerConsistency=true`, fencing on).
    On,
    /// The scenario's `protections` off (`StaleControllerConsistency=false` when listed).
    Off,
    /// `--consistency-mode naive`, and the scenario's other protections (fencing) off too.
    Naive,
    /// `--consistency-mode upstream-1.35`: ControllerExpectations only, as kube-controller-manager
    /// before KEP-5647.
    Upstream135,
    /// `--consistency-mode upstream-1.36`: KEP-5647 as kube-controller-manager implements it.
    Upstream136,
    /// `--consistency-mode tidemark`.
    Tidemark,
}

impl Mode {
    /// The modes `--gate all` runs, weakest first.
    pub const COMPARED: [Mode; 4] = [
        Mode::Naive,
        Mode::Upstream135,
        Mode::Upstream136,
        Mode::Tidemark,
    ];

    /// `--gate on` (true) or `--gate off` (false).
    pub fn from_gate(on: bool) -> Mode {
        if on { Mode::On } else { Mode::Off }
    }

    /// The name `--gate` takes and the report's `gate` field carries.
    pub fn name(self) -> &'static str {
        match self {
            Mode::On => "on",
            Mode::Off => "off",
            Mode::Naive => "naive",
            Mode::Upstream135 => "upstream-1.35",
            Mode::Upstream136 => "upstream-1.36",
            Mode::Tidemark => "tidemark",
        }
    }

    /// The mode named `name` (`on`, `off`, `naive`, `upstream-1.35`, `upstream-1.36`, `tidemark`).
    pub fn parse(name: &str) -> Option<Mode> {
        [
            Mode::On,
            Mode::Off,
            Mode::Naive,
            Mode::Upstream135,
            Mode::Upstream136,
            Mode::Tidemark,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }

    /// Whether `protection` stays on when the scenario lists `listed` as what may be turned off.
    pub fn keeps(self, protection: Protection, listed: &[Protection]) -> bool {
        match self {
            Mode::Off | Mode::Naive => !listed.contains(&protection),
            Mode::On | Mode::Upstream135 | Mode::Upstream136 | Mode::Tidemark => true,
        }
    }

    /// The arguments of `tidemark run` that choose its consistency protection: the feature gate
    /// for `on` and `off` (as before the modes existed), `--consistency-mode` for the others.
    pub fn consistency_args(self, listed: &[Protection]) -> Vec<String> {
        match self {
            Mode::On | Mode::Off => vec![
                "--feature-gates".into(),
                format!(
                    "StaleControllerConsistency={}",
                    self.keeps(Protection::Consistency, listed)
                ),
            ],
            Mode::Naive | Mode::Upstream135 | Mode::Upstream136 | Mode::Tidemark => {
                vec!["--consistency-mode".into(), self.name().into()]
            }
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOTH: &[Protection] = &[Protection::Consistency, Protection::Fencing];
    const FENCING_ONLY: &[Protection] = &[Protection::Fencing];

    #[test]
    fn on_and_off_pass_the_feature_gate_as_they_always_did() {
        assert_eq!(
            Mode::On.consistency_args(BOTH),
            ["--feature-gates", "StaleControllerConsistency=true"]
        );
        assert_eq!(
            Mode::Off.consistency_args(BOTH),
            ["--feature-gates", "StaleControllerConsistency=false"]
        );
        assert_eq!(
            Mode::Off.consistency_args(FENCING_ONLY),
            ["--feature-gates", "StaleControllerConsistency=true"],
            "off turns off only what the scenario lists"
        );
    }

    #[test]
    fn the_compared_modes_pass_their_name_and_only_naive_drops_the_other_protections() {
        assert_eq!(
            Mode::Upstream135.consistency_args(BOTH),
            ["--consistency-mode", "upstream-1.35"]
        );
        assert!(!Mode::Naive.keeps(Protection::Fencing, FENCING_ONLY));
        assert!(Mode::Upstream136.keeps(Protection::Fencing, FENCING_ONLY));
        assert!(Mode::Tidemark.keeps(Protection::Fencing, BOTH));
    }

    #[test]
    fn every_mode_is_found_by_its_name() {
        for mode in Mode::COMPARED.into_iter().chain([Mode::On, Mode::Off]) {
            assert_eq!(Mode::parse(mode.name()), Some(mode));
        }
        assert_eq!(Mode::parse("upstream"), None);
    }
}
