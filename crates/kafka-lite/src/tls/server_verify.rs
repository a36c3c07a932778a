//! The server certificate verifier of every kafka-lite TLS connection (broker
//! connections and the HTTPS client of [`crate::http`]).
//!
//! It accepts what Java's Kafka client accepts (JSSE's PKIX validation with
//! `ssl.endpoint.identification.algorithm=https`), and nothing more (a few
//! things Java accepts it refuses; docs/client.md lists them):
//!
//! - the chain is verified by webpki, as rustls does, whenever webpki can
//!   read the server's certificate;
//! - an X.509 **v1** server certificate (no extensions, which webpki does not
//!   read at all) is accepted when it is directly signed by a trust anchor:
//!   its signature is checked with the crypto provider's algorithms against
//!   the anchor's key, its issuer must be byte for byte the anchor's subject,
//!   and `now` must lie within its validity. A v1 certificate is never
//!   accepted as an intermediate (webpki refuses those, as PKIX does);
//! - a v3 server certificate with a keyUsage extension must allow digital
//!   signatures, and one with a Netscape certificate type must allow SSL
//!   servers, as Java requires (webpki looks at neither);
//! - the host name is checked as Java's HTTPS rule does: webpki's check
//!   (subjectAltName entries only) first; when it refuses, the name is
//!   matched again by Java's rule: the subjectAltName DNS entries if the
//!   certificate has any, else the most specific (last) common name; an IP
//!   address only ever matches a subjectAltName IP entry. See
//!   [`name_matches_template`] for the wildcard forms. A match by common
//!   name is refused under name constraints, which webpki checks against
//!   subjectAltName entries only.
//!
//! Turning the host name check off (empty
//! `ssl.endpoint.identification.algorithm`) leaves every other check on.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_cert_signed_by_trust_anchor, verify_server_name};
use rustls::crypto::{
    CryptoProvider, WebPkiSupportedAlgorithms, verify_tls12_signature, verify_tls13_signature,
    verify_tls13_signature_with_raw_key,
};
use rustls::pki_types::{
    CertificateDer, ServerName, SignatureVerificationAlgorithm, SubjectPublicKeyInfoDer, UnixTime,
};
use rustls::server::ParsedCertificate;
use rustls::{
    CertificateError, DigitallySignedStruct, OtherError, PeerMisbehaved, RootCertStore,
    SignatureScheme,
};
use x509_cert::der::asn1::{AnyRef, BitStringRef, ObjectIdentifier};
use x509_cert::der::{Decode, Encode, Reader, SliceReader, Tag, TagNumber, Tagged};
use x509_cert::ext::pkix::SubjectAltName;
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::name::Name;
use x509_cert::time::Validity;

/// subjectAltName (2.5.29.17).
const SUBJECT_ALT_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.17");
/// nameConstraints (2.5.29.30).
const NAME_CONSTRAINTS: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.30");
/// Netscape certificate type (2.16.840.1.113730.1.1), which Java still honours.
const NETSCAPE_CERT_TYPE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.16.840.1.113730.1.1");
/// keyUsage (2.5.29.15).
const KEY_USAGE: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.29.15");
/// commonName (2.5.4.3).
const COMMON_NAME: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.3");

/// Verifies server certificates by Java's acceptance rules (see the module
/// documentation). Handshake signatures are checked with the provider's
/// algorithms.
#[derive(Debug)]
pub(crate) struct JavaRulesVerifier {
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
    check_hostname: bool,
}

impl JavaRulesVerifier {
    /// A verifier trusting `roots`, checking signatures with `provider`'s
    /// algorithms, and the host name when `check_hostname`.
    pub(crate) fn new(
        roots: Arc<RootCertStore>,
        provider: Arc<CryptoProvider>,
        check_hostname: bool,
    ) -> Self {
        JavaRulesVerifier {
            roots,
            provider,
            check_hostname,
        }
    }

    fn algorithms(&self) -> &[&'static dyn SignatureVerificationAlgorithm] {
        self.provider.signature_verification_algorithms.all
    }
}

