//! What `cargo xtask dist` produces: the artefacts' names and places
//! ([`Package`], [`Arch`], [`Variant`]), the static-linkage check, and the
//! `SHA256SUMS` file. Shared by `dist`, `dist-test`, `image` and `footprint`.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

/// The binary this module packages.
pub const BINARY: &str = "mm2-checkpoint";

/// A CPU architecture we ship a binary for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// 64-bit x86 (`amd64` in OCI terms).
    X86_64,
    /// 64-bit ARM (`arm64` in OCI terms).
    Aarch64,
    /// 32-bit ARMv7-A with hardware floating point (`arm`, variant `v7`, in
    /// OCI terms): Cortex-A7/A8/A9 boards. rustup ships no prebuilt standard
    /// library for it here, so it is built with [`StdSource::BuildStd`].
    Armv7,
}

impl Arch {
    /// Every architecture, in build order.
    pub const ALL: [Arch; 3] = [Arch::X86_64, Arch::Aarch64, Arch::Armv7];

    /// The name used on the command line and in artefact names.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::Armv7 => "armv7",
        }
    }

    /// The C library ABI part of the artefact name (the triple's last word).
    pub fn abi(self) -> &'static str {
        match self {
            Arch::X86_64 | Arch::Aarch64 => "musl",
            Arch::Armv7 => "musleabihf",
        }
    }

    /// The Rust target triple.
    pub fn triple(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-musl",
            Arch::Aarch64 => "aarch64-unknown-linux-musl",
            Arch::Armv7 => "armv7-unknown-linux-musleabihf",
        }
    }

    /// The architecture name in OCI image configs and indexes.
    pub fn oci(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
            Arch::Armv7 => "arm",
        }
    }

    /// The OCI platform `variant`, where the architecture needs one.
    pub fn oci_variant(self) -> Option<&'static str> {
        match self {
            Arch::X86_64 | Arch::Aarch64 => None,
            Arch::Armv7 => Some("v7"),
        }
    }

    /// `linux/<architecture>[/<variant>]`, as `docker --platform` spells it.
    pub fn oci_platform(self) -> String {
        match self.oci_variant() {
            Some(variant) => format!("linux/{}/{variant}", self.oci()),
            None => format!("linux/{}", self.oci()),
        }
    }

    /// Where this target's standard library comes from.
    pub fn std_source(self) -> StdSource {
        match self {
            Arch::X86_64 | Arch::Aarch64 => StdSource::Rustup,
            Arch::Armv7 => StdSource::BuildStd {
                debian_arch: "armhf",
                musl_lib_dir: "/usr/lib/arm-linux-musleabihf",
                gcc_lib_dir: "/usr/lib/gcc/arm-linux-gnueabihf/12",
            },
        }
    }

    /// The `-cpu` model `dist-test` runs this architecture's binary under, if
    /// not qemu's default: the oldest CPU the artefact must run on.
    pub fn test_cpu(self) -> Option<&'static str> {
        match self {
            Arch::X86_64 | Arch::Aarch64 => None,
            Arch::Armv7 => Some("cortex-a7"),
        }
    }

    /// The `Machine:` line `readelf -h` prints for this architecture.
    fn elf_machine(self) -> &'static str {
        match self {
            Arch::X86_64 => "Advanced Micro Devices X86-64",
            Arch::Aarch64 => "AArch64",
            Arch::Armv7 => "ARM",
        }
    }

    /// The user-mode emulator needed to run this architecture's binaries on
    /// this machine, or `None` if they run natively.
    pub fn emulator(self) -> Option<&'static str> {
        match (self, std::env::consts::ARCH) {
            (Arch::X86_64, "x86_64") | (Arch::Aarch64, "aarch64") | (Arch::Armv7, "arm") => None,
            (Arch::X86_64, _) => Some("qemu-x86_64-static"),
            (Arch::Aarch64, _) => Some("qemu-aarch64-static"),
            (Arch::Armv7, _) => Some("qemu-arm-static"),
        }
    }

    /// Parses `x86_64` (`amd64`), `aarch64` (`arm64`), `armv7` (`armhf`) or
    /// `all`.
    pub fn parse(word: &str) -> Result<Vec<Arch>> {
        Ok(match word {
            "x86_64" | "amd64" => vec![Arch::X86_64],
            "aarch64" | "arm64" => vec![Arch::Aarch64],
            "armv7" | "armhf" => vec![Arch::Armv7],
            "all" => Arch::ALL.to_vec(),
            _ => bail!("unknown target `{word}`: expected x86_64, aarch64, armv7 or all"),
        })
    }
}

