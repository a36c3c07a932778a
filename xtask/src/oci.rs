//! `cargo xtask image`: a `FROM scratch` OCI image without a container engine.
//!
//! The image is one layer holding exactly `/mm2-checkpoint` (mode 0755,
//! owned by root), and a config that runs it as user 65532:65532 with
//! `ENTRYPOINT ["/mm2-checkpoint"]` and [`RUN_ARGS`] as `CMD` (`run --config
//! /etc/mm2-checkpoint/mm2.properties --metrics-addr [::]:9464`). Everything
//! is written here, byte for byte and deterministically (sorted tar entries,
//! mtime 0, uid/gid 0, no gzip timestamp, sorted JSON keys), so the same
//! binaries always give the same digests:
//!
//! ```text
//! target/dist/oci/                               an OCI image layout
//!   oci-layout                                   {"imageLayoutVersion": "1.0.0"}
//!   index.json                                   tags -> manifests (or an image index)
//!   blobs/sha256/<digest>                        layers, configs, manifests, index
//! target/dist/mm2-checkpoint-<version>-oci.tar   the same layout as one tar file
//! ```
//!
//! With both binaries present the `latest` and `<version>` tags point at an
//! image index for linux/amd64 and linux/arm64; `<version>-amd64` and
//! `<version>-arm64` point at the single-platform manifests. `--check`
//! validates the result with `skopeo` and `umoci` (Debian packages), then
//! runs the image's own entrypoint and command from its OCI config in the
//! unpacked rootfs against the test clusters until `/readyz` answers 200.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::dist::artefact::{self, Arch, BINARY, METRICS_PORT, Package, RUN_ARGS, RUN_AS, Variant};
use crate::dist::test::image_ready;

const MEDIA_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const MEDIA_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const MEDIA_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
const MEDIA_LAYER_GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// The fixed creation time: the image depends only on its inputs.
const CREATED: &str = "1970-01-01T00:00:00Z";

/// A content descriptor: what a manifest or index says about a blob.
#[derive(Debug, Clone)]
struct Descriptor {
    media_type: &'static str,
    digest: String,
    size: u64,
}

impl Descriptor {
    fn json(&self) -> Value {
        json!({ "mediaType": self.media_type, "digest": self.digest, "size": self.size })
    }
}

/// Options of `cargo xtask image`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ImageOptions {
    variant: Variant,
    check: bool,
}

fn parse_image_args(args: &[&str]) -> Result<ImageOptions> {
    let mut options = ImageOptions {
        variant: Variant::Default,
        check: false,
    };
    let mut rest = args.iter();
    while let Some(&arg) = rest.next() {
        match arg {
            "--check" => options.check = true,
            "--variant" => {
                let value = rest.next().context("`--variant` needs a value")?;
                match Variant::parse(value)?.as_slice() {
                    [one] => options.variant = *one,
                    _ => bail!("`cargo xtask image` builds one variant at a time"),
                }
            }
            _ => bail!("unknown argument `{arg}` to `cargo xtask image`"),
        }
    }
    Ok(options)
}

/// Where the layout and its archive go for a variant.
fn outputs(package: &Package, variant: Variant) -> (PathBuf, PathBuf) {
    let dir = package.dist_dir();
    (
        dir.join(format!("oci{}", variant.suffix())),
        dir.join(format!(
            "{BINARY}-{}{}-oci.tar",
            package.version,
            variant.suffix()
        )),
    )
}

