//! Building the rustls client configuration and choosing the crypto provider.
//!
//! Three providers can run (docs/tls-providers.md):
//! - graviola (pure Rust and assembly, no C), fast, but only on x86_64 CPUs
//!   with AES-NI, PCLMULQDQ, BMI1, ADX, AVX and AVX2 and on aarch64 CPUs with
//!   the crypto extensions; on other architectures it is not compiled at all;
//! - the [`portable`] provider (pure Rust on RustCrypto crates), on every
//!   CPU;
//! - ring, with the `ring` cargo feature (needs a C compiler to build).
//!
//! The caller says which one a client uses ([`TlsConfig::provider`]);
//! kafka-lite reads no environment for it. Unset, [`tls_provider`] chooses:
//! graviola where the CPU can run it, else the portable provider (ring in a
//! `ring` build). The choice is a pure function, [`choose_tls_provider`], of
//! the build, the CPU and the request.

pub mod portable;
mod select;
mod server_verify;

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::{CertifiedKey, SingleCertAndKey};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

pub use select::{
    BuiltIn, CpuFacts, TlsProviderChoice, TlsProviderKind, TlsProviderRequest,
    choose as choose_tls_provider, this_cpu,
};

use crate::config::{Pem, TlsConfig};
use crate::error::Error;

/// Checks at runtime that this CPU has every feature graviola requires.
///
/// x86_64 needs aes, pclmulqdq, bmi1, adx, avx and avx2 (as graviola 0.4
/// checks them); aarch64 needs neon, aes, pmull and sha2. Other
/// architectures are not supported by graviola at all. The error names the
/// missing features.
pub fn graviola_cpu_support() -> Result<(), Error> {
    let cpu = this_cpu();
    if cpu.graviola_missing.is_empty() {
        Ok(())
    } else {
        Err(Error::UnsupportedCpu {
            arch: cpu.arch,
            missing: cpu.graviola_missing.join(", "),
        })
    }
}

/// The automatic choice (`auto`) for this build and CPU: graviola where the
/// CPU can run it, else the portable provider (ring in a `ring` build).
pub fn tls_provider() -> Result<TlsProviderChoice, Error> {
    tls_provider_for(None)
}

/// The provider for one client: `request` if given (see
/// [`TlsConfig::provider`]), else the automatic choice. Fails if the request
/// names a provider this build lacks or this CPU cannot run; the error names
/// `TlsConfig::provider`.
pub fn tls_provider_for(request: Option<TlsProviderRequest>) -> Result<TlsProviderChoice, Error> {
    choose_tls_provider(
        BuiltIn::THIS,
        &this_cpu(),
        request.unwrap_or(TlsProviderRequest::Auto),
        "TlsConfig::provider",
    )
}

/// The rustls provider for `choice`.
pub fn crypto_provider_for(choice: &TlsProviderChoice) -> Arc<CryptoProvider> {
    match choice.kind {
        #[cfg(all(
            feature = "graviola",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        TlsProviderKind::Graviola => Arc::new(rustls_graviola::default_provider()),
        #[cfg(feature = "ring")]
        TlsProviderKind::Ring => Arc::new(rustls::crypto::ring::default_provider()),
        // `choose_tls_provider` names only providers of this build, so the
        // portable one stands in for any other.
        _ => Arc::new(portable::provider(choice.chacha_first)),
    }
}

/// The rustls provider of the automatic choice (see [`tls_provider`]).
pub fn crypto_provider() -> Result<Arc<CryptoProvider>, Error> {
    Ok(crypto_provider_for(&tls_provider()?))
}

/// How a client certificate chain and a private key fit together, as far as
/// the crypto provider of this build can tell (see [`check_client_identity`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientIdentityCheck {
    /// The key's public half is the one in the first (end-entity) certificate.
    Matches,
    /// The key loads, but the provider cannot derive its public half, so the
    /// pair could not be compared; the TLS handshake will tell.
    Unknown,
}

