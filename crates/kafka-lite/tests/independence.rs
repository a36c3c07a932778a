//! kafka-lite knows nothing about MirrorMaker or the product built on it
//! (docs/architecture.md): it depends on no crate of the product, and its
//! code names neither the product, its environment variables nor MirrorMaker.
//! What a caller wants named (a TLS provider's source, an AWS session name)
//! it passes in.

use std::fs;
use std::path::{Path, PathBuf};

/// Words that would mean product knowledge in the client's code.
const FORBIDDEN: &[&str] = &["mm2-checkpoint", "mm2_checkpoint", "MM2_", "MirrorMaker"];

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
fn kafka_lite_depends_on_no_crate_of_the_product() {
    let manifest = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .expect("kafka-lite's Cargo.toml");
    let mut table = "";
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
            continue;
        }
        if table.contains("dependencies") && line.starts_with("mm2") {
            found.push(format!("{table} {line}"));
        }
    }
    assert!(
        found.is_empty(),
        "kafka-lite depends on the product: {found:?}"
    );
}

#[test]
fn kafka_lites_code_names_neither_the_product_nor_mirrormaker() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 20, "found only {} source files", files.len());
    let mut found = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            // Comments may say what kafka-lite is for.
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
        "product knowledge in kafka-lite:\n{}",
        found.join("\n")
    );
}
