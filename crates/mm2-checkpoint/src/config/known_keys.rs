//! Which keys of an `mm2.properties` file MirrorMaker 2 would read at all, so a
//! key nobody reads (a typo, a key of another tool) is reported instead of being
//! silently ignored.
//!
//! The key names are Kafka 4.1.1's own: `kafka-4.1.1-keys.txt` lists every name
//! of the configuration definitions involved (MirrorMakerConfig, the three
//! MirrorMaker connectors, MirrorClientConfig's client keys, the producer,
//! consumer and admin clients, and the Connect worker), generated from Kafka's
//! jars by `tests/java/ConfigKeys.java` and checked by `tests/known_keys.rs`.
//! The shapes follow how `MirrorMakerConfig` reads the file
//! (docs/configuration.md, "Keys that nothing reads"):
//!
//! * top level: MirrorMakerConfig's own keys, connector keys, client keys, and
//!   the prefixes MM2 copies wholesale (`config.providers`, `replication.policy`,
//!   the worker's `offset.storage`, `config.storage`, `status.storage`,
//!   `key.converter`, `value.converter`, `header.converter`, `task`, `worker`);
//! * `<alias>.<k>`: a client or worker key, or `consumer.`/`producer.`/`admin.`
//!   followed by a key of that client;
//! * `<S>-><T>.<k>`: a connector key, or `source.`/`target.` followed by
//!   `cluster.<client key>` or a client role and one of its keys.
//!
//! A key that fits several shapes (an alias named like a key's first word) is
//! known if any of them fits, as MM2 reads it in all of them. Our own keys
//! come from the key table (`keys.rs`): per-flow ones in the shapes of
//! connector keys, process-wide ones at the top level only.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use super::keys::{self, Scope};

/// The generated list of Kafka 4.1.1's key names.
const KAFKA_KEYS: &str = include_str!("kafka-4.1.1-keys.txt");

/// Key prefixes MM2 copies from the top level of the file as they are
/// (`stringsWithPrefix`: a plain string prefix, no dot required).
const TOP_LEVEL_PREFIXES: &[&str] = &[
    "config.providers",
    "replication.policy",
    "offset.storage",
    "config.storage",
    "status.storage",
    "key.converter",
    "value.converter",
    "header.converter",
    "task",
    "worker",
];

/// Connector key prefixes whose rest is free-form (transformation, predicate
/// and client-override settings of Kafka Connect).
const CONNECTOR_PREFIXES: &[&str] = &[
    "transforms.",
    "predicates.",
    "producer.override.",
    "consumer.override.",
    "admin.override.",
];

/// Connector keys that MirrorMaker 2 reads since a Kafka release after 4.1.1,
/// whose key list [`KAFKA_KEYS`] is: a file shared with a newer MM2 may set
/// them. `metric.names.formats` (Kafka 4.3, KIP-1280) chooses the names of
/// MM2's own metrics; ours follow `mm2-checkpoint.metrics.mm2.names.formats`
/// (docs/operations.md, "MirrorMaker 2's names").
const LATER_CONNECTOR_KEYS: &[&str] = &["metric.names.formats"];

/// Key names by the definition that declares them.
struct KafkaKeys {
    mirror_maker: BTreeSet<&'static str>,
    connector: BTreeSet<&'static str>,
    client: BTreeSet<&'static str>,
    producer: BTreeSet<&'static str>,
    consumer: BTreeSet<&'static str>,
    admin: BTreeSet<&'static str>,
    worker: BTreeSet<&'static str>,
}

fn kafka_keys() -> &'static KafkaKeys {
    static KEYS: OnceLock<KafkaKeys> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = KafkaKeys {
            mirror_maker: BTreeSet::new(),
            connector: BTreeSet::new(),
            client: BTreeSet::new(),
            producer: BTreeSet::new(),
            consumer: BTreeSet::new(),
            admin: BTreeSet::new(),
            worker: BTreeSet::new(),
        };
        for line in KAFKA_KEYS.lines().filter(|l| !l.starts_with('#')) {
            let Some((definition, key)) = line.split_once(' ') else {
                continue;
            };
            let set = match definition {
                "mirror-maker" => &mut keys.mirror_maker,
                "checkpoint-connector" | "source-connector" | "heartbeat-connector" => {
                    &mut keys.connector
                }
                "client" => &mut keys.client,
                "producer" => &mut keys.producer,
                "consumer" => &mut keys.consumer,
                "admin" => &mut keys.admin,
                "worker" => &mut keys.worker,
                _ => continue,
            };
            set.insert(key);
        }
        keys
    })
}

