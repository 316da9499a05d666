//! Booleans as Go's `strconv.ParseBool` reads them, for flags and `--feature-gates` values that
//! an operator copies from a kube-controller-manager command line.

/// A value `strconv.ParseBool` refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a boolean (1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False)")]
pub struct NotAGoBool(pub String);

/// Reads exactly the spellings Go accepts; `yes`, `on` and `TrUe` are errors there and here.
/// Surrounding whitespace is not trimmed (Go does not either).
pub fn parse_go_bool(text: &str) -> Result<bool, NotAGoBool> {
    match text {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(NotAGoBool(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_go_accepts_is_read() {
        for yes in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_go_bool(yes), Ok(true), "{yes}");
        }
        for no in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_go_bool(no), Ok(false), "{no}");
        }
    }

    #[test]
    fn spellings_go_refuses_are_errors_that_list_the_accepted_ones() {
        for bad in ["yes", "on", "TrUe", "", " true", "2"] {
            let err = parse_go_bool(bad).expect_err(bad);
            assert!(err.to_string().contains("TRUE, true, True"), "{err}");
        }
    }
}