/// Why a client certificate chain and private key cannot be used together.
#[derive(Clone, Debug, thiserror::Error)]
pub enum ClientIdentityError {
    /// The chain holds no certificate.
    #[error("the certificate chain is empty")]
    NoCertificate,
    /// The crypto provider cannot load the key (unsupported type, bad encoding).
    #[error("the private key is unusable: {0}")]
    UnusableKey(String),
    /// The end-entity certificate cannot be parsed.
    #[error("the first certificate of the chain is unusable: {0}")]
    BadCertificate(String),
    /// The key belongs to another certificate.
    #[error(
        "the private key does not belong to the first certificate of the chain (their public keys differ)"
    )]
    KeyMismatch,
    /// The requested crypto provider cannot run here (see [`tls_provider_for`]).
    #[error("{0}")]
    Provider(Error),
}

/// Checks, without connecting, that `key` is usable by the crypto provider
/// `provider` asks for (as [`TlsConfig::provider`]) and belongs to the first
/// certificate of `chain`: the same check [`client_config`] makes when it
/// installs the client certificate, run early so that a configuration can be
/// validated before any network I/O. X.509 v1 certificates are accepted, as
/// Java accepts them (docs/client.md, "Client certificates"). Messages never
/// contain key material.
pub fn check_client_identity(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    provider: Option<TlsProviderRequest>,
) -> Result<ClientIdentityCheck, ClientIdentityError> {
    let provider =
        crypto_provider_for(&tls_provider_for(provider).map_err(ClientIdentityError::Provider)?);
    certified_key(chain, key, &provider).map(|(_, check)| check)
}

/// The client certificate chain and key as rustls presents them, after the
/// checks Java's key managers make: the key loads and its public half is the
/// first certificate's. Unlike rustls' own `CertifiedKey::from_der`, the
/// certificate is read with x509-cert, not webpki, so an X.509 v1
/// certificate (no extensions, no SAN), which Java presents and brokers
/// accept, is usable; the client never validates its own chain
/// (docs/client.md, "Client certificates").
fn certified_key(
    chain: &[CertificateDer<'static>],
    key: &PrivateKeyDer<'static>,
    provider: &CryptoProvider,
) -> Result<(CertifiedKey, ClientIdentityCheck), ClientIdentityError> {
    use x509_cert::der::{Decode as _, Encode as _};
    let Some(first) = chain.first() else {
        return Err(ClientIdentityError::NoCertificate);
    };
    let signing_key = provider
        .key_provider
        .load_private_key(key.clone_key())
        .map_err(|e| ClientIdentityError::UnusableKey(e.to_string()))?;
    let check = match signing_key.public_key() {
        None => ClientIdentityCheck::Unknown,
        Some(key_spki) => {
            let cert_spki = x509_cert::Certificate::from_der(first.as_ref())
                .and_then(|c| c.tbs_certificate().subject_public_key_info().to_der())
                .map_err(|e| ClientIdentityError::BadCertificate(format!("not X.509 DER ({e})")))?;
            if key_spki.as_ref() != cert_spki.as_slice() {
                return Err(ClientIdentityError::KeyMismatch);
            }
            ClientIdentityCheck::Matches
        }
    };
    Ok((CertifiedKey::new(chain.to_vec(), signing_key), check))
}

/// Builds the rustls client configuration for `tls`, reading its PEM files:
/// the one every broker connection and the HTTPS client use, with the server
/// certificate verification docs/client.md describes. Public for callers
/// that make their own TLS connections with the same checks (the
/// differential test against Java's TLS stack does).
pub fn client_config(tls: &TlsConfig) -> Result<Arc<ClientConfig>, Error> {
    let provider = crypto_provider_for(&tls_provider_for(tls.provider)?);
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| config_error(format!("crypto provider has no usable TLS version: {e}")))?;

    let verifier: Arc<dyn ServerCertVerifier> = if tls.insecure_skip_verify {
        tracing::warn!(
            "TLS certificate verification is DISABLED (insecure_skip_verify): \
             any server can impersonate the brokers; never use this in production"
        );
        Arc::new(AcceptAnyCertificate {
            provider: provider.clone(),
        })
    } else {
        let roots = Arc::new(root_store(tls)?);
        if !tls.verify_hostname {
            tracing::warn!(
                "TLS host name verification is disabled; the certificate chain is still verified"
            );
        }
        Arc::new(server_verify::JavaRulesVerifier::new(
            roots,
            provider.clone(),
            tls.verify_hostname,
        ))
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);

    let config = match &tls.client_cert {
        None => builder.with_no_client_auth(),
        Some(client) => {
            let certs = read_certs(&client.cert, "client certificate")?;
            if certs.is_empty() {
                return Err(config_error(match &client.cert {
                    Pem::File(path) => format!(
                        "no certificate found in client certificate file {}",
                        path.display()
                    ),
                    Pem::Bytes(_) => "no certificate found in the client certificate PEM \
                                      (in memory)"
                        .to_string(),
                }));
            }
            let key = match &client.key {
                Pem::File(path) => PrivateKeyDer::from_pem_file(path),
                Pem::Bytes(pem) => PrivateKeyDer::from_pem_slice(pem.expose()),
            }
            .map_err(|e| {
                config_error(format!(
                    "cannot read a private key from {}: {e} (encrypted keys are not supported)",
                    source_name(&client.key, "client key")
                ))
            })?;
            let (certified, _) = certified_key(&certs, &key, &provider).map_err(|e| {
                config_error(format!(
                    "client certificate {} and key {} are unusable: {e}",
                    source_name(&client.cert, "client certificate"),
                    source_name(&client.key, "client key")
                ))
            })?;
            builder.with_client_cert_resolver(Arc::new(SingleCertAndKey::from(certified)))
        }
    };
    Ok(Arc::new(config))
}

