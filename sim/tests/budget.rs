//! The budget at a small scale (CI runs it at full scale with `sim budget`): every workload
//! with the gate on passes, every baseline is caught, every seeded bug is found within its
//! bound.

use tidemark_sim::budget::{plan, replay, run_budget};

#[test]
fn the_budget_at_a_small_scale_meets_every_line() {
    let (rows, _) = run_budget(plan(150), 2);
    let missed: Vec<String> = rows
        .iter()
        .filter(|r| !r.met())
        .map(|r| {
            format!(
                "{:?} (first failure {:?}; {})",
                r.entry,
                r.found.seeds_to_first_failure,
                replay(r).unwrap_or_else(|| "no failure".into())
            )
        })
        .collect();
    assert!(missed.is_empty(), "missed:\n{}", missed.join("\n"));
}
