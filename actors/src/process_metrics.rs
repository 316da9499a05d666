//! The standard `process_*` metrics (as the Prometheus client libraries export them), read from
//! `/proc/self` at each scrape. Absent on systems without procfs.

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

/// Clock ticks per second of `/proc/self/stat` (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;
/// Bytes per page in `rss` (4 KiB on the platforms we run on).
const PAGE_BYTES: u64 = 4096;

/// What `/proc` tells about this process.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessFigures {
    /// User and system CPU time, in seconds.
    pub cpu_seconds: f64,
    /// Resident memory, in bytes.
    pub resident_bytes: u64,
    /// Virtual memory, in bytes.
    pub virtual_bytes: u64,
    /// Start time, in seconds since the Unix epoch.
    pub start_time_seconds: f64,
    /// Threads.
    pub threads: u64,
    /// Open file descriptors.
    pub open_fds: u64,
}

/// Parses `/proc/self/stat` (and the boot time from `/proc/stat`).
pub fn parse(stat: &str, boot_time_seconds: f64, open_fds: u64) -> Option<ProcessFigures> {
    // The command name is in parentheses and may contain spaces: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state); field n is at index n - 3.
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    Some(ProcessFigures {
        cpu_seconds: (field(14)? + field(15)?) as f64 / TICKS_PER_SECOND,
        threads: field(20)?,
        start_time_seconds: boot_time_seconds + field(22)? as f64 / TICKS_PER_SECOND,
        virtual_bytes: field(23)?,
        resident_bytes: field(24)? * PAGE_BYTES,
        open_fds,
    })
}

fn read() -> Option<ProcessFigures> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let boot = std::fs::read_to_string("/proc/stat").ok()?;
    let boot_time = boot
        .lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse::<f64>().ok())?;
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    parse(&stat, boot_time, fds)
}

/// Encodes the process metrics, if `/proc` can be read.
pub fn encode(encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let Some(p) = read() else {
        return Ok(());
    };
    encoder
        .encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            None,
            MetricType::Counter,
        )?
        .encode_counter::<NoLabelSet, _, u64>(&p.cpu_seconds, None)?;
    let gauges: [(&str, &str, f64); 5] = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            p.resident_bytes as f64,
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes",
            p.virtual_bytes as f64,
        ),
        (
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds",
            p.start_time_seconds,
        ),
        (
            "process_threads",
            "Number of OS threads in the process",
            p.threads as f64,
        ),
        (
            "process_open_fds",
            "Number of open file descriptors",
            p.open_fds as f64,
        ),
    ];
    for (name, help, value) in gauges {
        encoder
            .encode_descriptor(name, help, None, MetricType::Gauge)?
            .encode_gauge(&value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_spaces_in_the_command_name_parses() {
        let stat = "4242 (tide mark) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 7 0 12000 104857600 2560 18446744073709551615";
        let p = parse(stat, 1_700_000_000.0, 12).expect("parses");
        assert_eq!(p.cpu_seconds, 3.0);
        assert_eq!(p.threads, 7);
        assert_eq!(p.start_time_seconds, 1_700_000_120.0);
        assert_eq!(p.virtual_bytes, 104_857_600);
        assert_eq!(p.resident_bytes, 2560 * 4096);
        assert_eq!(p.open_fds, 12);
    }

    #[test]
    fn this_process_reports_itself() {
        let p = read().expect("procfs is there on Linux");
        assert!(p.resident_bytes > 0 && p.threads >= 1 && p.open_fds >= 1);
    }
}
