//! `cargo xtask dist` and `cargo xtask dist-test`: static release binaries.
//!
//! `dist` builds `mm2-checkpoint` for the musl targets, links it with the
//! `rust-lld` that ships with every rustup toolchain (the musl targets bring
//! their own C runtime objects, so no C toolchain is involved), checks that
//! each artefact really is static, and writes them with a `SHA256SUMS` file
//! into `target/dist/`:
//!
//! ```text
//! mm2-checkpoint-<version>-x86_64-linux-musl        default features (graviola)
//! mm2-checkpoint-<version>-aarch64-linux-musl
//! mm2-checkpoint-<version>-x86_64-linux-musl-ring   --no-default-features --features ring
//! mm2-checkpoint-<version>-aarch64-linux-musl-ring
//! SHA256SUMS
//! ```
//!
//! The default variant must not compile a single line of C. To prove it, the
//! build runs with every variable a build script consults to find a C or C++
//! compiler (`CC`, `CXX`, `TARGET_CC`, `HOST_CC`, `CC_<triple>`, ...) pointing
//! at a script that prints what it was asked to do and fails. The `ring`
//! variant compiles ring's C and assembly, so it uses Debian's `clang` and
//! `llvm-ar`, which cross-compile for both targets.
//!
//! `dist-test` runs each artefact in a directory that holds nothing but the
//! binary (`chroot`), the same environment as a `FROM scratch` image.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::distrun::{CONFIG_IN_ROOT, Clusters, Protocol};

/// The binary this module packages.
pub const BINARY: &str = "mm2-checkpoint";

/// A CPU architecture we ship a binary for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// 64-bit x86 (`amd64` in OCI terms).
    X86_64,
    /// 64-bit ARM (`arm64` in OCI terms).
    Aarch64,
}

impl Arch {
    /// Every architecture, in build order.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The name used on the command line and in artefact names.
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The Rust target triple.
    pub fn triple(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-musl",
            Arch::Aarch64 => "aarch64-unknown-linux-musl",
        }
    }

    /// The architecture name in OCI image configs and indexes.
    pub fn oci(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
        }
    }

    /// The `Machine:` line `readelf -h` prints for this architecture.
    fn elf_machine(self) -> &'static str {
        match self {
            Arch::X86_64 => "Advanced Micro Devices X86-64",
            Arch::Aarch64 => "AArch64",
        }
    }

    /// The user-mode emulator needed to run this architecture's binaries on
    /// this machine, or `None` if they run natively.
    fn emulator(self) -> Option<&'static str> {
        match (self, std::env::consts::ARCH) {
            (Arch::X86_64, "x86_64") | (Arch::Aarch64, "aarch64") => None,
            (Arch::X86_64, _) => Some("qemu-x86_64-static"),
            (Arch::Aarch64, _) => Some("qemu-aarch64-static"),
        }
    }

    fn parse(word: &str) -> Result<Vec<Arch>> {
        Ok(match word {
            "x86_64" | "amd64" => vec![Arch::X86_64],
            "aarch64" | "arm64" => vec![Arch::Aarch64],
            "all" => Arch::ALL.to_vec(),
            _ => bail!("unknown target `{word}`: expected x86_64, aarch64 or all"),
        })
    }
}

/// Which cryptography provider the binary is built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Default features: rustls with the pure-Rust `graviola` provider, no C.
    Default,
    /// `--no-default-features --features ring`: runs on any CPU, compiles C.
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

    fn cargo_feature_args(self) -> &'static [&'static str] {
        match self {
            Variant::Default => &[],
            Variant::Ring => &["--no-default-features", "--features", "ring"],
        }
    }

    /// Parses `default`, `ring` or `all`.
    pub fn parse(word: &str) -> Result<Vec<Variant>> {
        Ok(match word {
            "default" | "graviola" => vec![Variant::Default],
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
            "{BINARY}-{}-{}-linux-musl{}",
            self.version,
            arch.name(),
            variant.suffix()
        )
    }

    /// Where one artefact lives.
    pub fn artefact(&self, arch: Arch, variant: Variant) -> PathBuf {
        self.dist_dir().join(self.artefact_name(arch, variant))
    }
}

fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

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