impl ServerCertVerifier for JavaRulesVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match ParsedCertificate::try_from(end_entity) {
            Ok(parsed) => {
                verify_server_cert_signed_by_trust_anchor(
                    &parsed,
                    &self.roots,
                    intermediates,
                    now,
                    self.algorithms(),
                )?;
                check_server_usage(&RawCertificate::parse(end_entity)?)?;
                if self.check_hostname {
                    match verify_server_name(&parsed, server_name) {
                        Ok(()) => {}
                        Err(rustls::Error::InvalidCertificate(
                            CertificateError::NotValidForName
                            | CertificateError::NotValidForNameContext { .. },
                        )) => check_name_by_java_rule(
                            end_entity,
                            server_name,
                            intermediates,
                            &self.roots,
                        )?,
                        Err(other) => return Err(other),
                    }
                }
            }
            Err(webpki_error) => {
                // webpki reads v3 certificates only; a v1 one gets the path
                // below, anything else keeps webpki's refusal.
                let Ok(raw) = RawCertificate::parse(end_entity) else {
                    return Err(webpki_error);
                };
                if raw.version != Version::V1 {
                    return Err(webpki_error);
                }
                verify_v1_signed_by_anchor(&raw, &self.roots, now, self.algorithms())?;
                if self.check_hostname {
                    check_name_by_java_rule(end_entity, server_name, intermediates, &self.roots)?;
                }
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let supported = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, supported)
            .or_else(|e| verify_handshake_signature_of_v1(message, cert, dss, supported, false, e))
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let supported = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, supported)
            .or_else(|e| verify_handshake_signature_of_v1(message, cert, dss, supported, true, e))
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Where rustls refused to check a handshake signature with `cert` (it reads
/// v3 certificates only) and `cert` is v1: checks `dss` over `message` with
/// the key of `cert` by the same rules (the scheme must be one the provider
/// supports, and one of TLS 1.3's when `tls13`). Anything else keeps
/// rustls's `refusal`.
fn verify_handshake_signature_of_v1(
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
    supported: &WebPkiSupportedAlgorithms,
    tls13: bool,
    refusal: rustls::Error,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    let raw = match RawCertificate::parse(cert) {
        Ok(raw) if raw.version == Version::V1 => raw,
        _ => return Err(refusal),
    };
    if tls13 {
        // rustls's own check for a bare key: TLS 1.3's schemes only.
        let spki = raw
            .spki
            .to_der()
            .map_err(malformed("subjectPublicKeyInfo"))?;
        return verify_tls13_signature_with_raw_key(
            message,
            &SubjectPublicKeyInfoDer::from(spki),
            dss,
            supported,
        );
    }
    let Some((_, algorithms)) = supported
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
    else {
        return Err(PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme.into());
    };
    let (key_algorithm, key) = split_spki(raw.spki.value())?;
    let mut fitting = algorithms
        .iter()
        .filter(|alg| alg.public_key_alg_id().as_ref() == key_algorithm)
        .peekable();
    if fitting.peek().is_none() {
        return Err(
            CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext {
                signature_algorithm_id: Vec::new(),
                public_key_algorithm_id: key_algorithm.to_vec(),
            }
            .into(),
        );
    }
    if fitting.any(|alg| alg.verify_signature(key, message, dss.signature()).is_ok()) {
        Ok(HandshakeSignatureValid::assertion())
    } else {
        Err(CertificateError::BadSignature.into())
    }
}

/// Why this verifier refused a certificate where rustls has no fitting
/// [`CertificateError`]; carried in [`CertificateError::Other`], which rustls
/// prints with `Debug`, so `Debug` is the message too.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum JavaRuleError {
    /// The certificate's DER could not be read where this verifier needs it.
    Malformed(&'static str),
    /// A v1 certificate carries fields v1 does not have.
    V1WithLaterFields,
    /// The outer and inner signature algorithms of a certificate differ.
    SignatureAlgorithmMismatch,
    /// The server certificate's key usage excludes signatures, which every
    /// TLS key exchange this client offers needs (Java refuses it too).
    KeyUsageWithoutDigitalSignature,
    /// The host name matched the common name of a certificate under name
    /// constraints, which are checked against subjectAltName entries only.
    CommonNameUnderNameConstraints,
    /// The server certificate's Netscape certificate type excludes SSL
    /// servers (Java refuses it too).
    NetscapeTypeNotSslServer,
    /// The issuing trust anchor has name constraints, which a v1
    /// certificate (without subjectAltName) cannot be checked against.
    V1UnderNameConstrainedAnchor,
}

impl fmt::Display for JavaRuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JavaRuleError::Malformed(what) => {
                write!(f, "the server certificate is malformed: {what}")
            }
            JavaRuleError::V1WithLaterFields => f.write_str(
                "the server certificate says X.509 v1 but has unique identifiers or extensions",
            ),
            JavaRuleError::CommonNameUnderNameConstraints => f.write_str(
                "the server certificate names the host only in its common name, and its issuers \
                 have name constraints, which cover subjectAltName entries only: give it a \
                 subjectAltName",
            ),
            JavaRuleError::NetscapeTypeNotSslServer => f.write_str(
                "the server certificate's Netscape certificate type does not allow SSL servers",
            ),
            JavaRuleError::KeyUsageWithoutDigitalSignature => f.write_str(
                "the server certificate's key usage does not allow digital signatures",
            ),
            JavaRuleError::SignatureAlgorithmMismatch => f.write_str(
                "the server certificate's signature algorithm differs from the one it was signed with",
            ),
            JavaRuleError::V1UnderNameConstrainedAnchor => f.write_str(
                "the X.509 v1 server certificate is issued by a trust anchor with name \
                 constraints, which cannot apply to a certificate without subjectAltName",
            ),
        }
    }
}