fn root_store(tls: &TlsConfig) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    let ca = match (&tls.ca_pem_file, &tls.ca_pem) {
        (Some(_), Some(_)) => {
            return Err(config_error(
                "both ca_pem_file and ca_pem are set; give the CA certificates once".to_string(),
            ));
        }
        (Some(path), None) => Some(Pem::File(path.clone())),
        (None, Some(pem)) => Some(Pem::Bytes(pem.clone())),
        (None, None) => None,
    };
    match ca {
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Some(ca) => {
            let certs = read_certs(&ca, "CA")?;
            let (added, _ignored) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(config_error(format!(
                    "no usable CA certificate in {}",
                    source_name(&ca, "CA")
                )));
            }
        }
    }
    Ok(roots)
}

/// The certificates in `pem`; `what` names in-memory PEM in errors.
fn read_certs(pem: &Pem, what: &str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = match pem {
        Pem::File(path) => {
            CertificateDer::pem_file_iter(path).and_then(|iter| iter.collect::<Result<Vec<_>, _>>())
        }
        Pem::Bytes(bytes) => CertificateDer::pem_slice_iter(bytes.expose()).collect(),
    };
    certs.map_err(|e| {
        config_error(format!(
            "cannot read PEM certificates from {}: {e}",
            source_name(pem, what)
        ))
    })
}

/// How errors name a PEM source: the file's path, or `the <what> PEM (in
/// memory)`; never the content.
fn source_name(pem: &Pem, what: &str) -> String {
    match pem {
        Pem::File(path) => path.display().to_string(),
        Pem::Bytes(_) => format!("the {what} PEM (in memory)"),
    }
}

/// Describes a rustls failure, with a hint for the usual causes.
pub(crate) fn describe_error(error: &rustls::Error) -> String {
    use rustls::AlertDescription as Alert;
    let hint = match error {
        rustls::Error::AlertReceived(Alert::CertificateRequired) => {
            " (the broker requires a client certificate: configure TlsConfig::client_cert)"
        }
        rustls::Error::AlertReceived(
            Alert::BadCertificate | Alert::HandshakeFailure | Alert::UnknownCA,
        ) => {
            " (the broker rejected the handshake: does the listener require a client certificate \
             signed by a CA it trusts?)"
        }
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            " (the broker certificate is not signed by a trusted CA: set TlsConfig::ca_pem_file)"
        }
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => " (the certificate does not name the broker host)",
        _ => "",
    };
    format!("{error}{hint}")
}

