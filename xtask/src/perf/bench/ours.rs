//! Our side: the release binary as `mm2-checkpoint run`, timed by its metrics
//! endpoint, and as `run --once` for the catch-up.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::logs::{ours_first_round_ms, ours_offsets_replay, ours_sync_read_ms};
use super::process::{Guard, scrape, scrape_rounds_and_requests};
use super::report::RunResult;
use super::side_by_side::{Bench, Flow, SETTLE};

impl Bench {
    fn ours_config(&self, dir: &Path, flow: &Flow) -> Result<PathBuf> {
        fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("mm2.properties");
        let (s, t, sb, tb, common) = self.names(flow);
        let security = match &flow.security {
            Some(sec) => format!(
                "{}{}",
                sec.source.prefixed(&format!("{s}.")),
                sec.target.prefixed(&format!("{t}."))
            ),
            None => String::new(),
        };
        fs::write(
            &path,
            format!(
                "clusters = {s}, {t}\n\
                 {s}.bootstrap.servers = {sb}\n\
                 {t}.bootstrap.servers = {tb}\n\
                 {s}->{t}.enabled = true\n\
                 {security}\
                 {common}",
            ),
        )
        .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// A command that runs our binary, through its emulator if it has one.
    fn ours_command(&self) -> Command {
        match &self.launcher {
            Some(emulator) => {
                let mut cmd = Command::new(emulator);
                cmd.arg(&self.bin);
                cmd
            }
            None => Command::new(&self.bin),
        }
    }

    /// `mm2-checkpoint run` for `flow`, files in `dir`, with its metrics
    /// server on a free port; the guard and that port's address.
    pub(super) fn spawn_ours(&self, flow: &Flow, dir: &Path) -> Result<(Guard, String)> {
        let config = self.ours_config(dir, flow)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .context("picking a free port for the metrics server")?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut cmd = self.ours_command();
        cmd.args([
            "run",
            "--log-format",
            "json",
            "--metrics-addr",
            &addr,
            "--config",
        ])
        .arg(&config);
        let proc = Guard::spawn(cmd, "mm2-checkpoint run", &dir.join("daemon.log"))?;
        Ok((proc, addr))
    }

    pub(super) fn run_ours(&self, flow: &Flow, label: &str) -> Result<RunResult> {
        let dir = self.dir.join(label).join("ours");
        self.prepare_target(flow)?;
        let (mut proc, addr) = self.spawn_ours(flow, &dir)?;
        eprintln!(
            "bench: {label}: mm2-checkpoint started (pid {})",
            proc.pid()
        );
        // Not scraped while the first round runs: at 1,000,000 latency series
        // every scrape renders ~150 MB of text on the daemon's CPU.
        let seen = self.await_checkpoints(flow, &mut proc)?;
        let (first, all, stamps) = match seen {
            Ok(seen) => seen,
            Err((first, incomplete)) => return Ok(RunResult::incomplete(first, incomplete)),
        };
        let synced = self.await_group_sync(flow, &mut proc)?;
        // The first emitting round's duration from our log's `emission round
        // done` line (the time the round histogram observes); failing that,
        // the histogram if it holds one round only.
        let first_round = ours_first_round_ms(&proc.log_text())
            .map(|ms| ms as f64 / 1e3)
            .or_else(|| match scrape(&addr) {
                Some((sum, 1)) => Some(sum),
                _ => None,
            });
        std::thread::sleep(SETTLE);
        let (m0, r0) = scrape_rounds_and_requests(&addr);
        let (a, b) = self.window(&mut proc)?;
        let (m1, r1) = scrape_rounds_and_requests(&addr);
        let (rounds, steady) = match (m0, m1) {
            (Some((s0, c0)), Some((s1, c1))) if c1 > c0 => {
                let n = (c1 - c0) as f64;
                (n, Some((s1 - s0) / n))
            }
            _ => (0.0, None),
        };
        let requests_per_round = if rounds > 0.0 {
            r1.iter()
                .map(|((cluster, api), n)| {
                    let before = r0
                        .get(&(cluster.clone(), api.clone()))
                        .copied()
                        .unwrap_or(0);
                    // The run's aliases differ per run: name the role.
                    let side = if *cluster == flow.source_alias {
                        "source"
                    } else if *cluster == flow.target_alias {
                        "target"
                    } else {
                        cluster.as_str()
                    };
                    (
                        format!("{side} {api}"),
                        n.saturating_sub(before) as f64 / rounds,
                    )
                })
                .filter(|(_, per)| *per > 0.0)
                .collect()
        } else {
            Vec::new()
        };
        Ok(RunResult {
            first_round_s: first_round,
            steady_round_s: steady,
            requests_per_round,
            offsets_replay: ours_offsets_replay(&proc.log_text()),
            start_to_groups_synced_s: synced,
            ..RunResult::measured((first, all, stamps.len()), a, b, rounds, self.ticks)
        })
    }

    /// Ours: `run --once`; (initial sync read, whole process) in seconds.
    pub(super) fn ours_load_time(&self, flow: &Flow, label: &str) -> Result<(f64, f64)> {
        let dir = self.dir.join(label);
        let config = self.ours_config(&dir, flow)?;
        let mut cmd = self.ours_command();
        cmd.args(["run", "--once", "--log-format", "json", "--config"])
            .arg(&config);
        let log = dir.join("once.log");
        let mut proc = Guard::spawn(cmd, "mm2-checkpoint run --once (catch-up)", &log)?;
        let status = proc.child.wait().context("waiting for run --once")?;
        let wall = proc.spawned.elapsed().as_secs_f64();
        if !status.success() {
            bail!("run --once exited with {status}; see {}", log.display());
        }
        let ms = ours_sync_read_ms(&proc.log_text()).with_context(|| {
            format!(
                "no `read the offset-syncs topic to its end` line in {}",
                log.display()
            )
        })?;
        Ok((ms as f64 / 1e3, wall))
    }
}