impl fmt::Debug for JavaRuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for JavaRuleError {}

impl From<JavaRuleError> for rustls::Error {
    fn from(error: JavaRuleError) -> Self {
        rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(error))))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
    V3,
    Other,
}

/// The parts of a certificate this verifier reads, as found in its DER.
struct RawCertificate<'a> {
    version: Version,
    /// The signed bytes: the whole TBSCertificate, header included.
    tbs: Vec<u8>,
    /// Content of the outer signatureAlgorithm AlgorithmIdentifier.
    signature_algorithm: &'a [u8],
    /// Content of the TBSCertificate's signature AlgorithmIdentifier.
    inner_signature_algorithm: &'a [u8],
    signature: BitStringRef<'a>,
    /// Content of the issuer Name (how trust anchors hold their subject).
    issuer: &'a [u8],
    validity: AnyRef<'a>,
    subject: AnyRef<'a>,
    spki: AnyRef<'a>,
    /// issuerUniqueID or subjectUniqueID present.
    unique_ids: bool,
    /// The content of the `[3]` extensions field: an Extensions SEQUENCE.
    extensions: Option<&'a [u8]>,
}

fn malformed(what: &'static str) -> impl Fn(x509_cert::der::Error) -> JavaRuleError {
    move |_| JavaRuleError::Malformed(what)
}

