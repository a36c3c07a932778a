//! The size budget of each artefact and `cargo xtask size-report`, where
//! the bytes of a built artefact go.
//!
//! `dist` builds with symbols (`CARGO_PROFILE_RELEASE_STRIP=false`), keeps a
//! copy of each unstripped build in `target/size-report/` ([`keep_symbols`])
//! for the report to read without a second build, and strips the copy it puts
//! into `target/dist/` itself ([`strip`]). [`check_budget`] fails `dist` when a stripped artefact is
//! larger than [`budget`]. See docs/benchmarks.md, "Binary and image size".

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::artefact::{Arch, Package, Variant, which};

/// One MiB.
const MIB: u64 = 1024 * 1024;

/// The most bytes the stripped artefact of `arch` and `variant` may have
/// (its `.dep-v0` section included): 5 MiB on armv7, the 32-bit boards of
/// edge gateways, 6 MiB elsewhere.
pub fn budget(arch: Arch, _variant: Variant) -> u64 {
    match arch {
        Arch::Armv7 => 5 * MIB,
        Arch::X86_64 | Arch::Aarch64 => 6 * MIB,
    }
}

/// Fails when `artefact` is over its [`budget`]; returns its size.
pub fn check_budget(artefact: &Path, arch: Arch, variant: Variant) -> Result<u64> {
    let size = std::fs::metadata(artefact)
        .with_context(|| format!("reading the size of {}", artefact.display()))?
        .len();
    let goal = budget(arch, variant);
    if size > goal {
        bail!(
            "{} is {size} bytes, {} over its budget of {goal} bytes ({} MiB): see where the \
             bytes go with `cargo xtask size-report --target {}{}` and docs/benchmarks.md, \
             \"Binary and image size\"",
            artefact.display(),
            size - goal,
            goal / MIB,
            arch.name(),
            match variant {
                Variant::Default => String::new(),
                other => format!(" --variant {}", other.name()),
            }
        );
    }
    Ok(size)
}

/// Strips `binary` in place (every symbol and debug section), as cargo's
/// `strip = true` does at link time; `.comment`, where the linker names
/// itself, stays (`check_static` reads it).
pub fn strip(binary: &Path) -> Result<()> {
    let objcopy = which("llvm-objcopy").context(
        "llvm-objcopy not found: install Debian's `llvm` package (it strips the artefacts)",
    )?;
    let out = Command::new(&objcopy)
        .args(["--strip-all", "--keep-section=.comment"])
        .arg(binary)
        .output()
        .with_context(|| format!("running {}", objcopy.display()))?;
    if !out.status.success() {
        bail!(
            "llvm-objcopy --strip-all --keep-section=.comment {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Where `dist` keeps the unstripped build of `arch` and `variant`.
fn unstripped(package: &Package, arch: Arch, variant: Variant) -> PathBuf {
    package
        .target_dir
        .join("size-report")
        .join(package.artefact_name(arch, variant))
}

/// Keeps `built`, the unstripped binary of `arch` and `variant`, for
/// `size-report` (the next variant's build replaces it in cargo's directory).
pub fn keep_symbols(package: &Package, built: &Path, arch: Arch, variant: Variant) -> Result<()> {
    let kept = unstripped(package, arch, variant);
    if let Some(dir) = kept.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::copy(built, &kept)
        .with_context(|| format!("copying {} to {}", built.display(), kept.display()))?;
    Ok(())
}

/// `cargo xtask size-report [--target x86_64|aarch64|armv7|all]
/// [--variant default|ring|all] [--top N]`.
pub fn size_report(root: &Path, args: &[&str]) -> Result<()> {
    let mut arches = vec![Arch::X86_64];
    let mut variants = vec![Variant::Default];
    let mut top = 30usize;
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--target" => {
                arches = Arch::parse(rest.next().context("`--target` needs a value")?)?;
            }
            "--variant" => {
                variants = Variant::parse(rest.next().context("`--variant` needs a value")?)?;
            }
            "--top" => {
                top = rest
                    .next()
                    .context("`--top` needs a number")?
                    .parse()
                    .context("`--top` needs a number")?;
            }
            _ => bail!("unknown argument `{arg}` to `cargo xtask size-report`"),
        }
    }
    let package = Package::load(root)?;
    for arch in arches {
        for &variant in variants.iter().filter(|v| v.builds_for(arch)) {
            let binary = unstripped(&package, arch, variant);
            if !binary.exists() {
                bail!(
                    "{} does not exist: run `cargo xtask dist --target {} --variant {}` first \
                     (the report reads the symbols of its last build)",
                    binary.display(),
                    arch.name(),
                    variant.name()
                );
            }
            print!("{}", report(&binary, arch, variant, top)?);
        }
    }
    Ok(())
}

