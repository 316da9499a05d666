//! Table-driven tests of the gate, read from `engine/testdata/gate/*.txt` in the style of
//! raft-rs' datadriven tests: each case is a `decide` line of facts, a `----` line, and the
//! decision expected; cases are separated by a blank line, `#` starts a comment.
//!
//! Facts, all optional (a ready controller, a fresh key, no plan, mode `tidemark`):
//! `mode=naive|upstream-1.35|upstream-1.36|tidemark`, `leading=false`, `synced=false`,
//! `takeover=pending`, `relisting=true`, `expectations=unmet`,
//! `freshness=fresh|unknown|stale:RESOURCE@VERSION|deletes:RESOURCE`, `unknown-outcome=true`,
//! and once the reconciler has decided `plan=ordinary|creates|destructive` with `takeover-wait=MS`,
//! `proven=true`, `quiet=true`, `lagging=true`, `proof-aged=true`, `verified=true`,
//! `adopts=true`.

use super::*;
use crate::resource::Resource;
use crate::rv::{NotComparable, ResourceVersion};
use std::path::Path;

fn resource(plural: &str) -> Resource {
    Resource::all()
        .find(|r| r.plural() == plural)
        .unwrap_or_else(|| panic!("no resource {plural:?}"))
}

fn flag(value: &str) -> bool {
    match value {
        "true" => true,
        "false" => false,
        other => panic!("not a boolean: {other:?}"),
    }
}

fn facts(args: &str) -> Facts {
    let mut facts = Facts::ready(ConsistencyMode::Tidemark);
    let mut plan: Option<PlanFacts> = None;
    for arg in args.split_whitespace() {
        let (name, value) = arg
            .split_once('=')
            .unwrap_or_else(|| panic!("not NAME=VALUE: {arg:?}"));
        match name {
            "mode" => facts.mode = value.parse().expect("a consistency mode"),
            "leading" => facts.leading = flag(value),
            "synced" => facts.synced = flag(value),
            "takeover" => facts.takeover_pending = value == "pending",
            "relisting" => facts.relisting = flag(value),
            "expectations" => facts.expectations_unmet = value == "unmet",
            "unknown-outcome" => facts.unknown_outcome = flag(value),
            "freshness" => {
                facts.freshness = match value.split_once(':') {
                    None if value == "fresh" => Freshness::Fresh,
                    None if value == "unknown" => Freshness::Unknown(NotComparable::NotDecimal),
                    Some(("stale", at)) => {
                        let (r, v) = at.split_once('@').expect("stale:RESOURCE@VERSION");
                        Freshness::Stale {
                            resource: resource(r),
                            target: ResourceVersion::new(v.parse().expect("a version"))
                                .expect("nonzero"),
                        }
                    }
                    Some(("deletes", r)) => Freshness::AwaitingDeletes {
                        resource: resource(r),
                        pending: 1,
                    },
                    _ => panic!("unknown freshness {value:?}"),
                }
            }
            "plan" => {
                plan = Some(PlanFacts {
                    destructive: match value {
                        "destructive" => true,
                        "ordinary" | "creates" => false,
                        other => panic!("plan is ordinary, creates or destructive, not {other:?}"),
                    },
                    creates: value == "creates",
                    ..PlanFacts::default()
                })
            }
            "takeover-wait" => {
                plan_mut(&mut plan, name).takeover_wait =
                    Some(Duration::from_millis(value.parse().expect("milliseconds")))
            }
            "proven" => plan_mut(&mut plan, name).proven = flag(value),
            "quiet" => plan_mut(&mut plan, name).quiet = flag(value),
            "lagging" => plan_mut(&mut plan, name).lagging = flag(value),
            "proof-aged" => plan_mut(&mut plan, name).proof_aged = flag(value),
            "verified" => plan_mut(&mut plan, name).verified = flag(value),
            "adopts" => plan_mut(&mut plan, name).adopts = flag(value),
            other => panic!("unknown fact {other:?}"),
        }
    }
    facts.plan = plan;
    facts
}

fn plan_mut<'a>(plan: &'a mut Option<PlanFacts>, name: &str) -> &'a mut PlanFacts {
    plan.as_mut()
        .unwrap_or_else(|| panic!("{name} needs plan= before it"))
}

fn show(decision: &Decision) -> String {
    let target = |t: &ParkTarget| match t {
        ParkTarget::Watermark { resource, version } => format!("{}@{version}", resource.plural()),
        ParkTarget::Deletions => "deletions".into(),
        other => format!("{other:?}"),
    };
    match decision {
        Decision::Wait => "wait".into(),
        Decision::ParkExpectations => "park expectations".into(),
        Decision::Park(t) => format!("park {}", target(t)),
        Decision::RequeueStale(t) => format!("requeue stale {}", target(t)),
        Decision::Reconcile { stale: false } => "reconcile".into(),
        Decision::Reconcile { stale: true } => "reconcile stale".into(),
        Decision::Barrier => "barrier".into(),
        Decision::Hold(d) => format!("hold {}ms", d.as_millis()),
        Decision::LiveRead => "live-read".into(),
        Decision::Proceed => "proceed".into(),
    }
}

/// Runs every case of `file`; returns how many ran.
fn run_file(file: &Path) -> usize {
    let text = std::fs::read_to_string(file).expect("a readable file");
    let mut lines = text.lines().enumerate().peekable();
    let mut cases = 0;
    while let Some((number, line)) = lines.next() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let args = line
            .strip_prefix("decide")
            .unwrap_or_else(|| panic!("{}:{}: expected `decide`", file.display(), number + 1));
        let separator = lines.next().map(|(_, l)| l.trim());
        assert_eq!(
            separator,
            Some("----"),
            "{}:{}: `----` after the facts",
            file.display(),
            number + 2
        );
        let mut expected = Vec::new();
        while let Some((_, l)) = lines.peek() {
            if l.trim().is_empty() {
                break;
            }
            expected.push(l.trim().to_string());
            lines.next();
        }
        let got = show(&decide(&facts(args)));
        assert_eq!(
            got,
            expected.join("\n"),
            "{}:{}: decide{args}",
            file.display(),
            number + 1
        );
        cases += 1;
    }
    cases
}

#[test]
fn the_gate_decides_as_its_tables_say() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/gate");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("engine/testdata/gate")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tables in {}", dir.display());
    for file in files {
        assert!(run_file(&file) > 0, "{} has no case", file.display());
    }
}