impl<'a> RawCertificate<'a> {
    fn parse(der: &'a [u8]) -> Result<Self, JavaRuleError> {
        let mut outer = SliceReader::new(der).map_err(malformed("certificate"))?;
        let certificate: AnyRef<'a> = outer.decode().map_err(malformed("certificate"))?;
        outer
            .finish()
            .map_err(malformed("data after the certificate"))?;
        if certificate.tag() != Tag::Sequence {
            return Err(JavaRuleError::Malformed("certificate is not a SEQUENCE"));
        }
        let mut fields = SliceReader::new(certificate.value()).map_err(malformed("certificate"))?;
        let tbs: AnyRef<'a> = fields.decode().map_err(malformed("tbsCertificate"))?;
        let signature_algorithm: AnyRef<'a> =
            fields.decode().map_err(malformed("signatureAlgorithm"))?;
        let signature: BitStringRef<'a> = fields.decode().map_err(malformed("signatureValue"))?;
        fields
            .finish()
            .map_err(malformed("data after the signature"))?;
        if tbs.tag() != Tag::Sequence || signature_algorithm.tag() != Tag::Sequence {
            return Err(JavaRuleError::Malformed(
                "tbsCertificate or signatureAlgorithm is not a SEQUENCE",
            ));
        }

        let mut tbs_fields = SliceReader::new(tbs.value()).map_err(malformed("tbsCertificate"))?;
        let explicit_version = TagNumber(0).context_specific(true);
        let version =
            if Tag::peek(&tbs_fields).map_err(malformed("tbsCertificate"))? == explicit_version {
                let field: AnyRef<'a> = tbs_fields.decode().map_err(malformed("version"))?;
                let number: u8 = u8::from_der(field.value()).map_err(malformed("version"))?;
                match number {
                    0 => Version::V1,
                    1 => Version::V2,
                    2 => Version::V3,
                    _ => Version::Other,
                }
            } else {
                Version::V1
            };
        let serial: AnyRef<'a> = tbs_fields.decode().map_err(malformed("serialNumber"))?;
        if serial.tag() != Tag::Integer {
            return Err(JavaRuleError::Malformed("serialNumber is not an INTEGER"));
        }
        let inner_signature_algorithm: AnyRef<'a> =
            tbs_fields.decode().map_err(malformed("signature"))?;
        let issuer: AnyRef<'a> = tbs_fields.decode().map_err(malformed("issuer"))?;
        let validity: AnyRef<'a> = tbs_fields.decode().map_err(malformed("validity"))?;
        let subject: AnyRef<'a> = tbs_fields.decode().map_err(malformed("subject"))?;
        let spki: AnyRef<'a> = tbs_fields
            .decode()
            .map_err(malformed("subjectPublicKeyInfo"))?;
        for (field, refusal) in [
            (inner_signature_algorithm, "signature is not a SEQUENCE"),
            (issuer, "issuer is not a SEQUENCE"),
            (validity, "validity is not a SEQUENCE"),
            (subject, "subject is not a SEQUENCE"),
            (spki, "subjectPublicKeyInfo is not a SEQUENCE"),
        ] {
            if field.tag() != Tag::Sequence {
                return Err(JavaRuleError::Malformed(refusal));
            }
        }
        let mut unique_ids = false;
        let mut extensions = None;
        while !tbs_fields.is_finished() {
            let field: AnyRef<'a> = tbs_fields
                .decode()
                .map_err(malformed("optional tbsCertificate fields"))?;
            match field.tag() {
                Tag::ContextSpecific {
                    number: TagNumber(1) | TagNumber(2),
                    ..
                } => unique_ids = true,
                Tag::ContextSpecific {
                    number,
                    constructed: true,
                } if number == TagNumber(3) && extensions.is_none() => {
                    extensions = Some(field.value())
                }
                _ => {
                    return Err(JavaRuleError::Malformed(
                        "unexpected field in the tbsCertificate",
                    ));
                }
            }
        }
        Ok(RawCertificate {
            version,
            tbs: tbs.to_der().map_err(malformed("tbsCertificate"))?,
            signature_algorithm: signature_algorithm.value(),
            inner_signature_algorithm: inner_signature_algorithm.value(),
            signature,
            issuer: issuer.value(),
            validity,
            subject,
            spki,
            unique_ids,
            extensions,
        })
    }

    fn validity(&self) -> Result<Validity, JavaRuleError> {
        let der = self.validity.to_der().map_err(malformed("validity"))?;
        Validity::from_der(&der).map_err(malformed("validity"))
    }

    fn subject(&self) -> Result<Name, JavaRuleError> {
        let der = self.subject.to_der().map_err(malformed("subject"))?;
        Name::from_der(&der).map_err(malformed("subject"))
    }

