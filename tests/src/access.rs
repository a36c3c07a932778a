//! kafka-lite's connection settings for each way of reaching a test
//! cluster: the listener, and the SASL login or TLS files it needs.

use kafka_lite::{
    ClientCertConfig, ConnectionConfig, SaslConfig, SaslMechanismKind, Secret, TlsConfig,
};

use crate::{Cluster, Credentials, Listener};

/// One way of reaching a test cluster's broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// PLAINTEXT.
    Plaintext,
    /// SASL_PLAINTEXT, logged in as the cluster's test user of the mechanism.
    Sasl(SaslMechanismKind),
    /// SSL, trusting the test CA.
    Ssl,
    /// SSL with the test client certificate.
    Mtls,
    /// SASL_SSL, trusting the test CA, logged in as the cluster's test user
    /// of the mechanism.
    SaslSsl(SaslMechanismKind),
}

impl Access {
    /// The listener this access connects to.
    pub fn listener(self) -> Listener {
        match self {
            Access::Plaintext => Listener::Plaintext,
            Access::Sasl(_) => Listener::SaslPlaintext,
            Access::Ssl => Listener::Ssl,
            Access::Mtls => Listener::Mtls,
            Access::SaslSsl(_) => Listener::SaslSsl,
        }
    }

    /// `base` with the SASL login or TLS settings this access needs on `cluster`.
    pub fn config(self, cluster: &Cluster, base: ConnectionConfig) -> ConnectionConfig {
        match self {
            Access::Plaintext => base,
            Access::Sasl(mechanism) => ConnectionConfig {
                sasl: Some(sasl_login(cluster, mechanism)),
                ..base
            },
            Access::Ssl | Access::Mtls => ConnectionConfig {
                tls: Some(tls(cluster, self == Access::Mtls)),
                ..base
            },
            Access::SaslSsl(mechanism) => ConnectionConfig {
                sasl: Some(sasl_login(cluster, mechanism)),
                tls: Some(tls(cluster, false)),
                ..base
            },
        }
    }
}

/// The SASL login of `cluster`'s test user for `mechanism`.
pub fn sasl_login(cluster: &Cluster, mechanism: SaslMechanismKind) -> SaslConfig {
    let users = &cluster.sasl_users;
    let user = match mechanism {
        SaslMechanismKind::Plain => &users.plain,
        SaslMechanismKind::ScramSha256 => &users.scram_sha_256,
        SaslMechanismKind::ScramSha512 => &users.scram_sha_512,
        SaslMechanismKind::OAuthBearer | SaslMechanismKind::AwsMskIam => panic!(
            "{mechanism} has no password login; build its SaslConfig from a credential provider"
        ),
    };
    sasl_as(user, mechanism)
}

/// A SASL login as `user` with `mechanism`.
pub fn sasl_as(user: &Credentials, mechanism: SaslMechanismKind) -> SaslConfig {
    SaslConfig::with_password(
        mechanism,
        user.user.clone(),
        Secret::new(user.password.expose()),
    )
}

/// TLS trusting `cluster`'s test CA, with its test client certificate when
/// `client_cert` is set.
pub fn tls(cluster: &Cluster, client_cert: bool) -> TlsConfig {
    TlsConfig {
        ca_pem_file: Some(cluster.tls.ca_pem.clone()),
        client_cert: client_cert.then(|| {
            ClientCertConfig::from_files(
                cluster.tls.client_cert_pem.clone(),
                cluster.tls.client_key_pem.clone(),
            )
        }),
        ..TlsConfig::default()
    }
}
