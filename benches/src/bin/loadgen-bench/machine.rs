//! The machine (cores, memory, kernel) and the process's memory: RSS from `/proc/self/statm`,
//! jemalloc's own `stats.allocated` and `stats.resident` beside it.

use tidemark_loadgen::bench::schema::Machine;

/// The machine the bench runs on.
pub fn machine() -> Machine {
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    Machine {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes,
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
    }
}

/// One reading of the process's memory, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// Resident set size.
    pub rss: u64,
    /// Bytes the program holds (jemalloc `stats.allocated`).
    pub allocated: u64,
    /// Bytes in pages jemalloc keeps resident (`stats.resident`).
    pub resident: u64,
}

fn page_size() -> u64 {
    // statm counts pages; every Linux target the bench runs on uses 4 KiB pages.
    4096
}

/// Reads the memory now (advancing jemalloc's stats epoch first).
pub fn memory() -> Memory {
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * page_size());
    let allocated = tidemark_benches::jemalloc_allocated();
    Memory {
        rss,
        allocated,
        resident: tikv_jemalloc_ctl::stats::resident::read().map_or(0, |v| v as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_has_cores_and_memory() {
        let m = machine();
        assert!(m.cores >= 1);
        assert!(m.memory_bytes > 0);
    }

    #[test]
    fn rss_is_read_from_statm() {
        assert!(memory().rss > 0);
    }
}