    /// The value of the extension `oid` (see [`find_extension`]).
    fn extension(&self, oid: ObjectIdentifier) -> Result<Option<&'a [u8]>, JavaRuleError> {
        match self.extensions {
            None => Ok(None),
            Some(extensions) => find_extension(extensions, oid),
        }
    }

    /// The subjectAltName entries, `None` without that extension.
    fn subject_alt_names(&self) -> Result<Option<SubjectAltName>, JavaRuleError> {
        let Some(value) = self.extension(SUBJECT_ALT_NAME)? else {
            return Ok(None);
        };
        SubjectAltName::from_der(value)
            .map(Some)
            .map_err(malformed("subjectAltName"))
    }
}

/// The value (the OCTET STRING's content) of the extension `oid` in the
/// Extensions SEQUENCE `extensions`, `None` without it. Read field by field, so that an explicitly
/// encoded `critical FALSE` (not DER, but written by some CAs and
/// accepted by Java) is no obstacle.
fn find_extension(
    extensions: &[u8],
    oid: ObjectIdentifier,
) -> Result<Option<&[u8]>, JavaRuleError> {
    let mut outer = SliceReader::new(extensions).map_err(malformed("extensions"))?;
    let list: AnyRef<'_> = outer.decode().map_err(malformed("extensions"))?;
    outer.finish().map_err(malformed("extensions"))?;
    if list.tag() != Tag::Sequence {
        return Err(JavaRuleError::Malformed("extensions are not a SEQUENCE"));
    }
    let mut list = SliceReader::new(list.value()).map_err(malformed("extensions"))?;
    while !list.is_finished() {
        let extension: AnyRef<'_> = list.decode().map_err(malformed("extension"))?;
        if extension.tag() != Tag::Sequence {
            return Err(JavaRuleError::Malformed("an extension is not a SEQUENCE"));
        }
        let mut fields = SliceReader::new(extension.value()).map_err(malformed("extension"))?;
        let id: ObjectIdentifier = fields.decode().map_err(malformed("extension id"))?;
        let mut value: AnyRef<'_> = fields.decode().map_err(malformed("extension"))?;
        if value.tag() == Tag::Boolean {
            value = fields.decode().map_err(malformed("extension value"))?;
        }
        fields.finish().map_err(malformed("extension"))?;
        if value.tag() != Tag::OctetString {
            return Err(JavaRuleError::Malformed(
                "an extension value is not an OCTET STRING",
            ));
        }
        if id == oid {
            return Ok(Some(value.value()));
        }
    }
    Ok(None)
}

/// Java's usage checks of a TLS server certificate that webpki does not
/// make: with a keyUsage extension, it must allow digitalSignature, which
/// every key exchange this client offers (ECDHE in TLS 1.2, TLS 1.3) needs;
/// with a Netscape certificate type extension, it must allow SSL servers.
/// Without these extensions, any use is allowed.
fn check_server_usage(leaf: &RawCertificate<'_>) -> Result<(), JavaRuleError> {
    // digitalSignature is bit 0 of keyUsage, SSL server bit 1 of the
    // Netscape type: bits count from the most significant of the first byte.
    if let Some(value) = leaf.extension(KEY_USAGE)?
        && !bit_set(value, 0, "keyUsage")?
    {
        return Err(JavaRuleError::KeyUsageWithoutDigitalSignature);
    }
    if let Some(value) = leaf.extension(NETSCAPE_CERT_TYPE)?
        && !bit_set(value, 1, "Netscape certificate type")?
    {
        return Err(JavaRuleError::NetscapeTypeNotSslServer);
    }
    Ok(())
}

/// Whether bit `bit` (0 to 7) of the BIT STRING `der` is set.
fn bit_set(der: &[u8], bit: u8, what: &'static str) -> Result<bool, JavaRuleError> {
    let bits = BitStringRef::from_der(der).map_err(malformed(what))?;
    Ok(bits.bit_len() > usize::from(bit) && bits.raw_bytes()[0] & (0x80 >> bit) != 0)
}

