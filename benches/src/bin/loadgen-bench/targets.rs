//! The targets, checked against a run (the criterion in-process figure is checked in
//! PERF.md from `cargo bench`, not here).

use tidemark_loadgen::bench::schema::{AgainstNull, BenchReport, NullClientRun, TargetCheck};

fn check(name: &str, target: &str, value: Option<(String, bool)>) -> TargetCheck {
    TargetCheck {
        name: name.into(),
        target: target.into(),
        value: value.as_ref().map_or_else(|| "-".into(), |v| v.0.clone()),
        met: value.map(|v| v.1),
    }
}

/// Every target with this run's figure.
pub fn all(r: &BenchReport) -> Vec<TargetCheck> {
    let largest = r.sync.iter().max_by_key(|s| s.pods);
    let largest_peer = r
        .sync
        .iter()
        .filter(|s| s.sync_seconds.peer.is_some())
        .max_by_key(|s| s.pods);
    let million = r.sync.iter().find(|s| s.pods >= 1_000_000);
    let churn = r.churn.iter().max_by_key(|c| c.pods);
    let null = r.null_client.iter().max_by_key(|n| n.pods);
    let wire = r.wire.iter().max_by_key(|w| w.pods);
    let wire_peer = r
        .wire
        .iter()
        .filter(|w| w.protobuf.peer_sync_ratio.is_some())
        .max_by_key(|w| w.pods);
    let within_twice = |what: fn(&NullClientRun) -> &AgainstNull| {
        null.and_then(|n| {
            what(n)
                .times_the_null_client
                .map(|x| (format!("{x:.2}x at {} Pods", n.pods), x <= 2.0))
        })
    };
    let mut out = vec![
        check(
            "sync of 1,000,000 Pods, JSON",
            "< 20 s",
            million.map(|s| {
                (
                    format!("{:.1} s", s.sync_seconds.tidemark),
                    s.sync_seconds.tidemark < 20.0,
                )
            }),
        ),
        check(
            "sync of 1,000,000 Pods with Pods over protobuf",
            "< 10 s",
            r.wire.iter().find(|w| w.pods >= 1_000_000).map(|w| {
                let t = w.protobuf.sync_seconds.tidemark;
                (format!("{t:.1} s"), t < 10.0)
            }),
        ),
        check(
            "sync against the kube-rs reflector, JSON against JSON",
            ">= 5x faster",
            largest_peer.and_then(|s| {
                s.sync_seconds
                    .ratio
                    .map(|x| (format!("{x:.1}x at {} Pods", s.pods), x >= 5.0))
            }),
        ),
        check(
            "cache bytes per Pod, Pods and their owners (jemalloc allocated)",
            "<= 600 B",
            largest.map(|s| {
                (
                    format!(
                        "{:.0} B at {} Pods (RSS: {:.0} B)",
                        s.jemalloc_bytes_per_object.tidemark, s.pods, s.bytes_per_object.tidemark
                    ),
                    s.jemalloc_bytes_per_object.tidemark <= 600.0,
                )
            }),
        ),
        check(
            "cache bytes per Pod against the reflector (jemalloc allocated)",
            ">= 50x less",
            largest_peer.and_then(|s| {
                s.jemalloc_bytes_per_object
                    .ratio
                    .map(|x| (format!("1/{x:.0} at {} Pods", s.pods), x >= 50.0))
            }),
        ),
        check(
            "steady churn end to end over HTTP, JSON",
            ">= 80,000 events/s",
            churn.map(|c| {
                (
                    format!(
                        "{:.0} sustained, {:.0} peak at {} Pods",
                        c.events_per_second.tidemark, c.peak_events_per_second.tidemark, c.pods
                    ),
                    c.events_per_second.tidemark >= 80_000.0,
                )
            }),
        ),
        check(
            "steady churn end to end over HTTP, Pods over protobuf",
            ">= 150,000 events/s",
            wire.and_then(|w| {
                let sustained = w.protobuf.sustained_events_per_second?;
                let peak = w.protobuf.peak_events_per_second?;
                Some((
                    format!(
                        "{:.0} sustained, {:.0} peak at {} Pods",
                        sustained.tidemark, peak.tidemark, w.pods
                    ),
                    sustained.tidemark >= 150_000.0,
                ))
            }),
        ),
        check(
            "sync against the null client (the same reads, thrown away)",
            "<= 2x its time",
            within_twice(|n| &n.sync_seconds),
        ),
        check(
            "sync with Pods over protobuf against the null client reading protobuf",
            "<= 2x its time",
            wire.and_then(|w| {
                w.protobuf
                    .sync_seconds
                    .times_the_null_client
                    .map(|x| (format!("{x:.2}x at {} Pods", w.pods), x <= 2.0))
            }),
        ),
        check(
            "sync with Pods over protobuf against the kube-rs reflector (JSON)",
            ">= 10x faster",
            wire_peer.and_then(|w| {
                w.protobuf
                    .peer_sync_ratio
                    .map(|x| (format!("{x:.1}x at {} Pods", w.pods), x >= 10.0))
            }),
        ),
        check(
            "peak churn against the null client",
            "<= 2x its cost (its rate / Tidemark's)",
            within_twice(|n| &n.peak_events_per_second),
        ),
        check(
            "reconcile throughput against kube-rs Controller",
            ">= 5x",
            r.reconcile.as_ref().and_then(|rc| {
                rc.reconciles_per_second
                    .ratio
                    .map(|x| (format!("{x:.1}x"), x >= 5.0))
            }),
        ),
        check(
            "stale-key wake p99",
            "< 1 ms (backoff strategy beside it)",
            r.wake.as_ref().map(|w| {
                (
                    format!(
                        "{:.0} us (backoff: {:.0} us)",
                        w.wake_p99_us.tidemark,
                        w.wake_p99_us.peer.unwrap_or(0.0)
                    ),
                    w.wake_p99_us.tidemark < 1000.0,
                )
            }),
        ),
    ];
    if let Some(g) = &r.gate {
        out.push(check(
            "gate overhead, on/off interleaved in one process",
            "< 3% (median of >= 10 pairs)",
            Some((
                format!(
                    "{:.1}% ({} pairs at {} Pods)",
                    g.overhead_percent,
                    g.pairs.len(),
                    g.pods
                ),
                g.overhead_percent < 3.0 && g.pairs.len() >= 10,
            )),
        ));
    }
    let spread = |values: Vec<f64>| -> Option<f64> {
        let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (values.len() >= 2 && lo > 0.0).then(|| hi / lo - 1.0)
    };
    let sizes = || {
        r.scale
            .iter()
            .map(|p| p.pods.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push(check(
        "bytes per Pod across sizes",
        "within 20%",
        spread(r.scale.iter().map(|p| p.bytes_per_object).collect())
            .map(|s| (format!("{:.0}% apart ({})", s * 100.0, sizes()), s <= 0.2)),
    ));
    out.push(check(
        "events/s across sizes",
        "within 20%",
        spread(r.scale.iter().map(|p| p.events_per_second).collect())
            .map(|s| (format!("{:.0}% apart ({})", s * 100.0, sizes()), s <= 0.2)),
    ));
    out
}
