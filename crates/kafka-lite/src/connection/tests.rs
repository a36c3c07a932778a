//! Tests of the request machinery over an in-memory stream, with the test
//! playing the broker's side of the wire by hand.

use super::*;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, MetadataResponse, OffsetFetchRequest, RequestHeader,
};
use kafka_protocol::protocol::decode_request_header_from_buffer;
use tokio::io::{AsyncReadExt, DuplexStream};
use tokio::task::JoinHandle;

/// The response framing the integration tests' fake broker uses too (there
/// the helper is public, hence the `allow`).
#[allow(unreachable_pub)]
#[path = "../../tests/fake_broker/frames.rs"]
mod frames;
use frames::response_frame;

fn config(request_timeout: Duration) -> ConnectionConfig {
    ConnectionConfig {
        request_timeout,
        max_frame_bytes: 1024 * 1024,
        ..ConnectionConfig::default()
    }
}

fn metadata_versions() -> HashMap<i16, VersionRange> {
    HashMap::from([(MetadataRequest::KEY, VersionRange { min: 0, max: 12 })])
}

/// The broker's side: reads one request frame.
async fn read_request(peer: &mut DuplexStream) -> RequestHeader {
    let frame = frame::read_frame(peer, 1 << 20).await.unwrap().unwrap();
    let mut frame = frame;
    decode_request_header_from_buffer(&mut frame).unwrap()
}

fn metadata_response(throttle: i32) -> MetadataResponse {
    MetadataResponse::default().with_throttle_time_ms(throttle)
}

/// A connection that may send Metadata v0-v12 with `request_timeout`, and
/// the broker's end of its stream.
fn metadata_connection(request_timeout: Duration) -> (BrokerConnection, DuplexStream) {
    let (client, peer) = tokio::io::duplex(64 * 1024);
    let conn =
        BrokerConnection::with_versions(client, &config(request_timeout), metadata_versions());
    (conn, peer)
}

/// Sends a Metadata request from a task of its own.
fn spawn_metadata(conn: &BrokerConnection) -> JoinHandle<Result<MetadataResponse, Error>> {
    let conn = conn.clone();
    tokio::spawn(async move { conn.send(MetadataRequest::default()).await })
}

/// The broker's side: answers request `correlation_id` with a v12 Metadata
/// response tagged with `throttle`.
async fn answer_metadata(peer: &mut DuplexStream, correlation_id: i32, throttle: i32) {
    peer.write_all(&response_frame(
        correlation_id,
        &metadata_response(throttle),
        12,
    ))
    .await
    .unwrap();
}

#[tokio::test]
async fn pipelined_responses_reach_their_callers_even_out_of_order() {
    let (conn, mut peer) = metadata_connection(Duration::from_secs(10));

    let first = spawn_metadata(&conn);
    let a = read_request(&mut peer).await;
    let second = spawn_metadata(&conn);
    let b = read_request(&mut peer).await;
    assert_eq!(
        a.request_api_version, 12,
        "negotiated the highest common version"
    );
    assert_ne!(a.correlation_id, b.correlation_id);

    // Answer the second request first; tag each answer with its correlation id.
    answer_metadata(&mut peer, b.correlation_id, b.correlation_id).await;
    answer_metadata(&mut peer, a.correlation_id, a.correlation_id).await;

    assert_eq!(
        first.await.unwrap().unwrap().throttle_time_ms,
        a.correlation_id
    );
    assert_eq!(
        second.await.unwrap().unwrap().throttle_time_ms,
        b.correlation_id
    );
}

#[tokio::test]
async fn broken_stream_fails_every_in_flight_request_as_retriable() {
    let (conn, mut peer) = metadata_connection(Duration::from_secs(10));
    let requests: Vec<_> = (0..3).map(|_| spawn_metadata(&conn)).collect();
    for _ in 0..3 {
        read_request(&mut peer).await;
    }
    drop(peer);
    for request in requests {
        let err = request.await.unwrap().unwrap_err();
        assert!(matches!(err, Error::ConnectionClosed { .. }), "{err}");
        assert!(err.is_retriable());
    }
    assert!(conn.is_closed());
    let err = conn.send(MetadataRequest::default()).await.unwrap_err();
    assert!(
        matches!(err, Error::ConnectionClosed { .. }),
        "later requests fail fast: {err}"
    );
}

