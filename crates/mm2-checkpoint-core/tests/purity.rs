//! The core stays pure (docs/architecture.md): it depends on no async
//! runtime, no Kafka client and no I/O crate, and its code reads no clock,
//! no file, no socket and no environment. The compiler enforces the first
//! part through this crate's dependency list, which this test pins; the
//! second is checked here over the source.

use std::fs;
use std::path::{Path, PathBuf};

/// The only crates the core may depend on, and why.
const ALLOWED: &[&str] = &[
    // Shared record bytes (keys, values) without copying.
    "bytes", // MM2's topic and group filters are Java regexes.
    "regex",
];

/// Calls that would read the world instead of taking it as a value.
const FORBIDDEN: &[&str] = &[
    "Instant::now",
    "SystemTime::now",
    "std::fs",
    "std::net",
    "std::env",
    "std::thread",
    "std::process",
    "std::io::stdin",
    "tokio",
    "kafka_lite",
];

fn manifest() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    fs::read_to_string(path).expect("the core's Cargo.toml")
}

/// The names in the `[dependencies]` table (not dev-dependencies).
fn dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut names = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', '.']).next().unwrap_or("").trim();
            names.push(name.to_owned());
        }
    }
    names
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_core_depends_only_on_pure_crates() {
    let deps = dependencies(&manifest());
    assert!(!deps.is_empty(), "no [dependencies] table found");
    for dep in &deps {
        assert!(
            ALLOWED.contains(&dep.as_str()),
            "the core may not depend on `{dep}`: it must stay free of I/O, clocks and \
             async runtimes (docs/architecture.md); allowed: {ALLOWED:?}"
        );
    }
}

#[test]
fn the_dependency_reader_sees_what_is_listed() {
    let deps = dependencies(
        "[package]\nname = \"x\"\n[dependencies]\nbytes.workspace = true\n# c\ntokio = \"1\"\n\
         [dev-dependencies]\nproptest = \"1\"\n",
    );
    assert_eq!(deps, ["bytes", "tokio"]);
}

#[test]
fn the_core_reads_no_clock_file_socket_or_environment() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 10, "found only {} source files", files.len());
    let mut found = Vec::new();
    // Test modules may make a fake clock's epoch from the real one.
    let is_test = |f: &Path| {
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        name == "tests" || name.ends_with("_tests")
    };
    for file in files.iter().filter(|f| !is_test(f)) {
        let text = fs::read_to_string(file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for word in FORBIDDEN {
                if code.contains(word) {
                    found.push(format!("{}:{}: {word}", file.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the core must stay pure:\n{}",
        found.join("\n")
    );
}
