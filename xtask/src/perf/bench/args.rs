//! The options of `bench mm2` and their parsing.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::USAGE;

/// Options of `bench mm2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mm2Args {
    /// Group counts, one workload each.
    pub groups: Vec<usize>,
    /// Partitions per workload topic.
    pub partitions: i32,
    /// Offset syncs in the catch-up run (0 skips it).
    pub syncs: u64,
    /// Seconds of steady state sampled per run.
    pub window: u64,
    /// Where to write the markdown table (besides stdout).
    pub out: Option<PathBuf>,
}

impl Default for Mm2Args {
    fn default() -> Self {
        Self {
            groups: vec![10, 100, 1000],
            partitions: 10,
            syncs: 1_000_000,
            window: 30,
            out: None,
        }
    }
}

impl Mm2Args {
    /// Parses the words after `bench mm2`.
    pub fn parse(words: &[&str]) -> Result<Mm2Args> {
        let mut args = Mm2Args::default();
        let mut it = words.iter();
        while let Some(flag) = it.next() {
            let mut value = || {
                it.next()
                    .copied()
                    .with_context(|| format!("option `{flag}` needs a value\n\n{USAGE}"))
            };
            match *flag {
                "--groups" => {
                    let v = value()?;
                    args.groups = v
                        .split(',')
                        .map(|n| positive(flag, n.trim()))
                        .collect::<Result<_>>()?;
                    if args.groups.is_empty() {
                        bail!("--groups wants a comma-separated list of group counts");
                    }
                }
                "--partitions" => {
                    let v = positive(flag, value()?)?;
                    args.partitions = i32::try_from(v)
                        .ok()
                        .filter(|p| *p <= 10_000)
                        .with_context(|| format!("--partitions {v}: at most 10000"))?;
                }
                "--syncs" => {
                    let v = value()?;
                    args.syncs = v.parse().with_context(|| {
                        format!("--syncs wants a non-negative integer, not {v:?}")
                    })?;
                }
                "--window" => args.window = positive(flag, value()?)? as u64,
                "--out" => args.out = Some(PathBuf::from(value()?)),
                other => bail!("unknown option `{other}` for `bench mm2`\n\n{USAGE}"),
            }
        }
        Ok(args)
    }
}

/// `v` as a positive integer, or an error naming `flag`.
pub(super) fn positive(flag: &str, v: &str) -> Result<usize> {
    match v.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => bail!("{flag} wants a positive integer, not {v:?}"),
    }
}