/// Accepts the v1 certificate `leaf` if a trust anchor whose subject is its
/// issuer signed it, and `now` is within its validity.
fn verify_v1_signed_by_anchor(
    leaf: &RawCertificate<'_>,
    roots: &RootCertStore,
    now: UnixTime,
    algorithms: &[&'static dyn SignatureVerificationAlgorithm],
) -> Result<(), rustls::Error> {
    if leaf.unique_ids || leaf.extensions.is_some() {
        return Err(JavaRuleError::V1WithLaterFields.into());
    }
    if leaf.signature_algorithm != leaf.inner_signature_algorithm {
        return Err(JavaRuleError::SignatureAlgorithmMismatch.into());
    }
    let signature = leaf
        .signature
        .as_bytes()
        .ok_or(JavaRuleError::Malformed("signatureValue has unused bits"))?;
    let mut issuers = roots
        .roots
        .iter()
        .filter(|anchor| anchor.subject.as_ref() == leaf.issuer)
        .peekable();
    if issuers.peek().is_none() {
        return Err(CertificateError::UnknownIssuer.into());
    }
    let mut refusal: rustls::Error = CertificateError::BadSignature.into();
    let mut verified = false;
    for anchor in issuers {
        let (key_algorithm, key) = match split_spki(anchor.subject_public_key_info.as_ref()) {
            Ok(parts) => parts,
            Err(e) => {
                refusal = e.into();
                continue;
            }
        };
        let mut candidates = algorithms.iter().filter(|alg| {
            alg.public_key_alg_id().as_ref() == key_algorithm
                && alg.signature_alg_id().as_ref() == leaf.signature_algorithm
        });
        let Some(first) = candidates.next() else {
            let known_signature = algorithms
                .iter()
                .any(|alg| alg.signature_alg_id().as_ref() == leaf.signature_algorithm);
            refusal = if known_signature {
                CertificateError::UnsupportedSignatureAlgorithmForPublicKeyContext {
                    signature_algorithm_id: leaf.signature_algorithm.to_vec(),
                    public_key_algorithm_id: key_algorithm.to_vec(),
                }
            } else {
                // As webpki reports it for v3 certificates (SHA-1, MD5, ...).
                CertificateError::UnsupportedSignatureAlgorithmContext {
                    signature_algorithm_id: leaf.signature_algorithm.to_vec(),
                    supported_algorithms: algorithms
                        .iter()
                        .map(|alg| alg.signature_alg_id())
                        .collect(),
                }
            }
            .into();
            continue;
        };
        if std::iter::once(first)
            .chain(candidates)
            .any(|alg| alg.verify_signature(key, &leaf.tbs, signature).is_ok())
        {
            if anchor.name_constraints.is_some() {
                return Err(JavaRuleError::V1UnderNameConstrainedAnchor.into());
            }
            verified = true;
            break;
        }
        refusal = CertificateError::BadSignature.into();
    }
    if !verified {
        return Err(refusal);
    }
    let validity = leaf.validity()?;
    let not_before = UnixTime::since_unix_epoch(validity.not_before.to_unix_duration());
    let not_after = UnixTime::since_unix_epoch(validity.not_after.to_unix_duration());
    if now < not_before {
        return Err(CertificateError::NotValidYetContext {
            time: now,
            not_before,
        }
        .into());
    }
    if now > not_after {
        return Err(CertificateError::ExpiredContext {
            time: now,
            not_after,
        }
        .into());
    }
    Ok(())
}

/// The algorithm (AlgorithmIdentifier content) and key (BIT STRING bytes) of
/// a SubjectPublicKeyInfo given as its content, as trust anchors hold it.
fn split_spki(content: &[u8]) -> Result<(&[u8], &[u8]), JavaRuleError> {
    let mut reader = SliceReader::new(content).map_err(malformed("trust anchor key"))?;
    let algorithm: AnyRef<'_> = reader.decode().map_err(malformed("trust anchor key"))?;
    let key: BitStringRef<'_> = reader.decode().map_err(malformed("trust anchor key"))?;
    reader.finish().map_err(malformed("trust anchor key"))?;
    let key = key
        .as_bytes()
        .ok_or(JavaRuleError::Malformed("trust anchor key has unused bits"))?;
    Ok((algorithm.value(), key))
}

/// Java's HTTPS host name rule (see the module documentation): `Ok` if
/// `server_name` matches the certificate `der`. A match by common name is
/// refused when name constraints could apply (on a presented intermediate,
/// or on a trust anchor that issued a presented certificate): webpki checks
/// them against subjectAltName entries only, so a common name would escape
/// them.
fn check_name_by_java_rule(
    der: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    intermediates: &[CertificateDer<'_>],
    roots: &RootCertStore,
) -> Result<(), rustls::Error> {
    let raw = RawCertificate::parse(der)?;
    let names = PresentedNames::of(&raw)?;
    if !names.matches(server_name) {
        return Err(CertificateError::NotValidForNameContext {
            expected: server_name.to_owned(),
            presented: names.describe(),
        }
        .into());
    }
    let by_common_name = matches!(server_name, ServerName::DnsName(_)) && names.dns.is_empty();
    if by_common_name && name_constraints_may_apply(&raw, intermediates, roots)? {
        return Err(JavaRuleError::CommonNameUnderNameConstraints.into());
    }
    Ok(())
}

/// Whether a presented intermediate has name constraints, or a trust anchor
/// with name constraints issued `leaf` or a presented intermediate.
fn name_constraints_may_apply(
    leaf: &RawCertificate<'_>,
    intermediates: &[CertificateDer<'_>],
    roots: &RootCertStore,
) -> Result<bool, JavaRuleError> {
    let mut issuers = vec![leaf.issuer];
    for der in intermediates {
        let intermediate = RawCertificate::parse(der)?;
        if intermediate.extension(NAME_CONSTRAINTS)?.is_some() {
            return Ok(true);
        }
        issuers.push(intermediate.issuer);
    }
    Ok(roots.roots.iter().any(|anchor| {
        anchor.name_constraints.is_some()
            && issuers
                .iter()
                .any(|issuer| anchor.subject.as_ref() == *issuer)
    }))
}

/// The names a certificate presents for host name checks.
#[derive(Debug, Default)]
struct PresentedNames {
    /// subjectAltName dNSName entries (`None`: not IA5 text).
    dns: Vec<Option<String>>,
    /// subjectAltName iPAddress entries.
    ip: Vec<Vec<u8>>,
    /// The most specific commonName of the subject, if readable text.
    common_name: Option<String>,
}

impl PresentedNames {
    fn of(raw: &RawCertificate<'_>) -> Result<Self, JavaRuleError> {
        let mut names = PresentedNames::default();
        if let Some(san) = raw.subject_alt_names()? {
            for name in san.0 {
                match name {
                    GeneralName::DnsName(dns) => names
                        .dns
                        .push(std::str::from_utf8(dns.as_bytes()).ok().map(str::to_owned)),
                    GeneralName::IpAddress(ip) => names.ip.push(ip.as_bytes().to_vec()),
                    _ => {}
                }
            }
        }
        let subject = raw.subject()?;
        // Java takes the last RDN holding a commonName, and in it the first.
        names.common_name = subject
            .iter_rdn()
            .filter_map(|rdn| rdn.iter().find(|atv| atv.oid == COMMON_NAME))
            .last()
            .and_then(|atv| directory_string(atv.value.tag(), atv.value.value()));
        Ok(names)
    }

    fn matches(&self, server_name: &ServerName<'_>) -> bool {
        match server_name {
            ServerName::DnsName(dns) => {
                let host = dns.as_ref();
                if self.dns.is_empty() {
                    self.common_name
                        .as_deref()
                        .is_some_and(|cn| name_matches_template(host, cn))
                } else {
                    self.dns
                        .iter()
                        .flatten()
                        .any(|template| name_matches_template(host, template))
                }
            }
            ServerName::IpAddress(ip) => {
                let ip = IpAddr::from(*ip);
                self.ip.iter().any(|presented| match (ip, presented.len()) {
                    (IpAddr::V4(v4), 4) => v4.octets()[..] == presented[..],
                    (IpAddr::V6(v6), 16) => v6.octets()[..] == presented[..],
                    _ => false,
                })
            }
            _ => false,
        }
    }

    fn describe(&self) -> Vec<String> {
        let mut presented: Vec<String> = self
            .dns
            .iter()
            .map(|dns| match dns {
                Some(name) => format!("DNS:{name}"),
                None => "DNS:(not text)".to_string(),
            })
            .collect();
        for ip in &self.ip {
            presented.push(match ip.len() {
                4 => format!(
                    "IP:{}",
                    std::net::Ipv4Addr::from([ip[0], ip[1], ip[2], ip[3]])
                ),
                16 => {
                    let mut octets = [0u8; 16];
                    octets.copy_from_slice(ip);
                    format!("IP:{}", std::net::Ipv6Addr::from(octets))
                }
                _ => "IP:(malformed)".to_string(),
            });
        }
        // The common name counts only without DNS entries.
        if let Some(cn) = self.common_name.as_ref().filter(|_| self.dns.is_empty()) {
            presented.push(format!("CN={cn}"));
        }
        presented
    }
}

/// The text of a DirectoryString-like value as Java reads it (UTF8String,
/// PrintableString, IA5String, TeletexString as Latin-1, BMPString); `None`
/// for other types or undecodable bytes.
fn directory_string(tag: Tag, bytes: &[u8]) -> Option<String> {
    match tag {
        Tag::Utf8String | Tag::PrintableString | Tag::Ia5String => {
            std::str::from_utf8(bytes).ok().map(str::to_owned)
        }
        Tag::TeletexString => Some(bytes.iter().map(|&b| char::from(b)).collect()),
        Tag::BmpString => {
            if !bytes.len().is_multiple_of(2) {
                return None;
            }
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|pair| u16::from_be_bytes([pair[0], pair[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

/// Whether `host` matches the certificate name `template` by Java's HTTPS
/// rule (`sun.security.util.HostnameChecker`), case-insensitively:
///
/// - a template without `*` matches the same name;
/// - a `*` in the leftmost label stands for any characters within that one
///   label (`*.example.com`, also `f*.example.com` and `*o.example.com` as
///   Java allows), never for a dot; the labels after it must match exactly;
/// - refused as Java refuses them: `*`, `*.`, a wildcard with no dot after
///   it, a template that is not a valid host name with the `*` read as a
///   letter.
///
/// Stricter than Java, as webpki is: a `*` only in the leftmost label, one
/// `*` at most, at least two labels after the wildcard label (no `*.com`),
/// and ASCII names only.
pub(crate) fn name_matches_template(host: &str, template: &str) -> bool {
    if !host.is_ascii() || !template.is_ascii() {
        return false;
    }
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let template = template.to_ascii_lowercase();
    if template == "*" || template == "*." {
        return false;
    }
    if !is_host_name(&template.replace('*', "z")) || !is_host_name(&host) {
        return false;
    }
    let host_labels: Vec<&str> = host.split('.').collect();
    let template_labels: Vec<&str> = template.split('.').collect();
    if host_labels.len() != template_labels.len() {
        return false;
    }
    let (first_template, rest_template) = (template_labels[0], &template_labels[1..]);
    if rest_template.iter().any(|label| label.contains('*')) {
        return false;
    }
    if rest_template != &host_labels[1..] {
        return false;
    }
    let first_host = host_labels[0];
    match first_template.split_once('*') {
        None => first_template == first_host,
        Some((prefix, suffix)) => {
            !suffix.contains('*')
                && rest_template.len() >= 2
                && first_host.len() >= prefix.len() + suffix.len()
                && first_host.starts_with(prefix)
                && first_host.ends_with(suffix)
        }
    }
}

/// A host name as Java's `SNIHostName` accepts it (ASCII): labels of 1 to
/// 63 letters, digits and hyphens, not starting or ending with a hyphen, no
/// trailing dot, 253 characters at most.
fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

#[cfg(test)]
#[path = "server_verify_tests.rs"]
mod tests;
