//! The Prometheus text format 0.0.4 from prometheus-client's OpenMetrics rendering: what
//! kube-controller-manager serves unless a scraper asks for OpenMetrics, and what
//! `promtool check metrics` reads. The two differ in a counter's family name (`x` with samples
//! `x_total` in OpenMetrics, `x_total` throughout in 0.0.4), `# UNIT` lines and the `# EOF`
//! terminator.

/// The content type of the text format.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// The content type of OpenMetrics.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Whether an `Accept` header asks for OpenMetrics.
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.contains("application/openmetrics-text"))
}

/// Rewrites an OpenMetrics exposition as text format 0.0.4.
pub fn to_text_format(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut pending_help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if line.starts_with("# HELP ") {
            // The family's name depends on its TYPE line, which follows.
            if let Some(help) = pending_help.replace(line) {
                push(&mut out, help);
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some((name, kind)) = rest.split_once(' ')
        {
            let renamed = if kind == "counter" && !name.ends_with("_total") {
                format!("{name}_total")
            } else {
                name.to_string()
            };
            if let Some(help) = pending_help.take() {
                let text = help
                    .strip_prefix("# HELP ")
                    .and_then(|h| h.split_once(' '))
                    .map_or("", |(_, text)| text);
                push(&mut out, &format!("# HELP {renamed} {text}"));
            }
            push(&mut out, &format!("# TYPE {renamed} {kind}"));
            continue;
        }
        if let Some(help) = pending_help.take() {
            push(&mut out, help);
        }
        push(&mut out, line);
    }
    if let Some(help) = pending_help {
        push(&mut out, help);
    }
    out
}

fn push(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_family_takes_its_samples_name_and_the_terminator_goes() {
        let om = "# HELP workqueue_adds Total number of adds\n# TYPE workqueue_adds counter\n\
                  workqueue_adds_total{name=\"rs\"} 3\n# HELP g A gauge\n# TYPE g gauge\n\
                  # UNIT g seconds\ng 1.0\n# EOF\n";
        assert_eq!(
            to_text_format(om),
            "# HELP workqueue_adds_total Total number of adds\n# TYPE workqueue_adds_total counter\n\
             workqueue_adds_total{name=\"rs\"} 3\n# HELP g A gauge\n# TYPE g gauge\ng 1.0\n"
        );
    }

    #[test]
    fn openmetrics_is_served_only_when_asked_for() {
        assert!(wants_openmetrics(Some(
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
        )));
        assert!(!wants_openmetrics(Some("text/plain")));
        assert!(!wants_openmetrics(None));
    }
}
