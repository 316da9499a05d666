//! Tidemark's client settings on top of any configuration: its user agent, and kube-rs'
//! automatic retries off.

/// Identifies Tidemark's requests (`User-Agent: tidemark/<version>`, with ` (<identity>)`
/// when leader election names this process), so API server audit logs and the loadgen oracle
/// can tell its writes from everyone else's, and one manager's from another's. Turns kube-rs'
/// default retries off: it retries 429/503/504 writes included, and a create whose `504` hid
/// a success would be sent again (a second Pod from `generateName`). Tidemark retries through
/// its own queue, after a barrier when an outcome is unknown.
pub fn with_user_agent(mut config: kube::Config, identity: Option<&str>) -> kube::Config {
    let base = concat!("tidemark/", env!("CARGO_PKG_VERSION"));
    let agent = match identity {
        Some(id) => {
            let id: String = id
                .chars()
                .filter(|c| c.is_ascii_graphic() && !matches!(c, '(' | ')'))
                .collect();
            format!("{base} ({id})")
        }
        None => base.to_string(),
    };
    let value = http::HeaderValue::from_str(&agent)
        .unwrap_or_else(|_| http::HeaderValue::from_static(base));
    config.headers.push((http::header::USER_AGENT, value));
    config.default_retry = false;
    config
}
