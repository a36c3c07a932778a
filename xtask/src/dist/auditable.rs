//! The dependency list embedded in every artefact, in cargo-auditable's
//! format, so that scanners that read Rust binaries (`cargo audit bin`,
//! `rust-audit-info`, syft, trivy, grype) find the crates even in a
//! `FROM scratch` image with one stripped binary (docs/deploy.md).
//!
//! The ELF section `.dep-v0` holds the zlib-compressed JSON
//! `{"packages":[{"name","version","source","dependencies":[index..],"root"?}]}`:
//! packages sorted by name, version and source, dependencies as sorted
//! indices into that array, `root: true` on `mm2-checkpoint` only, `kind`
//! left out (every listed crate is linked: `runtime`). The section is added
//! after the build with `llvm-objcopy`, flagged allocated and read-only but
//! in no segment (address 0: the loader never maps it), because `llvm-strip`
//! drops every non-allocated section it does not know; so marked, both
//! `llvm-strip` and GNU `strip` keep it (GNU `strip` warns "allocated section
//! not in segment"). [`read_section`] reads it back with a small ELF reader
//! of our own, so the check needs no tool.

use std::collections::BTreeSet;
use std::fs;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use flate2::Compression;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use serde_json::{Value, json};

use super::artefact::which;
use super::linked::Linked;

/// The section's name.
pub const SECTION: &str = ".dep-v0";

/// The JSON document for `linked`.
pub fn document(linked: &Linked) -> Value {
    // `Linked::crates` is sorted by (name, version); sources break no ties
    // because `cargo metadata` refuses two sources of one name and version.
    let packages: Vec<Value> = linked
        .crates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let deps: Vec<usize> = linked
                .edges
                .range((i, 0)..(i + 1, 0))
                .map(|&(_, to)| to)
                .collect();
            let mut p = json!({
                "name": c.name,
                "version": c.version,
                "source": c.source,
            });
            if !deps.is_empty() {
                p["dependencies"] = json!(deps);
            }
            if i == linked.root {
                p["root"] = json!(true);
            }
            p
        })
        .collect();
    json!({ "packages": packages })
}

