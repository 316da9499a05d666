//! `--controllers` as kube-controller-manager reads it: `*` for every default-on controller,
//! `name` to enable, `-name` to disable, the first entry naming a controller deciding it; upstream
//! and short names alike.

use super::controller_names::{ControllerName, lookup};
use crate::manager::ONBOARDED;

/// A `--controllers` list Tidemark cannot run as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllersError {
    /// An upstream controller Tidemark does not have, asked for without `*`. With `*` the list
    /// reads as an upstream one and such names are passed over.
    #[error(
        "{0} is a kube-controller-manager controller Tidemark does not run; Tidemark runs: {runs} \
         (with `*` in the list, names Tidemark does not run are passed over)",
        runs = ONBOARDED.join(", ")
    )]
    NotRun(String),
    /// A name neither Tidemark nor kube-controller-manager knows.
    #[error(
        "unknown controller {0:?}: not a kube-controller-manager controller; Tidemark runs: {runs}",
        runs = ONBOARDED.join(", ")
    )]
    Unknown(String),
    /// The list disables everything Tidemark runs.
    #[error(
        "--controllers selects none of {runs}; `*` selects them all",
        runs = ONBOARDED.join(", ")
    )]
    NoneSelected,
}

/// Resolves `--controllers` entries (each may itself hold commas) to the `ONBOARDED` names to
/// run, in `ONBOARDED` order. All five are default-on, so `*` selects them all; disabling a
/// controller Tidemark does not run is accepted and changes nothing.
pub fn resolve_controllers(entries: &[String]) -> Result<Vec<String>, ControllersError> {
    let entries: Vec<&str> = entries
        .iter()
        .flat_map(|e| e.split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    let star = entries.contains(&"*");
    // (enabled?, Tidemark name) per entry naming a Tidemark controller, in the order given.
    let mut decisions: Vec<(bool, &str)> = Vec::new();
    for entry in entries.iter().copied().filter(|e| *e != "*") {
        let (enable, name) = match entry.strip_prefix('-') {
            Some(name) => (false, name),
            None => (true, entry),
        };
        match lookup(name) {
            Some(ControllerName::Runs(short)) => decisions.push((enable, short)),
            Some(ControllerName::NotRun) if enable && !star => {
                return Err(ControllersError::NotRun(name.to_string()));
            }
            Some(ControllerName::NotRun) => {}
            None => return Err(ControllersError::Unknown(name.to_string())),
        }
    }
    let selected: Vec<String> = ONBOARDED
        .iter()
        .filter(|controller| {
            decisions
                .iter()
                .find(|(_, name)| name == *controller)
                .map_or(star, |(enable, _)| *enable)
        })
        .map(|c| c.to_string())
        .collect();
    if selected.is_empty() {
        return Err(ControllersError::NoneSelected);
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(text: &str) -> Result<Vec<String>, ControllersError> {
        resolve_controllers(&[text.to_string()])
    }

    fn all() -> Vec<String> {
        ONBOARDED.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_star_selects_all_five() {
        assert_eq!(resolve("*"), Ok(all()));
    }

    #[test]
    fn kubeadms_value_selects_all_five() {
        assert_eq!(resolve("*,bootstrapsigner,tokencleaner"), Ok(all()));
    }

    #[test]
    fn upstream_and_short_names_select_the_same_controllers() {
        assert_eq!(
            resolve("replicaset-controller,node-lifecycle-controller"),
            Ok(vec!["replicaset".into(), "nodelifecycle".into()])
        );
        assert_eq!(
            resolve("job,statefulset"),
            Ok(vec!["statefulset".into(), "job".into()])
        );
    }

    #[test]
    fn a_dash_disables_a_controller_the_star_would_select() {
        assert_eq!(
            resolve("*,-daemonset-controller,-job"),
            Ok(vec![
                "replicaset".into(),
                "statefulset".into(),
                "nodelifecycle".into()
            ])
        );
    }

    #[test]
    fn the_first_entry_naming_a_controller_decides_it() {
        assert_eq!(resolve("job,-job"), Ok(vec!["job".into()]));
        assert_eq!(
            resolve("-job,job,replicaset"),
            Ok(vec!["replicaset".into()])
        );
    }

    #[test]
    fn disabling_a_controller_tidemark_does_not_run_is_fine() {
        assert_eq!(resolve("*,-deployment-controller,-ttl"), Ok(all()));
        assert_eq!(
            resolve("job,-garbage-collector-controller"),
            Ok(vec!["job".into()])
        );
    }

    #[test]
    fn enabling_a_controller_tidemark_does_not_run_is_refused_without_a_star() {
        let err = resolve("replicaset,deployment-controller").expect_err("not run");
        assert_eq!(
            err,
            ControllersError::NotRun("deployment-controller".into())
        );
        assert_eq!(
            err.to_string().split(" (with").next(),
            Some(
                "deployment-controller is a kube-controller-manager controller Tidemark does not \
                 run; Tidemark runs: replicaset, statefulset, daemonset, job, nodelifecycle"
            )
        );
    }

    #[test]
    fn an_unknown_name_is_refused_even_to_disable() {
        for text in ["frobnicator", "*,-frobnicator", "-*"] {
            let err = resolve(text).expect_err(text);
            assert!(matches!(err, ControllersError::Unknown(_)), "{text}");
            assert!(
                err.to_string().contains("Tidemark runs: replicaset"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_list_that_selects_nothing_is_refused() {
        for text in [
            "",
            "-replicaset",
            "*,-replicaset,-statefulset,-daemonset,-job,-nodelifecycle",
        ] {
            let err = resolve(text).expect_err(text);
            assert_eq!(err, ControllersError::NoneSelected, "{text}");
            assert!(err.to_string().contains("`*` selects them all"), "{err}");
        }
    }

    #[test]
    fn entries_split_by_clap_or_by_commas_resolve_alike() {
        let split = ["*".to_string(), "-job".to_string()];
        assert_eq!(resolve_controllers(&split), resolve("*,-job"));
    }
}
