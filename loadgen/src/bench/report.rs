//! The markdown section PERF.md embeds: every measurement of a run as a table, Tidemark beside
//! the peer and beside the null client, and the targets met or missed.

use crate::bench::schema::{AgainstNull, BenchReport, Compared};

fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{:.0}", v)
    } else if v.abs() >= 10.0 {
        format!("{:.1}", v)
    } else {
        format!("{:.2}", v)
    }
}

fn peer(c: &Compared) -> String {
    c.peer.map_or_else(|| "not run".into(), num)
}

fn ratio(c: &Compared) -> String {
    c.ratio.map_or_else(|| "-".into(), |r| format!("{r:.2}x"))
}

fn row(out: &mut String, what: &str, c: &Compared) {
    out.push_str(&format!(
        "| {what} | {} | {} | {} |\n",
        num(c.tidemark),
        peer(c),
        ratio(c)
    ));
}

fn null_row(out: &mut String, pods: u64, what: &str, a: &AgainstNull) {
    out.push_str(&format!(
        "| {pods} | {what} | {} | {} | {} |\n",
        num(a.tidemark),
        num(a.null_client),
        a.times_the_null_client
            .map_or_else(|| "-".into(), |t| format!("{t:.2}x"))
    ));
}

/// Renders the report as markdown (no baseline comparison; see [`super::regression`]).
pub fn markdown(r: &BenchReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "Run of {} (profile `{}`, peer `{}`, {:.0} s in all) on {} cores, {:.1} GiB, kernel {}.\n\n`{}`\n\n",
        r.date,
        r.profile,
        r.peer,
        r.wall_seconds,
        r.machine.cores,
        r.machine.memory_bytes as f64 / (1u64 << 30) as f64,
        r.machine.kernel,
        r.command_line
    ));
    for note in &r.notes {
        out.push_str(&format!("- {note}\n"));
    }
    if !r.notes.is_empty() {
        out.push('\n');
    }
    out.push_str("Ratios read \"times better than the peer\".\n\n");
    out.push_str("### Initial sync\n\n| Pods | figure | Tidemark | kube-rs reflector | ratio |\n|---|---|---|---|---|\n");
    for s in &r.sync {
        for (what, c) in [
            ("sync_seconds", &s.sync_seconds),
            ("objects_per_second", &s.objects_per_second),
            ("bytes_per_object (RSS)", &s.bytes_per_object),
            ("bytes_per_object (jemalloc)", &s.jemalloc_bytes_per_object),
        ] {
            out.push_str(&format!("| {} ", s.pods));
            row(&mut out, what, c);
        }
    }
    out.push_str("\n### Steady churn (watch events end to end over HTTP)\n\n| Pods | figure | Tidemark | kube-rs reflector | ratio |\n|---|---|---|---|---|\n");
    for c in &r.churn {
        for (what, v) in [
            ("sustained events_per_second", &c.events_per_second),
            ("peak events_per_second", &c.peak_events_per_second),
            ("event-to-cache p50_us", &c.latency_p50_us),
            ("event-to-cache p99_us", &c.latency_p99_us),
            ("event-to-cache p999_us", &c.latency_p999_us),
        ] {
            out.push_str(&format!("| {} ", c.pods));
            row(&mut out, what, v);
        }
    }
    if !r.null_client.is_empty() {
        out.push_str("\n### Against the null client (the same list pages and watch bytes, read and thrown away)\n\nThe last column is Tidemark's cost in null-client units (1 is the floor; the issue asks for at most 2).\n\n| Pods | figure | Tidemark | null client | Tidemark / null |\n|---|---|---|---|---|\n");
        for n in &r.null_client {
            null_row(&mut out, n.pods, "sync_seconds", &n.sync_seconds);
            null_row(
                &mut out,
                n.pods,
                "sustained events_per_second",
                &n.sustained_events_per_second,
            );
            null_row(
                &mut out,
                n.pods,
                "peak events_per_second",
                &n.peak_events_per_second,
            );
        }
    }
    if !r.wire.is_empty() {
        out.push_str("\n### The sync over JSON and with Pods over protobuf\n\nTidemark and the null client each read the format; the reflector reads JSON in both rows.\n\n| Pods | wire | Tidemark s | null client s | Tidemark / null | reflector / Tidemark | jemalloc B/Pod | churn sustained, Tidemark / null events/s | peak, Tidemark / null events/s |\n|---|---|---|---|---|---|---|---|---|\n");
        for w in &r.wire {
            for (name, side) in [("JSON", &w.json), ("protobuf", &w.protobuf)] {
                let churn = |c: Option<AgainstNull>| {
                    c.map_or("-".to_string(), |c| {
                        format!("{} / {}", num(c.tidemark), num(c.null_client))
                    })
                };
                out.push_str(&format!(
                    "| {} | {name} | {:.3} | {:.3} | {} | {} | {:.0} | {} | {} |\n",
                    w.pods,
                    side.sync_seconds.tidemark,
                    side.sync_seconds.null_client,
                    side.sync_seconds
                        .times_the_null_client
                        .map_or("-".to_string(), |t| format!("{t:.2}x")),
                    side.peer_sync_ratio
                        .map_or("-".to_string(), |t| format!("{t:.2}x")),
                    side.jemalloc_bytes_per_object,
                    churn(side.sustained_events_per_second),
                    churn(side.peak_events_per_second),
                ));
            }
        }
    }
    for c in &r.churn {
        out.push_str(&format!(
            "\nRamp at {} Pods (offered -> delivered events/s, p99 us, kept up):\n\n| side | offered | delivered | p50_us | p99_us | p999_us | kept up |\n|---|---|---|---|---|---|---|\n",
            c.pods
        ));
        let null_steps = r
            .null_client
            .iter()
            .find(|n| n.pods == c.pods)
            .map(|n| &n.null_steps[..])
            .unwrap_or_default();
        for (side, steps) in [
            ("tidemark", &c.tidemark_steps[..]),
            ("kube-rs", &c.peer_steps[..]),
            ("null client", null_steps),
        ] {
            for s in steps {
                out.push_str(&format!(
                    "| {side} | {} | {} | {} | {} | {} | {} |\n",
                    num(s.offered_per_second),
                    num(s.events_per_second),
                    num(s.p50_us),
                    num(s.p99_us),
                    num(s.p999_us),
                    if s.kept_up { "yes" } else { "no" }
                ));
            }
        }
    }
    if let Some(rc) = &r.reconcile {
        out.push_str(&format!(
            "\n### Reconcile throughput (no-op reconciler, {} owner keys, {} Pods, concurrency {})\n\n| figure | Tidemark | kube-rs Controller | ratio |\n|---|---|---|---|\n",
            rc.keys, rc.pods, rc.concurrency
        ));
        row(&mut out, "reconciles_per_second", &rc.reconciles_per_second);
    }
    if let Some(w) = &r.wake {
        out.push_str(&format!(
            "\n### Stale-key wake latency ({} keys)\n\n| figure | park and wake | requeue with backoff from 5 ms | ratio |\n|---|---|---|---|\n",
            w.keys
        ));
        row(&mut out, "wake_p50_us", &w.wake_p50_us);
        row(&mut out, "wake_p99_us", &w.wake_p99_us);
    }
    if let Some(g) = &r.gate {
        out.push_str(&format!(
            "\n### Gate overhead ({} Pods, {} shards a side, {} pairs interleaved in one process)\n\nEach round applies one pre-decoded event per Pod (readiness flipped), moves the watermark and reconciles every owner; the two sides take turns on the same events.\n\n| figure | gate on | gate off | overhead |\n|---|---|---|---|\n| events_per_second (medians) | {} | {} | {:.1}% |\n| median of the pairs' overheads | | | {:.1}% |\n",
            g.pods,
            g.shards,
            g.pairs.len(),
            num(g.events_per_second.on),
            num(g.events_per_second.off),
            g.events_per_second.overhead_percent,
            g.overhead_percent,
        ));
        let each: Vec<String> = g
            .pairs
            .iter()
            .map(|p| format!("{:.1}", p.overhead_percent()))
            .collect();
        out.push_str(&format!(
            "\nEach pair's overhead, percent, in order: {}.\n",
            each.join(", ")
        ));
    }
    if !r.scale.is_empty() {
        out.push_str("\n### Scale curve (Tidemark)\n\n| Pods | sync_seconds | bytes_per_object | peak events_per_second |\n|---|---|---|---|\n");
        for p in &r.scale {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                p.pods,
                num(p.sync_seconds),
                num(p.bytes_per_object),
                num(p.events_per_second)
            ));
        }
    }
    if !r.targets.is_empty() {
        out.push_str("\n### Targets\n\n| target | wanted | this run | met |\n|---|---|---|---|\n");
        for t in &r.targets {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                t.name,
                t.target,
                t.value,
                match t.met {
                    Some(true) => "met",
                    Some(false) => "MISSED",
                    None => "not measured",
                }
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::schema::{Better, NullClientRun, SyncRun};

    #[test]
    fn the_markdown_shows_tidemark_beside_the_peer_with_the_ratio() {
        let r = BenchReport {
            sync: vec![SyncRun {
                pods: 1000,
                sync_seconds: Compared::new(1.0, Some(4.0), Better::Lower),
                ..SyncRun::default()
            }],
            ..BenchReport::default()
        };
        let md = markdown(&r);
        assert!(
            md.contains("| 1000 | sync_seconds | 1.00 | 4.00 | 4.00x |"),
            "{md}"
        );
        assert!(!md.contains("null client"), "{md}");
    }

    #[test]
    fn the_markdown_shows_tidemark_in_null_client_units() {
        let r = BenchReport {
            null_client: vec![NullClientRun {
                pods: 1000,
                sync_seconds: AgainstNull::new(3.0, 1.0, Better::Lower),
                peak_events_per_second: AgainstNull::new(20_000.0, 50_000.0, Better::Higher),
                ..NullClientRun::default()
            }],
            ..BenchReport::default()
        };
        let md = markdown(&r);
        assert!(
            md.contains("| 1000 | sync_seconds | 3.00 | 1.00 | 3.00x |"),
            "{md}"
        );
        assert!(
            md.contains("| 1000 | peak events_per_second | 20000 | 50000 | 2.50x |"),
            "{md}"
        );
    }
}