/// The nightly toolchain that builds the standard library from source for
/// targets rustup has no prebuilt one for (`-Zbuild-std` is unstable, so it
/// needs nightly). Pinned so a build is repeatable; the only place it is named.
pub const BUILD_STD_TOOLCHAIN: &str = "nightly-2026-05-20";

/// Where a target's standard library and C runtime come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdSource {
    /// rustup's prebuilt `rust-std`, whose self-contained musl start files
    /// and `libc.a` make the link need nothing else.
    Rustup,
    /// The standard library compiled by [`BUILD_STD_TOOLCHAIN`]
    /// (`-Zbuild-std`), linked against Debian's prebuilt musl (`musl-dev`) and
    /// its unwinder `libgcc_eh.a` (`libgcc-12-dev`) of `debian_arch`; both are
    /// libraries only: no C compiler runs.
    BuildStd {
        /// Debian's name for the architecture (`dpkg --add-architecture`).
        debian_arch: &'static str,
        /// Debian's musl start files and `libc.a`.
        musl_lib_dir: &'static str,
        /// GCC's `crtbegin.o`/`crtend.o` and `libgcc_eh.a`.
        gcc_lib_dir: &'static str,
    },
}

impl StdSource {
    /// The Debian packages a [`StdSource::BuildStd`] build links against.
    pub fn debian_packages(self) -> Vec<String> {
        match self {
            StdSource::Rustup => Vec::new(),
            StdSource::BuildStd { debian_arch, .. } => ["musl-dev", "libgcc-12-dev"]
                .iter()
                .map(|p| format!("{p}:{debian_arch}"))
                .collect(),
        }
    }
}

/// Which cryptography provider the binary is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Default features: rustls with kafka-lite's portable RustCrypto
    /// provider, no C and no assembly (graviola is an opt-in feature that no
    /// artefact has).
    Default,
    /// `--no-default-features --features ring`: compiles C; built for the
    /// architectures with a prebuilt standard library only (see
    /// [`Variant::builds_for`]).
    Ring,
}

impl Variant {
    /// Every variant, in build order.
    pub const ALL: [Variant; 2] = [Variant::Default, Variant::Ring];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Default => "default",
            Variant::Ring => "ring",
        }
    }

    /// What the artefact name ends with.
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Default => "",
            Variant::Ring => "-ring",
        }
    }

    /// The cargo feature options that build this variant.
    pub fn cargo_feature_args(self) -> &'static [&'static str] {
        match self {
            Variant::Default => &[],
            Variant::Ring => &["--no-default-features", "--features", "ring"],
        }
    }

    /// Whether this variant is built for `arch`. ring's C would need a C
    /// cross-compiler and musl headers for a [`StdSource::BuildStd`]
    /// architecture, and the default variant runs everywhere anyway.
    pub fn builds_for(self, arch: Arch) -> bool {
        self == Variant::Default || arch.std_source() == StdSource::Rustup
    }

    /// Parses `default`, `ring` or `all`.
    pub fn parse(word: &str) -> Result<Vec<Variant>> {
        Ok(match word {
            "default" => vec![Variant::Default],
            "ring" => vec![Variant::Ring],
            "all" => Variant::ALL.to_vec(),
            _ => bail!("unknown variant `{word}`: expected default, ring or all"),
        })
    }
}

