//! The scenarios of `loadgen/scenarios/`, built into the library by `build.rs`: an installed
//! `loadgen` finds them by name without the source tree, and lists them with a one-line
//! description each (`loadgen stress --list`).

use crate::scenario::{Scenario, ScenarioError};
use std::path::Path;

include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

/// The names of the built-in scenarios, sorted.
pub fn names() -> impl Iterator<Item = &'static str> {
    SHIPPED.iter().map(|(name, _)| *name)
}

/// The TOML text of the built-in scenario `name`.
pub fn text(name: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .find(|(shipped, _)| *shipped == name)
        .map(|(_, text)| *text)
}

/// The built-in scenario `name`, parsed.
pub fn load(name: &str) -> Option<Result<Scenario, ScenarioError>> {
    text(name).map(|text| Scenario::parse(text, &origin(name)))
}

/// How errors name a built-in scenario.
fn origin(name: &str) -> std::path::PathBuf {
    Path::new(&format!("{name}.toml (built in)")).to_path_buf()
}

/// The first sentence of `description` on one line: up to the first `.` or `:` that ends a
/// sentence outside parentheses, whitespace collapsed.
pub fn one_line(description: &str) -> String {
    let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut depth = 0i32;
    let mut chars = flat.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '.' | ':' if depth <= 0 && chars.peek().is_none_or(|(_, next)| *next == ' ') => {
                return flat[..i].to_string();
            }
            _ => {}
        }
    }
    flat
}

/// `line` cut at a word boundary to at most `max` characters, `...` marking the cut.
fn at_most(line: String, max: usize) -> String {
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max.saturating_sub(3)).collect();
    let end = cut.rfind(' ').unwrap_or(cut.len());
    format!("{}...", cut[..end].trim_end_matches([',', ';', ' ']))
}

/// The longest description `--list` shows on a name's line.
const LISTED_WIDTH: usize = 110;

/// Every built-in scenario as `name  first sentence`, names aligned, long sentences cut; one
/// that does not parse says why.
pub fn listing() -> String {
    let width = names().map(str::len).max().unwrap_or(0);
    let mut out = String::new();
    for name in names() {
        let line = match load(name) {
            Some(Ok(scenario)) if scenario.description.trim().is_empty() => {
                "(no description)".to_string()
            }
            Some(Ok(scenario)) => at_most(one_line(&scenario.description), LISTED_WIDTH),
            Some(Err(e)) => format!("does not parse: {e}"),
            None => continue,
        };
        out.push_str(&format!("{name:width$}  {line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_in_the_scenarios_folder_is_built_in() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .expect("scenarios folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "toml"))
            .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(str::to_string))
            .collect();
        files.sort();
        assert_eq!(names().collect::<Vec<_>>(), files);
    }

    #[test]
    fn the_one_line_description_is_the_first_sentence() {
        assert_eq!(
            one_line("Pods lag 1.5 s\nbehind (see: below). Then more."),
            "Pods lag 1.5 s behind (see: below)"
        );
        assert_eq!(
            one_line("The \"time travel\" of a paper (OSDI '22): mid-run"),
            "The \"time travel\" of a paper (OSDI '22)"
        );
        assert_eq!(one_line("no end"), "no end");
    }

    #[test]
    fn a_long_sentence_is_cut_at_a_word() {
        assert_eq!(at_most("short".into(), 10), "short");
        assert_eq!(at_most("one two, three four".into(), 12), "one two...");
    }

    #[test]
    fn the_listing_has_a_line_for_each_scenario_with_its_description() {
        let listing = listing();
        assert_eq!(listing.lines().count(), names().count());
        for line in listing.lines() {
            let (name, rest) = line.split_once("  ").expect("name, then description");
            assert!(text(name.trim()).is_some(), "{line}");
            assert!(
                !rest.trim().is_empty() && !rest.contains("does not parse"),
                "{line}"
            );
        }
    }
}