impl KafkaKeys {
    /// The keys of client role `role` (`consumer`, `producer`, `admin`).
    fn of_role(&self, role: &str) -> Option<&BTreeSet<&'static str>> {
        match role {
            "consumer" => Some(&self.consumer),
            "producer" => Some(&self.producer),
            "admin" => Some(&self.admin),
            _ => None,
        }
    }

    fn is_any_client_key(&self, key: &str) -> bool {
        [&self.client, &self.producer, &self.consumer, &self.admin]
            .iter()
            .any(|s| s.contains(key))
    }

    /// `consumer.<k>`, `producer.<k>` or `admin.<k>` with `k` a key of that client.
    fn is_role_key(&self, key: &str) -> bool {
        key.split_once('.')
            .is_some_and(|(role, rest)| self.of_role(role).is_some_and(|keys| keys.contains(rest)))
    }

    fn is_connector_key(&self, key: &str) -> bool {
        self.connector.contains(key)
            || LATER_CONNECTOR_KEYS.contains(&key)
            || keys::ours(Scope::Flow).any(|k| k == key)
            || CONNECTOR_PREFIXES.iter().any(|p| key.starts_with(p))
    }

    fn is_top_level(&self, key: &str) -> bool {
        self.mirror_maker.contains(key)
            || keys::ours(Scope::Process).any(|k| k == key)
            || self.is_connector_key(key)
            || self.client.contains(key)
            || self.is_role_key(key)
            || TOP_LEVEL_PREFIXES.iter().any(|p| key.starts_with(p))
    }

    fn is_cluster_level(&self, rest: &str) -> bool {
        self.is_any_client_key(rest)
            || self.worker.contains(rest)
            || self.is_role_key(rest)
            || rest.starts_with("config.providers")
    }

    fn is_flow_level(&self, rest: &str) -> bool {
        if self.is_connector_key(rest) {
            return true;
        }
        let Some(side) = rest
            .strip_prefix("source.")
            .or_else(|| rest.strip_prefix("target."))
        else {
            return false;
        };
        side.strip_prefix("cluster.")
            .is_some_and(|k| self.is_any_client_key(k))
            || self.is_role_key(side)
    }
}

pub use super::settings::UnknownKey;

/// Every key of `keys` (in file order) that neither MirrorMaker 2 4.1 nor
/// mm2-checkpoint reads, given the cluster aliases of `clusters`.
pub fn unknown_keys<'k>(
    keys: impl IntoIterator<Item = &'k str>,
    clusters: &[String],
) -> Vec<UnknownKey> {
    let known = kafka_keys();
    let flows: Vec<String> = clusters
        .iter()
        .flat_map(|s| {
            clusters
                .iter()
                .filter(move |t| *t != s)
                .map(move |t| format!("{s}->{t}."))
        })
        .collect();
    let mut out = Vec::new();
    for key in keys {
        let top = known.is_top_level(key);
        let cluster = clusters.iter().any(|alias| {
            key.strip_prefix(alias.as_str())
                .and_then(|r| r.strip_prefix('.'))
                .is_some_and(|rest| known.is_cluster_level(rest))
        });
        let flow = flows.iter().any(|prefix| {
            key.strip_prefix(prefix.as_str())
                .is_some_and(|rest| known.is_flow_level(rest))
        });
        if top || cluster || flow {
            continue;
        }
        out.push(describe(known, key, clusters, &flows));
    }
    out
}

/// The suggestion or note for an unknown `key`.
fn describe(known: &KafkaKeys, key: &str, clusters: &[String], flows: &[String]) -> UnknownKey {
    let unknown = |suggestion: Option<String>, note: Option<&'static str>| UnknownKey {
        key: key.to_owned(),
        suggestion,
        note,
    };
    // The filters' deprecated names, read by MM2 3.x, were removed in 4.0.
    for (old, new) in [
        ("topics.blacklist", "topics.exclude"),
        ("groups.blacklist", "groups.exclude"),
    ] {
        if let Some(prefix) = key.strip_suffix(old)
            && (prefix.is_empty() || flows.iter().any(|f| f == prefix))
        {
            return unknown(
                Some(format!("{prefix}{new}")),
                Some("removed in Kafka 4.0; MirrorMaker 2 4.x ignores it too"),
            );
        }
    }
    // A connector key under a cluster prefix is read by no one: MM2 passes it to
    // the connector as `source.cluster.<k>`, which the connector ignores.
    for alias in clusters {
        if let Some(rest) = key
            .strip_prefix(alias.as_str())
            .and_then(|r| r.strip_prefix('.'))
            && known.connector.contains(rest)
        {
            return unknown(
                None,
                Some(
                    "a connector key under a cluster alias is not read; set it at the top \
                     level or as `<source>-><target>.<key>`",
                ),
            );
        }
    }
    let mut candidates: Vec<String> = Vec::new();
    let mut add = |prefix: &str, names: &BTreeSet<&'static str>| {
        candidates.extend(names.iter().map(|n| format!("{prefix}{n}")));
    };
    let own: BTreeSet<&'static str> = keys::ours(Scope::Flow).collect();
    if let Some(prefix) = flows.iter().find(|p| key.starts_with(p.as_str())) {
        add(prefix, &known.connector);
        add(prefix, &own);
    } else if let Some(alias) = clusters.iter().find(|a| key.starts_with(&format!("{a}."))) {
        let prefix = format!("{alias}.");
        for set in [
            &known.client,
            &known.producer,
            &known.consumer,
            &known.admin,
        ] {
            add(&prefix, set);
        }
        add(&prefix, &known.worker);
        for role in ["consumer", "producer", "admin"] {
            if let Some(keys) = known.of_role(role) {
                add(&format!("{prefix}{role}."), keys);
            }
        }
    } else if key.contains("->") {
        // An unknown flow: offer the same key on a flow of `clusters`.
        let rest = key.split_once('.').map_or("", |(_, r)| r);
        candidates.extend(flows.iter().map(|p| format!("{p}{rest}")));
    } else {
        add("", &known.mirror_maker);
        add("", &known.connector);
        add("", &own);
        add("", &keys::ours(Scope::Process).collect());
        add("", &known.client);
    }
    unknown(closest(key, &candidates), None)
}

