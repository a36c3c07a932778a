//! The test harness itself: the cluster file is readable and every listener
//! of every real cluster accepts connections. Fails when no clusters run.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use e2e::{Listener, clusters};

#[test]
fn every_listener_of_every_cluster_accepts_tcp_connections() {
    let clusters = clusters();
    let mut checked = 0;
    for cluster in clusters.all() {
        for listener in Listener::ALL {
            let addr = cluster.bootstrap.get(listener);
            let sock: SocketAddr = addr.parse().unwrap_or_else(|e| {
                panic!("{} {listener}: bad address {addr:?}: {e}", cluster.name)
            });
            if let Err(e) = TcpStream::connect_timeout(&sock, Duration::from_secs(5)) {
                panic!(
                    "{} {listener} listener {addr} refused a connection: {e} (broker log: {})",
                    cluster.name,
                    cluster.log_file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(
        checked >= 2 * Listener::ALL.len(),
        "expected at least the source and target clusters x {} listeners",
        Listener::ALL.len()
    );
    assert_eq!(checked, clusters.clusters.len() * Listener::ALL.len());
}

#[test]
fn cluster_file_names_the_cached_kafka_tools() {
    let clusters = clusters();
    for tool in [
        "kafka-console-consumer",
        "kafka-consumer-groups",
        "kafka-topics",
    ] {
        let path = clusters.tool(tool);
        assert!(path.is_file(), "{} is missing", path.display());
    }
    assert!(clusters.kafka_run_class.is_file());
}
