//! Which rustls crypto provider runs: a pure function of what the build
//! contains, what the CPU has and what was asked for (docs/tls-providers.md).

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// The provider asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TlsProviderRequest {
    /// graviola where the CPU has what it needs, else the portable provider
    /// (ring instead of both in a build with the `ring` feature).
    #[default]
    Auto,
    /// graviola, or an error where it cannot run.
    Graviola,
    /// The portable pure-Rust provider, on any CPU.
    Portable,
    /// ring (builds with the `ring` cargo feature only).
    Ring,
}

impl TlsProviderRequest {
    /// The spelling [`FromStr`] accepts.
    pub fn name(self) -> &'static str {
        match self {
            TlsProviderRequest::Auto => "auto",
            TlsProviderRequest::Graviola => "graviola",
            TlsProviderRequest::Portable => "portable",
            TlsProviderRequest::Ring => "ring",
        }
    }
}

impl FromStr for TlsProviderRequest {
    type Err = String;

    /// `auto`, `graviola`, `portable` or `ring`, any case; empty is `auto`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(TlsProviderRequest::Auto),
            "graviola" => Ok(TlsProviderRequest::Graviola),
            "portable" => Ok(TlsProviderRequest::Portable),
            "ring" => Ok(TlsProviderRequest::Ring),
            _ => Err(format!(
                "unknown TLS provider {:?}: expected auto, graviola, portable or ring",
                s.chars().take(32).collect::<String>()
            )),
        }
    }
}

/// A provider that can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsProviderKind {
    /// graviola (assembly for modern x86_64 and aarch64 CPUs).
    Graviola,
    /// The portable pure-Rust provider on RustCrypto crates.
    Portable,
    /// ring (the `ring` cargo feature).
    Ring,
}

impl TlsProviderKind {
    /// `"graviola"`, `"portable"` or `"ring"` (the metric label value).
    pub fn name(self) -> &'static str {
        match self {
            TlsProviderKind::Graviola => "graviola",
            TlsProviderKind::Portable => "portable",
            TlsProviderKind::Ring => "ring",
        }
    }
}

impl fmt::Display for TlsProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the selection knows about the CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuFacts {
    /// `std::env::consts::ARCH`.
    pub arch: &'static str,
    /// The features graviola needs that this CPU lacks (empty: it can run).
    pub graviola_missing: Vec<&'static str>,
    /// Whether AES-GCM runs in hardware (AES-NI and PCLMULQDQ on x86_64, AES
    /// and PMULL on aarch64); without it the portable provider's AES is a
    /// slow software version and ChaCha20-Poly1305 goes first.
    pub aes_hardware: bool,
}

/// Which providers this build contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltIn {
    /// graviola: the `graviola` feature on x86_64 or aarch64.
    pub graviola: bool,
    /// ring: the `ring` feature.
    pub ring: bool,
}

impl BuiltIn {
    /// This build.
    pub const THIS: BuiltIn = BuiltIn {
        graviola: cfg!(all(
            feature = "graviola",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )),
        ring: cfg!(feature = "ring"),
    };
}

/// The outcome of the selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsProviderChoice {
    /// The provider.
    pub kind: TlsProviderKind,
    /// With the portable provider: ChaCha20-Poly1305 is offered first.
    pub chacha_first: bool,
    /// Why, in a few words (for the start-up log line).
    pub reason: String,
}

/// Chooses the provider. `asked_by` names where a forced request came from
/// (for the reason and errors). Errors are configuration errors: a request
/// for a provider this build lacks or this CPU cannot run.
pub fn choose(
    built: BuiltIn,
    cpu: &CpuFacts,
    request: TlsProviderRequest,
    asked_by: &str,
) -> Result<TlsProviderChoice, Error> {
    let portable = |reason: String| TlsProviderChoice {
        kind: TlsProviderKind::Portable,
        chacha_first: !cpu.aes_hardware,
        reason: if cpu.aes_hardware {
            format!("{reason}; AES-GCM in hardware, offered first")
        } else {
            format!("{reason}; no AES hardware, ChaCha20-Poly1305 offered first")
        },
    };
    match request {
        TlsProviderRequest::Ring if built.ring => Ok(TlsProviderChoice {
            kind: TlsProviderKind::Ring,
            chacha_first: false,
            reason: format!("{asked_by}=ring"),
        }),
        TlsProviderRequest::Ring => Err(Error::TlsConfig {
            detail: format!(
                "{asked_by}=ring, but this build has no ring provider (it needs the `ring` \
                 cargo feature); use auto, graviola or portable"
            ),
        }),
        TlsProviderRequest::Graviola if !built.graviola => Err(Error::TlsConfig {
            detail: format!(
                "{asked_by}=graviola, but this build for {} has no graviola provider (it needs \
                 the `graviola` cargo feature, on x86_64 or aarch64); use auto or portable",
                cpu.arch
            ),
        }),
        TlsProviderRequest::Graviola if !cpu.graviola_missing.is_empty() => {
            Err(Error::UnsupportedCpu {
                arch: cpu.arch,
                missing: cpu.graviola_missing.join(", "),
            })
        }
        TlsProviderRequest::Graviola => Ok(TlsProviderChoice {
            kind: TlsProviderKind::Graviola,
            chacha_first: false,
            reason: format!("{asked_by}=graviola"),
        }),
        TlsProviderRequest::Portable => Ok(portable(format!("{asked_by}=portable"))),
        TlsProviderRequest::Auto if built.ring => Ok(TlsProviderChoice {
            kind: TlsProviderKind::Ring,
            chacha_first: false,
            reason: "built with the `ring` feature".into(),
        }),
        TlsProviderRequest::Auto if !built.graviola => Ok(portable(format!(
            "graviola is not part of this build for {} (an opt-in cargo feature)",
            cpu.arch
        ))),
        TlsProviderRequest::Auto if cpu.graviola_missing.is_empty() => Ok(TlsProviderChoice {
            kind: TlsProviderKind::Graviola,
            chacha_first: false,
            reason: format!("the {} CPU has every feature graviola needs", cpu.arch),
        }),
        TlsProviderRequest::Auto => Ok(portable(format!(
            "the {} CPU lacks {} (graviola needs them)",
            cpu.arch,
            cpu.graviola_missing.join(", ")
        ))),
    }
}

