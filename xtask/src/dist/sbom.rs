//! One CycloneDX 1.5 JSON SBOM per artefact (docs/deploy.md): the binary as
//! `metadata.component` (with its target triple and SHA-256), every crate it
//! links as a `library` component with its `pkg:cargo` purl and licence
//! expression, and the dependency graph. The serial number is derived from
//! the binary's digest, so the same binary always gets the same SBOM.

use std::collections::BTreeMap;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::artefact::{Arch, BINARY};
use super::linked::Linked;

/// The CycloneDX version written.
pub const SPEC_VERSION: &str = "1.5";

/// The SBOM file name of the artefact named `artefact`.
pub fn file_name(artefact: &str) -> String {
    format!("{artefact}.cdx.json")
}

/// The SBOM of the artefact `artefact_name` (built for `arch`, SHA-256
/// `sha256`, licence `license`), which links `linked`.
pub fn sbom(
    artefact_name: &str,
    arch: Arch,
    sha256: &str,
    license: &str,
    linked: &Linked,
) -> Value {
    let root = &linked.crates[linked.root];
    let root_ref = format!("{}?target={}", root.purl(), arch.triple());
    let reference = |i: usize| {
        if i == linked.root {
            root_ref.clone()
        } else {
            linked.crates[i].purl()
        }
    };
    let components: Vec<Value> = linked
        .crates
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != linked.root)
        .map(|(i, c)| {
            let mut v = json!({
                "type": "library",
                "bom-ref": reference(i),
                "name": c.name,
                "version": c.version,
                "purl": c.purl(),
                "scope": "required",
            });
            if let Some(l) = &c.license {
                v["licenses"] = json!([{ "expression": l }]);
            }
            v
        })
        .collect();
    let mut depends: BTreeMap<usize, Vec<String>> =
        (0..linked.crates.len()).map(|i| (i, Vec::new())).collect();
    for &(from, to) in &linked.edges {
        depends.entry(from).or_default().push(reference(to));
    }
    let dependencies: Vec<Value> = depends
        .into_iter()
        .map(|(i, on)| json!({ "ref": reference(i), "dependsOn": on }))
        .collect();
    json!({
        "bomFormat": "CycloneDX",
        "specVersion": SPEC_VERSION,
        "serialNumber": serial_number(sha256),
        "version": 1,
        "metadata": {
            "tools": { "components": [{ "type": "application", "name": "cargo xtask dist" }] },
            "component": {
                "type": "application",
                "bom-ref": root_ref,
                "name": BINARY,
                "version": root.version,
                "purl": root_ref,
                "licenses": [{ "expression": license }],
                "hashes": [{ "alg": "SHA-256", "content": sha256 }],
                "properties": [
                    { "name": "mm2-checkpoint:artefact", "value": artefact_name },
                    { "name": "mm2-checkpoint:target", "value": arch.triple() },
                ],
            },
        },
        "components": components,
        "dependencies": dependencies,
    })
}

