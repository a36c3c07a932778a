//! `cargo xtask dist`: builds the static musl binaries with `rust-lld`, C
//! compilers poisoned for the default variant, into the release directory
//! `target/dist/` with their `.dep-v0` sections, SBOMs, the third-party
//! licences and a `SHA256SUMS` (see [`crate::dist`], [`super::release`]).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::artefact::{
    Arch, BINARY, BUILD_STD_TOOLCHAIN, COPIED, Package, StdSource, THIRD_PARTY, Variant, cargo,
    check_static, which,
};
use super::{release, size};

/// Options of `cargo xtask dist`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct DistOptions {
    arches: Vec<Arch>,
    variants: Vec<Variant>,
    allow_c: bool,
}

fn parse_dist_args(args: &[&str]) -> Result<DistOptions> {
    let mut options = DistOptions {
        arches: Arch::ALL.to_vec(),
        variants: vec![Variant::Default],
        allow_c: false,
    };
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--target" => {
                let value = rest.next().context("`--target` needs a value")?;
                options.arches = Arch::parse(value)?;
            }
            "--variant" => {
                let value = rest.next().context("`--variant` needs a value")?;
                options.variants = Variant::parse(value)?;
            }
            "--allow-c" => options.allow_c = true,
            _ => bail!("unknown argument `{arg}` to `cargo xtask dist`"),
        }
    }
    Ok(options)
}

/// `cargo xtask dist [--target x86_64|aarch64|armv7|all] [--variant default|ring|all] [--allow-c]`.
pub fn dist(root: &Path, args: &[&str]) -> Result<()> {
    let options = parse_dist_args(args)?;
    let package = Package::load(root)?;
    let dist_dir = package.dist_dir();
    fs::create_dir_all(&dist_dir).with_context(|| format!("creating {}", dist_dir.display()))?;
    require_rust_lld()?;
    for arch in &options.arches {
        match arch.std_source() {
            StdSource::Rustup => ensure_rust_target(root, *arch)?,
            source @ StdSource::BuildStd { .. } => {
                ensure_build_std_toolchain(root)?;
                crate::prereqs::ensure_debian_libraries(&source.debian_packages(), || {
                    link_libraries_present(source)
                })?;
            }
        }
    }
    let poison = write_no_c_compiler(&package.target_dir)?;

    for &variant in &options.variants {
        for &arch in &options.arches {
            if !variant.builds_for(arch) {
                eprintln!(
                    "xtask: no `{}` variant for {}: it is built for the architectures rustup has \
                     a prebuilt standard library for (the default variant needs no C anywhere)",
                    variant.name(),
                    arch.name()
                );
                continue;
            }
            let started = std::time::Instant::now();
            // Licences first: a crate outside deny.toml's allow list stops
            // the build before it starts.
            let linked = release::check_licences(root, arch, variant)?;
            let forbid_c = variant == Variant::Default && !options.allow_c;
            build(
                root,
                &package,
                arch,
                variant,
                forbid_c.then_some(poison.as_path()),
            )?;
            let built = package
                .target_dir
                .join(arch.triple())
                .join("release")
                .join(BINARY);
            let artefact = package.artefact(arch, variant);
            fs::copy(&built, &artefact).with_context(|| {
                format!("copying {} to {}", built.display(), artefact.display())
            })?;
            fs::set_permissions(&artefact, fs::Permissions::from_mode(0o755))
                .with_context(|| format!("chmod 0755 {}", artefact.display()))?;
            size::keep_symbols(&package, &built, arch, variant)?;
            size::strip(&artefact)?;
            let report = check_static(&artefact, arch)?;
            let section = release::finish_artefact(&package, arch, variant, &linked)?;
            let size = size::check_budget(&artefact, arch, variant)?;
            eprintln!(
                "xtask: {} ({size} bytes, {section} of them the .dep-v0 section of {} crates; \
                 {}; {}) in {:.1}s",
                artefact.display(),
                linked.crates.len(),
                report.linkage,
                if forbid_c {
                    "built with every C/C++ compiler variable pointing at a failing script"
                } else {
                    "C compiler allowed"
                },
                started.elapsed().as_secs_f64()
            );
        }
    }
    release::write_release_files(root, &package)?;
    eprintln!(
        "xtask: wrote the release directory {}: SBOMs, {THIRD_PARTY}, {}, SHA256SUMS",
        dist_dir.display(),
        COPIED.join(", ")
    );
    Ok(())
}

