//! What one artefact links: the crates cargo resolves as normal (not build,
//! not dev) dependencies of `mm2-checkpoint` for one target triple and
//! feature set, without proc-macros (they run in the compiler, their code is
//! not in the binary). The set comes from cargo's own resolution
//! (`cargo tree -e normal --target <triple> --no-dedupe`), the facts about each
//! crate (source, licence, directory) from `cargo metadata`.
//!
//! The licence policy has one owner, `deny.toml`'s `[licenses] allow` list:
//! [`check_licences`] reads it and fails on a crate with no licence or with
//! an expression the list does not satisfy. [`third_party_licences`] writes
//! the `THIRD-PARTY-LICENSES` text of a release (docs/deploy.md).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::artefact::{Arch, BINARY, Variant, cargo};

/// One crate linked into an artefact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crate {
    /// The crate's package name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Where it came from, in cargo-auditable's words: `crates.io`, `git`,
    /// `local` (a path) or `registry` (another registry).
    pub source: String,
    /// Its SPDX licence expression, if its manifest has one.
    pub license: Option<String>,
    /// Its directory (where its `Cargo.toml` is).
    pub dir: PathBuf,
    /// `license-file` from its manifest, if any.
    pub license_file: Option<PathBuf>,
    /// Whether it is one of this workspace's crates (first-party: covered by
    /// our own LICENSE and NOTICE).
    pub first_party: bool,
}

impl Crate {
    /// `name version`, as the notices and error messages show it.
    pub fn label(&self) -> String {
        format!("{} {}", self.name, self.version)
    }

    /// The package URL, `pkg:cargo/name@version`.
    pub fn purl(&self) -> String {
        format!("pkg:cargo/{}@{}", self.name, self.version)
    }
}

/// The crates one artefact links and who depends on whom.
#[derive(Debug, Clone)]
pub struct Linked {
    /// Every crate, sorted by name then version.
    pub crates: Vec<Crate>,
    /// The index of `mm2-checkpoint` in [`Linked::crates`].
    pub root: usize,
    /// `(dependent, dependency)` index pairs.
    pub edges: BTreeSet<(usize, usize)>,
}

impl Linked {
    /// Resolves what the `arch`/`variant` artefact links.
    pub fn resolve(root: &Path, arch: Arch, variant: Variant) -> Result<Linked> {
        let tree = run_cargo(
            root,
            &[
                &[
                    "tree",
                    "--locked",
                    "-e",
                    "normal",
                    "--target",
                    arch.triple(),
                    "-p",
                    BINARY,
                ],
                variant.cargo_feature_args(),
                &["--prefix", "depth", "--no-dedupe", "--format", "{p}"],
            ]
            .concat(),
        )?;
        let (ids, pairs) = parse_tree(&tree)?;
        let metadata = run_cargo(
            root,
            &[
                "metadata",
                "--locked",
                "--format-version",
                "1",
                "--filter-platform",
                arch.triple(),
            ],
        )?;
        let known = crates_of_metadata(&metadata)?;
        let mut crates = Vec::new();
        for (name, version) in &ids {
            let krate = known
                .get(&(name.clone(), version.clone()))
                .with_context(|| {
                    format!("`cargo tree` lists {name} {version}, `cargo metadata` does not")
                })?;
            crates.push(krate.clone());
        }
        let index: BTreeMap<(String, String), usize> = ids
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, id)| (id, i))
            .collect();
        let edges = pairs
            .iter()
            .map(|(from, to)| (index[from], index[to]))
            .collect();
        let root = crates
            .iter()
            .position(|c| c.name == BINARY && c.first_party)
            .with_context(|| format!("`cargo tree` does not list {BINARY} itself"))?;
        Ok(Linked {
            crates,
            root,
            edges,
        })
    }

    /// The crates that are not this workspace's own.
    pub fn third_party(&self) -> impl Iterator<Item = &Crate> {
        self.crates.iter().filter(|c| !c.first_party)
    }
}

