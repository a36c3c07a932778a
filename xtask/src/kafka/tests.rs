//! Unit tests of the harness's own logic: cluster ids, reserved ports, the
//! pid check and PEM values in properties files.

use std::fs;
use std::path::Path;

use super::config::read_pem;
use super::process::is_our_broker;
use super::start::{free_ports, random_cluster_id};
use crate::procfs::is_running;

#[test]
fn cluster_ids_are_22_url_safe_base64_digits_not_starting_with_a_dash() {
    for _ in 0..100 {
        let id = random_cluster_id().expect("urandom is readable");
        assert_eq!(id.len(), 22, "{id}");
        assert!(!id.starts_with('-'), "{id}");
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "{id}"
        );
    }
}

#[test]
fn reserved_ports_are_distinct() {
    let mut ports = free_ports(10).expect("loopback ports are available");
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 10);
}

#[test]
fn a_missing_pid_is_neither_running_nor_our_broker() {
    // PIDs above the kernel maximum (4194304) never exist.
    assert!(!is_running(u32::MAX));
    assert!(!is_our_broker(u32::MAX, Path::new("/x/server.properties")));
}

#[test]
fn pem_values_become_one_properties_line() {
    let dir = std::env::temp_dir().join(format!("xtask-pem-{}", std::process::id()));
    fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("a.pem");
    fs::write(&path, "-----BEGIN X-----\nAAAA\n-----END X-----\n").expect("write");
    let value = read_pem(&path).expect("read");
    fs::remove_dir_all(&dir).ok();
    assert_eq!(value, "-----BEGIN X-----\\nAAAA\\n-----END X-----");
}