/// The toolchain's own `rust-lld`, which rustc finds by itself when a target's
/// linker is set to `rust-lld`. Checked up front for a clear error.
fn require_rust_lld() -> Result<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .context("running `rustc --print sysroot`")?;
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let out = Command::new(&rustc)
        .args(["-vV"])
        .output()
        .context("running `rustc -vV`")?;
    let host = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: ").map(str::to_owned))
        .context("`rustc -vV` does not name the host triple")?;
    let lld = Path::new(&sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin/rust-lld");
    if !lld.is_file() {
        bail!(
            "{} is missing: this toolchain does not ship rust-lld, which links the static binaries",
            lld.display()
        );
    }
    Ok(lld)
}

/// Installs the rust-std of a musl target with rustup if it is missing.
fn ensure_rust_target(root: &Path, arch: Arch) -> Result<()> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .current_dir(root)
        .output();
    let Ok(installed) = installed else {
        eprintln!(
            "xtask: rustup not found; assuming {} is installed",
            arch.triple()
        );
        return Ok(());
    };
    if String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|line| line.trim() == arch.triple())
    {
        return Ok(());
    }
    eprintln!("xtask: rustup target add {}", arch.triple());
    let status = Command::new("rustup")
        .args(["target", "add", arch.triple()])
        .current_dir(root)
        .status()
        .context("running `rustup target add`")?;
    if !status.success() {
        bail!("`rustup target add {}` failed", arch.triple());
    }
    Ok(())
}

/// Installs [`BUILD_STD_TOOLCHAIN`] with its `rust-src` component if it is
/// missing (`-Zbuild-std` compiles the standard library from that source).
fn ensure_build_std_toolchain(root: &Path) -> Result<()> {
    let has_src = Command::new("rustup")
        .args(["component", "list", "--installed", "--toolchain"])
        .arg(BUILD_STD_TOOLCHAIN)
        .current_dir(root)
        .output()
        .is_ok_and(|out| {
            out.status.success()
                && String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .any(|line| line.trim() == "rust-src")
        });
    if has_src {
        return Ok(());
    }
    let args = [
        "toolchain",
        "install",
        BUILD_STD_TOOLCHAIN,
        "--profile",
        "minimal",
        "--component",
        "rust-src",
    ];
    eprintln!("xtask: rustup {}", args.join(" "));
    let status = Command::new("rustup")
        .args(args)
        .current_dir(root)
        .status()
        .context("running `rustup toolchain install` (rustup is needed for -Zbuild-std)")?;
    if !status.success() {
        bail!("`rustup {}` failed", args.join(" "));
    }
    Ok(())
}

/// Whether the prebuilt libraries a [`StdSource::BuildStd`] link needs are
/// installed: musl's start files and `libc.a`, GCC's `crtbegin.o` and its
/// unwinder `libgcc_eh.a`.
fn link_libraries_present(source: StdSource) -> bool {
    match source {
        StdSource::Rustup => true,
        StdSource::BuildStd {
            musl_lib_dir,
            gcc_lib_dir,
            ..
        } => {
            let musl = Path::new(musl_lib_dir);
            let gcc = Path::new(gcc_lib_dir);
            ["crt1.o", "crti.o", "crtn.o", "libc.a"]
                .iter()
                .all(|f| musl.join(f).is_file())
                && ["crtbegin.o", "crtend.o", "libgcc_eh.a"]
                    .iter()
                    .all(|f| gcc.join(f).is_file())
        }
    }
}

/// The directory holding `libunwind.a` for a [`StdSource::BuildStd`] link:
/// Rust's `unwind` crate links `-lunwind` on musl, which rustup's
/// self-contained musl provides and Debian's does not. GCC's `libgcc_eh.a`
/// is the same kind of unwinder (the `_Unwind_*` ABI), so a link to it under
/// that name serves.
fn unwind_dir(target_dir: &Path, arch: Arch, gcc_lib_dir: &str) -> Result<PathBuf> {
    let dir = target_dir
        .join("dist/tools")
        .join(format!("unwind-{}", arch.triple()));
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let link = dir.join("libunwind.a");
    let _ = fs::remove_file(&link);
    std::os::unix::fs::symlink(Path::new(gcc_lib_dir).join("libgcc_eh.a"), &link)
        .with_context(|| format!("linking {}", link.display()))?;
    Ok(dir)
}

/// Writes `target/dist/tools/no-c-compiler`, a stand-in for every C and C++
/// compiler that fails loudly, naming the command it was given.
fn write_no_c_compiler(target_dir: &Path) -> Result<PathBuf> {
    let tools = target_dir.join("dist/tools");
    fs::create_dir_all(&tools).with_context(|| format!("creating {}", tools.display()))?;
    let path = tools.join("no-c-compiler");
    let script = "#!/bin/sh\n\
        # Written by `cargo xtask dist`: the default build must not compile C or C++.\n\
        echo \"C compiler invoked: $*\" >&2\n\
        echo \"xtask dist: the default feature set compiled C; a dependency brought in a C build\" >&2\n\
        exit 1\n";
    fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
        .with_context(|| format!("chmod 0755 {}", path.display()))?;
    Ok(path)
}