/// `cargo xtask image [--variant default|ring] [--check]`.
pub fn image(root: &Path, args: &[&str]) -> Result<()> {
    let options = parse_image_args(args)?;
    let package = Package::load(root)?;
    let (layout, archive) = outputs(&package, options.variant);

    let mut binaries = Vec::new();
    for arch in Arch::ALL {
        let path = package.artefact(arch, options.variant);
        if !path.is_file() {
            continue;
        }
        let name = package.artefact_name(arch, options.variant);
        let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let digest = artefact::hex(&Sha256::digest(&bytes));
        match artefact::recorded_sha256(&package, &name)? {
            Some(recorded) if recorded == digest => {}
            Some(_) => {
                bail!("{name} does not match target/dist/SHA256SUMS: rerun `cargo xtask dist`")
            }
            None => bail!("{name} is not in target/dist/SHA256SUMS: rerun `cargo xtask dist`"),
        }
        artefact::check_static(&path, arch)?;
        // The image has no package database: scanners find the crates
        // through the binary's own dependency list.
        crate::dist::auditable::read_document(&path)
            .with_context(|| format!("{name}: rerun `cargo xtask dist`"))?;
        binaries.push((arch, bytes));
    }
    if binaries.is_empty() {
        bail!(
            "no {} binaries in {}: run `cargo xtask dist --variant {}` first",
            options.variant.name(),
            package.dist_dir().display(),
            options.variant.name()
        );
    }

    write_layout(&layout, &package, &binaries)?;
    write_archive(&layout, &archive)?;
    artefact::write_sha256sums(&package)?;
    eprintln!(
        "xtask: wrote {} and {} ({} bytes) for {}",
        layout.display(),
        archive.display(),
        fs::metadata(&archive)?.len(),
        binaries
            .iter()
            .map(|(arch, _)| arch.oci_platform())
            .collect::<Vec<_>>()
            .join(", ")
    );

    if options.check {
        check(root, &package, &layout, &archive, &binaries)?;
    }
    Ok(())
}

/// Writes the whole layout, replacing what was there.
fn write_layout(layout: &Path, package: &Package, binaries: &[(Arch, Vec<u8>)]) -> Result<()> {
    if layout.exists() {
        fs::remove_dir_all(layout).with_context(|| format!("removing {}", layout.display()))?;
    }
    fs::create_dir_all(layout.join("blobs/sha256"))
        .with_context(|| format!("creating {}", layout.display()))?;
    fs::write(
        layout.join("oci-layout"),
        b"{\"imageLayoutVersion\":\"1.0.0\"}",
    )?;

    let labels = labels(package);
    let mut manifests = Vec::new();
    for (arch, binary) in binaries {
        let layer_tar = layer_tar(binary)?;
        let diff_id = format!("sha256:{}", artefact::hex(&Sha256::digest(&layer_tar)));
        let layer = write_blob(layout, MEDIA_LAYER_GZIP, &gzip(&layer_tar)?)?;
        let config = write_blob(
            layout,
            MEDIA_CONFIG,
            &config_json(*arch, &diff_id, &labels)?,
        )?;
        let manifest = write_blob(
            layout,
            MEDIA_MANIFEST,
            &to_bytes(&json!({
                "schemaVersion": 2,
                "mediaType": MEDIA_MANIFEST,
                "config": config.json(),
                "layers": [layer.json()],
                "annotations": labels,
            }))?,
        )?;
        manifests.push((*arch, manifest));
    }

    let platform = |arch: Arch| {
        let mut platform = json!({ "architecture": arch.oci(), "os": "linux" });
        if let Some(variant) = arch.oci_variant() {
            platform["variant"] = json!(variant);
        }
        platform
    };
    let mut entries = Vec::new();
    // The multi-platform tags: an image index when there is more than one.
    let top = match manifests.as_slice() {
        [(arch, only)] => {
            let mut entry = only.json();
            entry["platform"] = platform(*arch);
            entry
        }
        _ => {
            let list: Vec<Value> = manifests
                .iter()
                .map(|(arch, m)| {
                    let mut entry = m.json();
                    entry["platform"] = platform(*arch);
                    entry
                })
                .collect();
            let index = write_blob(
                layout,
                MEDIA_INDEX,
                &to_bytes(&json!({
                    "schemaVersion": 2,
                    "mediaType": MEDIA_INDEX,
                    "manifests": list,
                    "annotations": labels,
                }))?,
            )?;
            index.json()
        }
    };
    for tag in ["latest".to_owned(), package.version.clone()] {
        let mut entry = top.clone();
        entry["annotations"] = json!({ REF_NAME: tag });
        entries.push(entry);
    }
    // One single-platform tag per architecture, for tools that want a plain
    // manifest (umoci) or one platform only.
    for (arch, manifest) in &manifests {
        let mut entry = manifest.json();
        entry["platform"] = platform(*arch);
        entry["annotations"] = json!({ REF_NAME: arch_tag(package, *arch) });
        entries.push(entry);
    }
    fs::write(
        layout.join("index.json"),
        to_bytes(&json!({
            "schemaVersion": 2,
            "mediaType": MEDIA_INDEX,
            "manifests": entries,
        }))?,
    )?;
    Ok(())
}