/// What `cargo metadata` tells us about the package and the build.
#[derive(Debug, Clone)]
pub struct Package {
    /// `mm2-checkpoint`'s version.
    pub version: String,
    /// Its one-line description.
    pub description: String,
    /// Its SPDX licence expression.
    pub license: String,
    /// Its source repository URL.
    pub repository: String,
    /// Cargo's target directory (honours `CARGO_TARGET_DIR`).
    pub target_dir: PathBuf,
}

impl Package {
    /// Reads the package metadata with `cargo metadata`.
    pub fn load(root: &Path) -> Result<Package> {
        let out = Command::new(cargo())
            .args(["metadata", "--format-version", "1", "--no-deps"])
            .current_dir(root)
            .output()
            .context("running `cargo metadata`")?;
        if !out.status.success() {
            bail!(
                "`cargo metadata` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        let meta: serde_json::Value =
            serde_json::from_slice(&out.stdout).context("parsing `cargo metadata` output")?;
        let package = meta["packages"]
            .as_array()
            .and_then(|all| all.iter().find(|p| p["name"] == BINARY))
            .with_context(|| format!("`cargo metadata` lists no package `{BINARY}`"))?;
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
        let version = text(&package["version"]);
        if version.is_empty() {
            bail!("`cargo metadata` gives `{BINARY}` no version");
        }
        let target_dir = meta["target_directory"]
            .as_str()
            .context("`cargo metadata` gives no target_directory")?;
        Ok(Package {
            version,
            description: text(&package["description"]),
            license: text(&package["license"]),
            repository: text(&package["repository"]),
            target_dir: PathBuf::from(target_dir),
        })
    }

    /// `target/dist/`.
    pub fn dist_dir(&self) -> PathBuf {
        self.target_dir.join("dist")
    }

    /// The file name of one artefact.
    pub fn artefact_name(&self, arch: Arch, variant: Variant) -> String {
        format!(
            "{BINARY}-{}-{}-linux-{}{}",
            self.version,
            arch.name(),
            arch.abi(),
            variant.suffix()
        )
    }

    /// Where one artefact lives.
    pub fn artefact(&self, arch: Arch, variant: Variant) -> PathBuf {
        self.dist_dir().join(self.artefact_name(arch, variant))
    }
}

/// `$CARGO`, or `cargo`.
pub fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// The user the image runs as; the empty-root runs use it too.
pub const RUN_AS: &str = "65532:65532";

/// Where the image, the Kubernetes manifests and the systemd unit in
/// `deploy/` expect the config file.
pub const CONFIG_PATH: &str = "/etc/mm2-checkpoint/mm2.properties";

/// The metrics and health port (`/metrics`, `/healthz`, `/readyz`) that the
/// image exposes and the shipped manifests probe.
pub const METRICS_PORT: u16 = 9464;

/// The arguments the shipped artefacts run the binary with: the image's
/// `Cmd` (`cargo xtask image` writes it, the `Dockerfile`'s `CMD` is checked
/// against it) and the systemd unit's `ExecStart=` after the program. They
/// start the metrics endpoint on [`METRICS_PORT`] of every interface, IPv6
/// and IPv4 (`[::]`, which falls back to IPv4 alone on a host without IPv6),
/// which the Kubernetes probes need on IPv4, IPv6 and dual-stack clusters
/// (docs/deploy.md).
pub const RUN_ARGS: [&str; 5] = [
    "run",
    "--config",
    CONFIG_PATH,
    "--metrics-addr",
    "[::]:9464",
];

/// `command -v`, without a shell.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// What [`check_static`] found out about a binary.
#[derive(Debug, Clone)]
pub struct StaticReport {
    /// `static` or `static-pie`.
    pub linkage: &'static str,
}

/// Fails unless `binary` is an ELF executable for `arch` that needs no
/// dynamic loader and no shared library, and was linked by LLD.
///
/// A static-PIE (the x86_64 musl default) has a `.dynamic` section, which it
/// uses to relocate itself, so the test is the one that matters at run time:
/// no `PT_INTERP` program header (no loader is asked for) and no `DT_NEEDED`
/// entry (no library is asked for). `file` must agree.
pub fn check_static(binary: &Path, arch: Arch) -> Result<StaticReport> {
    let shown = binary.display();
    let header = tool_output("readelf", &["-hW"], binary)?;
    let machine = elf_machine(&header)
        .with_context(|| format!("{shown}: `readelf -h` shows no Machine line"))?;
    if machine != arch.elf_machine() {
        bail!(
            "{shown}: built for `{machine}`, expected `{}`",
            arch.elf_machine()
        );
    }
    let program_headers = tool_output("readelf", &["-lW"], binary)?;
    if has_interp(&program_headers) {
        bail!("{shown} asks for a dynamic loader (PT_INTERP): it is not statically linked");
    }
    let dynamic = tool_output("readelf", &["-dW"], binary)?;
    let needed = needed_libraries(&dynamic);
    if !needed.is_empty() {
        bail!(
            "{shown} needs shared libraries (DT_NEEDED): {}",
            needed.join(", ")
        );
    }
    let comment = tool_output("readelf", &["-p", ".comment"], binary)?;
    if !comment.contains("Linker: LLD") {
        bail!("{shown}: the .comment section does not name LLD as its linker");
    }
    let file = tool_output("file", &["-b"], binary)?;
    let linkage = if file.contains("static-pie linked") {
        "static-pie"
    } else if file.contains("statically linked") {
        "static"
    } else {
        bail!(
            "{shown}: `file` does not call it statically linked: {}",
            file.trim()
        );
    };
    Ok(StaticReport { linkage })
}

/// The stdout of `tool ARGS binary` (`readelf`, `file`); fails if it fails.
pub fn tool_output(tool: &str, args: &[&str], binary: &Path) -> Result<String> {
    let out = Command::new(tool)
        .args(args)
        .arg(binary)
        .output()
        .with_context(|| format!("running `{tool}` (Debian: apt-get install binutils file)"))?;
    if !out.status.success() {
        bail!(
            "`{tool} {} {}` failed: {}",
            args.join(" "),
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value of the `Machine:` line of `readelf -h`.
fn elf_machine(readelf_h: &str) -> Option<&str> {
    readelf_h
        .lines()
        .find_map(|line| line.trim().strip_prefix("Machine:"))
        .map(str::trim)
}

/// Whether `readelf -l` lists an `INTERP` program header.
pub fn has_interp(readelf_l: &str) -> bool {
    readelf_l
        .lines()
        .any(|line| line.split_whitespace().next() == Some("INTERP"))
}

/// The libraries named by `(NEEDED)` lines of `readelf -d`.
fn needed_libraries(readelf_d: &str) -> Vec<String> {
    readelf_d
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .map(|line| {
            line.split_once('[')
                .and_then(|(_, rest)| rest.split_once(']'))
                .map_or_else(|| line.trim().to_owned(), |(name, _)| name.to_owned())
        })
        .collect()
}

/// Lower-case hex SHA-256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Lower-case hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// The release-wide files copied from the repository root into
/// `target/dist/` (see [`crate::dist::release`]).
pub const COPIED: [&str; 3] = ["LICENSE", "NOTICE", "CHANGELOG.md"];

/// The third-party licences file of `target/dist/`.
pub const THIRD_PARTY: &str = "THIRD-PARTY-LICENSES";

/// Rewrites `target/dist/SHA256SUMS` (the `sha256sum` format, so
/// `sha256sum -c SHA256SUMS` verifies it) over every artefact of the current
/// version present in `target/dist/` (binaries, their SBOMs and image
/// archives) and the release-wide files ([`THIRD_PARTY`], [`COPIED`]).
pub fn write_sha256sums(package: &Package) -> Result<PathBuf> {
    let dir = package.dist_dir();
    let prefix = format!("{BINARY}-{}-", package.version);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| {
            name.starts_with(&prefix) || name == THIRD_PARTY || COPIED.contains(&name.as_str())
        })
        .collect();
    names.sort();
    let mut text = String::new();
    for name in &names {
        text.push_str(&format!("{}  {name}\n", sha256_file(&dir.join(name))?));
    }
    let path = dir.join("SHA256SUMS");
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// The digest `SHA256SUMS` records for `name`, if any.
pub fn recorded_sha256(package: &Package, name: &str) -> Result<Option<String>> {
    let path = package.dist_dir().join("SHA256SUMS");
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    Ok(text.lines().find_map(|line| {
        let (digest, file) = line.split_once("  ")?;
        (file == name).then(|| digest.to_owned())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_run_arguments_serve_metrics_on_the_metrics_port() {
        let at = RUN_ARGS
            .iter()
            .position(|a| *a == "--metrics-addr")
            .unwrap();
        assert_eq!(RUN_ARGS[at + 1], format!("[::]:{METRICS_PORT}"));
        let at = RUN_ARGS.iter().position(|a| *a == "--config").unwrap();
        assert_eq!(RUN_ARGS[at + 1], CONFIG_PATH);
    }

    #[test]
    fn interp_header_is_found_in_readelf_output() {
        let dynamic = "Program Headers:\n  Type Offset VirtAddr\n  PHDR 0x000040 0x0000000000000040\n  INTERP 0x000318 0x0000000000000318\n      [Requesting program interpreter: /lib64/ld-linux-x86-64.so.2]\n";
        let static_pie = "Program Headers:\n  PHDR 0x000040 0x40\n  LOAD 0x000000 0x0\n  DYNAMIC 0x05c2a0 0x5d2a0\n  GNU_RELRO 0x05bcf8\n";
        assert!(has_interp(dynamic));
        assert!(!has_interp(static_pie));
    }

    #[test]
    fn needed_libraries_are_read_from_readelf_output() {
        let text = "Dynamic section at offset 0x2dc8 contains 24 entries:\n  Tag        Type                         Name/Value\n 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]\n 0x0000000000000001 (NEEDED)             Shared library: [libgcc_s.so.1]\n 0x000000000000000c (INIT)               0x1000\n";
        assert_eq!(needed_libraries(text), ["libc.so.6", "libgcc_s.so.1"]);
        assert!(needed_libraries("There is no dynamic section in this file.\n").is_empty());
    }

    #[test]
    fn every_artefact_name_ends_in_its_triples_abi() {
        for arch in Arch::ALL {
            assert!(arch.triple().ends_with(arch.abi()), "{arch:?}");
            assert!(arch.triple().starts_with(arch.name()), "{arch:?}");
        }
        assert_eq!(Arch::parse("armhf").unwrap(), vec![Arch::Armv7]);
        assert_eq!(
            Arch::Armv7.std_source().debian_packages(),
            ["musl-dev:armhf", "libgcc-12-dev:armhf"]
        );
        assert!(Arch::X86_64.std_source().debian_packages().is_empty());
        assert!(!Variant::Ring.builds_for(Arch::Armv7));
        assert!(Variant::Ring.builds_for(Arch::Aarch64));
    }

    #[test]
    fn elf_machine_is_read_from_readelf_header() {
        let text = "ELF Header:\n  Class:                             ELF64\n  Machine:                           AArch64\n";
        assert_eq!(elf_machine(text), Some("AArch64"));
    }

    /// The test binary itself is an ordinary dynamically linked glibc program,
    /// so the static check must reject it.
    #[test]
    fn check_static_rejects_a_dynamically_linked_binary() {
        let exe = std::env::current_exe().unwrap();
        let arch = match std::env::consts::ARCH {
            "aarch64" => Arch::Aarch64,
            _ => Arch::X86_64,
        };
        let err = check_static(&exe, arch).unwrap_err().to_string();
        assert!(
            err.contains("PT_INTERP") || err.contains("DT_NEEDED"),
            "unexpected error: {err}"
        );
    }

    #[test]
    fn sha256_of_a_file_matches_the_known_digest() {
        let dir = std::env::temp_dir().join(format!("xtask-sha-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("abc");
        fs::write(&file, b"abc").unwrap();
        assert_eq!(
            sha256_file(&file).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