/// Adds `.dep-v0` with `linked`'s document to `binary`, in place.
pub fn embed(binary: &Path, linked: &Linked) -> Result<()> {
    let objcopy = which("llvm-objcopy").context(
        "llvm-objcopy not found: install Debian's `llvm` package (it adds the .dep-v0 section)",
    )?;
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::best());
    encoder.write_all(serde_json::to_string(&document(linked))?.as_bytes())?;
    let compressed = encoder.finish()?;
    let file = binary.with_extension("dep-v0.tmp");
    fs::write(&file, &compressed).with_context(|| format!("writing {}", file.display()))?;
    let out = Command::new(&objcopy)
        .arg("--add-section")
        .arg(format!("{SECTION}={}", file.display()))
        .args([
            "--set-section-flags",
            &format!("{SECTION}=alloc,readonly,contents"),
        ])
        .arg(binary)
        .output()
        .with_context(|| format!("running {}", objcopy.display()));
    let _ = fs::remove_file(&file);
    let out = out?;
    if !out.status.success() {
        bail!(
            "llvm-objcopy --add-section {SECTION} {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The decoded `.dep-v0` document of `binary`.
pub fn read_document(binary: &Path) -> Result<Value> {
    let bytes = fs::read(binary).with_context(|| format!("reading {}", binary.display()))?;
    let section = read_section(&bytes, SECTION)
        .with_context(|| format!("{}: reading the ELF sections", binary.display()))?
        .with_context(|| format!("{} has no {SECTION} section", binary.display()))?;
    let mut json = Vec::new();
    ZlibDecoder::new(section)
        .read_to_end(&mut json)
        .with_context(|| format!("{}: {SECTION} is not zlib data", binary.display()))?;
    serde_json::from_slice(&json)
        .with_context(|| format!("{}: {SECTION} is not JSON", binary.display()))
}

/// Checks that `binary`'s `.dep-v0` lists exactly the crates and edges of
/// `linked`, with `mm2-checkpoint` as the one root.
pub fn verify(binary: &Path, linked: &Linked) -> Result<()> {
    let doc = read_document(binary)?;
    let packages = doc["packages"]
        .as_array()
        .with_context(|| format!("{}: {SECTION} has no packages array", binary.display()))?;
    let mut found = BTreeSet::new();
    let mut edges = BTreeSet::new();
    let mut roots = Vec::new();
    let label = |p: &Value| -> Result<String> {
        match (
            p["name"].as_str(),
            p["version"].as_str(),
            p["source"].as_str(),
        ) {
            (Some(n), Some(v), Some(s)) => Ok(format!("{n} {v} ({s})")),
            _ => bail!("a package without name, version or source: {p}"),
        }
    };
    for p in packages {
        let me = label(p)?;
        if p["root"] == json!(true) {
            roots.push(me.clone());
        }
        for d in p["dependencies"].as_array().into_iter().flatten() {
            let to = d
                .as_u64()
                .and_then(|i| packages.get(i as usize))
                .with_context(|| format!("{me}: dependency index {d} is out of range"))?;
            edges.insert((me.clone(), label(to)?));
        }
        found.insert(me);
    }
    let name = |i: usize| {
        let c = &linked.crates[i];
        format!("{} {} ({})", c.name, c.version, c.source)
    };
    let want: BTreeSet<String> = (0..linked.crates.len()).map(name).collect();
    let want_edges: BTreeSet<(String, String)> = linked
        .edges
        .iter()
        .map(|&(a, b)| (name(a), name(b)))
        .collect();
    if found != want {
        bail!(
            "{}: {SECTION} lists other crates than cargo resolves: extra {:?}, missing {:?}",
            binary.display(),
            found.difference(&want).collect::<Vec<_>>(),
            want.difference(&found).collect::<Vec<_>>()
        );
    }
    if edges != want_edges {
        bail!(
            "{}: {SECTION} has other dependency edges than cargo resolves ({} against {})",
            binary.display(),
            edges.len(),
            want_edges.len()
        );
    }
    if roots != [name(linked.root)] {
        bail!(
            "{}: {SECTION} roots are {roots:?}, expected {}",
            binary.display(),
            name(linked.root)
        );
    }
    Ok(())
}

/// The bytes of section `wanted` of the ELF file `elf` (32 or 64-bit,
/// little-endian), or `None` if it has no such section.
pub fn read_section<'a>(elf: &'a [u8], wanted: &str) -> Result<Option<&'a [u8]>> {
    if elf.len() < 0x34 || &elf[..4] != b"\x7fELF" {
        bail!("not an ELF file");
    }
    let wide = match elf[4] {
        1 => false,
        2 => true,
        c => bail!("unknown ELF class {c}"),
    };
    if elf[5] != 1 {
        bail!("big-endian ELF is not supported");
    }
    let int = |at: usize, len: usize| -> Result<usize> {
        let bytes = elf
            .get(at..at + len)
            .with_context(|| format!("ELF field at {at:#x} is past the end"))?;
        let mut v: u64 = 0;
        for (i, b) in bytes.iter().enumerate() {
            v |= u64::from(*b) << (8 * i);
        }
        usize::try_from(v).context("ELF field does not fit in usize")
    };
    let word = if wide { 8 } else { 4 };
    let (shoff, shentsize, shnum, shstrndx) = if wide {
        (int(0x28, 8)?, int(0x3a, 2)?, int(0x3c, 2)?, int(0x3e, 2)?)
    } else {
        (int(0x20, 4)?, int(0x2e, 2)?, int(0x30, 2)?, int(0x32, 2)?)
    };
    // (name offset, file offset, size) of section `i`.
    let header = |i: usize| -> Result<(usize, usize, usize)> {
        let at = shoff + i * shentsize;
        let (off, size) = if wide {
            (at + 0x18, at + 0x20)
        } else {
            (at + 0x10, at + 0x14)
        };
        Ok((int(at, 4)?, int(off, word)?, int(size, word)?))
    };
    let slice = |off: usize, size: usize| -> Result<&'a [u8]> {
        elf.get(off..off.saturating_add(size))
            .with_context(|| format!("ELF section at {off:#x}+{size:#x} is past the end"))
    };
    let (_, str_off, str_size) = header(shstrndx)?;
    let names = slice(str_off, str_size)?;
    for i in 0..shnum {
        let (name_at, off, size) = header(i)?;
        let name = names
            .get(name_at..)
            .and_then(|n| n.split(|b| *b == 0).next())
            .context("ELF section name is out of range")?;
        if name == wanted.as_bytes() {
            return slice(off, size).map(Some);
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::linked::Crate;
    use std::path::PathBuf;

    fn sample() -> Linked {
        let c = |name: &str, source: &str| Crate {
            name: name.into(),
            version: "1.2.3".into(),
            source: source.into(),
            license: Some("MIT".into()),
            dir: PathBuf::from("/nowhere"),
            license_file: None,
            first_party: source == "local",
        };
        Linked {
            crates: vec![
                c("app", "local"),
                c("libc", "crates.io"),
                c("zerocopy", "crates.io"),
            ],
            root: 0,
            edges: [(0, 1), (0, 2), (2, 1)].into_iter().collect(),
        }
    }

    #[test]
    fn the_document_has_cargo_auditables_shape() {
        let doc = document(&sample());
        assert_eq!(
            doc,
            json!({"packages": [
                {"name": "app", "version": "1.2.3", "source": "local", "dependencies": [1, 2], "root": true},
                {"name": "libc", "version": "1.2.3", "source": "crates.io"},
                {"name": "zerocopy", "version": "1.2.3", "source": "crates.io", "dependencies": [1]},
            ]})
        );
    }

    /// Embeds the section into a copy of this test binary (a real ELF file),
    /// strips it, reads it back and compares; then checks that another set
    /// is told apart.
    #[test]
    fn the_section_survives_strip_and_reads_back() {
        if which("llvm-objcopy").is_none() {
            panic!("llvm-objcopy is needed (Debian package `llvm`, installed by .ci/run)");
        }
        let dir = std::env::temp_dir().join(format!("xtask-dep-v0-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("binary");
        fs::copy(std::env::current_exe().unwrap(), &bin).unwrap();
        let linked = sample();
        embed(&bin, &linked).unwrap();
        let strips: Vec<_> = ["llvm-strip", "strip"]
            .into_iter()
            .filter_map(which)
            .collect();
        assert!(
            !strips.is_empty(),
            "neither llvm-strip nor strip is installed"
        );
        for strip in strips {
            let out = Command::new(&strip).arg(&bin).output().unwrap();
            assert!(out.status.success(), "{}: {out:?}", strip.display());
            verify(&bin, &linked).unwrap_or_else(|e| panic!("after {}: {e:#}", strip.display()));
        }
        assert_eq!(read_document(&bin).unwrap(), document(&linked));
        let mut other = sample();
        other.edges.remove(&(2, 1));
        assert!(verify(&bin, &other).is_err());
        other.crates[1].version = "9.9.9".into();
        let err = verify(&bin, &other).unwrap_err().to_string();
        assert!(err.contains("libc 9.9.9"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The 32-bit path of the ELF reader (armv7): an ARM object file made
    /// by clang (installed by .ci/run for the `ring` variant).
    #[test]
    fn the_section_reads_back_from_a_32_bit_elf_file() {
        let clang = which("clang").expect("clang is needed (installed by .ci/run)");
        let dir = std::env::temp_dir().join(format!("xtask-dep-v0-32-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let source = dir.join("x.c");
        fs::write(&source, "int answer = 42;\n").unwrap();
        let object = dir.join("x.o");
        let out = Command::new(clang)
            .args(["--target=armv7-unknown-linux-gnueabihf", "-c", "-o"])
            .arg(&object)
            .arg(&source)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(fs::read(&object).unwrap()[4], 1, "not a 32-bit ELF file");
        let linked = sample();
        embed(&object, &linked).unwrap();
        verify(&object, &linked).unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_non_elf_file_is_an_error_not_a_panic() {
        assert!(read_section(b"hello", SECTION).is_err());
        let mut truncated = b"\x7fELF\x02\x01".to_vec();
        truncated.resize(0x40, 0);
        truncated[0x28] = 0xff; // section headers past the end
        truncated[0x3c] = 1;
        assert!(read_section(&truncated, SECTION).is_err());
    }
}
