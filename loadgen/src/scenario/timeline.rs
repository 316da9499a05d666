//! A scenario's run for one seed: each set's start, each step's targets and time, each fault's
//! window and strength, each user event's time, drawn within the scenario's bounds. The same
//! seed gives the same plan; another seed explores another one.

use std::time::Duration;

use crate::scenario::{FaultWindow, Scenario, WorkloadEvent};

/// One scheduled change.
#[derive(Debug, Clone)]
pub enum Action {
    /// Set `name` to `replicas` (a Job's parallelism; for DaemonSets, how many extra or labelled
    /// Nodes).
    Scale {
        /// The set.
        name: String,
        /// The target.
        replicas: i32,
    },
    /// A fault window starts (`on`) or ends.
    Fault {
        /// The window, with its drawn strength.
        window: FaultWindow,
        /// Starts or ends.
        on: bool,
    },
    /// A user event.
    Event(WorkloadEvent),
    /// The workload's sets are created (a scenario with an `[adoption]` table, whose orphans
    /// were seeded first).
    CreateOwners,
}

/// Everything the seed decided.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Each set's replicas (a Job's parallelism) at the start.
    pub initial: Vec<i32>,
    /// Each Job's completions.
    pub completions: Vec<i32>,
    /// The server's Nodes in the order they are labelled (`node_label` workloads).
    pub node_order: Vec<String>,
    /// Where user events pick their Pods.
    pub pick_seed: u64,
    /// The changes, in time order.
    pub actions: Vec<(Duration, Action)>,
}

fn at(seconds: f64) -> Duration {
    Duration::from_secs_f64(seconds.max(0.0))
}

fn jitter(rng: &mut fastrand::Rng, max_seconds: f64) -> f64 {
    if max_seconds > 0.0 {
        rng.f64() * max_seconds
    } else {
        0.0
    }
}

