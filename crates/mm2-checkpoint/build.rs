//! Records the target triple so `mm2-checkpoint --version` can print it.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=MM2_CHECKPOINT_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