fn arch_tag(package: &Package, arch: Arch) -> String {
    match arch.oci_variant() {
        Some(variant) => format!("{}-{}-{variant}", package.version, arch.oci()),
        None => format!("{}-{}", package.version, arch.oci()),
    }
}

/// The `org.opencontainers.image.*` labels (and manifest annotations).
fn labels(package: &Package) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut put = |key: &str, value: &str| {
        if !value.is_empty() {
            labels.insert(format!("org.opencontainers.image.{key}"), value.to_owned());
        }
    };
    put("title", BINARY);
    put("description", &package.description);
    put("version", &package.version);
    put("licenses", &package.license);
    put("source", &package.repository);
    put("revision", &git_revision().unwrap_or_default());
    labels
}

/// `git rev-parse HEAD`, if this is a git checkout.
fn git_revision() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The image config: platform, how to run it, and the layer's diff id.
fn config_json(arch: Arch, diff_id: &str, labels: &BTreeMap<String, String>) -> Result<Vec<u8>> {
    let mut config = json!({
        "created": CREATED,
        "architecture": arch.oci(),
        "os": "linux",
        "config": {
            "User": RUN_AS,
            "Entrypoint": [format!("/{BINARY}")],
            "Cmd": RUN_ARGS,
            "WorkingDir": "/",
            "ExposedPorts": { format!("{METRICS_PORT}/tcp"): {} },
            "Labels": labels,
        },
        "rootfs": { "type": "layers", "diff_ids": [diff_id] },
        "history": [{ "created": CREATED, "created_by": "cargo xtask image" }],
    });
    if let Some(variant) = arch.oci_variant() {
        config["variant"] = json!(variant);
    }
    to_bytes(&config)
}

/// Compact JSON; `serde_json`'s map is a `BTreeMap`, so keys come out sorted.
fn to_bytes(value: &Value) -> Result<Vec<u8>> {
    serde_json::to_vec(value).context("serialising JSON")
}

/// The uncompressed layer: one ustar entry, `mm2-checkpoint`, mode 0755,
/// uid/gid 0, mtime 0.
fn layer_tar(binary: &[u8]) -> Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_mode(0o755);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_size(binary.len() as u64);
    builder
        .append_data(&mut header, BINARY, binary)
        .context("writing the layer tar")?;
    builder.into_inner().context("finishing the layer tar")
}

/// gzip with no name and mtime 0 (flate2's defaults), best compression.
fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).context("compressing the layer")?;
    encoder.finish().context("compressing the layer")
}

/// Stores a blob under its digest and describes it.
fn write_blob(layout: &Path, media_type: &'static str, bytes: &[u8]) -> Result<Descriptor> {
    let hex = artefact::hex(&Sha256::digest(bytes));
    let path = layout.join("blobs/sha256").join(&hex);
    fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(Descriptor {
        media_type,
        digest: format!("sha256:{hex}"),
        size: bytes.len() as u64,
    })
}

/// Tars the layout (the `oci-archive` format `podman load` and
/// `skopeo copy oci-archive:` read): sorted entries, fixed metadata.
fn write_archive(layout: &Path, archive: &Path) -> Result<()> {
    let mut files = Vec::new();
    collect_files(layout, Path::new(""), &mut files)?;
    files.sort();
    let mut builder = tar::Builder::new(Vec::new());
    let mut dirs_done = std::collections::BTreeSet::new();
    for rel in &files {
        // Parent directories first, once each.
        let mut parents: Vec<&Path> = rel.ancestors().skip(1).collect();
        parents.reverse();
        for dir in parents {
            if dir.as_os_str().is_empty() || !dirs_done.insert(dir.to_path_buf()) {
                continue;
            }
            let mut header = fixed_header(tar::EntryType::Directory, 0o755, 0);
            builder.append_data(&mut header, dir, std::io::empty())?;
        }
        let bytes = fs::read(layout.join(rel))?;
        let mut header = fixed_header(tar::EntryType::Regular, 0o644, bytes.len() as u64);
        builder.append_data(&mut header, rel, bytes.as_slice())?;
    }
    let data = builder
        .into_inner()
        .context("finishing the image archive")?;
    fs::write(archive, data).with_context(|| format!("writing {}", archive.display()))
}

