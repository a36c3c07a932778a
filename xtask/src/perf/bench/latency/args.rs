//! The options of `bench latency` and their parsing.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::super::args::USAGE;
use super::super::args::positive;

/// Who is measured in one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// mm2-checkpoint following `__consumer_offsets` (emit interval at its 60 s
    /// default), syncing the target groups.
    Follow,
    /// The same without target group sync: checkpoints only.
    FollowNoSync,
    /// mm2-checkpoint polling the groups every second.
    Poll,
    /// MM2's checkpoint connector at this emit and group sync interval (s).
    Mm2(u64),
}

impl Side {
    /// Whether the side syncs the target groups' offsets.
    pub fn syncs_groups(self) -> bool {
        self != Side::FollowNoSync
    }

    /// The name used in options, run directories and the report.
    pub fn name(self) -> String {
        match self {
            Side::Follow => "ours-follow".into(),
            Side::FollowNoSync => "ours-follow-nosync".into(),
            Side::Poll => "ours-poll".into(),
            Side::Mm2(s) => format!("mm2-{s}s"),
        }
    }

    fn parse(word: &str) -> Result<Side> {
        Ok(match word {
            "follow" | "ours-follow" => Side::Follow,
            "follow-nosync" | "ours-follow-nosync" => Side::FollowNoSync,
            "poll" | "ours-poll" => Side::Poll,
            "mm2-default" => Side::Mm2(60),
            w => match w
                .strip_prefix("mm2-")
                .and_then(|s| s.strip_suffix('s'))
                .and_then(|s| s.parse::<u64>().ok())
            {
                Some(s) if s > 0 => Side::Mm2(s),
                _ => {
                    bail!("--sides: unknown side {w:?} (follow, poll, mm2-<seconds>s, mm2-default)")
                }
            },
        })
    }
}

/// Options of `bench latency`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyArgs {
    /// Groups of the main workload.
    pub groups: usize,
    /// Partitions each group commits.
    pub partitions: i32,
    /// Seconds of commits per side (MM2 at an interval of I s gets at least
    /// 2·I + 10 s, to see two of its rounds).
    pub seconds: u64,
    /// The sides measured on the main workload, in this order.
    pub sides: Vec<Side>,
    /// A heavier run of ours following, without group sync, with this many
    /// groups (none: skipped).
    pub heavy_groups: Option<usize>,
    /// A run of ours following, without group sync, with this many groups,
    /// for RSS and replay (none: skipped).
    pub big_groups: Option<usize>,
    /// Seconds of commits in the big run.
    pub big_seconds: u64,
    /// Leave the bench's topics on the clusters (deleted by default).
    pub keep_topics: bool,
    /// Where to write the markdown table (besides stdout).
    pub out: Option<PathBuf>,
}

impl Default for LatencyArgs {
    fn default() -> Self {
        Self {
            groups: 1000,
            partitions: 10,
            seconds: 60,
            sides: vec![
                Side::Follow,
                Side::FollowNoSync,
                Side::Poll,
                Side::Mm2(1),
                Side::Mm2(60),
            ],
            heavy_groups: Some(2000),
            big_groups: Some(10_000),
            big_seconds: 20,
            keep_topics: false,
            out: None,
        }
    }
}

impl LatencyArgs {
    /// The smoke run of `--quick`: 100 groups for 10 s, follow, poll and
    /// MM2 at 1 s; no heavy or big run.
    fn quick() -> Self {
        Self {
            groups: 100,
            seconds: 10,
            sides: vec![Side::Follow, Side::FollowNoSync, Side::Poll, Side::Mm2(1)],
            heavy_groups: None,
            big_groups: None,
            ..Self::default()
        }
    }

    /// Parses the words after `bench latency`; `--quick` first sets the
    /// smoke-run defaults, which later options override.
    pub fn parse(words: &[&str]) -> Result<LatencyArgs> {
        let mut args = if words.contains(&"--quick") {
            LatencyArgs::quick()
        } else {
            LatencyArgs::default()
        };
        let mut it = words.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .copied()
                    .with_context(|| format!("option `{flag}` needs a value\n\n{USAGE}"))
            };
            let optional = |v: &str| -> Result<Option<usize>> {
                if v == "0" {
                    Ok(None)
                } else {
                    positive(flag, v).map(Some)
                }
            };
            match *flag {
                "--quick" => {}
                "--groups" => args.groups = positive(flag, value()?)?,
                "--partitions" => {
                    let v = positive(flag, value()?)?;
                    args.partitions = i32::try_from(v)
                        .ok()
                        .filter(|p| *p <= 1000)
                        .with_context(|| format!("--partitions {v}: at most 1000"))?;
                }
                "--seconds" => args.seconds = positive(flag, value()?)? as u64,
                "--sides" => {
                    args.sides = value()?
                        .split(',')
                        .filter(|s| !s.trim().is_empty())
                        .map(|s| Side::parse(s.trim()))
                        .collect::<Result<_>>()?;
                }
                "--heavy-groups" => args.heavy_groups = optional(value()?)?,
                "--big-groups" => args.big_groups = optional(value()?)?,
                "--big-seconds" => args.big_seconds = positive(flag, value()?)? as u64,
                "--keep-topics" => args.keep_topics = true,
                "--out" => args.out = Some(PathBuf::from(value()?)),
                other => bail!("unknown option `{other}` for `bench latency`\n\n{USAGE}"),
            }
        }
        Ok(args)
    }
}
