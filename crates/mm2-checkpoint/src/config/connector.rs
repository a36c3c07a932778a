//! Connector-style input: the configuration of one `MirrorCheckpointConnector`
//! as Kafka Connect, MSK Connect or a Strimzi `KafkaConnector` holds it, either
//! as properties or as Connect REST JSON (`{"name": ..., "config": {...}}` or
//! the bare config object). See docs/configuration.md, "Connector-style input".
//!
//! A connector configuration is what `MirrorMakerConfig` derives from an
//! `mm2.properties` for one flow, so it is read by turning it back into that
//! file: clusters `source` and `target`, flow `source->target` enabled, and
//! every connector key `k` as the flow key `source->target.k`. The flow keys
//! then mean exactly what the connector keys mean, including the client
//! settings: MirrorConnectorConfig gives a source client `source.cluster.<k>`
//! (client keys only) < `<client>.<k>` < `source.<client>.<k>`, and the lookup's
//! precedence for `S->T.source.cluster.<k>` < `S->T.<client>.<k>` <
//! `S->T.source.<client>.<k>` is the same. `source.cluster.alias` and
//! `target.cluster.alias` keep their meaning (their defaults, `source` and
//! `target`, are the cluster names used here). Every entry remembers how the
//! user wrote its key, so errors name the connector key (with its line, or as
//! a JSON key).

use std::fmt;

use super::error::ConfigError;
use super::properties::Properties;

/// The cluster names of the file a connector configuration becomes; they are
/// also MirrorConnectorConfig's default aliases.
const SOURCE: &str = "source";
const TARGET: &str = "target";

/// The one flow of a connector configuration.
pub const CONNECTOR_FLOW: &str = "source->target";

/// The connector class mm2-checkpoint replaces.
const CHECKPOINT_CONNECTOR: &str = "MirrorCheckpointConnector";

/// Keys a Connect worker reads from the top level of an mm2.properties as they
/// are; in a connector configuration they stay at the top level too.
const TOP_LEVEL_PREFIXES: &[&str] = &["config.providers"];

/// How a configuration file is written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConfigFormat {
    /// Decide from the content: JSON, or properties with `connector.class` and
    /// no `clusters`, is a connector configuration; anything else is
    /// `mm2.properties`.
    #[default]
    Auto,
    /// MirrorMaker 2's `mm2.properties`.
    Mm2,
    /// One MirrorCheckpointConnector's configuration (properties or JSON).
    Connector,
}

impl ConfigFormat {
    /// The format's spelling on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigFormat::Auto => "auto",
            ConfigFormat::Mm2 => "mm2",
            ConfigFormat::Connector => "connector",
        }
    }
}

impl fmt::Display for ConfigFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reads `text` in `format` and returns the `mm2.properties` entries it
/// stands for, and whether it was a connector configuration; fails with the
/// first problem.
#[cfg(test)]
pub(super) fn read(text: &str, format: ConfigFormat) -> Result<(Properties, bool), ConfigError> {
    read_all(text, format).map_err(|mut errors| errors.remove(0))
}

/// [`read`], failing with every line of properties text that cannot be read
/// (never an empty list).
pub(super) fn read_all(
    text: &str,
    format: ConfigFormat,
) -> Result<(Properties, bool), Vec<ConfigError>> {
    let parse = |text: &str| match Properties::parse_all(text) {
        (props, errors) if errors.is_empty() => Ok(props),
        (_, errors) => Err(errors),
    };
    let is_json = text.trim_start().starts_with('{');
    match format {
        ConfigFormat::Mm2 => Ok((parse(text)?, false)),
        ConfigFormat::Connector | ConfigFormat::Auto if is_json => {
            Ok((from_json(text).map_err(|e| vec![e])?, true))
        }
        ConfigFormat::Connector => Ok((
            from_connector_properties(&parse(text)?).map_err(|e| vec![e])?,
            true,
        )),
        ConfigFormat::Auto => {
            let props = parse(text)?;
            if props.contains("connector.class") && !props.contains("clusters") {
                Ok((
                    from_connector_properties(&props).map_err(|e| vec![e])?,
                    true,
                ))
            } else {
                Ok((props, false))
            }
        }
    }
}

/// The connector key for the cluster-level key `key` of the file a connector
/// configuration becomes (`target.bootstrap.servers` →
/// `target.cluster.bootstrap.servers`), if it is one.
pub(super) fn cluster_key(key: &str) -> Option<String> {
    [SOURCE, TARGET].into_iter().find_map(|cluster| {
        let rest = key.strip_prefix(cluster)?.strip_prefix('.')?;
        let role_key = ["cluster.", "consumer.", "producer.", "admin."]
            .iter()
            .any(|p| rest.starts_with(p));
        (!role_key).then(|| format!("{cluster}.cluster.{rest}"))
    })
}

