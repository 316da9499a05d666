//! Progress of long runs on stderr. On a terminal (outside CI) one live line, drawn by
//! indicatif, names the run and its phase and counts down the time the phase has left; anywhere
//! else each phase is one plain line, so a CI log reads as a timeline. Log lines are written
//! above the live line ([`suspended`]), never through it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::IsTerminal;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a phase may last, as shown beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Until it is done.
    Open,
    /// Exactly this long (a scenario's timeline).
    Exactly(Duration),
    /// This long at most (a wait that ends as soon as its condition holds).
    AtMost(Duration),
    /// Step `.0` of `.1`.
    Step(u64, u64),
}

impl Bound {
    /// What a plain line says after the phase.
    fn plain_suffix(self) -> String {
        match self {
            Bound::Open | Bound::Step(..) => String::new(),
            Bound::Exactly(d) => format!(" ({})", seconds(d)),
            Bound::AtMost(d) => format!(" (at most {})", seconds(d)),
        }
    }
}

/// `12 s`, `1.5 s`.
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

/// The live line now drawn, if any.
struct Live {
    bar: ProgressBar,
    /// The total, when the line counts steps (kept from one step to the next).
    steps: Option<u64>,
}

static LIVE: Mutex<Option<Live>> = Mutex::new(None);

fn live_line() -> MutexGuard<'static, Option<Live>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// When this process showed its first phase: plain lines are stamped from it.
fn first_shown() -> Instant {
    static FIRST: OnceLock<Instant> = OnceLock::new();
    *FIRST.get_or_init(Instant::now)
}

/// Whether progress is drawn live: stderr is a terminal and this is not CI.
pub fn live() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// Runs `f` (which writes to stderr) with the live line taken down, and draws it again after.
pub fn suspended<R>(f: impl FnOnce() -> R) -> R {
    let live = live_line();
    match live.as_ref() {
        Some(live) => live.bar.suspend(f),
        None => f(),
    }
}

/// The plain line for `what` of `run`, `at` since the first phase shown.
pub fn plain_line(run: &str, what: &str, bound: Bound, at: Duration) -> String {
    let step = match bound {
        Bound::Step(i, n) => format!("[{i}/{n}] "),
        _ => String::new(),
    };
    format!(
        "{run} [{:>6.1}s] {step}{what}{}",
        at.as_secs_f64(),
        bound.plain_suffix()
    )
}

/// The time bar of a bounded phase: how much of the bound has passed.
fn time_bar(state: &ProgressState, out: &mut dyn std::fmt::Write) {
    const WIDTH: usize = 24;
    let total = state.len().unwrap_or(1).max(1) as f64;
    let passed = (state.elapsed().as_millis() as f64 / total).clamp(0.0, 1.0);
    let filled = (passed * WIDTH as f64).round() as usize;
    let _ = write!(
        out,
        "[{}{}]",
        "=".repeat(filled),
        " ".repeat(WIDTH - filled)
    );
}

/// The time a bounded phase has left, whole seconds rounded up.
fn time_left(state: &ProgressState) -> u64 {
    let total = Duration::from_millis(state.len().unwrap_or(0));
    total.saturating_sub(state.elapsed()).as_secs_f64().ceil() as u64
}

fn style(bound: Bound) -> ProgressStyle {
    let template = match bound {
        Bound::Open => "{spinner} {prefix}: {msg} ({elapsed})",
        Bound::Exactly(_) => "{spinner} {prefix}: {msg} {time_bar} {left} s left",
        Bound::AtMost(_) => "{spinner} {prefix}: {msg} {time_bar} at most {left} s left",
        Bound::Step(..) => "{spinner} {prefix}: [{pos}/{len}] {msg} ({elapsed} in all)",
    };
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .with_key("time_bar", time_bar)
        .with_key(
            "left",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{}", time_left(state));
            },
        )
}

/// Shows that `run` is now in phase `what`.
pub fn phase(run: &str, what: &str, bound: Bound) {
    let at = first_shown().elapsed();
    if !live() {
        eprintln!("{}", plain_line(run, what, bound, at));
        return;
    }
    let steps = match bound {
        Bound::Step(_, n) => Some(n),
        _ => None,
    };
    let mut live = live_line();
    let bar = match live.take() {
        Some(same) if steps.is_some() && same.steps == steps => same.bar,
        old => {
            if let Some(old) = old {
                old.bar.finish_and_clear();
            }
            let length = match bound {
                Bound::Open => None,
                Bound::Exactly(d) | Bound::AtMost(d) => Some(d.as_millis() as u64),
                Bound::Step(_, n) => Some(n),
            };
            let bar = ProgressBar::with_draw_target(length, ProgressDrawTarget::stderr());
            bar.set_style(style(bound));
            bar.set_prefix(run.to_string());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        }
    };
    if let Bound::Step(i, _) = bound {
        bar.set_position(i);
    }
    bar.set_message(what.to_string());
    *live = Some(Live { bar, steps });
}

/// Takes the live line down and prints `line` for `run` as a plain line, on a terminal or not.
pub fn finish(run: &str, line: &str) {
    if let Some(live) = live_line().take() {
        live.bar.finish_and_clear();
    }
    eprintln!(
        "{}",
        plain_line(run, line, Bound::Open, first_shown().elapsed())
    );
}

/// Phases counted out of a known total (the bench's child processes).
#[derive(Debug)]
pub struct Steps {
    run: String,
    total: u64,
    done: std::sync::atomic::AtomicU64,
}

impl Steps {
    /// `total` steps of `run`, none done.
    pub fn new(run: impl Into<String>, total: u64) -> Self {
        Self {
            run: run.into(),
            total,
            done: 0.into(),
        }
    }

    /// The next step starts: shown as `[k/total] what`.
    pub fn step(&self, what: &str) {
        let k = self.done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        phase(&self.run, what, Bound::Step(k, self.total.max(k)));
    }

    /// Every step is done: the live line goes and `line` stays.
    pub fn finish(&self, line: &str) {
        finish(&self.run, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line_names_the_run_the_time_and_the_bound() {
        let line = plain_line(
            "stress x seed 1 gate on",
            "scenario running",
            Bound::Exactly(Duration::from_secs(20)),
            Duration::from_millis(12_340),
        );
        assert_eq!(
            line,
            "stress x seed 1 gate on [  12.3s] scenario running (20 s)"
        );
        let line = plain_line(
            "bench",
            "Sync Tidemark 1000 Pods",
            Bound::Step(3, 14),
            Duration::ZERO,
        );
        assert_eq!(line, "bench [   0.0s] [3/14] Sync Tidemark 1000 Pods");
        assert!(
            plain_line(
                "r",
                "wait",
                Bound::AtMost(Duration::from_millis(1500)),
                Duration::ZERO
            )
            .ends_with("wait (at most 1.5 s)")
        );
    }

    #[test]
    fn a_plain_line_has_no_escape_byte() {
        let line = plain_line("r", "w", Bound::Open, Duration::ZERO);
        assert!(!line.contains('\u{1b}'));
    }
}
