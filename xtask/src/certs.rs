//! A throwaway certificate authority for the TLS listeners, made with `openssl`.
//!
//! Every `kafka up` makes a fresh CA and signs two leaf certificates with it:
//! the brokers' server certificate (SAN `DNS:localhost, IP:127.0.0.1`) and a
//! client certificate for the mutual-TLS listener; the client's key is also
//! signed as an X.509 v1 certificate, as Kafka's security documentation makes
//! them (`openssl x509 -req` without extensions), which Java clients present
//! and the mutual-TLS listener accepts. Keys are unencrypted PKCS#8
//! PEM, which both Kafka (`ssl.keystore.type=PEM`, given inline) and rustls
//! read directly.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The PEM files of one test PKI.
#[derive(Debug, Clone)]
pub struct TestPki {
    /// CA certificate: the trust anchor for both sides.
    pub ca_pem: PathBuf,
    /// Broker certificate.
    pub server_cert_pem: PathBuf,
    /// Broker private key (PKCS#8).
    pub server_key_pem: PathBuf,
    /// Client certificate for the mTLS listener.
    pub client_cert_pem: PathBuf,
    /// Client private key (PKCS#8).
    pub client_key_pem: PathBuf,
    /// The same client key's X.509 v1 certificate (no extensions).
    pub client_v1_cert_pem: PathBuf,
}

/// Creates a CA, a server and a client certificate under `dir` (replacing old ones).
pub fn generate(dir: &Path) -> Result<TestPki> {
    if dir.exists() {
        fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let p = |name: &str| dir.join(name);

    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-sha256",
            "-days",
            "3650",
            "-subj",
            "/CN=mm2-checkpoint test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
        ],
    )?;
    leaf(
        dir,
        "server",
        "/CN=localhost",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )?;
    leaf(
        dir,
        "client",
        "/CN=mm2-checkpoint-test-client",
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
    )?;
    // No extension file: OpenSSL then writes a v1 certificate.
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-sha256",
            "-days",
            "3650",
            "-in",
            "client.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "client-v1.pem",
        ],
    )?;

    Ok(TestPki {
        ca_pem: p("ca.pem"),
        server_cert_pem: p("server.pem"),
        server_key_pem: p("server.key"),
        client_cert_pem: p("client.pem"),
        client_key_pem: p("client.key"),
        client_v1_cert_pem: p("client-v1.pem"),
    })
}

/// A key and a certificate signed by `ca.key`, with the given X.509v3 extensions.
fn leaf(dir: &Path, name: &str, subject: &str, extensions: &str) -> Result<()> {
    let ext = format!("{name}.ext");
    fs::write(dir.join(&ext), extensions).with_context(|| format!("writing {ext}"))?;
    let (key, csr, pem) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
    );
    openssl(
        dir,
        &[
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", &key,
            "-out", &csr,
        ],
    )?;
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-sha256",
            "-days",
            "3650",
            "-in",
            &csr,
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            &ext,
            "-out",
            &pem,
        ],
    )
}

pub(crate) fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .context("running `openssl` (is it installed? `apt-get install openssl`)")?;
    if !out.status.success() {
        bail!(
            "`openssl {}` failed ({}): {}",
            args.first().copied().unwrap_or_default(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