/// `cargo xtask dist [--target x86_64|aarch64|all] [--variant default|ring|all] [--allow-c]`.
pub fn dist(root: &Path, args: &[&str]) -> Result<()> {
    let options = parse_dist_args(args)?;
    let package = Package::load(root)?;
    let dist_dir = package.dist_dir();
    fs::create_dir_all(&dist_dir).with_context(|| format!("creating {}", dist_dir.display()))?;
    require_rust_lld()?;
    for arch in &options.arches {
        ensure_rust_target(root, *arch)?;
    }
    let poison = write_no_c_compiler(&package.target_dir)?;

    for &variant in &options.variants {
        for &arch in &options.arches {
            let started = std::time::Instant::now();
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
            let report = check_static(&artefact, arch)?;
            let size = fs::metadata(&artefact)?.len();
            eprintln!(
                "xtask: {} ({size} bytes, {}; {}) in {:.1}s",
                artefact.display(),
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
    let sums = write_sha256sums(&package)?;
    eprintln!("xtask: wrote {}", sums.display());
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

/// One `cargo build --release` of the binary for one target and variant.
fn build(
    root: &Path,
    package: &Package,
    arch: Arch,
    variant: Variant,
    no_c_compiler: Option<&Path>,
) -> Result<()> {
    let triple = arch.triple();
    let mut cmd = Command::new(cargo());
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
    .env(
        format!(
            "CARGO_TARGET_{}_LINKER",
            triple.replace('-', "_").to_uppercase()
        ),
        "rust-lld",
    );
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
        "xtask: cargo build --release -p {BINARY} --target {triple} {} (variant {}, version {})",
        variant.cargo_feature_args().join(" "),
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

fn tool_output(tool: &str, args: &[&str], binary: &Path) -> Result<String> {
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
fn has_interp(readelf_l: &str) -> bool {
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

/// Rewrites `target/dist/SHA256SUMS` (the `sha256sum` format, so
/// `sha256sum -c SHA256SUMS` verifies it) over every artefact of the current
/// version present in `target/dist/`: binaries and image archives.
pub fn write_sha256sums(package: &Package) -> Result<PathBuf> {
    let dir = package.dist_dir();
    let prefix = format!("{BINARY}-{}-", package.version);
    let mut names: Vec<String> = fs::read_dir(&dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.starts_with(&prefix))
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

// ---------------------------------------------------------------------------
// dist-test
// ---------------------------------------------------------------------------

/// A file placed into the empty root.
#[derive(Debug, Clone)]
struct RootFile {
    source: PathBuf,
    /// Path inside the root, without the leading `/`.
    dest: String,
    mode: u32,
}

/// One run of the binary inside the empty root.
#[derive(Debug, Clone, Copy)]
struct RunCase {
    args: &'static [&'static str],
    /// Whether the run must exit 0 (otherwise it only has to have run by
    /// itself, see [`ran_by_itself`]).
    must_succeed: bool,
}

/// What `dist-test` runs in each empty root.
const RUN_CASES: &[RunCase] = &[
    RunCase {
        args: &["--version"],
        must_succeed: true,
    },
    RunCase {
        args: &["--help"],
        must_succeed: true,
    },
];

/// The user the image runs as; the empty-root runs use it too.
pub const RUN_AS: &str = "65532:65532";

/// The files that make up the empty root for one artefact.
fn root_files(binary: &Path, arch: Arch) -> Result<Vec<RootFile>> {
    let mut files = vec![RootFile {
        source: binary.to_path_buf(),
        dest: BINARY.to_owned(),
        mode: 0o755,
    }];
    if let Some(emulator) = arch.emulator() {
        let path = which(emulator).with_context(|| {
            format!(
                "`{emulator}` is needed to run {} binaries here (Debian: apt-get install qemu-user-static)",
                arch.name()
            )
        })?;
        files.push(RootFile {
            source: path,
            dest: emulator.to_owned(),
            mode: 0o755,
        });
    }
    Ok(files)
}

/// Makes `dir` an otherwise empty root holding exactly `files`.
fn make_root(dir: &Path, files: &[RootFile]) -> Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    for file in files {
        let dest = dir.join(&file.dest);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::copy(&file.source, &dest)
            .with_context(|| format!("copying {} to {}", file.source.display(), dest.display()))?;
        fs::set_permissions(&dest, fs::Permissions::from_mode(file.mode))?;
    }
    Ok(())
}

/// How a program is started inside a root directory.
enum Jail {
    /// We are root: `chroot --userspec=65532:65532`, as the image runs.
    Chroot,
    /// Not root: a user namespace with `unshare --map-root-user --root`.
    Unshare,
}

impl Jail {
    fn detect() -> Jail {
        let uid = Command::new("id")
            .arg("-u")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .unwrap_or_default();
        if uid == "0" {
            Jail::Chroot
        } else {
            Jail::Unshare
        }
    }

    fn launcher(&self) -> &'static str {
        match self {
            Jail::Chroot => "chroot",
            Jail::Unshare => "unshare",
        }
    }

    /// Runs `/<program> args` inside `root`, through `emulator` if given.
    fn run(&self, root: &Path, emulator: Option<&str>, args: &[&str]) -> Result<Output> {
        self.run_with(root, emulator, &[], args, RUN_TIMEOUT)
    }

    /// Like [`Jail::run`], with `emulator_args` before the program and the
    /// run killed (and reported as an error) after `timeout`.
    fn run_with(
        &self,
        root: &Path,
        emulator: Option<&str>,
        emulator_args: &[&str],
        args: &[&str],
        timeout: Duration,
    ) -> Result<Output> {
        // Resolved here: the child's environment is cleared below, and a
        // cleared PATH would also hide the launcher itself.
        let launcher = which(self.launcher())
            .with_context(|| format!("`{}` is not on PATH", self.launcher()))?;
        let mut cmd = match self {
            Jail::Chroot => {
                let mut cmd = Command::new(&launcher);
                cmd.arg(format!("--userspec={RUN_AS}")).arg(root);
                cmd
            }
            Jail::Unshare => {
                let mut cmd = Command::new(&launcher);
                cmd.args(["--user", "--map-root-user", "--root"]).arg(root);
                cmd
            }
        };
        if let Some(emulator) = emulator {
            cmd.arg(format!("/{emulator}")).args(emulator_args);
        }
        cmd.arg(format!("/{BINARY}")).args(args).env_clear();
        output_within(cmd, timeout).with_context(|| format!("running `{}`", self.launcher()))
    }
}

/// How long one run in an empty root may take (a `run --once` round under
/// qemu included).
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// Runs `cmd` to completion, capturing its output; kills it after `timeout`.
fn output_within(mut cmd: Command, timeout: Duration) -> Result<Output> {
    let run = e2e::process::output_within(&mut cmd, timeout)?;
    let Some(status) = run.status else {
        bail!("still running after {}s; killed", timeout.as_secs());
    };
    Ok(Output {
        status,
        stdout: run.stdout,
        stderr: run.stderr,
    })
}

/// Whether the program itself ran (as opposed to the launcher failing to
/// start it): it exited on its own with a code other than the launcher's
/// 126/127 ("cannot execute"/"not found", which is what the kernel's ENOENT
/// for a missing dynamic loader becomes), and wrote a line mentioning
/// `mm2-checkpoint` that the launcher or emulator did not write.
fn ran_by_itself(output: &Output, launchers: &[&str]) -> bool {
    let Some(code) = output.status.code() else {
        return false; // killed by a signal
    };
    if code == 126 || code == 127 {
        return false;
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    text.lines().any(|line| {
        line.contains(BINARY)
            && !launchers
                .iter()
                .any(|launcher| line.starts_with(&format!("{launcher}:")))
    })
}

fn describe(output: &Output) -> String {
    format!(
        "{}; stdout: {:?}; stderr: {:?}",
        output.status,
        String::from_utf8_lossy(&output.stdout).trim(),
        String::from_utf8_lossy(&output.stderr).trim()
    )
}

/// `cargo xtask dist-test [--target ...] [--variant ...]`: runs every built
/// artefact inside an empty root directory.
pub fn dist_test(root: &Path, args: &[&str]) -> Result<()> {
    let mut arches = Arch::ALL.to_vec();
    let mut variants = Variant::ALL.to_vec();
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--target" => arches = Arch::parse(rest.next().context("`--target` needs a value")?)?,
            "--variant" => {
                variants = Variant::parse(rest.next().context("`--variant` needs a value")?)?
            }
            _ => bail!("unknown argument `{arg}` to `cargo xtask dist-test`"),
        }
    }
    let package = Package::load(root)?;
    let roots = package.dist_dir().join("test-root");
    let jail = Jail::detect();

    control_dynamic_binary_fails(&roots, &jail)?;
    let clusters = Clusters::up(&crate::kafka::Layout::new(root))?;
    // Control: a seeded round that no binary ran must fail verification.
    let unrun = clusters.prepare("control")?;
    if clusters.verify(&unrun).is_ok() {
        bail!("control: a round no binary ran passed verification, so verification proves nothing");
    }
    eprintln!("xtask: control: a round no binary ran fails verification as expected");

    let mut tested = 0;
    for &variant in &variants {
        for &arch in &arches {
            let binary = package.artefact(arch, variant);
            if !binary.is_file() {
                continue;
            }
            check_static(&binary, arch)?;
            let name = package.artefact_name(arch, variant);
            let dir = roots.join(&name);
            make_root(&dir, &root_files(&binary, arch)?)?;
            let mut launchers = vec![jail.launcher()];
            launchers.extend(arch.emulator());

            if let Some(emulator) = arch.emulator() {
                // Outside any root first: the emulator itself works.
                let out = Command::new(emulator)
                    .arg(&binary)
                    .arg("--version")
                    .output()
                    .with_context(|| format!("running `{emulator}`"))?;
                if !ran_by_itself(&out, &launchers) {
                    bail!("{name} did not run under {emulator}: {}", describe(&out));
                }
            }
            for case in RUN_CASES {
                let out = jail.run(&dir, arch.emulator(), case.args)?;
                let ok = if case.must_succeed {
                    out.status.success()
                } else {
                    ran_by_itself(&out, &launchers)
                };
                if !ok {
                    bail!(
                        "{name} `{}` in an empty root ({}): {}",
                        case.args.join(" "),
                        jail.launcher(),
                        describe(&out)
                    );
                }
                eprintln!(
                    "xtask: {name} `{}` ran in an empty root via {}{} as {RUN_AS}: {}",
                    case.args.join(" "),
                    jail.launcher(),
                    arch.emulator()
                        .map(|e| format!(" + {e}"))
                        .unwrap_or_default(),
                    out.status
                );
            }
            for protocol in Protocol::ALL {
                daemon_round(&clusters, &jail, &dir, &name, arch, protocol, None)?;
            }
            if arch == Arch::X86_64 {
                cpu_check(&clusters, &jail, &dir, &name, variant)?;
            }
            tested += 1;
        }
    }
    if tested == 0 {
        bail!(
            "no artefacts in {} for the chosen targets and variants: run `cargo xtask dist` first",
            package.dist_dir().display()
        );
    }
    eprintln!("xtask: dist-test passed for {tested} artefact(s)");
    Ok(())
}

/// One real `run --once` of the binary in the empty root `dir` over
/// `protocol`, then a check from outside that its checkpoints were written.
/// `cpu` runs the binary under `qemu-x86_64-static -cpu <model>` (the
/// emulator must be in the root).
fn daemon_round(
    clusters: &Clusters,
    jail: &Jail,
    dir: &Path,
    name: &str,
    arch: Arch,
    protocol: Protocol,
    cpu: Option<&str>,
) -> Result<()> {
    let round = clusters.prepare(&format!("{}_{}", arch.name(), protocol.name()))?;
    clusters.install(dir, &round, protocol)?;
    let args = ["run", "--config", CONFIG_IN_ROOT, "--once"];
    let started = Instant::now();
    let out = match cpu {
        Some(model) => {
            jail.run_with(dir, Some(QEMU_X86_64), &["-cpu", model], &args, RUN_TIMEOUT)?
        }
        None => jail.run_with(dir, arch.emulator(), &[], &args, RUN_TIMEOUT)?,
    };
    let how = format!(
        "`{}` over {} in an empty root via {}{} as {RUN_AS}",
        args.join(" "),
        protocol.name(),
        jail.launcher(),
        cpu.map(|m| format!(" + {QEMU_X86_64} -cpu {m}"))
            .or_else(|| arch.emulator().map(|e| format!(" + {e}")))
            .unwrap_or_default(),
    );
    if !out.status.success() {
        bail!("{name} {how}: {}", describe(&out));
    }
    clusters
        .verify(&round)
        .with_context(|| format!("{name} {how} exited 0, but"))?;
    eprintln!(
        "xtask: {name} {how}: exit 0 in {:.1}s, checkpoints for {} verified on the target",
        started.elapsed().as_secs_f64(),
        round.group
    );
    Ok(())
}

/// The x86_64 emulator, used to run x86_64 binaries on an older CPU model.
const QEMU_X86_64: &str = "qemu-x86_64-static";

/// A CPU model without AES-NI, PCLMULQDQ, BMI1, ADX, AVX and AVX2.
const OLD_CPU: &str = "Nehalem";

/// qemu's model with every feature it emulates (AVX2 and ADX included).
const FULL_CPU: &str = "max";

/// The runtime CPU check, exercised on an emulated CPU that lacks what the
/// graviola provider needs: the default x86_64 build must refuse a TLS config
/// with a message naming the missing features and the `ring` build; the ring
/// build must run the same round to completion on that CPU, and the default
/// build must complete it on an emulated CPU that has the features.
fn cpu_check(
    clusters: &Clusters,
    jail: &Jail,
    dir: &Path,
    name: &str,
    variant: Variant,
) -> Result<()> {
    let Some(qemu) = which(QEMU_X86_64) else {
        bail!(
            "`{QEMU_X86_64}` is needed for the CPU check (Debian: apt-get install qemu-user-static)"
        );
    };
    let dest = dir.join(QEMU_X86_64);
    fs::copy(&qemu, &dest).with_context(|| format!("copying {}", qemu.display()))?;
    fs::set_permissions(&dest, fs::Permissions::from_mode(0o755))?;
    match variant {
        Variant::Ring => daemon_round(
            clusters,
            jail,
            dir,
            name,
            Arch::X86_64,
            Protocol::Ssl,
            Some(OLD_CPU),
        ),
        Variant::Default => {
            let round = clusters.prepare("x86_64_oldcpu")?;
            clusters.install(dir, &round, Protocol::Ssl)?;
            let args = ["run", "--config", CONFIG_IN_ROOT, "--once"];
            let out = jail.run_with(
                dir,
                Some(QEMU_X86_64),
                &["-cpu", OLD_CPU],
                &args,
                RUN_TIMEOUT,
            )?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            let missing = ["aes", "pclmulqdq", "bmi1", "adx", "avx", "avx2"];
            let names_all = missing.iter().all(|f| {
                stderr
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .any(|word| word == *f)
            });
            if out.status.success()
                || !ran_by_itself(&out, &[jail.launcher(), QEMU_X86_64])
                || !names_all
                || !stderr.contains("`ring`")
            {
                bail!(
                    "{name} on an emulated {OLD_CPU} CPU with a TLS config must exit non-zero \
                     naming the missing CPU features {missing:?} and the `ring` build: {}",
                    describe(&out)
                );
            }
            eprintln!(
                "xtask: {name} `{}` over SSL on an emulated {OLD_CPU} CPU: {} with {:?}",
                args.join(" "),
                out.status,
                stderr.trim()
            );
            // Control: on an emulated CPU that has the features, the same
            // build completes a TLS round, so the refusal above is the check.
            daemon_round(
                clusters,
                jail,
                dir,
                name,
                Arch::X86_64,
                Protocol::Ssl,
                Some(FULL_CPU),
            )
        }
    }
}

/// The test's negative control: the host's own dynamically linked `true`,
/// put where the binary would be, must NOT run in an empty root. This proves
/// the empty-root runs above would catch a dynamic binary.
fn control_dynamic_binary_fails(roots: &Path, jail: &Jail) -> Result<()> {
    let dynamic = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .context("no /usr/bin/true for the negative control")?;
    if !has_interp(&tool_output("readelf", &["-lW"], &dynamic)?) {
        eprintln!(
            "xtask: {} is static on this machine; skipping the negative control",
            dynamic.display()
        );
        return Ok(());
    }
    let dir = roots.join("control-dynamic");
    make_root(
        &dir,
        &[RootFile {
            source: dynamic.clone(),
            dest: BINARY.to_owned(),
            mode: 0o755,
        }],
    )?;
    let out = jail.run(&dir, None, &["--version"])?;
    if out.status.success() || ran_by_itself(&out, &[jail.launcher()]) {
        bail!(
            "negative control: the dynamically linked {} ran in an empty root, so the \
             empty-root test proves nothing: {}",
            dynamic.display(),
            describe(&out)
        );
    }
    eprintln!(
        "xtask: negative control: dynamically linked {} fails in an empty root as expected ({})",
        dynamic.display(),
        out.status
    );
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

    fn output(code: i32, stdout: &str, stderr: &str) -> Output {
        use std::os::unix::process::ExitStatusExt;
        Output {
            status: std::process::ExitStatus::from_raw(code << 8),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_launcher_failure_is_not_a_run() {
        let out = output(
            127,
            "",
            "chroot: failed to run command '/mm2-checkpoint': No such file or directory\n",
        );
        assert!(!ran_by_itself(&out, &["chroot"]));
    }

    #[test]
    fn an_emulator_error_is_not_a_run() {
        let out = output(
            255,
            "",
            "qemu-aarch64-static: /mm2-checkpoint: Could not open '/lib/ld-linux-aarch64.so.1'\n",
        );
        assert!(!ran_by_itself(&out, &["chroot", "qemu-aarch64-static"]));
    }

    #[test]
    fn the_program_speaking_for_itself_is_a_run_whatever_its_exit_code() {
        let placeholder = output(2, "", "mm2-checkpoint: the daemon is not built yet\n");
        let version = output(0, "mm2-checkpoint 0.1.0\n", "");
        assert!(ran_by_itself(&placeholder, &["chroot"]));
        assert!(ran_by_itself(&version, &["chroot"]));
    }
}