/// The markdown report for one unstripped binary.
fn report(binary: &Path, arch: Arch, variant: Variant, top: usize) -> Result<String> {
    let sections = sections(binary)?;
    let crates = symbols_by_crate(binary)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### {} {} ({})\n\n| section | bytes |\n|---|---:|",
        arch.name(),
        variant.name(),
        binary.display()
    );
    let mut loaded: u64 = 0;
    for (name, size) in &sections {
        loaded += size;
        let _ = writeln!(out, "| `{name}` | {} |", group_digits(*size));
    }
    let _ = writeln!(
        out,
        "| loaded sections together | {} |\n",
        group_digits(loaded)
    );
    let total: u64 = crates.values().sum();
    let mut ranked: Vec<(&String, &u64)> = crates.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let _ = writeln!(
        out,
        "| crate (first named in the symbol) | code and read-only data | share |\n|---|---:|---:|"
    );
    let mut shown: u64 = 0;
    for (name, size) in ranked.iter().take(top) {
        shown += **size;
        let _ = writeln!(
            out,
            "| {name} | {} | {:.1} % |",
            group_digits(**size),
            percent(**size, total)
        );
    }
    let _ = writeln!(
        out,
        "| {} others | {} | {:.1} % |\n| all symbols | {} | 100 % |\n",
        ranked.len().saturating_sub(top),
        group_digits(total - shown),
        percent(total - shown, total),
        group_digits(total)
    );
    Ok(out)
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

/// 1234567 as "1,234,567".
pub(crate) fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The sections a stripped binary keeps (allocated ones), largest first, by
/// `llvm-size -A`; the symbol and debug sections stripping removes are left
/// out.
fn sections(binary: &Path) -> Result<Vec<(String, u64)>> {
    let text = tool_output("llvm-size", &["-A", "-d"], binary)?;
    let mut sections: Vec<(String, u64)> = text
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let name = words.next()?;
            let size: u64 = words.next()?.parse().ok()?;
            let address: u64 = words.next()?.parse().ok()?;
            // Loaded sections have an address; .comment, .symtab and the
            // debug sections do not.
            (name.starts_with('.') && address != 0 && size > 0).then(|| (name.to_owned(), size))
        })
        .collect();
    sections.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(sections)
}