/// Every environment variable through which a build script (via the `cc`,
/// `cmake` or `pkg-config`-using crates) finds a C or C++ compiler or archiver
/// for `triples`.
fn compiler_variables(triples: &[&str]) -> Vec<String> {
    let mut vars: Vec<String> = [
        "CC",
        "CXX",
        "TARGET_CC",
        "TARGET_CXX",
        "HOST_CC",
        "HOST_CXX",
        "AR",
        "TARGET_AR",
        "HOST_AR",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    for triple in triples {
        for tool in ["CC", "CXX", "AR"] {
            vars.push(format!("{tool}_{triple}"));
            vars.push(format!("{tool}_{}", triple.replace('-', "_")));
        }
    }
    vars
}

/// The host triple, from `rustc -vV`, for the host-side compiler variables.
fn host_triple() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    Command::new(rustc)
        .arg("-vV")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .find_map(|line| line.strip_prefix("host: ").map(str::to_owned))
        })
        .unwrap_or_else(|| format!("{}-unknown-linux-gnu", std::env::consts::ARCH))
}

/// The linker script that drops the unwind tables (see the file).
const NO_UNWIND_TABLES: &str = "xtask/src/dist/no-unwind-tables.ld";

/// The link flags of a target built on rustup's prebuilt standard library.
///
/// Its functions all carry DWARF unwind tables, whatever `-C
/// force-unwind-tables` says: the prebuilt library is compiled to unwind and
/// its code, inlined into ours, brings its personality function along. The
/// release profile aborts on panic and the panic hook prints no backtrace,
/// so `no-unwind-tables.ld` discards the tables and `--no-eh-frame-hdr`
/// leaves out their index (714 KB of the x86_64 artefact, docs/benchmarks.md,
/// "Binary and image size"). The armv7 build compiles its standard library to
/// abort, and its ARM index entries are small.
///
/// x86_64 is linked as a static PIE (address randomisation), whose
/// relocations rust-lld packs in the compact RELR form that the musl rustup
/// ships (1.2.5) applies at start-up: 434 KB of `.rela.dyn` become 5 KB of
/// `.relr.dyn`. The other targets link non-PIE static executables with no
/// such table.
fn rustup_std_link_flags(root: &Path, arch: Arch) -> Result<String> {
    let script = root.join(NO_UNWIND_TABLES);
    let script = script.to_str().filter(|s| !s.contains(char::is_whitespace));
    let Some(script) = script else {
        bail!(
            "the checkout's path {} holds white space or is not UTF-8: the linker \
             script {NO_UNWIND_TABLES} cannot be named in RUSTFLAGS; build from a \
             checkout whose path has neither",
            root.display()
        );
    };
    let mut flags = format!("-C link-arg=-T{script} -C link-arg=--no-eh-frame-hdr");
    if arch == Arch::X86_64 {
        flags.push_str(" -C link-arg=-zpack-relative-relocs");
    }
    Ok(flags)
}