/// This CPU, as [`choose`] needs it.
pub fn this_cpu() -> CpuFacts {
    CpuFacts {
        arch: std::env::consts::ARCH,
        graviola_missing: missing_graviola_cpu_features(),
        aes_hardware: aes_hardware(),
    }
}

#[cfg(target_arch = "x86_64")]
fn missing_graviola_cpu_features() -> Vec<&'static str> {
    let mut missing = Vec::new();
    macro_rules! need {
        ($($feature:tt),*) => {
            $(if !std::arch::is_x86_feature_detected!($feature) {
                missing.push($feature);
            })*
        };
    }
    need!("aes", "pclmulqdq", "bmi1", "adx", "avx", "avx2");
    missing
}

#[cfg(target_arch = "aarch64")]
fn missing_graviola_cpu_features() -> Vec<&'static str> {
    let mut missing = Vec::new();
    macro_rules! need {
        ($($feature:tt),*) => {
            $(if !std::arch::is_aarch64_feature_detected!($feature) {
                missing.push($feature);
            })*
        };
    }
    need!("neon", "aes", "pmull", "sha2");
    missing
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn missing_graviola_cpu_features() -> Vec<&'static str> {
    vec!["an x86_64 or aarch64 CPU"]
}

#[cfg(target_arch = "x86_64")]
fn aes_hardware() -> bool {
    std::arch::is_x86_feature_detected!("aes") && std::arch::is_x86_feature_detected!("pclmulqdq")
}

#[cfg(target_arch = "aarch64")]
fn aes_hardware() -> bool {
    std::arch::is_aarch64_feature_detected!("aes")
        && std::arch::is_aarch64_feature_detected!("pmull")
}

