//! Tests of the request machinery over an in-memory stream, with the test
//! playing the broker's side of the wire by hand.

use super::*;
use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, MetadataResponse, OffsetFetchRequest, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Encodable, HeaderVersion, decode_request_header_from_buffer};
use tokio::io::{AsyncReadExt, DuplexStream};

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

/// The broker's side: a complete response frame.
fn response_frame<T: Encodable + HeaderVersion>(
    correlation_id: i32,
    response: &T,
    version: i16,
) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, T::header_version(version))
        .unwrap();
    response.encode(&mut buf, version).unwrap();
    let len = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&len.to_be_bytes());
    buf.to_vec()
}

fn metadata_response(throttle: i32) -> MetadataResponse {
    MetadataResponse::default().with_throttle_time_ms(throttle)
}

#[tokio::test]
async fn pipelined_responses_reach_their_callers_even_out_of_order() {
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let conn = BrokerConnection::with_versions(
        client,
        &config(Duration::from_secs(10)),
        metadata_versions(),
    );

    let first = tokio::spawn({
        let conn = conn.clone();
        async move { conn.send(MetadataRequest::default()).await }
    });
    let a = read_request(&mut peer).await;
    let second = tokio::spawn({
        let conn = conn.clone();
        async move { conn.send(MetadataRequest::default()).await }
    });
    let b = read_request(&mut peer).await;
    assert_eq!(
        a.request_api_version, 12,
        "negotiated the highest common version"
    );
    assert_ne!(a.correlation_id, b.correlation_id);

    // Answer the second request first; tag each answer with its correlation id.
    peer.write_all(&response_frame(
        b.correlation_id,
        &metadata_response(b.correlation_id),
        12,
    ))
    .await
    .unwrap();
    peer.write_all(&response_frame(
        a.correlation_id,
        &metadata_response(a.correlation_id),
        12,
    ))
    .await
    .unwrap();

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
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let conn = BrokerConnection::with_versions(
        client,
        &config(Duration::from_secs(10)),
        metadata_versions(),
    );
    let requests: Vec<_> = (0..3)
        .map(|_| {
            let conn = conn.clone();
            tokio::spawn(async move { conn.send(MetadataRequest::default()).await })
        })
        .collect();
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
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let conn = BrokerConnection::with_versions(
        client,
        &config(Duration::from_millis(200)),
        metadata_versions(),
    );

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

    let next = tokio::spawn({
        let conn = conn.clone();
        async move { conn.send(MetadataRequest::default()).await }
    });
    let current = read_request(&mut peer).await;
    peer.write_all(&response_frame(
        late.correlation_id,
        &metadata_response(1),
        12,
    ))
    .await
    .unwrap();
    peer.write_all(&response_frame(
        current.correlation_id,
        &metadata_response(2),
        12,
    ))
    .await
    .unwrap();
    assert_eq!(next.await.unwrap().unwrap().throttle_time_ms, 2);
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn oversized_frame_closes_the_connection_naming_the_limit() {
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let conn = BrokerConnection::with_versions(
        client,
        &config(Duration::from_secs(10)),
        metadata_versions(),
    );
    let request = tokio::spawn({
        let conn = conn.clone();
        async move { conn.send(MetadataRequest::default()).await }
    });
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
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let conn = BrokerConnection::with_versions(
        client,
        &config(Duration::from_secs(10)),
        metadata_versions(),
    );
    let request = tokio::spawn({
        let conn = conn.clone();
        async move { conn.send(MetadataRequest::default()).await }
    });
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
    let (client, mut peer) = tokio::io::duplex(64 * 1024);
    let conn = BrokerConnection::with_versions(
        client,
        &config(Duration::from_secs(10)),
        metadata_versions(),
    );
    let request = tokio::spawn({
        let conn = conn.clone();
        async move { conn.send(MetadataRequest::default()).await }
    });
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
