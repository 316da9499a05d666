//! The text form of a label selector, as `kubectl -l`, the `labelSelector` query parameter and
//! `--node-selector` write it (`app=web,tier in (a,b),env!=prod,owner,!legacy`), read into the
//! API's [`LabelSelector`] so one matcher serves both forms. The simulated API server keeps its
//! own reading of the same syntax on purpose: loadgen depends on no engine code, so it judges the
//! engine instead of sharing its mistakes.

use crate::labels::{LabelSelector, Requirement};

/// Why a selector's text was refused; the message is the API server's wording.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: {why} in selector \"{selector}\"")]
pub struct LabelSyntaxError {
    /// The whole selector.
    pub selector: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of up to 63 characters.
fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

/// A label value: empty, or up to 63 alphanumerics, `-`, `_` and `.`.
fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Splits `key <word> rest` where `<word>` stands apart (whitespace before, whitespace or `(`
/// after).
fn split_word<'a>(p: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    let mut search = 0;
    while let Some(i) = p[search..].find(word) {
        let at = search + i;
        let before = p[..at].chars().last();
        let after = p[at + word.len()..].chars().next();
        if before.is_some_and(char::is_whitespace)
            && after.is_some_and(|c| c.is_whitespace() || c == '(')
        {
            return Some((p[..at].trim(), &p[at + word.len()..]));
        }
        search = at + word.len();
    }
    None
}

fn requirement(key: &str, operator: &str, values: Vec<String>) -> Requirement {
    Requirement {
        key: key.to_string(),
        operator: operator.to_string(),
        values,
    }
}

impl LabelSelector {
    /// Reads the text form. Every requirement becomes a `matchExpressions` entry (`a=x` is
    /// `In [x]`, `a!=x` is `NotIn [x]`, true when the label is absent, as upstream), so a key
    /// may be named twice. Empty text selects everything.
    ///
    /// ```
    /// use tidemark_engine::labels::{LabelSelector, Labels};
    ///
    /// let canary = LabelSelector::parse("pool=canary,zone notin (eu-1)")?;
    /// let labels = |pairs: &[(&str, &str)]| {
    ///     Labels::from_map(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    /// };
    /// assert!(canary.matches(&labels(&[("pool", "canary")])));
    /// assert!(!canary.matches(&labels(&[("pool", "canary"), ("zone", "eu-1")])));
    /// assert!(LabelSelector::parse("pool in canary").is_err());
    /// # Ok::<(), tidemark_engine::label_syntax::LabelSyntaxError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, LabelSyntaxError> {
        let bad = |why| LabelSyntaxError {
            selector: text.to_string(),
            why,
        };
        let mut selector = LabelSelector::default();
        if text.trim().is_empty() {
            return Ok(selector);
        }
        for part in split_top_level(text) {
            let p = part.trim();
            if p.is_empty() {
                return Err(bad("empty requirement"));
            }
            let (key, operator, values) = if let Some(key) = p.strip_prefix('!') {
                (key.trim(), "DoesNotExist", Vec::new())
            } else if let Some((k, v)) = p.split_once("!=") {
                (k.trim(), "NotIn", vec![v.trim().to_string()])
            } else if let Some((k, v)) = p.split_once("==").or_else(|| p.split_once('=')) {
                (k.trim(), "In", vec![v.trim().to_string()])
            } else if let Some((k, rest)) = split_word(p, "notin") {
                (
                    k,
                    "NotIn",
                    parse_set(rest)
                        .ok_or_else(|| bad("expected a parenthesised set of valid values"))?,
                )
            } else if let Some((k, rest)) = split_word(p, "in") {
                (
                    k,
                    "In",
                    parse_set(rest)
                        .ok_or_else(|| bad("expected a parenthesised set of valid values"))?,
                )
            } else {
                (p, "Exists", Vec::new())
            };
            if !valid_key(key) {
                return Err(bad("invalid label key"));
            }
            if !values.iter().all(|v| valid_value(v)) {
                return Err(bad("invalid label value"));
            }
            selector
                .match_expressions
                .push(requirement(key, operator, values));
        }
        Ok(selector)
    }

    /// True when it selects everything.
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }
}

/// `(a, b)`: the values, or `None` when the parentheses or a value are wrong.
fn parse_set(rest: &str) -> Option<Vec<String>> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    inner
        .split(',')
        .map(|v| {
            let v = v.trim();
            valid_value(v).then(|| v.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::labels;

    fn operators(s: &LabelSelector) -> Vec<(&str, &str, Vec<&str>)> {
        s.match_expressions
            .iter()
            .map(|r| {
                (
                    r.key.as_str(),
                    r.operator.as_str(),
                    r.values.iter().map(String::as_str).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn equality_inequality_and_double_equals_read_as_in_and_notin() {
        let s = LabelSelector::parse("app=web, tier==front,env!=prod").expect("parses");
        assert_eq!(
            operators(&s),
            vec![
                ("app", "In", vec!["web"]),
                ("tier", "In", vec!["front"]),
                ("env", "NotIn", vec!["prod"]),
            ]
        );
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!s.matches(&labels(&[
            ("app", "web"),
            ("tier", "front"),
            ("env", "prod")
        ])));
    }

    #[test]
    fn set_based_requirements_and_existence_read_as_the_api_operators() {
        let s = LabelSelector::parse("app in (web, api),env notin (prod),owner,!legacy")
            .expect("parses");
        assert_eq!(
            operators(&s),
            vec![
                ("app", "In", vec!["web", "api"]),
                ("env", "NotIn", vec!["prod"]),
                ("owner", "Exists", vec![]),
                ("legacy", "DoesNotExist", vec![]),
            ]
        );
        assert!(s.matches(&labels(&[("app", "api"), ("owner", "me")])));
        assert!(!s.matches(&labels(&[("app", "api"), ("owner", "me"), ("legacy", "1")])));
    }

    #[test]
    fn empty_text_selects_everything_and_a_key_named_twice_must_hold_both_times() {
        assert!(
            LabelSelector::parse("  ")
                .expect("parses")
                .matches(&labels(&[("a", "b")]))
        );
        let never = LabelSelector::parse("a=x,a=y").expect("parses");
        assert!(!never.matches(&labels(&[("a", "x")])));
    }

    #[test]
    fn malformed_text_is_refused_with_the_api_servers_wording() {
        for bad in [
            "a=b,,c=d",
            "a in b",
            "a in (b",
            "!",
            "a=b c",
            "in (x)",
            "x notin (a b)",
        ] {
            let e = LabelSelector::parse(bad).expect_err("refused");
            assert!(
                e.to_string().starts_with("unable to parse requirement"),
                "{bad}: {e}"
            );
        }
    }
}