/// The plan of `scenario` under `seed`.
pub fn plan(scenario: &Scenario, seed: u64) -> Plan {
    let mut rng = fastrand::Rng::with_seed(seed);
    let w = &scenario.workload;
    let initial = (0..w.replicasets)
        .map(|_| w.initial_replicas.draw(&mut rng))
        .collect();
    let completions = (0..w.replicasets)
        .map(|_| w.completions.draw(&mut rng))
        .collect();
    let mut node_order: Vec<String> = (0..scenario.server.nodes)
        .map(|i| format!("node-{i}"))
        .collect();
    rng.shuffle(&mut node_order);
    let mut actions = Vec::new();
    let owners_at = scenario.owners_at_seconds();
    if scenario.adoption.is_some() {
        actions.push((at(owners_at), Action::CreateOwners));
    }
    for (k, step) in w.steps.iter().enumerate() {
        let target = step.draw(&mut rng);
        let late = if k > 0 {
            jitter(&mut rng, w.step_jitter_seconds)
        } else {
            0.0
        };
        let when = at(owners_at + w.step_every_seconds.max(0.0) * k as f64 + late);
        let mut order: Vec<usize> = (0..w.replicasets).collect();
        rng.shuffle(&mut order);
        for i in order {
            let offset = if w.jitter > 0 {
                rng.i32(-w.jitter..=w.jitter)
            } else {
                0
            };
            actions.push((
                when,
                Action::Scale {
                    name: w.kind.name(i),
                    replicas: (target + offset).max(0),
                },
            ));
        }
    }
    for fault in &scenario.faults {
        let shift = jitter(&mut rng, fault.jitter_seconds);
        let mut window = fault.clone();
        window.from_seconds += shift;
        window.until_seconds = fault.until_seconds.map(|u| u + shift);
        if let Some(most) = fault.millis_up_to {
            window.millis = rng.u64(fault.millis..=most.max(fault.millis));
        }
        actions.push((
            window.from(),
            Action::Fault {
                window: window.clone(),
                on: true,
            },
        ));
        if window.until() > window.from() {
            actions.push((window.until(), Action::Fault { window, on: false }));
        }
    }
    for event in &scenario.events {
        for time in event.times() {
            let when = at(time + jitter(&mut rng, event.jitter_seconds));
            actions.push((when, Action::Event(event.clone())));
        }
    }
    actions.sort_by_key(|(when, _)| *when);
    Plan {
        initial,
        completions,
        node_order,
        pick_seed: rng.u64(..),
        actions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn load(name: &str) -> Scenario {
        Scenario::load(name).expect("shipped scenario")
    }

    fn scales(plan: &Plan) -> Vec<(Duration, String, i32)> {
        plan.actions
            .iter()
            .filter_map(|(at, a)| match a {
                Action::Scale { name, replicas } => Some((*at, name.clone(), *replicas)),
                _ => None,
            })
            .collect()
    }

    /// What a run of the plan would look like from outside: targets, times, fault windows.
    fn fingerprint(plan: &Plan) -> String {
        let faults: Vec<String> = plan
            .actions
            .iter()
            .filter_map(|(at, a)| match a {
                Action::Fault { window, on } => {
                    Some(format!("{:?} {on} {at:?} {}", window.kind, window.millis))
                }
                _ => None,
            })
            .collect();
        format!(
            "{:?} {:?} {:?} {faults:?}",
            plan.initial,
            plan.completions,
            scales(plan)
        )
    }

    #[test]
    fn the_plan_is_reproducible_from_the_seed() {
        let s = load("replicaset-watch-delay");
        assert_eq!(fingerprint(&plan(&s, 1)), fingerprint(&plan(&s, 1)));
        assert_ne!(scales(&plan(&s, 1)), scales(&plan(&s, 2)));
        assert_eq!(scales(&plan(&s, 1)).len(), 20 * 4);
    }

    #[test]
    fn faults_start_and_stop_in_time_order() {
        let actions = plan(&load("replicaset-watch-delay"), 7).actions;
        let at: Vec<_> = actions.iter().map(|(t, _)| *t).collect();
        assert!(at.windows(2).all(|w| w[0] <= w[1]));
        let offs = actions
            .iter()
            .filter(|(_, a)| matches!(a, Action::Fault { on: false, .. }))
            .count();
        assert_eq!(offs, 1);
    }

    #[test]
    fn a_repeated_event_is_done_every_period_until_its_end() {
        let text = "name='r'\ndescription='d'\n[workload]\nreplicasets=2\nsteps=[1]\nstep_every_seconds=1\n\
            [[events]]\nverb='orphan'\nat_seconds=2\nfrom='rs-0'\nrepeat_every_seconds=1.5\nrepeat_until_seconds=8\n\
            [invariants]\ncheck=['liveness']\nconvergence_bound_seconds=1\n";
        let s = Scenario::parse(text, Path::new("inline")).expect("scenario");
        let at: Vec<f64> = plan(&s, 1)
            .actions
            .iter()
            .filter(|(_, a)| matches!(a, Action::Event(_)))
            .map(|(t, _)| t.as_secs_f64())
            .collect();
        assert_eq!(at, [2.0, 3.5, 5.0, 6.5, 8.0]);
        assert_eq!(s.active_duration(), Duration::from_secs(8));
        let half = text.replace("repeat_until_seconds=8\n", "");
        assert!(Scenario::parse(&half, Path::new("inline")).is_err());
    }

    #[test]
    fn seeds_one_to_five_of_the_job_scenario_run_five_different_workloads() {
        let s = load("job-watch-delay");
        let plans: Vec<Plan> = (1..=5).map(|seed| plan(&s, seed)).collect();
        for (i, a) in plans.iter().enumerate() {
            for b in &plans[i + 1..] {
                assert_ne!(a.completions, b.completions, "completions drawn per seed");
                assert_ne!(scales(a), scales(b), "targets and times drawn per seed");
            }
        }
        let total: Vec<i32> = plans.iter().map(|p| p.completions.iter().sum()).collect();
        let distinct: std::collections::BTreeSet<_> = total.iter().collect();
        assert!(distinct.len() >= 4, "Pods to run per seed: {total:?}");
    }

    #[test]
    fn every_draw_stays_within_the_scenario_bounds() {
        let s = load("job-watch-delay");
        for seed in 1..=50 {
            let p = plan(&s, seed);
            assert!(p.completions.iter().all(|c| (24..=36).contains(c)));
            let windows = p.actions.iter().filter_map(|(at, a)| match a {
                Action::Fault { on: true, window } => Some((*at, window.millis)),
                _ => None,
            });
            for (at, millis) in windows {
                assert!(at <= Duration::from_secs(2) && (1000..=2000).contains(&millis));
            }
            assert!(
                p.actions
                    .last()
                    .is_some_and(|(at, _)| *at <= s.active_duration())
            );
        }
    }

    #[test]
    fn an_adoption_scenario_creates_its_sets_before_any_step_reaches_them() {
        let plan = plan(&load("adoption"), 1);
        let create = plan
            .actions
            .iter()
            .position(|(_, a)| matches!(a, Action::CreateOwners))
            .expect("the sets are created");
        let first_scale = plan
            .actions
            .iter()
            .position(|(_, a)| matches!(a, Action::Scale { .. }))
            .expect("steps");
        assert!(create < first_scale);
        assert_eq!(plan.actions[create].0, Duration::from_secs(1));
    }
}