/// Bytes of code and read-only data per crate, from the demangled symbol
/// table (`llvm-nm --print-size -C`).
fn symbols_by_crate(binary: &Path) -> Result<BTreeMap<String, u64>> {
    let text = tool_output("llvm-nm", &["--print-size", "--radix=d", "-C"], binary)?;
    let mut crates = BTreeMap::new();
    for line in text.lines() {
        // ADDRESS SIZE TYPE NAME (symbols without a size have no SIZE field).
        let mut fields = line.splitn(4, ' ');
        let (Some(_), Some(size), Some(kind), Some(name)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Ok(size) = size.parse::<u64>() else {
            continue;
        };
        if !matches!(kind, "t" | "T" | "r" | "R" | "W" | "w") || size == 0 {
            continue;
        }
        *crates.entry(crate_of(name)).or_insert(0) += size;
    }
    Ok(crates)
}

/// The crate a demangled symbol belongs to: its path's first segment, or for
/// `<A as B>::f` and `<A>::f` the crate of `A`, unless `A` comes from the
/// standard library or is a primitive, then that of `B` (a trait
/// implementation is made where its type or trait lives). Symbols that are not
/// Rust paths (musl, compiler builtins, assembly) are "C runtime and
/// builtins".
pub(crate) fn crate_of(name: &str) -> String {
    const STD: [&str; 3] = ["core", "alloc", "std"];
    let unescaped;
    let name = if name.starts_with("_$LT$") {
        unescaped = legacy_unescaped(name);
        unescaped.as_str()
    } else {
        name
    };
    let first_path = |s: &str| -> Option<String> {
        let s = s.trim_start_matches(['&', '*', '(', '[', ' ']);
        let s = s
            .strip_prefix("mut ")
            .or_else(|| s.strip_prefix("dyn "))
            .or_else(|| s.strip_prefix("const "))
            .unwrap_or(s);
        let end = s.find("::")?;
        let head = &s[..end];
        (!head.is_empty() && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| head.to_owned())
    };
    if let Some(inner) = name.strip_prefix('<') {
        let this = first_path(inner);
        let trait_crate = inner
            .find(" as ")
            .and_then(|at| first_path(&inner[at + 4..]));
        return match (this, trait_crate) {
            (Some(this), _) if !STD.contains(&this.as_str()) => this,
            (_, Some(tr)) if !STD.contains(&tr.as_str()) => tr,
            (Some(this), _) => this,
            (None, Some(tr)) => tr,
            // `<[T]>::f`, `<str>::f`, `<(A, B)>::f`: the standard library's
            // inherent methods on primitive types.
            (None, None) => "core/alloc/std (primitive types)".to_owned(),
        };
    }
    first_path(name).unwrap_or_else(|| "C runtime and builtins".to_owned())
}

/// A legacy-mangled path that `llvm-nm -C` leaves half done (`_$LT$a..B$u20$as$u20$c..D$GT$::f`,
/// the form of trait implementations on generic types) in the demangled
/// form (`<a::B as c::D>::f`).
fn legacy_unescaped(name: &str) -> String {
    let mut out = name.strip_prefix('_').unwrap_or(name).to_owned();
    for (escaped, plain) in [
        ("$LT$", "<"),
        ("$GT$", ">"),
        ("$u20$", " "),
        ("$C$", ","),
        ("$RF$", "&"),
        ("$BP$", "*"),
        ("$u7b$", "{"),
        ("$u7d$", "}"),
        ("..", "::"),
    ] {
        out = out.replace(escaped, plain);
    }
    out
}

/// Runs an LLVM tool on `binary` and returns its standard output.
fn tool_output(tool: &str, args: &[&str], binary: &Path) -> Result<String> {
    let path = which(tool).with_context(|| {
        format!("{tool} not found: install Debian's `llvm` package (the size report uses it)")
    })?;
    let out = Command::new(&path)
        .args(args)
        .arg(binary)
        .output()
        .with_context(|| format!("running {}", path.display()))?;
    if !out.status.success() {
        bail!(
            "{tool} {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_charged_to_their_crate() {
        assert_eq!(crate_of("kafka_lite::client::Client::new"), "kafka_lite");
        assert_eq!(
            crate_of("<alloc::vec::Vec<u8> as bytes::buf::BufMut>::put_slice"),
            "bytes"
        );
        assert_eq!(
            crate_of("<mm2_checkpoint::cli::Command as clap_builder::derive::Subcommand>::augment"),
            "mm2_checkpoint"
        );
        assert_eq!(
            crate_of("<&mut serde_json::ser::Serializer<W> as serde_core::ser::Serializer>::x"),
            "serde_json"
        );
        assert_eq!(
            crate_of("<[u8]>::to_vec"),
            "core/alloc/std (primitive types)"
        );
        assert_eq!(crate_of("<u64 as core::fmt::Display>::fmt"), "core");
        assert_eq!(crate_of("memcpy"), "C runtime and builtins");
        assert_eq!(
            crate_of(
                "_$LT$mm2_checkpoint..driver..kafka..ClusterClient$u20$as$u20$mm2_checkpoint..\
                 driver..flow..cluster..FlowCluster$GT$::produce_batch::h1"
            ),
            "mm2_checkpoint"
        );
        assert_eq!(
            crate_of(
                "_$LT$core..pin..Pin$LT$P$GT$$u20$as$u20$core..future..future..Future$GT$::poll::h2"
            ),
            "core"
        );
    }

    #[test]
    fn budgets_are_the_edge_targets() {
        assert_eq!(budget(Arch::Armv7, Variant::Default), 5_242_880);
        assert_eq!(budget(Arch::X86_64, Variant::Default), 6_291_456);
        assert_eq!(budget(Arch::Aarch64, Variant::Ring), 6_291_456);
    }

    #[test]
    fn a_file_over_its_budget_fails_and_says_how_to_look() {
        let dir = std::env::temp_dir().join(format!("xtask-size-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("artefact");
        let limit = budget(Arch::Armv7, Variant::Default);
        std::fs::write(&file, vec![0u8; (limit + 1) as usize]).unwrap();
        let err = check_budget(&file, Arch::Armv7, Variant::Default).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains(&format!("1 over its budget of {limit}")),
            "{text}"
        );
        assert!(text.contains("size-report --target armv7"), "{text}");
        std::fs::write(&file, vec![0u8; limit as usize]).unwrap();
        assert_eq!(
            check_budget(&file, Arch::Armv7, Variant::Default).unwrap(),
            limit
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn digits_are_grouped() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(6_291_456), "6,291,456");
    }
}
