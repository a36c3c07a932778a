//! Reading MM2's own `mm2.properties` into typed, validated per-flow settings.
//!
//! The daemon is a drop-in for MM2's checkpointing, so it reads the file MM2
//! reads and derives, for every enabled flow `S->T`, the settings that MM2's
//! `MirrorCheckpointConnector` for that flow would see:
//!
//! * `properties` parses the Java-properties text;
//! * `providers` resolves `${env:NAME}` and `${file:path:key}` references;
//! * this module decides which flows are enabled and layers keys the way
//!   `MirrorMakerConfig` does (top-level `k` < `S->T.k` for connector keys);
//! * `security` assembles one connection per cluster per flow from the
//!   `bootstrap.servers`, `security.protocol`, `ssl.*` and `sasl.*` keys;
//! * [`keys`] is the table of the checkpoint keys (names, defaults, accepted
//!   values, how `validate` shows them) that the readers and the report use;
//! * [`render_effective_settings`] prints the result for `mm2-checkpoint validate`.
//!
//! Everything here is checked up front and reported as a [`ConfigError`] naming
//! the key (and line) to fix; [`MirrorConfig::validate_text`] reports every
//! independent error of a file in one go (`check`). Secrets stay inside
//! [`Secret`]. The user-facing description of every key is
//! `docs/configuration.md`.

pub(crate) mod check;
pub(crate) mod connector;
pub(crate) mod error;
mod jaas;
pub mod keys;
pub(crate) mod known_keys;
mod lookup;
pub mod metrics;
pub(crate) mod properties;
pub(crate) mod providers;
mod read;
mod render;
pub(crate) mod security;
mod setting;
mod settings;
mod spelling;
mod validation;

pub use check::{ConfigWarning, NotChecked, Secrets};
pub use connector::{CONNECTOR_FLOW, ConfigFormat};
pub use error::ConfigError;
/// Secrets are kafka-lite's [`kafka_lite::Secret`]: `Debug` and `Display`
/// print `[redacted]`.
pub use kafka_lite::Secret;
pub use keys::{
    CONTENT_SEARCH_KEY, DEFAULT_TRANSLATION_MAX_SYNCS, FOLLOW_COALESCE_KEY, GROUP_OFFSETS_MODE_KEY,
    MEMBERSHIP_ENABLED_KEY, MEMBERSHIP_GROUP_KEY, MEMBERSHIP_HEARTBEAT_KEY,
    MEMBERSHIP_INSTANCE_KEY, MEMBERSHIP_SESSION_TIMEOUT_KEY, OFFSET_TRANSLATION_KEY,
    TRANSLATION_MAX_SYNCS_KEY,
};
pub use properties::Properties;
pub use providers::{Environment, ProcessEnvironment};
pub use render::{render_effective_settings, render_validation_json, render_validation_text};
pub use security::{
    BrokerAddress, ClientIdentity, ClusterConnection, EXPIRY_WARNING, KeyOrigin, PemSource,
    SaslCredentials, SaslMechanism, SecurityProtocol, TlsMaterial, TlsSettings, TrustRoots,
};
pub use settings::{
    CONTENT_SEARCH_MAX_BYTES, CONTENT_SEARCH_MAX_RECORDS, FilterSettings, FlowConfig,
    GroupOffsetsMode, MAX_TRANSLATION_MAX_SYNCS, MembershipConfig, MirrorConfig, OffsetTranslation,
    Ownership,
};
pub use spelling::UnknownSpelling;
pub use validation::{FlowReport, Validation};

// What `tests.rs` takes from this module with `use super::*`.
#[cfg(test)]
use crate::core::{OffsetSyncsLocation, Precision};
#[cfg(test)]
use std::{path::Path, time::Duration};

#[cfg(test)]
mod tests;
