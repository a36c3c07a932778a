//! The options of `bench mm2` and their parsing.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};

/// The usage text of `cargo xtask bench`, shown with every argument error.
pub(super) const USAGE: &str = "\
usage: cargo xtask bench [-- CRITERION ARGS]
       cargo xtask bench mm2 [--groups 10,100,1000,5000,10000|0] [--partitions 10]
                             [--ours-only-groups 100000] [--mm2-jvm stock,small|none]
                             [--build dist|release|armv7-qemu]
                             [--variants group-sync,tls-scram|none]
                             [--variant-groups 1000]
                             [--syncs 1000000] [--window 30] [--out FILE]
       cargo xtask bench latency [--quick] [--groups 1000] [--partitions 10]
                             [--seconds 60] [--sides follow,poll,mm2-1s,mm2-60s]
                             [--heavy-groups 2000] [--big-groups 10000]
                             [--big-seconds 20] [--keep-topics] [--out FILE]
       cargo xtask bench reread [--records 1000010] [--pace RECORDS_PER_SECOND]
       cargo xtask bench precise [--sizes 1000x10000,10000x1000] [--max-syncs N]
                             [--out FILE]";

/// The JVM settings MM2's Connect worker runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mm2Jvm {
    /// What Kafka's own start scripts give it: the heap of
    /// `connect-standalone.sh`/`connect-mirror-maker.sh` and the G1 options of
    /// `kafka-run-class.sh` (Kafka 4.1).
    Stock,
    /// The small heap, serial GC and C1-only JIT of the e2e tests' MM2, which
    /// flatter its memory and handicap its JIT.
    Small,
}

impl Mm2Jvm {
    /// The JVM options.
    pub fn options(self) -> &'static [&'static str] {
        match self {
            Mm2Jvm::Stock => &[
                "-Xms256M",
                "-Xmx2G",
                "-server",
                "-XX:+UseG1GC",
                "-XX:MaxGCPauseMillis=20",
                "-XX:InitiatingHeapOccupancyPercent=35",
                "-XX:+ExplicitGCInvokesConcurrent",
                "-XX:MaxInlineLevel=15",
                "-Djava.awt.headless=true",
            ],
            Mm2Jvm::Small => e2e::mm2::JVM_OPTS,
        }
    }

    /// The name used in options, run directories and the report.
    pub fn name(self) -> &'static str {
        match self {
            Mm2Jvm::Stock => "stock",
            Mm2Jvm::Small => "small",
        }
    }

    fn parse(word: &str) -> Result<Mm2Jvm> {
        match word {
            "stock" => Ok(Mm2Jvm::Stock),
            "small" => Ok(Mm2Jvm::Small),
            w => bail!("--mm2-jvm: unknown setting {w:?} (stock, small)"),
        }
    }
}

/// A variant of one workload, run beside the plain workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Both sides also sync the translated offsets into the (idle) target
    /// groups, every second.
    GroupSync,
    /// Both sides reach both clusters over SASL_SSL with SCRAM-SHA-512
    /// (MM2's Connect worker too), trusting the clusters' test CA.
    TlsScram,
}

impl Variant {
    /// The name used in options and run directories.
    pub fn name(self) -> &'static str {
        match self {
            Variant::GroupSync => "group-sync",
            Variant::TlsScram => "tls-scram",
        }
    }

    /// How the report labels the variant's rows.
    pub fn label(self) -> &'static str {
        match self {
            Variant::GroupSync => "group sync",
            Variant::TlsScram => "SASL_SSL + SCRAM",
        }
    }

    fn parse(word: &str) -> Result<Variant> {
        match word {
            "group-sync" => Ok(Variant::GroupSync),
            "tls-scram" => Ok(Variant::TlsScram),
            w => bail!("--variants: unknown variant {w:?} (group-sync, tls-scram, none)"),
        }
    }
}

/// Which build of ours is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OursBuild {
    /// The static musl artefact `cargo xtask dist` ships (x86_64, default
    /// features): what users run.
    Dist,
    /// `cargo build --release` for the host (glibc, its allocator).
    Release,
    /// The armv7 artefact of `cargo xtask dist`, run by `qemu-arm-static`:
    /// its memory is real (the emulator's own is added), its times are not.
    Armv7Qemu,
}

/// Options of `bench mm2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mm2Args {
    /// Group counts, one workload each, both sides.
    pub groups: Vec<usize>,
    /// Group counts run with ours alone, after the others.
    pub ours_only: Vec<usize>,
    /// MM2's JVM settings, one MM2 run each per workload.
    pub mm2_jvm: Vec<Mm2Jvm>,
    /// The build of ours.
    pub build: OursBuild,
    /// Variants run at [`variant_groups`](Self::variant_groups), both sides.
    pub variants: Vec<Variant>,
    /// The group count of the variants' workloads.
    pub variant_groups: usize,
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
            groups: vec![10, 100, 1000, 5000, 10_000],
            ours_only: vec![100_000],
            mm2_jvm: vec![Mm2Jvm::Stock],
            build: OursBuild::Dist,
            variants: vec![Variant::GroupSync, Variant::TlsScram],
            variant_groups: 1000,
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
                    // `0`: no side-by-side size (ours alone, `--ours-only-groups`).
                    args.groups = if v == "0" {
                        Vec::new()
                    } else {
                        v.split(',')
                            .map(|n| positive(flag, n.trim()))
                            .collect::<Result<_>>()?
                    };
                }
                "--ours-only-groups" => {
                    let v = value()?;
                    args.ours_only = if v == "0" {
                        Vec::new()
                    } else {
                        v.split(',')
                            .map(|n| positive(flag, n.trim()))
                            .collect::<Result<_>>()?
                    };
                }
                "--mm2-jvm" => {
                    let v = value()?;
                    // `none`: ours alone, also for the variants.
                    args.mm2_jvm = if v == "none" {
                        Vec::new()
                    } else {
                        v.split(',')
                            .map(|w| Mm2Jvm::parse(w.trim()))
                            .collect::<Result<_>>()?
                    };
                }
                "--variants" => {
                    let v = value()?;
                    args.variants = if v == "none" {
                        Vec::new()
                    } else {
                        v.split(',')
                            .map(|w| Variant::parse(w.trim()))
                            .collect::<Result<_>>()?
                    };
                }
                "--variant-groups" => args.variant_groups = positive(flag, value()?)?,
                "--build" => {
                    args.build = match value()? {
                        "dist" => OursBuild::Dist,
                        "release" => OursBuild::Release,
                        "armv7-qemu" => OursBuild::Armv7Qemu,
                        v => bail!("--build: {v:?} is not dist, release or armv7-qemu"),
                    };
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
