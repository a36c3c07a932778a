//! `crates/mm2-checkpoint/src/config/kafka-4.1.1-keys.txt`, the key names
//! `validate` knows MirrorMaker 2 reads, must be exactly what Kafka's own
//! configuration definitions declare:
//! `tests/java/ConfigKeys.java` prints them from the cached Kafka jars.
//! `MM2_UPDATE_KNOWN_KEYS=1` rewrites the file instead of comparing.

use std::path::Path;

use e2e::java::helpers;

#[test]
fn the_known_key_list_is_the_one_kafka_declares() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/mm2-checkpoint/src/config/kafka-4.1.1-keys.txt");
    let checked_in = std::fs::read_to_string(&file).expect("read the key list");
    let header: String = checked_in
        .lines()
        .take_while(|l| l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let from_kafka = helpers().run("ConfigKeys", &[]).expect("run ConfigKeys");
    if std::env::var_os("MM2_UPDATE_KNOWN_KEYS").is_some() {
        std::fs::write(&file, format!("{header}{from_kafka}")).expect("rewrite the key list");
        return;
    }
    let listed = &checked_in[header.len()..];
    let ours: Vec<&str> = listed.lines().collect();
    let kafkas: Vec<&str> = from_kafka.lines().collect();
    let missing: Vec<&&str> = kafkas.iter().filter(|k| !ours.contains(k)).collect();
    let extra: Vec<&&str> = ours.iter().filter(|k| !kafkas.contains(k)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{} is out of date (rerun with MM2_UPDATE_KNOWN_KEYS=1): missing {missing:?}, \
         not declared by Kafka {extra:?}",
        file.display()
    );
    assert_eq!(listed, from_kafka, "same keys, different order");
}
