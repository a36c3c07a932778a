//! The process's own metrics on Linux, under the names every Prometheus
//! client library uses (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, ...), read from `/proc/self` at each
//! scrape (docs/operations.md, "Process metrics"). Elsewhere, or where a file
//! cannot be read, the series it would give are left out.
//!
//! CPU times in `/proc` are in the kernel's user-visible clock ticks
//! (`USER_HZ`), which is 100 on every architecture we build for (x86_64,
//! aarch64, armv7); memory is read in kB from `status`, so the page size
//! (4 KiB or 64 KiB on aarch64) does not matter.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Clock ticks per second of `/proc`'s times (`USER_HZ`).
const USER_HZ: f64 = 100.0;

/// The collector of the process metrics.
#[derive(Debug, Default)]
pub(super) struct ProcessCollector;

/// What one scrape read about the process (each part may be missing).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct ProcessSample {
    /// User and system CPU time, seconds.
    pub cpu_seconds: Option<f64>,
    /// Resident set size, bytes.
    pub resident_bytes: Option<f64>,
    /// Virtual memory size, bytes.
    pub virtual_bytes: Option<f64>,
    /// Open file descriptors.
    pub open_fds: Option<f64>,
    /// The soft limit of open file descriptors.
    pub max_fds: Option<f64>,
    /// Start time, seconds since the epoch.
    pub start_time_seconds: Option<f64>,
    /// Threads.
    pub threads: Option<f64>,
}

impl ProcessSample {
    /// Reads `/proc/self` (and `/proc/stat` for the boot time).
    pub fn read() -> Self {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let stat = read("/proc/self/stat");
        let status = read("/proc/self/status");
        let limits = read("/proc/self/limits");
        let boot = read("/proc/stat").as_deref().and_then(boot_time);
        let stat_fields = stat.as_deref().and_then(stat_fields);
        ProcessSample {
            cpu_seconds: stat_fields.map(|f| f.cpu_ticks as f64 / USER_HZ),
            resident_bytes: status.as_deref().and_then(|s| status_kb(s, "VmRSS:")),
            virtual_bytes: status.as_deref().and_then(|s| status_kb(s, "VmSize:")),
            threads: status
                .as_deref()
                .and_then(|s| status_value(s, "Threads:"))
                .map(|n| n as f64),
            open_fds: std::fs::read_dir("/proc/self/fd")
                .ok()
                .map(|d| d.count() as f64),
            max_fds: limits.as_deref().and_then(max_open_files),
            start_time_seconds: match (boot, stat_fields) {
                (Some(boot), Some(f)) => Some(boot as f64 + f.start_ticks as f64 / USER_HZ),
                _ => None,
            },
        }
    }
}

/// The fields of `/proc/self/stat` we use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct StatFields {
    /// `utime + stime`, in ticks.
    pub cpu_ticks: u64,
    /// `starttime`: ticks after boot.
    pub start_ticks: u64,
}

/// Parses `/proc/<pid>/stat`: the command name (field 2) is in parentheses
/// and may hold spaces and parentheses, so the fields are counted from the
/// last `)`. utime and stime are fields 14 and 15, starttime field 22.
pub(super) fn stat_fields(text: &str) -> Option<StatFields> {
    let rest = &text[text.rfind(')')? + 1..];
    // `rest` starts at field 3 (state).
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(StatFields {
        cpu_ticks: field(14)?.checked_add(field(15)?)?,
        start_ticks: field(22)?,
    })
}

/// A `Name:   value` line of `/proc/<pid>/status`, as a number.
fn status_value(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// A `Name:   N kB` line of `/proc/<pid>/status`, in bytes.
pub(super) fn status_kb(text: &str, name: &str) -> Option<f64> {
    status_value(text, name).map(|kb| kb as f64 * 1024.0)
}

/// The soft limit on the `Max open files` line of `/proc/<pid>/limits`
/// (`None` when unlimited).
pub(super) fn max_open_files(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line["Max open files".len()..].split_whitespace().next()?;
    soft.parse::<u64>().ok().map(|n| n as f64)
}

/// The `btime` line of `/proc/stat`: boot time, seconds since the epoch.
pub(super) fn boot_time(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("btime "))?;
    line["btime ".len()..].trim().parse().ok()
}

impl ProcessSample {
    /// Writes the series this sample has.
    fn encode(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if let Some(v) = self.cpu_seconds {
            let family = encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds",
                None,
                MetricType::Counter,
            )?;
            ConstCounter::new(v).encode(family)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                self.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes",
                self.virtual_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors",
                self.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors (the soft limit)",
                self.max_fds,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch in seconds",
                self.start_time_seconds,
            ),
            ("process_threads", "Number of OS threads", self.threads),
        ];
        for (name, help, value) in gauges {
            if let Some(v) = value {
                let family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
                ConstGauge::new(v).encode(family)?;
            }
        }
        Ok(())
    }
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        ProcessSample::read().encode(&mut encoder)
    }
}

/// `text` without the process metrics' lines, whose values change between
/// two scrapes (for tests that compare expositions byte for byte).
#[cfg(test)]
pub(crate) fn without_process_metrics(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|l| {
            !(l.starts_with("process_")
                || l.starts_with("# HELP process_")
                || l.starts_with("# TYPE process_")
                || l.starts_with("# UNIT process_"))
        })
        .collect()
}
