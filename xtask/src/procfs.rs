//! Reading `/proc`: the one place xtask looks at a process's status, CPU
//! time, threads and command line (Linux only, like the rest of xtask).
//!
//! The `parse_*` functions take the text of a `/proc` file so they can be
//! tested on fixed input; the others read the files of a live process.

use std::collections::BTreeMap;
use std::fs;

use anyhow::{Context, Result};

/// The text of `/proc/<pid>/status`.
pub fn status(pid: u32) -> Result<String> {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))
}

/// The value of the line starting with `key` (e.g. `"VmRSS:"`) in a
/// `/proc/<pid>/status` text, trimmed (e.g. `"465872 kB"`).
pub fn status_value<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
}

/// A `kB` value of a `/proc/<pid>/status` text, in KiB.
fn status_kib(text: &str, key: &str) -> Option<u64> {
    status_value(text, key)?
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()
}

/// `VmRSS` and `VmHWM` (KiB) from a `/proc/PID/status` text.
pub fn parse_status(text: &str) -> Option<(u64, u64)> {
    Some((status_kib(text, "VmRSS:")?, status_kib(text, "VmHWM:")?))
}

/// The text of `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Result<String> {
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))
}

/// The fields of a `/proc/PID/stat` text from field 3 (state) on. The
/// command name (field 2) may hold spaces and parentheses, so fields are
/// counted after its last `)`.
fn stat_fields(text: &str) -> Option<Vec<&str>> {
    let (_, rest) = text.rsplit_once(')')?;
    Some(rest.split_whitespace().collect())
}

/// The state letter (field 3) of a `/proc/PID/stat` text: `R`, `S`, `Z`, ...
pub fn parse_stat_state(text: &str) -> Option<&str> {
    stat_fields(text)?.first().copied()
}

/// `utime + stime` (fields 14 and 15) from a `/proc/PID/stat` text.
pub fn parse_stat_cpu(text: &str) -> Option<u64> {
    let fields = stat_fields(text)?;
    // The fields start at field 3 (state): utime is field 14, index 11 here.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// True if `pid` exists and is not a zombie (an unreaped, exited child).
pub fn is_running(pid: u32) -> bool {
    let Ok(text) = stat(pid) else {
        return false;
    };
    !matches!(parse_stat_state(&text), None | Some("Z") | Some("X"))
}

/// The NUL-separated arguments of `/proc/<pid>/cmdline`, or `None` if the
/// process is gone.
pub fn cmdline(pid: u32) -> Option<Vec<Vec<u8>>> {
    let bytes = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(bytes.split(|b| *b == 0).map(<[u8]>::to_vec).collect())
}

/// `se.sum_exec_runtime` (ms) from a `/proc/PID/task/TID/sched` text.
pub fn parse_sched_runtime(text: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "se.sum_exec_runtime").then(|| v.trim().parse().ok())?
    })
}

/// Per live thread of `pid`: `se.sum_exec_runtime` (ms) from
/// `/proc/PID/task/*/sched`; empty if the process is gone.
pub fn threads_cpu_ms(pid: u32) -> BTreeMap<u32, f64> {
    let mut out = BTreeMap::new();
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(tid) = entry.file_name().to_str().and_then(|t| t.parse().ok()) else {
            continue;
        };
        if let Some(ms) = fs::read_to_string(entry.path().join("sched"))
            .ok()
            .as_deref()
            .and_then(parse_sched_runtime)
        {
            out.insert(tid, ms);
        }
    }
    out
}

/// The 1, 5 and 15 minute load averages of `/proc/loadavg`, or `"?"`.
pub fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_stat_are_parsed() {
        let status = "Name:\tjava\nVmHWM:\t  466628 kB\nVmRSS:\t  465872 kB\n";
        assert_eq!(parse_status(status), Some((465_872, 466_628)));
        assert_eq!(status_value(status, "VmRSS:"), Some("465872 kB"));
        // A command name with spaces and a parenthesis.
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 100 0 0 0 700 64 0 0 20 0 30 0";
        assert_eq!(parse_stat_cpu(stat), Some(764));
        assert_eq!(parse_stat_state(stat), Some("S"));
        assert_eq!(parse_stat_cpu("42 (x) S 1"), None);
        let sched = "java (42, #threads: 1)\n---\nse.exec_start : 1.5\nse.sum_exec_runtime   :   206.047568\n";
        assert_eq!(parse_sched_runtime(sched), Some(206.047568));
    }

    #[test]
    fn this_process_is_running_and_has_a_command_line() {
        let me = std::process::id();
        assert!(is_running(me));
        assert!(!is_running(u32::MAX));
        assert!(cmdline(me).is_some_and(|args| !args.is_empty()));
        assert!(parse_status(&status(me).unwrap()).is_some());
        assert!(parse_stat_cpu(&stat(me).unwrap()).is_some());
    }
}