/// One connector key: its value, line (properties input) and the name to
/// show the user.
struct ConnectorEntry {
    key: String,
    value: String,
    line: Option<usize>,
    written_as: String,
}

fn from_connector_properties(props: &Properties) -> Result<Properties, ConfigError> {
    let entries = props
        .keys()
        .map(|k| ConnectorEntry {
            key: k.to_string(),
            value: props.get(k).unwrap_or_default().to_string(),
            line: props.line(k),
            written_as: k.to_string(),
        })
        .collect();
    to_mm2(entries)
}

fn from_json(text: &str) -> Result<Properties, ConfigError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        // serde_json's message names the position, never the input's text.
        ConfigError::new(format!(
            "the connector configuration is not valid JSON: {e}"
        ))
        .at_line(Some(e.line()))
    })?;
    let serde_json::Value::Object(top) = value else {
        return Err(ConfigError::new(
            "a JSON connector configuration must be an object: {\"name\": ..., \"config\": {...}} \
             or the config object itself",
        ));
    };
    // Connect's REST shape wraps the config in `config` next to `name`
    // (and, in GET responses, `tasks` and `type`); MSK Connect's API in
    // `connectorConfiguration`.
    let wrapper = ["config", "connectorConfiguration"]
        .into_iter()
        .find(|w| top.contains_key(*w));
    let (object, path) = match wrapper.map(|w| (w, &top[w])) {
        Some((w, serde_json::Value::Object(config))) => (config.clone(), w),
        Some((w, _)) => {
            return Err(ConfigError::for_key(
                w,
                "must be a JSON object of connector keys and string values",
            ));
        }
        None => (top, ""),
    };
    let mut entries = Vec::new();
    for (key, value) in object {
        let written_as = if path.is_empty() {
            format!("\"{key}\"")
        } else {
            format!("{path}[\"{key}\"]")
        };
        let value = match value {
            serde_json::Value::String(s) => s,
            // Connect stores every value as a string; numbers and booleans
            // written without quotes mean their text.
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            _ => {
                return Err(ConfigError::for_key(
                    written_as,
                    "must be a string (Connect connector configurations hold strings)",
                ));
            }
        };
        entries.push(ConnectorEntry {
            key,
            value,
            line: None,
            written_as,
        });
    }
    to_mm2(entries)
}