/// Which kind of failure a rustls error is.
pub(crate) fn failure_kind(error: &rustls::Error) -> crate::TlsFailure {
    match error {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            crate::TlsFailure::UntrustedCertificate
        }
        _ => crate::TlsFailure::Other,
    }
}

fn config_error(detail: String) -> Error {
    Error::TlsConfig { detail }
}

/// Accepts any server certificate (`insecure_skip_verify`). Handshake
/// signatures are still checked with the provider's algorithms, so the
/// session is at least bound to the presented key.
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClientCertConfig;

    #[test]
    fn this_machine_supports_graviola_or_explains_why_not() {
        match graviola_cpu_support() {
            Ok(()) => {}
            Err(e) => assert!(e.to_string().contains("portable"), "{e}"),
        }
    }

    #[test]
    fn default_tls_config_uses_builtin_roots() {
        client_config(&TlsConfig::default()).unwrap();
        for request in [TlsProviderRequest::Auto, TlsProviderRequest::Portable] {
            let tls = TlsConfig {
                provider: Some(request),
                ..TlsConfig::default()
            };
            client_config(&tls).unwrap();
        }
    }

    #[test]
    fn a_forced_provider_this_build_lacks_is_a_config_error() {
        let tls = TlsConfig {
            provider: Some(TlsProviderRequest::Ring),
            ..TlsConfig::default()
        };
        if !BuiltIn::THIS.ring {
            let err = client_config(&tls).unwrap_err();
            assert!(matches!(err, Error::TlsConfig { .. }), "{err}");
            assert!(
                err.to_string().contains("TlsConfig::provider=ring"),
                "{err}"
            );
        }
    }

    #[test]
    fn missing_ca_file_is_a_config_error_naming_the_file() {
        let tls = TlsConfig {
            ca_pem_file: Some("/nonexistent/ca.pem".into()),
            ..TlsConfig::default()
        };
        let err = client_config(&tls).unwrap_err();
        assert!(matches!(err, Error::TlsConfig { .. }), "{err}");
        assert!(err.to_string().contains("/nonexistent/ca.pem"), "{err}");
    }

    #[test]
    fn ca_file_without_certificates_is_rejected() {
        let dir = std::env::temp_dir().join(format!("kafka-lite-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let tls = TlsConfig {
            ca_pem_file: Some(path.clone()),
            ..TlsConfig::default()
        };
        let err = client_config(&tls).unwrap_err();
        assert!(
            err.to_string().contains("no usable CA certificate"),
            "{err}"
        );
        let tls = TlsConfig {
            client_cert: Some(ClientCertConfig::from_files(path.clone(), path)),
            ..TlsConfig::default()
        };
        let err = client_config(&tls).unwrap_err();
        assert!(err.to_string().contains("no certificate found"), "{err}");
    }

    #[test]
    fn in_memory_pem_errors_say_so_without_the_content() {
        let junk = crate::config::PemBytes::from("not a certificate, secret-ish\n");
        let tls = TlsConfig {
            ca_pem: Some(junk.clone()),
            ..TlsConfig::default()
        };
        let err = client_config(&tls).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid TLS configuration: no usable CA certificate in the CA PEM (in memory)"
        );
        let tls = TlsConfig {
            ca_pem_file: Some("/nonexistent/ca.pem".into()),
            ca_pem: Some(junk.clone()),
            ..TlsConfig::default()
        };
        let err = client_config(&tls).unwrap_err();
        assert!(
            err.to_string().contains("both ca_pem_file and ca_pem"),
            "{err}"
        );
        let tls = TlsConfig {
            client_cert: Some(ClientCertConfig {
                cert: Pem::Bytes(junk.clone()),
                key: Pem::Bytes(junk),
            }),
            ..TlsConfig::default()
        };
        let err = client_config(&tls).unwrap_err();
        assert!(
            err.to_string()
                .contains("client certificate PEM (in memory)"),
            "{err}"
        );
        assert!(!err.to_string().contains("secret-ish"), "{err}");
    }
}
