//! `cargo xtask dist` and `cargo xtask dist-test`: static release binaries.
//!
//! `dist` builds `mm2-checkpoint` for the musl targets, links it with the
//! `rust-lld` that ships with every rustup toolchain (the musl targets bring
//! their own C runtime objects, so no C toolchain is involved), checks that
//! each artefact really is static and within its size budget ([`size`]), and
//! writes them, stripped, with a `SHA256SUMS` file into `target/dist/`:
//!
//! ```text
//! mm2-checkpoint-<version>-x86_64-linux-musl        default features (portable TLS provider)
//! mm2-checkpoint-<version>-aarch64-linux-musl
//! mm2-checkpoint-<version>-armv7-linux-musleabihf
//! mm2-checkpoint-<version>-x86_64-linux-musl-ring   --no-default-features --features ring
//! mm2-checkpoint-<version>-aarch64-linux-musl-ring
//! mm2-checkpoint-<version>-<arch>-linux-musl[-ring].cdx.json   CycloneDX SBOM of each
//! THIRD-PARTY-LICENSES, LICENSE, NOTICE, CHANGELOG.md
//! SHA256SUMS
//! ```
//!
//! That directory is the release: [`release`] adds to each binary the
//! cargo-auditable `.dep-v0` section ([`auditable`]) and writes its SBOM
//! ([`sbom`]), both from the set of crates cargo resolves for that target and
//! feature set ([`linked`], which also checks their licences against
//! `deny.toml` and writes `THIRD-PARTY-LICENSES`).
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
//!
//! The modules form a chain without cycles: [`artefact`] (what a built
//! binary is called, where it lives, whether it is static; also used by
//! `image` and `footprint`) is used by [`build`] (`dist`) and
//! [`test`](mod@test) (`dist-test`); [`test`](mod@test) also uses [`run`],
//! the seeded `run --once` rounds against the test clusters (also used by
//! `footprint`). [`release`] uses [`linked`], [`auditable`] and [`sbom`];
//! [`build`] and [`test`](mod@test) use [`release`].

pub mod artefact;
pub mod auditable;
pub mod build;
pub mod linked;
pub mod release;
pub mod run;
pub mod sbom;
pub mod size;
pub mod test;
