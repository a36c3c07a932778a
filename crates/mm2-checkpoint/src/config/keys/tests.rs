//! The key table against its users: docs/configuration.md's tables, the
//! reader's defaults and parsers, `validate`'s rows and the unknown-key check.

use super::*;
use crate::config::providers::tests::FakeEnvironment;
use crate::config::{ConfigError, MirrorConfig, Properties, known_keys};

const BASE: &str = "clusters = A, B\nA.bootstrap.servers = a:9092\n\
                    B.bootstrap.servers = b:9092\nA->B.enabled = true\n";

fn load(extra: &str) -> Result<MirrorConfig, ConfigError> {
    let props = Properties::parse(&format!("{BASE}{extra}"))?;
    MirrorConfig::from_properties(&props, &FakeEnvironment::default())
}

/// The key as a test file writes it: per flow on `A->B`, else at the top.
fn written(key: &Key) -> String {
    match key.scope {
        Scope::Flow => format!("A->B.{}", key.name),
        Scope::Process => key.name.to_string(),
    }
}

/// The row docs/configuration.md has for `key`, up to the notes, which are
/// prose (`ours` first for our keys, checked separately).
fn docs_row(key: &Key) -> String {
    format!(
        "| `{}` | {} | {} |",
        key.name,
        key.default.describe(),
        key.accepted.describe()
    )
}

/// The rows of every table of docs/configuration.md whose header is the key
/// tables' one, table by table, each row as the cells before the notes and
/// whether the notes say the key is ours.
fn docs_tables() -> Vec<Vec<(String, bool)>> {
    let docs = include_str!("../../../../../docs/configuration.md");
    let mut tables = Vec::new();
    let mut lines = docs.lines();
    while let Some(line) = lines.next() {
        if line != "| key | default | accepted values | notes |" {
            continue;
        }
        lines.next(); // the |---| line
        let mut rows = Vec::new();
        for row in lines.by_ref().take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 4, "a key table row with four cells: {row}");
            rows.push((
                format!("| {} | {} | {} |", cells[0], cells[1], cells[2]),
                cells[3].starts_with("ours"),
            ));
        }
        tables.push(rows);
    }
    tables
}