/// The candidate nearest to `key` by edit distance, if near enough to be a typo:
/// at most 3 edits and fewer than a third of the key's length.
fn closest(key: &str, candidates: &[String]) -> Option<String> {
    let limit = 3.min(key.chars().count().saturating_sub(1) / 3);
    candidates
        .iter()
        .map(|c| (edit_distance(key, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c.clone())
}

/// Levenshtein distance between `a` and `b`, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clusters() -> Vec<String> {
        vec!["A".into(), "B".into()]
    }

    fn unknown(keys: &[&str]) -> Vec<UnknownKey> {
        unknown_keys(keys.iter().copied(), &clusters())
    }

    #[test]
    fn keys_mm2_reads_are_known_in_every_shape() {
        let keys = [
            "clusters",
            "config.providers",
            "config.providers.file.class",
            "emit.checkpoints.interval.seconds",
            "replication.policy.separator",
            "replication.policy.custom.thing",
            "tasks.max",
            "offset.storage.replication.factor",
            "security.protocol",
            "sasl.jaas.config",
            "consumer.max.poll.records",
            "dedicated.mode.enable.internal.rest",
            "A.bootstrap.servers",
            "A.ssl.truststore.location",
            "A.consumer.max.poll.records",
            "A.admin.sasl.jaas.config",
            "B.producer.acks",
            "B.offset.storage.replication.factor",
            "A->B.enabled",
            "A->B.emit.checkpoints.interval.seconds",
            "A->B.sync.group.offsets.enabled",
            "A->B.source.cluster.alias",
            "A->B.source.cluster.bootstrap.servers",
            "A->B.source.admin.request.timeout.ms",
            "A->B.target.producer.acks",
            "A->B.transforms.rename.type",
            "B->A.emit.heartbeats.enabled",
        ];
        assert_eq!(unknown(&keys), vec![]);
    }

    #[test]
    fn typos_get_the_closest_key_of_their_shape() {
        let got = unknown(&[
            "A->B.emit.checkpoint.interval.seconds",
            "emit.checkpoint.interval.seconds",
            "A.bootstrap.server",
            "A.consumer.max.pol.records",
            "A->C.emit.checkpoints.interval.seconds",
            "totally.unknown.key",
        ]);
        let suggestions: Vec<(&str, Option<&str>)> = got
            .iter()
            .map(|u| (u.key.as_str(), u.suggestion.as_deref()))
            .collect();
        assert_eq!(
            suggestions,
            [
                (
                    "A->B.emit.checkpoint.interval.seconds",
                    Some("A->B.emit.checkpoints.interval.seconds")
                ),
                (
                    "emit.checkpoint.interval.seconds",
                    Some("emit.checkpoints.interval.seconds")
                ),
                ("A.bootstrap.server", Some("A.bootstrap.servers")),
                (
                    "A.consumer.max.pol.records",
                    Some("A.consumer.max.poll.records")
                ),
                (
                    "A->C.emit.checkpoints.interval.seconds",
                    Some("A->B.emit.checkpoints.interval.seconds")
                ),
                ("totally.unknown.key", None),
            ]
        );
    }

    #[test]
    fn a_connector_key_under_a_cluster_alias_is_reported_with_a_note() {
        let got = unknown(&["A.emit.checkpoints.interval.seconds"]);
        assert_eq!(got.len(), 1);
        assert!(
            got[0]
                .note
                .is_some_and(|n| n.contains("<source>-><target>"))
        );
    }

    #[test]
    fn an_alias_named_like_a_key_prefix_reads_both_ways() {
        let clusters = vec!["source".to_string(), "target".to_string()];
        let keys = ["source.cluster.alias", "source.bootstrap.servers"];
        assert_eq!(unknown_keys(keys, &clusters), vec![]);
    }

    #[test]
    fn edit_distance_counts_characters() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", "abc"), 0);
        assert_eq!(edit_distance("abc", "abd"), 1);
        assert_eq!(edit_distance("abc", "ab"), 1);
        assert_eq!(edit_distance("é", "e"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn the_generated_list_has_every_definition() {
        let k = kafka_keys();
        for (name, set) in [
            ("mirror-maker", &k.mirror_maker),
            ("connector", &k.connector),
            ("client", &k.client),
            ("producer", &k.producer),
            ("consumer", &k.consumer),
            ("admin", &k.admin),
            ("worker", &k.worker),
        ] {
            assert!(set.len() > 50, "{name}: only {} keys", set.len());
        }
        assert!(k.connector.contains("emit.checkpoints.interval.seconds"));
    }
}
