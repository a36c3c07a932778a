//! The release directory, `target/dist/` (docs/deploy.md): what a release
//! job publishes unchanged. Next to each binary it holds the binary's
//! CycloneDX SBOM (`<artefact>.cdx.json`); once for the release, the
//! `THIRD-PARTY-LICENSES` of every crate the binaries there link, our own
//! `LICENSE`, `NOTICE` and `CHANGELOG.md`, and `SHA256SUMS` over all of it.
//!
//! [`finish_artefact`] runs on each freshly built binary (licence check,
//! `.dep-v0` section, SBOM); [`write_release_files`] then writes the files
//! that cover every binary present; [`check_release_dir`] (run by
//! `dist-test`) checks that the directory is complete and consistent.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::artefact::{Arch, COPIED, Package, THIRD_PARTY, Variant, sha256_file, write_sha256sums};
use super::auditable;
use super::linked::{self, Linked};
use super::sbom;

/// The licence check for what `arch`/`variant` links, before building it.
pub fn check_licences(root: &Path, arch: Arch, variant: Variant) -> Result<Linked> {
    let linked = Linked::resolve(root, arch, variant)?;
    linked::check_licences(&linked, &linked::allowed_licences(root)?)
        .with_context(|| format!("the {} {} artefact", arch.name(), variant.name()))?;
    Ok(linked)
}

/// Embeds `.dep-v0` into the built artefact, reads it back, and writes its
/// SBOM. Returns the size the section added.
pub fn finish_artefact(
    package: &Package,
    arch: Arch,
    variant: Variant,
    linked: &Linked,
) -> Result<u64> {
    let artefact = package.artefact(arch, variant);
    let before = fs::metadata(&artefact)?.len();
    auditable::embed(&artefact, linked)?;
    auditable::verify(&artefact, linked)?;
    let after = fs::metadata(&artefact)?.len();
    let name = package.artefact_name(arch, variant);
    let doc = sbom::sbom(
        &name,
        arch,
        &sha256_file(&artefact)?,
        &package.license,
        linked,
    );
    let path = package.dist_dir().join(sbom::file_name(&name));
    fs::write(&path, serde_json::to_string_pretty(&doc)? + "\n")
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(after.saturating_sub(before))
}

/// Every `(arch, variant)` whose binary is in `target/dist/`.
pub fn present(package: &Package) -> Vec<(Arch, Variant)> {
    let mut out = Vec::new();
    for variant in Variant::ALL {
        for arch in Arch::ALL {
            if variant.builds_for(arch) && package.artefact(arch, variant).is_file() {
                out.push((arch, variant));
            }
        }
    }
    out
}

fn linked_by_artefact(
    root: &Path,
    package: &Package,
) -> Result<BTreeMap<String, (Arch, Variant, Linked)>> {
    let mut out = BTreeMap::new();
    for (arch, variant) in present(package) {
        let linked = Linked::resolve(root, arch, variant)?;
        out.insert(
            package.artefact_name(arch, variant),
            (arch, variant, linked),
        );
    }
    Ok(out)
}

/// Writes `THIRD-PARTY-LICENSES` (over every binary present), copies
/// [`COPIED`], and rewrites `SHA256SUMS` over everything.
pub fn write_release_files(root: &Path, package: &Package) -> Result<()> {
    let dir = package.dist_dir();
    let all = linked_by_artefact(root, package)?;
    let used: BTreeMap<String, Linked> = all
        .into_iter()
        .map(|(name, (_, _, linked))| (name, linked))
        .collect();
    let text = linked::third_party_licences(&package.version, &used)?;
    let path = dir.join(THIRD_PARTY);
    fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    for name in COPIED {
        let from = root.join(name);
        fs::copy(&from, dir.join(name))
            .with_context(|| format!("copying {} into {}", from.display(), dir.display()))?;
    }
    write_sha256sums(package)?;
    Ok(())
}

/// Checks `target/dist/`: every binary has its `.dep-v0` and SBOM matching
/// what cargo resolves for it, the release-wide files are there and
/// `THIRD-PARTY-LICENSES` names every third-party crate, and `SHA256SUMS`
/// lists every file of the directory with its right digest.
pub fn check_release_dir(root: &Path, package: &Package) -> Result<()> {
    let dir = package.dist_dir();
    let all = linked_by_artefact(root, package)?;
    if all.is_empty() {
        bail!(
            "{} holds no binary: run `cargo xtask dist` first",
            dir.display()
        );
    }
    let read = |name: &str| -> Result<String> {
        let path = dir.join(name);
        fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))
    };
    let notices = read(THIRD_PARTY)?;
    for name in COPIED {
        if read(name)? != fs::read_to_string(root.join(name))? {
            bail!("{}/{name} differs from the repository's", dir.display());
        }
    }
    let mut expected = vec![THIRD_PARTY.to_owned()];
    expected.extend(COPIED.iter().map(|s| s.to_string()));
    for (name, (_, _, linked)) in &all {
        let binary = dir.join(name);
        auditable::verify(&binary, linked)?;
        let digest = sha256_file(&binary)?;
        let sbom_name = sbom::file_name(name);
        let doc: serde_json::Value = serde_json::from_str(&read(&sbom_name)?)
            .with_context(|| format!("parsing {sbom_name}"))?;
        sbom::check(&doc, &digest, linked).with_context(|| sbom_name.clone())?;
        for c in linked.third_party() {
            if !notices.contains(&format!("\n{} {}  ", c.name, c.version)) {
                bail!(
                    "{THIRD_PARTY} does not list {} (linked by {name})",
                    c.label()
                );
            }
        }
        expected.push(name.clone());
        expected.push(sbom_name);
    }
    let sums = read("SHA256SUMS")?;
    let mut listed = BTreeMap::new();
    for line in sums.lines() {
        let (digest, file) = line
            .split_once("  ")
            .with_context(|| format!("SHA256SUMS: malformed line {line:?}"))?;
        listed.insert(file.to_owned(), digest.to_owned());
    }
    for name in &expected {
        let Some(digest) = listed.get(name) else {
            bail!("SHA256SUMS does not list {name}");
        };
        if *digest != sha256_file(&dir.join(name))? {
            bail!("SHA256SUMS: the digest of {name} does not match the file");
        }
    }
    Ok(())
}