fn fixed_header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_size(size);
    header
}

fn collect_files(base: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let dir = base.join(rel);
    for entry in fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry?;
        let path = rel.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            collect_files(base, &path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// --check
// ---------------------------------------------------------------------------

fn run_tool(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running `{program}` (Debian: apt-get install skopeo umoci)"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn parse_json(text: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text).with_context(|| format!("parsing the JSON of {what}"))
}

/// Validates the layout and the archive with independent tools:
/// `skopeo` reads the index, manifests and configs per platform and copies
/// every blob (verifying digests); `umoci` unpacks each platform's rootfs,
/// which must hold exactly `/mm2-checkpoint`, mode 0755, byte-identical to the
/// dist binary, and a runtime config with the right user and arguments.
/// Then the platform this machine runs natively is started as the image
/// would be: its `Entrypoint` and `Cmd` as `skopeo` read them from its
/// config, in its unpacked rootfs, against the test clusters, until
/// `/readyz` answers 200 ([`image_ready`]).
fn check(
    root: &Path,
    package: &Package,
    layout: &Path,
    archive: &Path,
    binaries: &[(Arch, Vec<u8>)],
) -> Result<()> {
    let dir = layout.to_str().context("the layout path is not UTF-8")?;
    let tar = archive.to_str().context("the archive path is not UTF-8")?;
    let latest = format!("oci:{dir}:latest");

    let raw = parse_json(
        &run_tool("skopeo", &["inspect", "--raw", &latest])?,
        "skopeo inspect --raw",
    )?;
    let expected_top = if binaries.len() > 1 {
        MEDIA_INDEX
    } else {
        MEDIA_MANIFEST
    };
    if raw["mediaType"] != expected_top {
        bail!(
            "skopeo: `latest` is a {}, expected {expected_top}",
            raw["mediaType"]
        );
    }

    if binaries.len() > 1 {
        let mut listed: Vec<String> = raw["manifests"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let platform = &m["platform"];
                match platform["variant"].as_str() {
                    Some(v) => format!(
                        "linux/{}/{v}",
                        platform["architecture"].as_str().unwrap_or("?")
                    ),
                    None => format!("linux/{}", platform["architecture"].as_str().unwrap_or("?")),
                }
            })
            .collect();
        listed.sort();
        let mut expected: Vec<String> = binaries.iter().map(|(a, _)| a.oci_platform()).collect();
        expected.sort();
        if listed != expected {
            bail!("skopeo: the image index lists {listed:?}, expected {expected:?}");
        }
    }

    let expected_cmd = json!(RUN_ARGS);
    let expected_entrypoint = json!([format!("/{BINARY}")]);
    let mut ran_native = false;
    for (arch, binary) in binaries {
        for reference in [latest.clone(), format!("oci-archive:{tar}:latest")] {
            let mut args = vec![
                "inspect",
                "--override-os",
                "linux",
                "--override-arch",
                arch.oci(),
            ];
            if let Some(variant) = arch.oci_variant() {
                args.extend(["--override-variant", variant]);
            }
            args.push(&reference);
            let inspect = parse_json(&run_tool("skopeo", &args)?, "skopeo inspect")?;
            // Older skopeo (1.9) does not print `Variant`; the config
            // check below covers it then.
            let variant = inspect["Variant"].as_str().filter(|v| !v.is_empty());
            if inspect["Architecture"] != arch.oci()
                || inspect["Os"] != "linux"
                || (variant.is_some() && variant != arch.oci_variant())
            {
                bail!(
                    "skopeo inspect {reference} for {}: got {}/{}/{}",
                    arch.oci_platform(),
                    inspect["Os"],
                    inspect["Architecture"],
                    inspect["Variant"]
                );
            }
            if inspect["Labels"]["org.opencontainers.image.version"] != package.version.as_str() {
                bail!("skopeo inspect {reference}: the version label is missing or wrong");
            }
        }
        let mut args = vec!["inspect", "--config", "--override-arch", arch.oci()];
        if let Some(variant) = arch.oci_variant() {
            args.extend(["--override-variant", variant]);
        }
        args.push(&latest);
        let config = parse_json(&run_tool("skopeo", &args)?, "skopeo inspect --config")?;
        if config["architecture"] != arch.oci() || config["variant"].as_str() != arch.oci_variant()
        {
            bail!(
                "skopeo inspect --config for {}: the config is for {}/{}",
                arch.oci_platform(),
                config["architecture"],
                config["variant"]
            );
        }
        let c = &config["config"];
        if c["User"] != RUN_AS || c["Entrypoint"] != expected_entrypoint || c["Cmd"] != expected_cmd
        {
            bail!(
                "skopeo inspect --config ({}): unexpected run settings: {c}",
                arch.oci_platform()
            );
        }
        let bundle = unpack_and_check(package, layout, *arch, binary)?;
        eprintln!(
            "xtask: image check {}: skopeo inspect (layout and archive), umoci unpack: ok",
            arch.oci_platform()
        );
        if arch.emulator().is_none() {
            let strings = |v: &Value| -> Vec<String> {
                v.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            };
            let mut argv = strings(&c["Entrypoint"]);
            argv.extend(strings(&c["Cmd"]));
            image_ready(
                root,
                &bundle.join("rootfs"),
                &argv,
                &layout.with_file_name(format!("image-ready-{}.log", arch.oci())),
            )?;
            ran_native = true;
        }
        fs::remove_dir_all(&bundle)?;
    }
    if !ran_native {
        bail!(
            "the image has no platform this machine runs natively ({}), so its arguments \
             could not be run: build that binary with `cargo xtask dist`",
            std::env::consts::ARCH
        );
    }

    // Copy everything out of the layout: skopeo verifies every blob's digest.
    let copy = layout.with_file_name(format!(
        "{}-skopeo-copy",
        layout.file_name().and_then(|n| n.to_str()).unwrap_or("oci")
    ));
    if copy.exists() {
        fs::remove_dir_all(&copy)?;
    }
    let dest = format!("oci:{}:latest", copy.display());
    run_tool("skopeo", &["copy", "--quiet", "--all", &latest, &dest])?;
    fs::remove_dir_all(&copy)?;
    eprintln!(
        "xtask: image check: skopeo copy --all verified every blob; {} is valid",
        dir
    );
    Ok(())
}

/// `umoci unpack` one platform and check its rootfs and runtime config;
/// returns the bundle directory (the caller removes it).
fn unpack_and_check(
    package: &Package,
    layout: &Path,
    arch: Arch,
    binary: &[u8],
) -> Result<PathBuf> {
    let bundle = layout.with_file_name(format!("umoci-bundle-{}", arch.oci()));
    if bundle.exists() {
        fs::remove_dir_all(&bundle)?;
    }
    let image = format!("{}:{}", layout.display(), arch_tag(package, arch));
    let bundle_str = bundle.to_str().context("the bundle path is not UTF-8")?;
    let mut args = vec!["unpack", "--image", &image, bundle_str];
    let rootless = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() != "0");
    if rootless {
        args.insert(1, "--rootless");
    }
    run_tool("umoci", &args)?;

    let rootfs = bundle.join("rootfs");
    let mut entries: Vec<String> = fs::read_dir(&rootfs)
        .with_context(|| format!("listing {}", rootfs.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    if entries != [BINARY] {
        bail!("umoci: the rootfs holds {entries:?}, expected exactly [\"{BINARY}\"]");
    }
    let path = rootfs.join(BINARY);
    let meta = fs::symlink_metadata(&path)?;
    if !meta.is_file() || meta.permissions().mode() & 0o7777 != 0o755 {
        bail!(
            "umoci: /{BINARY} is not a regular file with mode 0755 (mode {:o})",
            meta.permissions().mode()
        );
    }
    if !rootless && (meta.uid() != 0 || meta.gid() != 0) {
        bail!(
            "umoci: /{BINARY} is owned by {}:{}, expected 0:0",
            meta.uid(),
            meta.gid()
        );
    }
    if fs::read(&path)? != binary {
        bail!("umoci: /{BINARY} differs from the dist binary");
    }
    let runtime = parse_json(
        &fs::read_to_string(bundle.join("config.json"))?,
        "config.json",
    )?;
    let process = &runtime["process"];
    let mut expected_args = vec![format!("/{BINARY}")];
    expected_args.extend(RUN_ARGS.map(str::to_owned));
    let expected_args = json!(expected_args);
    if process["user"]["uid"] != 65532 || process["user"]["gid"] != 65532 {
        bail!(
            "umoci: the runtime user is {}, expected 65532:65532",
            process["user"]
        );
    }
    if process["args"] != expected_args {
        bail!(
            "umoci: the runtime args are {}, expected {expected_args}",
            process["args"]
        );
    }
    Ok(bundle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layer_holds_one_root_owned_0755_file_at_time_zero() {
        let tar_bytes = layer_tar(b"\x7fELF binary").unwrap();
        let mut archive = tar::Archive::new(tar_bytes.as_slice());
        let entries: Vec<_> = archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().into_owned(),
                    h.mode().unwrap(),
                    h.uid().unwrap(),
                    h.gid().unwrap(),
                    h.mtime().unwrap(),
                    h.size().unwrap(),
                )
            })
            .collect();
        assert_eq!(entries, vec![(PathBuf::from(BINARY), 0o755, 0, 0, 0, 11)]);
    }

    #[test]
    fn the_layer_and_its_gzip_are_deterministic() {
        let a = layer_tar(b"same input").unwrap();
        let b = layer_tar(b"same input").unwrap();
        assert_eq!(a, b);
        assert_eq!(gzip(&a).unwrap(), gzip(&b).unwrap());
    }

    #[test]
    fn the_config_names_the_uncompressed_layer_and_runs_as_non_root() {
        let labels = BTreeMap::from([(
            "org.opencontainers.image.version".to_owned(),
            "9.9.9".to_owned(),
        )]);
        let bytes = config_json(Arch::Aarch64, "sha256:abc", &labels).unwrap();
        let config: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(config["architecture"], "arm64");
        assert_eq!(config["rootfs"]["diff_ids"], json!(["sha256:abc"]));
        assert_eq!(config["config"]["User"], "65532:65532");
        assert_eq!(config["config"]["Entrypoint"], json!(["/mm2-checkpoint"]));
        assert_eq!(config["config"]["Cmd"], json!(RUN_ARGS));
        assert_eq!(config["config"]["ExposedPorts"], json!({ "9464/tcp": {} }));
        assert_eq!(
            config["config"]["Labels"]["org.opencontainers.image.version"],
            "9.9.9"
        );
    }

    #[test]
    fn the_armv7_config_and_tag_carry_the_v7_variant() {
        let bytes = config_json(Arch::Armv7, "sha256:abc", &BTreeMap::new()).unwrap();
        let config: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(config["architecture"], "arm");
        assert_eq!(config["variant"], "v7");
        let bytes = config_json(Arch::X86_64, "sha256:abc", &BTreeMap::new()).unwrap();
        let config: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(config.get("variant").is_none());
        assert_eq!(Arch::Armv7.oci_platform(), "linux/arm/v7");
        assert_eq!(Arch::Aarch64.oci_platform(), "linux/arm64");
    }

    #[test]
    fn image_arguments_take_one_variant_and_check() {
        assert_eq!(
            parse_image_args(&["--variant", "ring", "--check"]).unwrap(),
            ImageOptions {
                variant: Variant::Ring,
                check: true
            }
        );
        assert!(parse_image_args(&["--variant", "all"]).is_err());
        assert!(parse_image_args(&["--push"]).is_err());
    }
}
