//! The families kube-controller-manager v1.36 exposes under these exact names and labels, so
//! its dashboards and alerts work unchanged: KEP-5647's `<controller>_stale_sync_skips_total`
//! (pkg/controller/*/metrics, labels `group`, `resource`) and client-go's
//! `informer_store_resource_version` (component-base `metrics/prometheus/clientgo`, labels
//! `name`, `group`, `version`, `resource`), client-go's `rest_client_*`, and
//! `leader_election_master_status`. Series exist only for resources a controller reads.

use super::{EncodeFigures, InformerFigures};
use crate::client::rest_metrics::{self, Latency, REQUEST_DURATION_BUCKETS};
use crate::manager::ManagerStats;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// The subsystem upstream's controller registers its stale-sync counter under; the node
/// lifecycle controller has none upstream.
fn subsystem(controller: &str) -> Option<&'static str> {
    match controller {
        "replicaset" => Some("replicaset_controller"),
        "statefulset" => Some("statefulset_controller"),
        "daemonset" => Some("daemonset_controller"),
        "job" => Some("job_controller"),
        _ => None,
    }
}

/// The `name` label of kube-controller-manager's informers (`cache.NewInformerName`).
pub const INFORMER_NAME: &str = "kube-controller-manager";

/// client-go exports the 15 least significant digits, so the value stays exact in a float.
fn last_15_digits(version: u64) -> i64 {
    (version % 1_000_000_000_000_000) as i64
}

fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

/// `<subsystem>_stale_sync_skips_total{group,resource}` for each running controller that has it.
pub fn encode_stale_sync_skips(
    stats: &ManagerStats,
    encoder: &mut DescriptorEncoder,
) -> std::fmt::Result {
    for c in &stats.controllers {
        let Some(sub) = subsystem(c.controller) else {
            continue;
        };
        let reads = stats
            .reads
            .iter()
            .find(|(name, _)| *name == c.controller)
            .map_or(&[][..], |(_, r)| r.as_slice());
        let name = format!("{sub}_stale_sync_skips");
        let help = format!(
            "Total number of {} syncs skipped due to a stale watch cache.",
            kind_of(c.controller)
        );
        let mut family = encoder.encode_descriptor(&name, &help, None, MetricType::Counter)?;
        for (resource, n) in c.stale_sync_skips_by_resource.iter() {
            if !reads.contains(&resource) {
                continue;
            }
            let set = [("group", resource.group()), ("resource", resource.plural())];
            family.encode_family(&set)?.count(n)?;
        }
    }
    Ok(())
}

fn kind_of(controller: &str) -> &'static str {
    match controller {
        "replicaset" => "ReplicaSet",
        "statefulset" => "StatefulSet",
        "daemonset" => "DaemonSet",
        "job" => "Job",
        _ => "controller",
    }
}

/// `informer_store_resource_version{name,group,version,resource}`.
pub fn encode_store_resource_version(
    informers: &[InformerFigures],
    encoder: &mut DescriptorEncoder,
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(
        "informer_store_resource_version",
        "The 15 least significant digits of the resource version of the store.",
        None,
        MetricType::Gauge,
    )?;
    for i in informers {
        let set = [
            ("name", INFORMER_NAME),
            ("group", i.resource.group()),
            ("version", version_of(i.resource.api_version())),
            ("resource", i.resource.plural()),
        ];
        family
            .encode_family(&set)?
            .encode_gauge(&last_15_digits(i.watermark))?;
    }
    Ok(())
}

/// `leader_election_master_status{name}`, registered only with leader election, as upstream.
pub fn encode_leader(
    stats: &ManagerStats,
    lease: &str,
    encoder: &mut DescriptorEncoder,
) -> std::fmt::Result {
    if !stats.leader_election {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
        None,
        MetricType::Gauge,
    )?;
    family
        .encode_family(&[("name", lease)])?
        .encode_gauge(&i64::from(stats.leader))?;
    Ok(())
}

/// `rest_client_requests_total{code,method,host}` and
/// `rest_client_request_duration_seconds{verb,host}`.
pub fn encode_rest_client(encoder: &mut DescriptorEncoder) -> std::fmt::Result {
    let figures = rest_metrics::snapshot();
    {
        let mut family = encoder.encode_descriptor(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            None,
            MetricType::Counter,
        )?;
        for ((code, method, host), n) in &figures.requests {
            let set = [
                ("code", code.as_str()),
                ("method", method.as_str()),
                ("host", host.as_str()),
            ];
            family.encode_family(&set)?.count(n)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "rest_client_request_duration_seconds",
        "Request latency in seconds. Broken down by verb, and host.",
        None,
        MetricType::Histogram,
    )?;
    for ((verb, host), l) in &figures.latency {
        let set = [("verb", verb.as_str()), ("host", host.as_str())];
        encode_latency(&mut family.encode_family(&set)?, l)?;
    }
    Ok(())
}

/// One histogram in client-go's request buckets.
pub fn encode_latency(metric: &mut MetricEncoder, l: &Latency) -> std::fmt::Result {
    let mut buckets: Vec<(f64, u64)> = REQUEST_DURATION_BUCKETS
        .iter()
        .copied()
        .zip(l.per_bucket.iter().copied())
        .collect();
    buckets.push((f64::INFINITY, l.per_bucket[REQUEST_DURATION_BUCKETS.len()]));
    metric.encode_histogram::<NoLabelSet>(l.sum, l.count, &buckets, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_version_keeps_its_last_15_digits_and_a_version_its_version() {
        assert_eq!(
            last_15_digits(1_234_567_890_123_456_789),
            567_890_123_456_789
        );
        assert_eq!(last_15_digits(42), 42);
        assert_eq!(version_of("apps/v1"), "v1");
        assert_eq!(version_of("v1"), "v1");
    }
}