/// RustCrypto's `aes` has no hardware path on other architectures.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn aes_hardware() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How the requests of these tests are named in messages.
    const SOURCE: &str = "TlsConfig::provider";
    use TlsProviderKind::*;
    use TlsProviderRequest as R;

    const GRAVIOLA: BuiltIn = BuiltIn {
        graviola: true,
        ring: false,
    };
    const PORTABLE_ONLY: BuiltIn = BuiltIn {
        graviola: false,
        ring: false,
    };
    const RING: BuiltIn = BuiltIn {
        graviola: false,
        ring: true,
    };
    const RING_AND_GRAVIOLA: BuiltIn = BuiltIn {
        graviola: true,
        ring: true,
    };

    fn cpu(arch: &'static str, missing: &[&'static str], aes: bool) -> CpuFacts {
        CpuFacts {
            arch,
            graviola_missing: missing.to_vec(),
            aes_hardware: aes,
        }
    }

    /// The CPUs of docs/deploy.md's table.
    fn cpus() -> Vec<CpuFacts> {
        vec![
            // Modern x86_64 (Haswell+ with ADX: Broadwell+).
            cpu("x86_64", &[], true),
            // Apollo Lake / Elkhart Lake Atom and Celeron: AES-NI, no AVX2.
            cpu("x86_64", &["bmi1", "adx", "avx", "avx2"], true),
            // Nehalem-era or qemu's Nehalem model: no AES-NI either.
            cpu(
                "x86_64",
                &["aes", "pclmulqdq", "bmi1", "adx", "avx", "avx2"],
                false,
            ),
            // Graviton, Apple, Cortex-A72 with crypto extensions.
            cpu("aarch64", &[], true),
            // Raspberry Pi 4 / CM4 (BCM2711): no crypto extensions.
            cpu("aarch64", &["aes", "pmull", "sha2"], false),
            // Cortex-A7 and other 32-bit ARM, riscv64.
            cpu("arm", &["an x86_64 or aarch64 CPU"], false),
            cpu("riscv64", &["an x86_64 or aarch64 CPU"], false),
        ]
    }

    /// Every build × CPU × request, against the rules spelled out once more
    /// here.
    #[test]
    fn every_combination_follows_the_rules() {
        let requests = [R::Auto, R::Graviola, R::Portable, R::Ring];
        for built in [GRAVIOLA, PORTABLE_ONLY, RING, RING_AND_GRAVIOLA] {
            for cpu in cpus() {
                for request in requests {
                    let got = choose(built, &cpu, request, SOURCE);
                    let graviola_runs = built.graviola && cpu.graviola_missing.is_empty();
                    let case = format!("{built:?} {cpu:?} {request:?}: {got:?}");
                    match request {
                        R::Auto if built.ring => assert_eq!(got.unwrap().kind, Ring, "{case}"),
                        R::Auto if graviola_runs => {
                            assert_eq!(got.unwrap().kind, Graviola, "{case}")
                        }
                        R::Auto | R::Portable => {
                            let choice = got.expect(&case);
                            assert_eq!(choice.kind, Portable, "{case}");
                            assert_eq!(choice.chacha_first, !cpu.aes_hardware, "{case}");
                            assert!(
                                choice.reason.contains(if cpu.aes_hardware {
                                    "AES-GCM in hardware"
                                } else {
                                    "ChaCha20-Poly1305 offered first"
                                }),
                                "{case}"
                            );
                        }
                        R::Graviola if graviola_runs => {
                            assert_eq!(got.unwrap().kind, Graviola, "{case}")
                        }
                        R::Graviola if !built.graviola => {
                            let e = got.unwrap_err().to_string();
                            assert!(e.contains("has no graviola provider"), "{case}");
                            assert!(e.contains(cpu.arch), "{case}");
                        }
                        R::Graviola => match got {
                            Err(Error::UnsupportedCpu { arch, missing }) => {
                                assert_eq!(arch, cpu.arch, "{case}");
                                assert_eq!(missing, cpu.graviola_missing.join(", "), "{case}");
                            }
                            other => panic!("{case}: {other:?}"),
                        },
                        R::Ring if built.ring => assert_eq!(got.unwrap().kind, Ring, "{case}"),
                        R::Ring => {
                            let e = got.unwrap_err().to_string();
                            assert!(e.contains("no ring provider"), "{case}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn reasons_say_why() {
        let old = cpu(
            "x86_64",
            &["aes", "pclmulqdq", "bmi1", "adx", "avx", "avx2"],
            false,
        );
        let choice = choose(GRAVIOLA, &old, R::Auto, SOURCE).unwrap();
        assert_eq!(
            choice.reason,
            "the x86_64 CPU lacks aes, pclmulqdq, bmi1, adx, avx, avx2 (graviola needs them); \
             no AES hardware, ChaCha20-Poly1305 offered first"
        );
        let armv7 = cpu("arm", &["an x86_64 or aarch64 CPU"], false);
        let choice = choose(PORTABLE_ONLY, &armv7, R::Auto, SOURCE).unwrap();
        assert!(
            choice
                .reason
                .starts_with("graviola is not part of this build for arm"),
            "{choice:?}"
        );
        let new = cpu("x86_64", &[], true);
        let choice = choose(GRAVIOLA, &new, R::Portable, "APP_TLS_PROVIDER").unwrap();
        assert_eq!(
            choice.reason,
            "APP_TLS_PROVIDER=portable; AES-GCM in hardware, offered first"
        );
        let e = choose(GRAVIOLA, &old, R::Graviola, SOURCE).unwrap_err();
        assert!(e.to_string().contains("aes, pclmulqdq"), "{e}");
        assert!(e.to_string().contains("portable"), "{e}");
    }

    #[test]
    fn requests_parse_in_any_case_and_bad_ones_are_named() {
        assert_eq!("".parse(), Ok(R::Auto));
        assert_eq!(" Auto ".parse(), Ok(R::Auto));
        assert_eq!("GRAVIOLA".parse(), Ok(R::Graviola));
        assert_eq!("portable".parse(), Ok(R::Portable));
        assert_eq!("ring".parse(), Ok(R::Ring));
        for request in [R::Auto, R::Graviola, R::Portable, R::Ring] {
            assert_eq!(request.name().parse(), Ok(request));
        }
        let e = "rustcrypto".parse::<R>().unwrap_err();
        assert!(e.contains("\"rustcrypto\""), "{e}");
        assert!(e.contains("auto, graviola, portable or ring"), "{e}");
    }

    #[test]
    fn this_cpu_is_consistent_with_this_build() {
        let cpu = this_cpu();
        assert_eq!(cpu.arch, std::env::consts::ARCH);
        let choice = choose(BuiltIn::THIS, &cpu, R::Auto, SOURCE).unwrap();
        if BuiltIn::THIS.ring {
            assert_eq!(choice.kind, Ring);
        } else if BuiltIn::THIS.graviola && cpu.graviola_missing.is_empty() {
            assert_eq!(choice.kind, Graviola);
        } else {
            assert_eq!(choice.kind, Portable);
        }
    }
}