/// One `cargo build --release` of the binary for one target and variant.
fn build(
    root: &Path,
    package: &Package,
    arch: Arch,
    variant: Variant,
    no_c_compiler: Option<&Path>,
) -> Result<()> {
    let triple = arch.triple();
    let target_var = triple.replace('-', "_").to_uppercase();
    let mut cmd = match arch.std_source() {
        StdSource::Rustup => Command::new(cargo()),
        StdSource::BuildStd { .. } => {
            // The pinned nightly's own cargo; the variables the outer
            // (stable) cargo and rustup set would pick the stable tools.
            let mut cmd = Command::new("rustup");
            cmd.args(["run", BUILD_STD_TOOLCHAIN, "cargo"])
                .env_remove("CARGO")
                .env_remove("RUSTC")
                .env_remove("RUSTDOC")
                .env_remove("RUSTUP_TOOLCHAIN");
            cmd
        }
    };
    cmd.args([
        "build",
        "--release",
        "--package",
        BINARY,
        "--target",
        triple,
    ])
    .args(variant.cargo_feature_args())
    .current_dir(root)
    .env(format!("CARGO_TARGET_{target_var}_LINKER"), "rust-lld")
    // Symbols stay in target/<triple>/release for `size-report`; the copy in
    // target/dist/ is stripped (`size::strip`).
    .env("CARGO_PROFILE_RELEASE_STRIP", "false");
    if arch.std_source() == StdSource::Rustup {
        cmd.env(
            format!("CARGO_TARGET_{target_var}_RUSTFLAGS"),
            rustup_std_link_flags(root, arch)?,
        );
    }
    if let StdSource::BuildStd {
        musl_lib_dir,
        gcc_lib_dir,
        ..
    } = arch.std_source()
    {
        let unwind = unwind_dir(&package.target_dir, arch, gcc_lib_dir)?;
        // armv7: the program and its standard library as Thumb-2, the
        // compact instruction set every ARMv7-A core runs, instead of the
        // target's default ARM encoding (docs/benchmarks.md, "Binary and
        // image size"); the linker interworks with musl's ARM code.
        let thumb = if arch == Arch::Armv7 {
            " -C target-feature=+thumb-mode"
        } else {
            ""
        };
        cmd.arg("-Zbuild-std=std,panic_abort").env(
            format!("CARGO_TARGET_{target_var}_RUSTFLAGS"),
            format!(
                "-L{musl_lib_dir} -L{gcc_lib_dir} -L{}{thumb}",
                unwind.display()
            ),
        );
    }
    match no_c_compiler {
        Some(script) => {
            let host = host_triple();
            for var in compiler_variables(&[triple, &host]) {
                cmd.env(var, script);
            }
        }
        None => {
            // ring's build script compiles C and assembly for the target.
            // Debian's clang cross-compiles for both musl targets without a
            // sysroot (ring needs no libc headers); its `llvm-ar` archives.
            let cc_var = format!("CC_{}", triple.replace('-', "_"));
            let ar_var = format!("AR_{}", triple.replace('-', "_"));
            if std::env::var_os(&cc_var).is_none() {
                if which("clang").is_none() || which("llvm-ar").is_none() {
                    bail!(
                        "the `{}` variant compiles C for {triple} and needs `clang` and `llvm-ar` \
                         (Debian: apt-get install clang llvm), or set {cc_var} and {ar_var}",
                        variant.name()
                    );
                }
                cmd.env(&cc_var, "clang").env(&ar_var, "llvm-ar");
            }
        }
    }
    eprintln!(
        "xtask: cargo build --release -p {BINARY} --target {triple} {}{} (variant {}, version {})",
        variant.cargo_feature_args().join(" "),
        match arch.std_source() {
            StdSource::Rustup => String::new(),
            StdSource::BuildStd { .. } =>
                format!("-Zbuild-std=std,panic_abort with {BUILD_STD_TOOLCHAIN}"),
        },
        variant.name(),
        package.version
    );
    let status = cmd.status().context("running `cargo build`")?;
    if !status.success() {
        bail!(
            "building {BINARY} for {triple} (variant {}) failed{}",
            variant.name(),
            if no_c_compiler.is_some() {
                "; if the log says `C compiler invoked`, a dependency of the default \
                 feature set compiles C, which is not allowed"
            } else {
                ""
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_defaults_to_both_targets_default_variant_and_no_c() {
        let options = parse_dist_args(&[]).unwrap();
        assert_eq!(options.arches, Arch::ALL.to_vec());
        assert_eq!(options.variants, vec![Variant::Default]);
        assert!(!options.allow_c);
    }

    #[test]
    fn dist_arguments_select_target_variant_and_allow_c() {
        let options =
            parse_dist_args(&["--target", "aarch64", "--variant", "all", "--allow-c"]).unwrap();
        assert_eq!(options.arches, vec![Arch::Aarch64]);
        assert_eq!(options.variants, Variant::ALL.to_vec());
        assert!(options.allow_c);
    }

    #[test]
    fn unknown_dist_arguments_are_rejected() {
        assert!(parse_dist_args(&["--target", "riscv64"]).is_err());
        assert_eq!(
            parse_dist_args(&["--target", "armhf"]).unwrap().arches,
            vec![Arch::Armv7]
        );
        assert!(parse_dist_args(&["--variant"]).is_err());
        assert!(parse_dist_args(&["--fast"]).is_err());
    }

    #[test]
    fn compiler_variables_cover_generic_and_per_target_forms() {
        let vars = compiler_variables(&["aarch64-unknown-linux-musl"]);
        for var in [
            "CC",
            "CXX",
            "TARGET_CC",
            "HOST_CC",
            "CC_aarch64-unknown-linux-musl",
            "CC_aarch64_unknown_linux_musl",
            "CXX_aarch64_unknown_linux_musl",
        ] {
            assert!(vars.iter().any(|v| v == var), "{var} missing");
        }
    }
}