fn run_cargo(root: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(cargo())
        .args(args)
        .current_dir(root)
        .output()
        .with_context(|| format!("running `cargo {}`", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`cargo {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("`cargo {}` output", args.join(" ")))
}

type Id = (String, String);

/// What [`parse_tree`] reads: the crates and the `(dependent, dependency)`
/// pairs.
type Tree = (BTreeSet<Id>, BTreeSet<(Id, Id)>);

/// Reads `cargo tree --prefix depth --no-dedupe --format {p}` output: the
/// sorted set of `(name, version)` and the `(dependent, dependency)` pairs,
/// leaving out every proc-macro and what only it depends on.
fn parse_tree(text: &str) -> Result<Tree> {
    let mut ids = BTreeSet::new();
    let mut pairs = BTreeSet::new();
    // The chain of ancestors of the current line; `None` marks a skipped
    // (proc-macro) subtree.
    let mut stack: Vec<Option<Id>> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        let depth: usize = line[..digits]
            .parse()
            .with_context(|| format!("`cargo tree` line {}: no depth in {line:?}", n + 1))?;
        let rest = &line[digits..];
        let mut words = rest.split_whitespace();
        let (Some(name), Some(version)) = (words.next(), words.next()) else {
            bail!(
                "`cargo tree` line {}: no name and version in {line:?}",
                n + 1
            );
        };
        let Some(version) = version.strip_prefix('v') else {
            bail!(
                "`cargo tree` line {}: version without `v` in {line:?}",
                n + 1
            );
        };
        if depth > stack.len() {
            bail!("`cargo tree` line {}: depth {depth} skips a level", n + 1);
        }
        stack.truncate(depth);
        let parent = stack.last().cloned();
        let id = (name.to_owned(), version.to_owned());
        let inside_skipped = matches!(parent, Some(None));
        if inside_skipped || rest.contains("(proc-macro)") {
            stack.push(None);
            continue;
        }
        if let Some(Some(parent)) = parent {
            pairs.insert((parent, id.clone()));
        }
        ids.insert(id.clone());
        stack.push(Some(id));
    }
    if ids.is_empty() {
        bail!("`cargo tree` listed no crates");
    }
    Ok((ids, pairs))
}

/// Every package of `cargo metadata` output, by `(name, version)`.
fn crates_of_metadata(text: &str) -> Result<BTreeMap<Id, Crate>> {
    let meta: serde_json::Value =
        serde_json::from_str(text).context("parsing `cargo metadata` output")?;
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .context("`cargo metadata` gives no workspace_members")?
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    let mut out = BTreeMap::new();
    for p in meta["packages"]
        .as_array()
        .context("`cargo metadata` gives no packages")?
    {
        let text = |key: &str| p[key].as_str().map(str::to_owned);
        let name = text("name").context("a `cargo metadata` package has no name")?;
        let version = text("version").with_context(|| format!("{name} has no version"))?;
        let manifest = PathBuf::from(
            text("manifest_path").with_context(|| format!("{name} has no manifest_path"))?,
        );
        let dir = manifest
            .parent()
            .with_context(|| {
                format!(
                    "{name}: manifest path {} has no directory",
                    manifest.display()
                )
            })?
            .to_path_buf();
        let id = text("id").unwrap_or_default();
        let krate = Crate {
            source: source_kind(p["source"].as_str()).to_owned(),
            license: text("license").filter(|l| !l.trim().is_empty()),
            license_file: text("license_file").map(|f| dir.join(f)),
            first_party: members.contains(id.as_str()),
            dir,
            name: name.clone(),
            version: version.clone(),
        };
        if out.insert((name.clone(), version.clone()), krate).is_some() {
            bail!(
                "`cargo metadata` lists {name} {version} twice (two sources): cannot tell which one is linked"
            );
        }
    }
    Ok(out)
}

/// cargo's source id to cargo-auditable's source kind.
fn source_kind(source: Option<&str>) -> &'static str {
    match source {
        None => "local",
        Some(s)
            if s == "registry+https://github.com/rust-lang/crates.io-index"
                || s == "sparse+https://index.crates.io/" =>
        {
            "crates.io"
        }
        Some(s) if s.starts_with("git+") => "git",
        Some(_) => "registry",
    }
}

/// The licences `deny.toml` allows (`[licenses] allow = [...]`): the one list
/// both `cargo deny` and the release notices check against.
pub fn allowed_licences(root: &Path) -> Result<BTreeSet<String>> {
    let path = root.join("deny.toml");
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    parse_allow_list(&text).with_context(|| format!("{}: [licenses] allow", path.display()))
}

fn parse_allow_list(text: &str) -> Result<BTreeSet<String>> {
    let section = text
        .split("\n[")
        .find(|s| s.starts_with("licenses]"))
        .context("no [licenses] section")?;
    let start = section.find("allow = [").context("no `allow = [` list")?;
    let list = &section[start + "allow = [".len()..];
    let end = list.find(']').context("the allow list is not closed")?;
    let mut out = BTreeSet::new();
    for line in list[..end].lines() {
        let line = line.split('#').next().unwrap_or_default();
        for part in line.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let Some(name) = part.strip_prefix('"').and_then(|p| p.strip_suffix('"')) else {
                bail!("entry {part:?} is not a quoted string");
            };
            out.insert(name.to_owned());
        }
    }
    if out.is_empty() {
        bail!("the list is empty");
    }
    Ok(out)
}

/// Whether the SPDX expression `expr` is satisfied by `allowed`: `OR` needs
/// one side allowed, `AND` both; `/` is the old spelling of `OR`.
pub fn licence_allowed(expr: &str, allowed: &BTreeSet<String>) -> Result<bool> {
    let spaced = expr
        .replace('(', " ( ")
        .replace(')', " ) ")
        .replace('/', " OR ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut pos = 0;
    let ok = or_expr(&tokens, &mut pos, allowed)?;
    if pos != tokens.len() {
        bail!("licence expression {expr:?}: unexpected {:?}", tokens[pos]);
    }
    Ok(ok)
}

fn or_expr(t: &[&str], pos: &mut usize, allowed: &BTreeSet<String>) -> Result<bool> {
    let mut ok = and_expr(t, pos, allowed)?;
    while t.get(*pos) == Some(&"OR") {
        *pos += 1;
        ok |= and_expr(t, pos, allowed)?;
    }
    Ok(ok)
}

fn and_expr(t: &[&str], pos: &mut usize, allowed: &BTreeSet<String>) -> Result<bool> {
    let mut ok = primary(t, pos, allowed)?;
    while t.get(*pos) == Some(&"AND") {
        *pos += 1;
        ok &= primary(t, pos, allowed)?;
    }
    Ok(ok)
}

fn primary(t: &[&str], pos: &mut usize, allowed: &BTreeSet<String>) -> Result<bool> {
    match t.get(*pos) {
        Some(&"(") => {
            *pos += 1;
            let ok = or_expr(t, pos, allowed)?;
            if t.get(*pos) != Some(&")") {
                bail!("unclosed `(`");
            }
            *pos += 1;
            Ok(ok)
        }
        Some(&id) if !matches!(id, ")" | "OR" | "AND" | "WITH") => {
            *pos += 1;
            if t.get(*pos) == Some(&"WITH") {
                let exception = t.get(*pos + 1).context("`WITH` without an exception")?;
                *pos += 2;
                return Ok(allowed.contains(&format!("{id} WITH {exception}")));
            }
            Ok(allowed.contains(id))
        }
        other => bail!("expected a licence, found {other:?}"),
    }
}

/// Fails naming every third-party crate of `linked` whose licence is missing
/// or not allowed by `allowed`.
pub fn check_licences(linked: &Linked, allowed: &BTreeSet<String>) -> Result<()> {
    let mut problems = Vec::new();
    for c in linked.third_party() {
        match &c.license {
            None => problems.push(format!("{}: no `license` in its Cargo.toml", c.label())),
            Some(expr) => match licence_allowed(expr, allowed) {
                Ok(true) => {}
                Ok(false) => problems.push(format!(
                    "{}: licence `{expr}` is not allowed by deny.toml [licenses] allow",
                    c.label()
                )),
                Err(e) => problems.push(format!("{}: {e:#}", c.label())),
            },
        }
    }
    if !problems.is_empty() {
        bail!("licence check failed:\n  {}", problems.join("\n  "));
    }
    Ok(())
}

/// A crate's own licence files: `license-file`, and every `LICENSE*`,
/// `LICENCE*`, `COPYING*`, `NOTICE*` or `UNLICENSE*` file in its directory,
/// by file name.
pub fn licence_files(c: &Crate) -> Result<Vec<(String, String)>> {
    let mut paths = BTreeSet::new();
    if let Some(file) = &c.license_file {
        paths.insert(file.clone());
    }
    let entries = fs::read_dir(&c.dir).with_context(|| format!("listing {}", c.dir.display()))?;
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().to_uppercase();
        let is_licence = ["LICENSE", "LICENCE", "COPYING", "NOTICE", "UNLICENSE"]
            .iter()
            .any(|p| name.starts_with(p));
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if is_licence && kind.is_file() {
            paths.insert(entry.path());
        } else if is_licence && kind.is_dir() {
            // A `LICENSES/` folder (REUSE layout): every file in it.
            let inner = fs::read_dir(entry.path())
                .with_context(|| format!("listing {}", entry.path().display()))?;
            for file in inner.filter_map(|e| e.ok()) {
                if file.file_type().is_ok_and(|t| t.is_file()) {
                    paths.insert(file.path());
                }
            }
        }
    }
    let mut out = Vec::new();
    for path in paths {
        let text = fs::read_to_string(&path)
            .with_context(|| format!("{}: reading {}", c.label(), path.display()))?;
        let name = path
            .strip_prefix(&c.dir)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        out.push((name, text));
    }
    Ok(out)
}

/// The `THIRD-PARTY-LICENSES` text for the artefacts `used` (artefact name ->
/// what it links): an index of every third-party crate with its version,
/// licence expression and the artefacts that link it, then each crate's
/// licence texts (a text identical to one already given is referred to, not
/// repeated). A crate that ships no licence file but may be used under
/// Apache-2.0 alone is given the standard Apache-2.0 text another crate
/// ships; any other crate without a licence file fails the build.
pub fn third_party_licences(version: &str, used: &BTreeMap<String, Linked>) -> Result<String> {
    let mut crates: BTreeMap<(String, String), (Crate, Vec<&str>)> = BTreeMap::new();
    for (artefact, linked) in used {
        for c in linked.third_party() {
            crates
                .entry((c.name.clone(), c.version.clone()))
                .or_insert_with(|| (c.clone(), Vec::new()))
                .1
                .push(artefact);
        }
    }
    let mut text = format!(
        "Third-party software linked into {BINARY} {version}\n\
         ==================================================\n\n\
         {BINARY} itself is under the licence in LICENSE (see NOTICE). Its release\n\
         binaries statically link the crates below. For each: version, SPDX licence\n\
         expression, the artefacts that link it, then its licence texts as the\n\
         crate ships them. Generated by `cargo xtask dist` from cargo's resolution.\n\n"
    );
    let all = used.len();
    for ((name, version), (c, artefacts)) in &crates {
        let licence = c.license.as_deref().unwrap_or("(none)");
        let which = if artefacts.len() == all {
            "all artefacts".to_owned()
        } else {
            artefacts.join(", ")
        };
        text.push_str(&format!("{name} {version}  {licence}  [{which}]\n"));
    }
    let mut files = BTreeMap::new();
    for (key, (c, _)) in &crates {
        files.insert(key.clone(), licence_files(c)?);
    }
    // The standard Apache-2.0 text (no copyright holder in it), if a crate
    // ships it: where it is given, for the crates that ship no text.
    let apache = files.iter().find_map(|((name, version), list)| {
        list.iter()
            .find(|(_, body)| is_apache_2_text(body))
            .map(|(file, _)| format!("{file} of {name} {version}"))
    });
    let apache_only: BTreeSet<String> = ["Apache-2.0".to_owned()].into();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut missing = Vec::new();
    for (key, (c, _)) in &crates {
        text.push_str(&format!(
            "\n\n==================================================\n{} ({}, {})\n",
            c.label(),
            c.source,
            c.license.as_deref().unwrap_or("(none)")
        ));
        let list = &files[key];
        if list.is_empty() {
            let apache_ok = c
                .license
                .as_deref()
                .is_some_and(|l| licence_allowed(l, &apache_only).unwrap_or(false));
            match (&apache, apache_ok) {
                (Some(place), true) => text.push_str(&format!(
                    "\nThe crate ships no licence file. It is used here under Apache-2.0, \
                     one of the licences it offers; the standard text is given as {place} \
                     in this file.\n"
                )),
                _ => missing.push(c.label()),
            }
            continue;
        }
        for (file, body) in list.iter().cloned() {
            let place = format!("{file} of {}", c.label());
            match seen.get(&body) {
                Some(first) => {
                    text.push_str(&format!("\n--- {file}: identical to {first} above\n"))
                }
                None => {
                    text.push_str(&format!("\n--- {file} ---\n{}\n", body.trim_end()));
                    seen.insert(body, place);
                }
            }
        }
    }
    if !missing.is_empty() {
        bail!(
            "no licence text (no LICENSE*, COPYING* or license-file) shipped by: {}",
            missing.join(", ")
        );
    }
    Ok(text)
}

/// Whether `body` is the Apache License 2.0 itself (not a notice).
fn is_apache_2_text(body: &str) -> bool {
    let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    flat.contains("Apache License Version 2.0, January 2004")
        && flat.contains("TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION")
        && flat.contains("END OF TERMS AND CONDITIONS")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn licence_expressions_are_evaluated_or_any_and_all() {
        let a = allow(&["MIT", "Apache-2.0", "Unicode-3.0"]);
        assert!(licence_allowed("MIT OR Apache-2.0", &a).unwrap());
        assert!(licence_allowed("GPL-3.0 OR MIT", &a).unwrap());
        assert!(licence_allowed("MIT/Apache-2.0", &a).unwrap());
        assert!(licence_allowed("(MIT OR Apache-2.0) AND Unicode-3.0", &a).unwrap());
        assert!(!licence_allowed("(MIT OR Apache-2.0) AND GPL-2.0", &a).unwrap());
        assert!(!licence_allowed("GPL-3.0", &a).unwrap());
        assert!(!licence_allowed("Apache-2.0 WITH LLVM-exception", &a).unwrap());
        assert!(licence_allowed("(MIT", &a).is_err());
        assert!(licence_allowed("MIT AND", &a).is_err());
    }

    #[test]
    fn the_allow_list_is_read_from_deny_toml() {
        let text = "[bans]\nallow = [\"x\"]\n[licenses]\nversion = 2\nallow = [\n    \"MIT\",\n    \"ISC\",   # ring\n]\n[sources]\n";
        assert_eq!(parse_allow_list(text).unwrap(), allow(&["ISC", "MIT"]));
        assert!(parse_allow_list("[licenses]\nallow = [\n MIT,\n]\n").is_err());
        // The real file parses and allows what the workspace uses.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let real = allowed_licences(root).unwrap();
        assert!(real.contains("MIT") && real.contains("Apache-2.0"));
    }

    #[test]
    fn cargo_tree_output_gives_the_linked_set_without_proc_macros() {
        let text = "0app v0.1.0 (/w/app)\n1serde v1.0.0\n2serde_derive v1.0.0 (proc-macro)\n3syn v2.0.0\n4unicode-ident v1.0.0\n1libc v0.2.0\n1unicode-ident v1.0.0\n";
        let (ids, pairs) = parse_tree(text).unwrap();
        let names: Vec<&str> = ids.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["app", "libc", "serde", "unicode-ident"]);
        let id = |n: &str, v: &str| (n.to_owned(), v.to_owned());
        assert!(pairs.contains(&(id("app", "0.1.0"), id("serde", "1.0.0"))));
        assert!(pairs.contains(&(id("app", "0.1.0"), id("unicode-ident", "1.0.0"))));
        assert_eq!(pairs.len(), 3);
        assert!(parse_tree("0app v0.1.0\n2skipped v1\n").is_err());
        assert!(parse_tree("app v0.1.0\n").is_err());
    }

    /// The real workspace: every artefact `dist` builds resolves, passes
    /// the licence check and has licence texts; only the `ring` variant
    /// links ring, and no proc-macro is listed.
    #[test]
    fn every_artefact_of_the_workspace_passes_the_licence_check() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let allowed = allowed_licences(root).unwrap();
        let mut used = BTreeMap::new();
        for variant in Variant::ALL {
            for arch in Arch::ALL.into_iter().filter(|a| variant.builds_for(*a)) {
                let linked = Linked::resolve(root, arch, variant).unwrap();
                check_licences(&linked, &allowed).unwrap();
                let names: BTreeSet<&str> = linked.crates.iter().map(|c| c.name.as_str()).collect();
                assert_eq!(linked.crates[linked.root].name, BINARY);
                assert_eq!(
                    names.contains("ring"),
                    variant == Variant::Ring,
                    "{arch:?} {variant:?}"
                );
                assert!(
                    !names.contains("serde_derive") && !names.contains("syn"),
                    "{names:?}"
                );
                used.insert(format!("{arch:?}-{variant:?}"), linked);
            }
        }
        assert_eq!(used.len(), 5);
        third_party_licences("test", &used).unwrap();
    }

    #[test]
    fn licence_texts_are_collected_shared_and_required() {
        let dir = std::env::temp_dir().join(format!("xtask-notices-{}", std::process::id()));
        let make = |name: &str, license: &str, files: &[(&str, &str)]| {
            let d = dir.join(name);
            fs::create_dir_all(&d).unwrap();
            for (f, body) in files {
                if let Some(parent) = Path::new(f).parent() {
                    fs::create_dir_all(d.join(parent)).unwrap();
                }
                fs::write(d.join(f), body).unwrap();
            }
            Crate {
                name: name.into(),
                version: "1.0.0".into(),
                source: "crates.io".into(),
                license: Some(license.into()),
                dir: d,
                license_file: None,
                first_party: false,
            }
        };
        let apache = "Apache License\n Version 2.0, January 2004\nTERMS AND CONDITIONS FOR USE, \
                      REPRODUCTION, AND DISTRIBUTION\n...\nEND OF TERMS AND CONDITIONS\n";
        let a = make(
            "a",
            "MIT OR Apache-2.0",
            &[("LICENSE-APACHE", apache), ("LICENSE-MIT", "MIT by A")],
        );
        let b = make(
            "b",
            "Apache-2.0",
            &[("LICENSES/Apache-2.0.txt", apache), ("README.md", "no")],
        );
        let c = make("c", "Apache-2.0 OR ISC", &[]);
        let linked = |crates: Vec<Crate>| Linked {
            crates,
            root: 0,
            edges: BTreeSet::new(),
        };
        let used: BTreeMap<String, Linked> = [(
            "bin-x".to_owned(),
            linked(vec![a.clone(), b.clone(), c.clone()]),
        )]
        .into();
        let text = third_party_licences("0.1.0", &used).unwrap();
        assert!(
            text.contains("\na 1.0.0  MIT OR Apache-2.0  [all artefacts]\n"),
            "{text}"
        );
        assert!(text.contains("--- LICENSE-MIT ---\nMIT by A"), "{text}");
        assert!(
            text.contains("--- LICENSES/Apache-2.0.txt: identical to LICENSE-APACHE of a 1.0.0"),
            "{text}"
        );
        assert!(
            text.contains("standard text is given as LICENSE-APACHE of a 1.0.0"),
            "{text}"
        );
        assert!(!text.contains("README"), "{text}");
        // No text and no Apache-2.0 alternative: the build stops.
        let d = make("d", "MIT", &[]);
        let used: BTreeMap<String, Linked> = [("bin-x".to_owned(), linked(vec![a, d]))].into();
        let err = third_party_licences("0.1.0", &used)
            .unwrap_err()
            .to_string();
        assert!(err.contains("d 1.0.0"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_crate_without_or_outside_the_allowed_licences_is_named() {
        let c = |name: &str, license: Option<&str>| Crate {
            name: name.into(),
            version: "1.0.0".into(),
            source: "crates.io".into(),
            license: license.map(str::to_owned),
            dir: PathBuf::from("/nowhere"),
            license_file: None,
            first_party: false,
        };
        let linked = Linked {
            crates: vec![
                c("good", Some("MIT")),
                c("bad", Some("GPL-3.0")),
                c("none", None),
            ],
            root: 0,
            edges: BTreeSet::new(),
        };
        let err = check_licences(&linked, &allow(&["MIT"]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad 1.0.0: licence `GPL-3.0`"), "{err}");
        assert!(err.contains("none 1.0.0: no `license`"), "{err}");
        assert!(!err.contains("good"), "{err}");
    }
}