/// The `mm2.properties` equivalent of one connector configuration.
fn to_mm2(entries: Vec<ConnectorEntry>) -> Result<Properties, ConfigError> {
    // Without `connector.class` (a Strimzi KafkaConnector keeps the class in
    // `spec.class`, outside `spec.config`) the input is taken to be the
    // checkpoint connector's, as `--config-format connector` or the JSON
    // shape said.
    if let Some(e) = entries.iter().find(|e| e.key == "connector.class") {
        let name = e.value.trim();
        let simple = name.rsplit('.').next().unwrap_or(name);
        if simple != CHECKPOINT_CONNECTOR {
            return Err(ConfigError::for_key(
                e.written_as.clone(),
                format!(
                    "is `{name}`; mm2-checkpoint replaces {CHECKPOINT_CONNECTOR} and reads \
                     that connector's configuration (the replication connector keeps running)"
                ),
            )
            .at_line(e.line));
        }
    }
    if let Some(e) = entries.iter().find(|e| e.key == "enabled")
        && !e.value.trim().eq_ignore_ascii_case("true")
    {
        return Err(ConfigError::for_key(
            e.written_as.clone(),
            "is not `true`: this connector does nothing, and mm2-checkpoint would have no flow",
        )
        .at_line(e.line));
    }
    let mut props = Properties::default();
    props.insert("clusters".into(), format!("{SOURCE}, {TARGET}"), None, None);
    props.insert(
        format!("{CONNECTOR_FLOW}.enabled"),
        "true".into(),
        None,
        None,
    );
    for e in entries {
        if e.key == "enabled" {
            continue;
        }
        let key = if TOP_LEVEL_PREFIXES.iter().any(|p| e.key.starts_with(p)) {
            e.key
        } else {
            format!("{CONNECTOR_FLOW}.{}", e.key)
        };
        props.insert(key, e.value, e.line, Some(e.written_as));
    }
    Ok(props)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connector(text: &str) -> Properties {
        match read(text, ConfigFormat::Auto) {
            Ok((props, true)) => props,
            Ok((_, false)) => panic!("read as mm2.properties"),
            Err(e) => panic!("refused: {e}"),
        }
    }

    #[test]
    fn properties_with_connector_class_are_a_connector_config() {
        let p = connector(
            "connector.class = org.apache.kafka.connect.mirror.MirrorCheckpointConnector\n\
             source.cluster.bootstrap.servers = a:9092\ngroups = g.*\n",
        );
        assert_eq!(p.get("clusters"), Some("source, target"));
        assert_eq!(p.get("source->target.groups"), Some("g.*"));
        assert_eq!(p.written_as("source->target.groups"), "groups");
        assert_eq!(p.line("source->target.groups"), Some(3));
    }

    #[test]
    fn an_mm2_file_stays_one() {
        let (p, connector) = read("clusters = A, B\nA->B.enabled = true\n", ConfigFormat::Auto)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(!connector);
        assert_eq!(p.get("A->B.enabled"), Some("true"));
    }

    #[test]
    fn rest_json_and_bare_json_are_read_alike() {
        let wrapped = connector(
            r#"{"name": "cp", "config": {"connector.class": "MirrorCheckpointConnector",
                "tasks.max": 2, "groups": "g"}}"#,
        );
        let bare = connector(
            r#"{"connector.class": "MirrorCheckpointConnector", "tasks.max": "2", "groups": "g"}"#,
        );
        assert_eq!(wrapped.get("source->target.tasks.max"), Some("2"));
        assert_eq!(bare.get("source->target.tasks.max"), Some("2"));
        assert_eq!(
            wrapped.written_as("source->target.groups"),
            "config[\"groups\"]"
        );
        assert_eq!(bare.written_as("source->target.groups"), "\"groups\"");
    }

    #[test]
    fn another_connector_class_is_refused_naming_the_key() {
        let e = read(
            "connector.class = org.apache.kafka.connect.mirror.MirrorSourceConnector\n",
            ConfigFormat::Connector,
        )
        .err()
        .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(e.key(), Some("connector.class"));
        assert_eq!(e.line(), Some(1));
        assert!(e.message().contains("MirrorSourceConnector"), "{e}");
    }

    #[test]
    fn a_connector_config_without_its_class_is_read_when_chosen_or_json() {
        let (p, connector) =
            read("groups = g\n", ConfigFormat::Connector).unwrap_or_else(|e| panic!("{e}"));
        assert!(connector);
        assert_eq!(p.get("source->target.groups"), Some("g"));
        let p = self::connector(r#"{"groups": "g"}"#);
        assert_eq!(p.get("source->target.groups"), Some("g"));
        // Auto-detected properties need the class: this is an mm2.properties.
        let (_, connector) =
            read("groups = g\n", ConfigFormat::Auto).unwrap_or_else(|e| panic!("{e}"));
        assert!(!connector);
    }

    #[test]
    fn msk_connects_connector_configuration_object_is_read() {
        let p = connector(
            r#"{"connectorName": "cp", "connectorConfiguration": {
                "connector.class": "MirrorCheckpointConnector", "groups": "g"}}"#,
        );
        assert_eq!(
            p.written_as("source->target.groups"),
            "connectorConfiguration[\"groups\"]"
        );
    }

    #[test]
    fn a_non_string_json_value_is_refused_naming_the_json_key() {
        let e = read(
            r#"{"config": {"connector.class": "MirrorCheckpointConnector", "groups": ["g"]}}"#,
            ConfigFormat::Auto,
        )
        .err()
        .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(e.key(), Some("config[\"groups\"]"));
    }

    #[test]
    fn invalid_json_names_the_line_and_never_the_text() {
        let e = read("{\n\"sasl.jaas.config\": \"secret\n", ConfigFormat::Auto)
            .err()
            .unwrap_or_else(|| panic!("accepted"));
        assert!(e.line().is_some(), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
    }

    #[test]
    fn a_disabled_connector_is_refused() {
        let e = read(
            "connector.class = MirrorCheckpointConnector\nenabled = false\n",
            ConfigFormat::Auto,
        )
        .err()
        .unwrap_or_else(|| panic!("accepted"));
        assert_eq!(e.key(), Some("enabled"));
        assert_eq!(e.line(), Some(2));
    }

    #[test]
    fn config_providers_stay_at_the_top_level() {
        let p = connector(
            "connector.class = MirrorCheckpointConnector\nconfig.providers = env\n\
             config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n",
        );
        assert_eq!(p.get("config.providers"), Some("env"));
        assert!(p.get("source->target.config.providers").is_none());
    }
}