/// `urn:uuid:` from the first 16 bytes of the hex digest, with the RFC 4122
/// version (5, name-based) and variant bits set.
fn serial_number(sha256: &str) -> String {
    let mut hex: Vec<u8> = sha256.bytes().take(32).collect();
    hex.resize(32, b'0');
    hex[12] = b'5';
    let variant =
        u8::from_str_radix(std::str::from_utf8(&hex[16..17]).unwrap_or("0"), 16).unwrap_or(0);
    hex[16] = b"89ab"[usize::from(variant & 3)];
    let h = String::from_utf8_lossy(&hex).into_owned();
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Checks the structure a CycloneDX 1.5 consumer relies on, and that `doc`
/// describes the artefact with digest `sha256` linking exactly `linked`.
pub fn check(doc: &Value, sha256: &str, linked: &Linked) -> Result<()> {
    if doc["bomFormat"] != "CycloneDX" || doc["specVersion"] != SPEC_VERSION {
        bail!("not a CycloneDX {SPEC_VERSION} document");
    }
    let serial = doc["serialNumber"].as_str().unwrap_or_default();
    let uuid = serial.strip_prefix("urn:uuid:").unwrap_or_default();
    let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
    if groups != [8, 4, 4, 4, 12]
        || !uuid.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
        || !uuid[14..15].chars().all(|c| ('1'..='5').contains(&c))
        || !"89ab".contains(&uuid[19..20])
    {
        bail!("serialNumber {serial:?} is not an RFC 4122 urn:uuid");
    }
    let component = &doc["metadata"]["component"];
    if component["name"] != BINARY || component["type"] != "application" {
        bail!("metadata.component is not the {BINARY} application");
    }
    if component["hashes"][0]["content"] != sha256 {
        bail!("metadata.component's SHA-256 is not the artefact's ({sha256})");
    }
    let root_ref = component["bom-ref"]
        .as_str()
        .context("metadata.component has no bom-ref")?;
    let components = doc["components"]
        .as_array()
        .context("no components array")?;
    let mut refs = vec![root_ref.to_owned()];
    for c in components {
        let (Some(name), Some(version), Some(purl)) = (
            c["name"].as_str(),
            c["version"].as_str(),
            c["purl"].as_str(),
        ) else {
            bail!("a component without name, version or purl: {c}");
        };
        if purl != format!("pkg:cargo/{name}@{version}") || c["bom-ref"] != purl {
            bail!(
                "component {name} {version}: purl/bom-ref {purl:?} is not pkg:cargo/{name}@{version}"
            );
        }
        if c["licenses"][0]["expression"].as_str().is_none() {
            bail!("component {name} {version} has no licence expression");
        }
        refs.push(purl.to_owned());
    }
    let mut want: Vec<String> = linked
        .crates
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != linked.root)
        .map(|(_, c)| c.purl())
        .collect();
    want.sort();
    let mut have = refs[1..].to_vec();
    have.sort();
    if have != want {
        bail!(
            "components ({}) are not the {} crates cargo resolves for this artefact",
            have.len(),
            want.len()
        );
    }
    let mut edges = 0;
    for d in doc["dependencies"]
        .as_array()
        .context("no dependencies array")?
    {
        let from = d["ref"].as_str().context("a dependency without ref")?;
        if !refs.iter().any(|r| r == from) {
            bail!("dependency ref {from:?} names no component");
        }
        for to in d["dependsOn"].as_array().into_iter().flatten() {
            if !refs.iter().any(|r| to == r.as_str()) {
                bail!("{from} depends on {to}, which names no component");
            }
            edges += 1;
        }
    }
    if edges != linked.edges.len() {
        bail!(
            "{edges} dependency edges, cargo resolves {}",
            linked.edges.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::linked::Crate;
    use std::path::PathBuf;

    fn sample() -> Linked {
        let c = |name: &str, first_party: bool| Crate {
            name: name.into(),
            version: "1.0.0".into(),
            source: if first_party { "local" } else { "crates.io" }.into(),
            license: Some("MIT OR Apache-2.0".into()),
            dir: PathBuf::from("/nowhere"),
            license_file: None,
            first_party,
        };
        Linked {
            crates: vec![c("libc", false), c(BINARY, true), c("zerocopy", false)],
            root: 1,
            edges: [(1, 0), (1, 2), (2, 0)].into_iter().collect(),
        }
    }

    #[test]
    fn an_sbom_describes_the_binary_and_what_it_links() {
        let digest = "ab".repeat(32);
        let linked = sample();
        let doc = sbom("a-x86_64", Arch::X86_64, &digest, "Apache-2.0", &linked);
        check(&doc, &digest, &linked).unwrap();
        assert_eq!(doc["components"].as_array().unwrap().len(), 2);
        assert_eq!(
            doc["metadata"]["component"]["purl"],
            "pkg:cargo/mm2-checkpoint@1.0.0?target=x86_64-unknown-linux-musl"
        );
        assert_eq!(
            doc["serialNumber"],
            "urn:uuid:abababab-abab-5bab-abab-abababababab"
        );
        // Each part that `check` guards can fail.
        assert!(check(&doc, &"cd".repeat(32), &linked).is_err());
        let mut fewer = linked.clone();
        fewer.edges.remove(&(2, 0));
        assert!(check(&doc, &digest, &fewer).is_err());
        let mut broken = doc.clone();
        broken["components"][0]["purl"] = json!("pkg:cargo/libc@9");
        assert!(check(&broken, &digest, &linked).is_err());
        let mut broken = doc.clone();
        broken["serialNumber"] = json!("urn:uuid:not-a-uuid");
        assert!(check(&broken, &digest, &linked).is_err());
        let mut broken = doc;
        broken["dependencies"][0]["dependsOn"] = json!(["pkg:cargo/nothing@1"]);
        assert!(check(&broken, &digest, &linked).is_err());
    }
}