#[test]
fn the_docs_tables_are_the_key_table() {
    let tables = docs_tables();
    assert_eq!(
        tables.len(),
        2,
        "the per-flow and the process-wide key tables"
    );
    for (scope, docs) in [Scope::Flow, Scope::Process].into_iter().zip(tables) {
        let expected: Vec<(String, bool)> = ALL
            .iter()
            .filter(|k| k.scope == scope)
            .map(|k| (docs_row(k), k.owner == Owner::Ours))
            .collect();
        let text = |rows: &[(String, bool)]| {
            rows.iter()
                .map(|(row, ours)| format!("{row} {}", if *ours { "ours…" } else { "…" }))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(
            text(&docs),
            text(&expected),
            "docs/configuration.md's {scope:?} key table must list the keys of config/keys.rs \
             in its order, with its defaults and accepted values, and notes starting with \
             `ours` exactly for our keys"
        );
    }
}

#[test]
fn names_are_unique_and_docs_are_one_line() {
    for (i, key) in ALL.iter().enumerate() {
        assert!(
            ALL[..i].iter().all(|k| k.name != key.name),
            "{} twice",
            key.name
        );
        assert!(
            !key.doc.is_empty() && !key.doc.contains('\n'),
            "{}",
            key.name
        );
        assert_eq!(
            key.owner == Owner::Ours,
            key.name.starts_with("mm2-checkpoint."),
            "{}: our keys, and only they, are named mm2-checkpoint.*",
            key.name
        );
    }
}

#[test]
fn validate_shows_every_default_as_the_table_states_it() {
    let config = load("").expect("accepted");
    let plain = crate::config::render_effective_settings(&config);
    // The other membership keys show their values only with membership on.
    let members = load(&format!("{} = true\n", MEMBERSHIP_ENABLED.name)).expect("accepted");
    let members = crate::config::render_effective_settings(&members);
    for key in ALL {
        let Some(default) = key.default_value() else {
            continue;
        };
        let text = match key.name.strip_prefix("mm2-checkpoint.membership.") {
            Some(rest) if rest != "enabled" => &members,
            _ => &plain,
        };
        match key.shown {
            Shown::Flow(_) => {
                let row = format!("  {} = ", key.name);
                let line = text
                    .lines()
                    .find(|l| l.starts_with(&row))
                    .unwrap_or_else(|| panic!("no row for {}:\n{text}", key.name));
                let value = line[row.len()..]
                    .strip_suffix("    # default")
                    .unwrap_or_else(|| panic!("{line}: not from the default"));
                assert!(
                    value == default
                        || value == format!("{default:?}")
                        || value.starts_with(&format!("{default} (")),
                    "{}: shows {value}, the table says {default}",
                    key.name
                );
            }
            Shown::Process(_) => {
                assert!(
                    text.lines()
                        .any(|l| l == format!("{} = {default}", key.name)),
                    "{}:\n{text}",
                    key.name
                );
            }
            Shown::FlowDerived(..) | Shown::Not => {}
        }
    }
    assert!(
        plain.contains("  internal topic separator = \".\"\n"),
        "{plain}"
    );
    let flow = &config.flows[0];
    assert_eq!(
        flow.translation_max_syncs.to_string(),
        TRANSLATION_MAX_SYNCS.default_value().unwrap_or_default()
    );
    assert_eq!(
        crate::config::DEFAULT_TRANSLATION_MAX_SYNCS,
        flow.translation_max_syncs
    );
}

#[test]
fn validate_shows_the_keys_in_the_table_order() {
    let config = load("").expect("accepted");
    let text = crate::config::render_effective_settings(&config);
    let mut shown = Vec::new();
    for line in text.lines() {
        if let Some((name, _)) = line.trim_start().split_once(" = ")
            && ALL.iter().any(|k| k.name == name)
        {
            shown.push(name);
        }
    }
    // The process-wide rows come first, then the flow's, each in the
    // table's order.
    let in_table = |scope: Scope, shown: fn(&Shown) -> bool| -> Vec<&str> {
        ALL.iter()
            .filter(|k| k.scope == scope && shown(&k.shown))
            .map(|k| k.name)
            .collect()
    };
    let mut expected = in_table(Scope::Process, |s| matches!(s, Shown::Process(_)));
    expected.extend(in_table(Scope::Flow, |s| matches!(s, Shown::Flow(_))));
    assert_eq!(shown, expected, "{text}");
}

#[test]
fn each_key_is_parsed_as_its_accepted_values_say() {
    // The internal-separator flag is read only beside a separator, and
    // content search only with precise translation.
    let with_separator = "replication.policy.separator = .\n";
    let with_precise = format!("{with_separator}{} = precise\n", OFFSET_TRANSLATION.name);
    for key in ALL {
        let at = written(key);
        let rejected = |value: &str, mentions: &[String]| {
            let e = load(&format!("{with_separator}{at} = {value}\n"))
                .expect_err(&format!("{at} = {value} is rejected"));
            assert_eq!(e.key(), Some(at.as_str()), "{e}");
            for m in mentions {
                assert!(e.to_string().contains(m.as_str()), "{at}: {e} lacks {m}");
            }
        };
        match key.accepted {
            Accepted::Boolean => {
                rejected("yes", &["is not a boolean".to_string()]);
                if key.name != EMIT_CHECKPOINTS_ENABLED.name {
                    load(&format!("{with_precise}{at} = TRUE\n"))
                        .unwrap_or_else(|e| panic!("{at} = TRUE: {e}"));
                }
            }
            Accepted::Positive => {
                rejected("0", &["must be at least 1".to_string()]);
                rejected("x", &["is not an integer".to_string()]);
            }
            Accepted::Integer => rejected("x", &["is not an integer".to_string()]),
            Accepted::Words(words) => {
                let words = words();
                rejected(
                    "nope",
                    &words.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>(),
                );
                for word in words {
                    load(&format!("{at} = {word}\n"))
                        .unwrap_or_else(|e| panic!("{at} = {word}: {e}"));
                }
            }
            Accepted::Described(_) => {}
        }
    }
}

#[test]
fn the_unknown_key_check_knows_every_key_where_it_is_read() {
    let clusters = vec!["A".to_string(), "B".to_string()];
    let mut keys: Vec<String> = ALL.iter().map(|k| k.name.to_string()).collect();
    keys.extend(
        ALL.iter()
            .filter(|k| k.scope == Scope::Flow)
            .map(|k| format!("A->B.{}", k.name)),
    );
    let unknown = known_keys::unknown_keys(keys.iter().map(String::as_str), &clusters);
    assert!(unknown.is_empty(), "{unknown:?}");
    // A process-wide key is not read per flow, and a typo of ours is offered
    // the table's spelling.
    let per_flow = format!("A->B.{}", LATENCY_GRANULARITY.name);
    let typo = "mm2-checkpoint.membership.enabeld";
    let unknown = known_keys::unknown_keys([per_flow.as_str(), typo], &clusters);
    assert_eq!(unknown.len(), 2, "{unknown:?}");
    assert_eq!(
        unknown[1].suggestion.as_deref(),
        Some(MEMBERSHIP_ENABLED.name)
    );
}