#[tokio::test]
async fn timed_out_request_frees_its_slot_and_its_late_response_is_dropped() {
    let (conn, mut peer) = metadata_connection(Duration::from_millis(200));

    let err = conn.send(MetadataRequest::default()).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::RequestTimeout {
                api: "Metadata",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.is_retriable());
    let late = read_request(&mut peer).await;
    assert!(
        conn.inner.shared.lock().waiters.is_empty(),
        "slot removed on timeout"
    );

    let next = spawn_metadata(&conn);
    let current = read_request(&mut peer).await;
    answer_metadata(&mut peer, late.correlation_id, 1).await;
    answer_metadata(&mut peer, current.correlation_id, 2).await;
    assert_eq!(next.await.unwrap().unwrap().throttle_time_ms, 2);
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn oversized_frame_closes_the_connection_naming_the_limit() {
    let (conn, mut peer) = metadata_connection(Duration::from_secs(10));
    let request = spawn_metadata(&conn);
    read_request(&mut peer).await;
    peer.write_all(&(1i32 << 30).to_be_bytes()).await.unwrap();
    let err = request.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::FrameTooLarge { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("1073741824 bytes; the limit is 1048576"),
        "{err}"
    );
}

#[tokio::test]
async fn undecodable_response_is_malformed_naming_api_and_version() {
    let (conn, mut peer) = metadata_connection(Duration::from_secs(10));
    let request = spawn_metadata(&conn);
    let header = read_request(&mut peer).await;
    // Correlation id, empty tagged fields, then a truncated body.
    let mut frame = Vec::new();
    frame.extend_from_slice(&7i32.to_be_bytes());
    frame.extend_from_slice(&header.correlation_id.to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0]);
    peer.write_all(&frame).await.unwrap();
    let err = request.await.unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            Error::MalformedResponse {
                api: "Metadata",
                version: 12,
                ..
            }
        ),
        "{err}"
    );
}

#[tokio::test]
async fn no_common_version_names_the_api_and_both_ranges() {
    let (client, _peer) = tokio::io::duplex(1024);
    let versions = HashMap::from([(OffsetFetchRequest::KEY, VersionRange { min: 0, max: 0 })]);
    let conn = BrokerConnection::with_versions(client, &config(Duration::from_secs(1)), versions);
    let err = conn.version_for::<OffsetFetchRequest>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "broker test-broker:9092 and kafka-lite share no version of OffsetFetch: broker supports v0, \
         kafka-lite supports v1-v9"
    );
    let err = conn.version_for::<MetadataRequest>().unwrap_err();
    assert!(err.to_string().contains("API not offered"), "{err}");
}

#[tokio::test]
async fn api_versions_falls_back_to_the_brokers_version_on_unsupported_version() {
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let mut conn =
        BrokerConnection::start(client, "old-broker:9092", &config(Duration::from_secs(10)));
    let broker = tokio::spawn(async move {
        let first = read_request(&mut peer).await;
        assert_eq!(first.request_api_version, 4);
        // An old broker answers an unknown ApiVersions version in v0 format.
        let refusal = ApiVersionsResponse::default()
            .with_error_code(UNSUPPORTED_VERSION)
            .with_api_keys(vec![
                ApiVersion::default()
                    .with_api_key(ApiKey::ApiVersions as i16)
                    .with_min_version(0)
                    .with_max_version(3),
            ]);
        peer.write_all(&response_frame(first.correlation_id, &refusal, 0))
            .await
            .unwrap();

        let second = read_request(&mut peer).await;
        assert_eq!(second.request_api_version, 3);
        let answer = ApiVersionsResponse::default().with_api_keys(vec![
            ApiVersion::default()
                .with_api_key(ApiKey::ApiVersions as i16)
                .with_min_version(0)
                .with_max_version(3),
            ApiVersion::default()
                .with_api_key(ApiKey::OffsetFetch as i16)
                .with_min_version(0)
                .with_max_version(8),
        ]);
        peer.write_all(&response_frame(second.correlation_id, &answer, 3))
            .await
            .unwrap();
        peer
    });
    conn.negotiate_api_versions().await.unwrap();
    let _peer = broker.await.unwrap();
    assert_eq!(conn.version_for::<OffsetFetchRequest>().unwrap(), 8);
    assert_eq!(
        conn.broker_versions(ApiKey::ApiVersions as i16),
        Some(VersionRange { min: 0, max: 3 })
    );
}

#[tokio::test]
async fn cancelled_request_frees_its_slot() {
    let (conn, mut peer) = metadata_connection(Duration::from_secs(10));
    let request = spawn_metadata(&conn);
    read_request(&mut peer).await;
    request.abort();
    let _ = request.await;
    assert!(conn.inner.shared.lock().waiters.is_empty());
    let mut probe = [0u8; 1];
    // Nothing else was written: the stream holds no partial frame.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), peer.read(&mut probe))
            .await
            .is_err()
    );
}

// ---- re-authentication (KIP-368) -------------------------------------------

/// A connection that may send Metadata v12 and SASL v1 requests.
fn reauth_connection() -> (BrokerConnection, DuplexStream) {
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let (client, peer) = tokio::io::duplex(64 * 1024);
    let mut versions = metadata_versions();
    versions.insert(SaslHandshakeRequest::KEY, VersionRange { min: 1, max: 1 });
    versions.insert(
        SaslAuthenticateRequest::KEY,
        VersionRange { min: 1, max: 1 },
    );
    let conn = BrokerConnection::with_versions(client, &config(Duration::from_secs(10)), versions);
    (conn, peer)
}

/// Whether the broker's side receives a frame within `wait`.
async fn frame_arrives(peer: &mut DuplexStream, wait: Duration) -> Option<RequestHeader> {
    tokio::time::timeout(wait, read_request(peer)).await.ok()
}

#[tokio::test]
async fn reauthentication_waits_for_in_flight_requests_and_holds_new_ones_back() {
    use kafka_protocol::messages::{SaslAuthenticateResponse, SaslHandshakeResponse};
    let (conn, mut peer) = reauth_connection();
    let sasl = SaslConfig::with_password(
        crate::SaslMechanismKind::Plain,
        "alice",
        crate::Secret::new("pw"),
    );

    // A request is in flight when the session reaches its re-authentication
    // point (85-95 % of 100 ms).
    let first = spawn_metadata(&conn);
    let a = read_request(&mut peer).await;
    conn.schedule_reauthentication(sasl, Duration::from_millis(100));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Issued while re-authentication waits: held back, not written.
    let second = spawn_metadata(&conn);
    assert!(
        frame_arrives(&mut peer, Duration::from_millis(200))
            .await
            .is_none(),
        "nothing may be sent while a request is in flight and re-authentication waits"
    );

    // The in-flight request completes; then the SASL exchange, and only then
    // the held request.
    answer_metadata(&mut peer, a.correlation_id, 1).await;
    assert_eq!(first.await.unwrap().unwrap().throttle_time_ms, 1);
    let handshake = read_request(&mut peer).await;
    assert_eq!(handshake.request_api_key, ApiKey::SaslHandshake as i16);
    peer.write_all(&response_frame(
        handshake.correlation_id,
        &SaslHandshakeResponse::default(),
        1,
    ))
    .await
    .unwrap();
    let authenticate = read_request(&mut peer).await;
    assert_eq!(
        authenticate.request_api_key,
        ApiKey::SaslAuthenticate as i16
    );
    assert!(
        frame_arrives(&mut peer, Duration::from_millis(100))
            .await
            .is_none(),
        "the held request waits for the end of the exchange"
    );
    // No new lifetime: no further re-authentication.
    peer.write_all(&response_frame(
        authenticate.correlation_id,
        &SaslAuthenticateResponse::default().with_session_lifetime_ms(0),
        1,
    ))
    .await
    .unwrap();
    let b = read_request(&mut peer).await;
    assert_eq!(b.request_api_key, ApiKey::Metadata as i16);
    answer_metadata(&mut peer, b.correlation_id, 2).await;
    assert_eq!(second.await.unwrap().unwrap().throttle_time_ms, 2);
    assert_eq!(conn.reauthentications(), 1);
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn a_failed_reauthentication_closes_the_connection_as_retriable() {
    use kafka_protocol::messages::SaslHandshakeResponse;
    let (conn, mut peer) = reauth_connection();
    let sasl = SaslConfig::with_password(
        crate::SaslMechanismKind::Plain,
        "alice",
        crate::Secret::new("pw"),
    );
    conn.schedule_reauthentication(sasl, Duration::from_millis(50));
    let handshake = read_request(&mut peer).await;
    // The broker no longer enables the mechanism.
    peer.write_all(&response_frame(
        handshake.correlation_id,
        &SaslHandshakeResponse::default().with_error_code(33),
        1,
    ))
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(conn.is_closed());
    let err = conn.send(MetadataRequest::default()).await.unwrap_err();
    assert!(err.is_retriable(), "{err}");
    assert!(
        err.to_string().contains("re-authentication failed"),
        "{err}"
    );
    assert!(!err.to_string().contains("pw"), "{err}");
}
