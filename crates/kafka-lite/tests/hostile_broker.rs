//! kafka-lite against a hostile or broken broker: a scripted fake broker on
//! loopback sends truncated, oversized, mismatched, garbage, stalled,
//! trickled and reordered responses. Every case must end in a typed error
//! naming the broker (and the API where one is involved), within the
//! configured timeouts, without a panic or an unbounded allocation.

mod fake_broker;

use std::time::{Duration, Instant};

use bytes::Bytes;
use fake_broker::{
    ReceivedRequest, answer_api_versions, answer_sasl_handshake, raw_frame, read_request,
    read_sasl_authenticate, response_frame, serve, stall, write_sasl_authenticate,
};
use kafka_lite::{
    BrokerPool, Client, ConnectionConfig, Connector, Error, RetryPolicy, SaslConfig,
    SaslMechanismKind, Secret,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, TopicName};
use kafka_protocol::protocol::{Decodable, StrBytes};
use tokio::io::AsyncWriteExt;

const REQUEST_TIMEOUT: Duration = Duration::from_millis(800);

fn config() -> ConnectionConfig {
    ConnectionConfig {
        connect_timeout: Duration::from_secs(2),
        request_timeout: REQUEST_TIMEOUT,
        max_frame_bytes: 1024 * 1024,
        ..ConnectionConfig::default()
    }
}

async fn connect(address: &str) -> Result<kafka_lite::BrokerConnection, Error> {
    Connector::new(config())
        .expect("connector")
        .connect(address)
        .await
}

/// A request timeout far above [`FAST`], for cases that must fail on the
/// broker's bytes alone, not by a timeout.
const LONG_REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Well under [`LONG_REQUEST_TIMEOUT`], and generous for a loaded CI machine.
const FAST: Duration = Duration::from_secs(4);

/// Connects with [`LONG_REQUEST_TIMEOUT`], asserting the attempt ends
/// within `limit` (so it was not ended by a timeout).
async fn connect_within(
    address: &str,
    limit: Duration,
) -> Result<kafka_lite::BrokerConnection, Error> {
    let started = Instant::now();
    let config = ConnectionConfig {
        request_timeout: LONG_REQUEST_TIMEOUT,
        ..config()
    };
    let connect = async { Connector::new(config)?.connect(address).await };
    let result = tokio::time::timeout(limit * 2, connect)
        .await
        .expect("connect must never block past its timeouts");
    assert!(
        started.elapsed() < limit,
        "took {:?}, limit {limit:?}",
        started.elapsed()
    );
    result
}

fn metadata_request(topic: &str) -> MetadataRequest {
    MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(
            TopicName(StrBytes::from_string(topic.to_string())),
        ))]))
}

/// A broker answering ApiVersions with `body` (after the correlation id),
/// and the error connecting to it, which must come within [`FAST`].
async fn api_versions_answered_with(body: &'static [u8]) -> (fake_broker::FakeBroker, Error) {
    let broker = serve(move |mut s| async move {
        let request = read_request(&mut s).await.expect("request");
        let _ = s
            .write_all(&raw_frame(request.correlation_id(), body))
            .await;
        stall(s).await;
    })
    .await;
    let err = connect_within(&broker.address, FAST)
        .await
        .expect_err("must fail");
    (broker, err)
}

/// The one topic name a Metadata request asks for.
fn requested_topic(request: &mut ReceivedRequest) -> String {
    let version = request.version();
    let body = MetadataRequest::decode(&mut request.body, version).expect("decode");
    body.topics
        .and_then(|t| t.into_iter().next())
        .and_then(|t| t.name)
        .map(|n| n.0.to_string())
        .expect("one named topic")
}

fn metadata_response_for(topic: &str) -> MetadataResponse {
    MetadataResponse::default()
        .with_topics(vec![MetadataResponseTopic::default().with_name(Some(
            TopicName(StrBytes::from_string(topic.to_string())),
        ))])
}

/// The well-formed answer to a Metadata request: a frame naming the topic it
/// asked for.
fn metadata_answer(request: &mut ReceivedRequest) -> Vec<u8> {
    let topic = requested_topic(request);
    response_frame(
        request.correlation_id(),
        &metadata_response_for(&topic),
        request.version(),
    )
}

/// The name of the first topic of a Metadata response.
fn first_topic(response: &MetadataResponse) -> Option<&str> {
    response.topics.first()?.name.as_ref().map(|n| n.0.as_str())
}

#[tokio::test]
async fn truncated_frame_then_close_fails_connect_as_closed_connection_naming_the_broker() {
    let broker = serve(|mut s| async move {
        let request = read_request(&mut s).await.expect("request");
        // Announce 100 bytes, send 10, hang up.
        let mut frame = 100i32.to_be_bytes().to_vec();
        frame.extend_from_slice(&request.correlation_id().to_be_bytes());
        frame.extend_from_slice(&[0; 6]);
        let _ = s.write_all(&frame).await;
    })
    .await;
    let err = connect_within(&broker.address, FAST)
        .await
        .expect_err("must fail");
    assert!(matches!(err, Error::ConnectionClosed { .. }), "{err:?}");
    assert!(err.to_string().contains(&broker.address), "{err}");
    assert!(err.is_retriable(), "a fresh connection may work: {err}");
}

async fn assert_length_prefix_is_rejected(prefix: i32, expected_size: i64) {
    let broker = serve(move |mut s| async move {
        let _ = read_request(&mut s).await;
        let _ = s.write_all(&prefix.to_be_bytes()).await;
        // Keep the connection open: the client must not wait for the body.
        stall(s).await;
    })
    .await;
    let err = connect_within(&broker.address, FAST)
        .await
        .expect_err("must fail");
    match &err {
        Error::FrameTooLarge {
            broker: b,
            size,
            max,
        } => {
            assert_eq!(b, &broker.address);
            assert_eq!(*size, expected_size);
            assert_eq!(*max, 1024 * 1024);
        }
        other => panic!("expected FrameTooLarge, got {other:?}"),
    }
    assert!(!err.is_retriable());
    assert!(err.to_string().contains(&broker.address), "{err}");
}

#[tokio::test]
async fn length_prefix_of_2_gib_is_frame_too_large_before_any_allocation() {
    // Rejected from the 4-byte prefix alone, without waiting for (or
    // allocating) the announced body: the connection stays open and silent.
    assert_length_prefix_is_rejected(i32::MAX, i64::from(i32::MAX)).await;
}

#[tokio::test]
async fn negative_length_prefixes_are_frame_too_large() {
    assert_length_prefix_is_rejected(-1, -1).await;
    assert_length_prefix_is_rejected(i32::MIN, i64::from(i32::MIN)).await;
}

#[tokio::test]
async fn response_with_a_never_issued_correlation_id_poisons_the_connection() {
    let broker = serve(|mut s| async move {
        let request = read_request(&mut s).await.expect("request");
        let frame = response_frame(
            request.correlation_id() + 1000,
            &fake_broker::api_versions_response(),
            request.version(),
        );
        let _ = s.write_all(&frame).await;
        stall(s).await;
    })
    .await;
    // Detected at once, not by the request timeout.
    let err = connect_within(&broker.address, FAST)
        .await
        .expect_err("must fail");
    assert!(matches!(err, Error::ConnectionClosed { .. }), "{err:?}");
    let shown = err.to_string();
    assert!(shown.contains("correlation id 1000"), "{shown}");
    assert!(shown.contains(&broker.address), "{shown}");
}

#[tokio::test]
async fn garbage_body_for_api_versions_is_malformed_naming_api_and_broker() {
    // Error code 0, then an api_keys array of 3 entries that stops
    // after 2 bytes.
    let (broker, err) = api_versions_answered_with(&[0, 0, 0x04, 0x00, 0x12]).await;
    match &err {
        Error::MalformedResponse { broker: b, api, .. } => {
            assert_eq!(b, &broker.address);
            assert_eq!(*api, "ApiVersions");
        }
        other => panic!("expected MalformedResponse, got {other:?}"),
    }
    assert!(!err.is_retriable());
}

#[tokio::test]
async fn api_versions_claiming_2_pow_31_entries_is_malformed_not_an_abort() {
    // Unpatched kafka-protocol 0.18 called Vec::with_capacity(2^31 - 1)
    // here and aborted the process; the vendored patch bounds it by the
    // bytes present (vendor/kafka-protocol/PATCHES.md).
    let (_broker, err) =
        api_versions_answered_with(&[0, 0, 0xff, 0xff, 0xff, 0xff, 0x07, 0xde, 0xad]).await;
    assert!(
        matches!(
            &err,
            Error::MalformedResponse {
                api: "ApiVersions",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn metadata_body_in_answer_to_api_versions_is_rejected() {
    let broker = serve(|mut s| async move {
        let request = read_request(&mut s).await.expect("request");
        let mut response = metadata_response_for("some-topic");
        response.throttle_time_ms = 77;
        let frame = response_frame(request.correlation_id(), &response, 12);
        let _ = s.write_all(&frame).await;
        stall(s).await;
    })
    .await;
    let err = connect_within(&broker.address, FAST)
        .await
        .expect_err("a Metadata body is not an ApiVersions response");
    eprintln!("{err}");
    assert!(
        matches!(
            &err,
            Error::MalformedResponse {
                api: "ApiVersions",
                ..
            } | Error::UnsupportedVersion { .. }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains(&broker.address), "{err}");
}

#[tokio::test]
async fn truncated_metadata_body_is_malformed_and_the_connection_stays_usable() {
    let broker = serve(|mut s| async move {
        answer_api_versions(&mut s).await;
        let first = read_request(&mut s).await.expect("first Metadata");
        // Header v1 (empty tagged fields), then 2 bytes of a 4-byte throttle.
        let _ = s
            .write_all(&raw_frame(first.correlation_id(), &[0, 0, 0]))
            .await;
        let mut second = read_request(&mut s).await.expect("second Metadata");
        let frame = metadata_answer(&mut second);
        let _ = s.write_all(&frame).await;
        stall(s).await;
    })
    .await;
    let conn = connect(&broker.address).await.expect("connect");
    let err = conn
        .send(metadata_request("a"))
        .await
        .expect_err("truncated body");
    match &err {
        Error::MalformedResponse {
            api,
            broker: b,
            version,
            ..
        } => {
            assert_eq!(*api, "Metadata");
            assert_eq!(b, &broker.address);
            assert_eq!(*version, 12);
        }
        other => panic!("expected MalformedResponse, got {other:?}"),
    }
    // The frame boundary was intact, so the stream is still in sync.
    assert!(!conn.is_closed());
    let response = conn.send(metadata_request("b")).await.expect("second");
    assert_eq!(first_topic(&response), Some("b"));
}

#[tokio::test]
async fn stalled_response_fires_the_request_timeout_naming_the_api() {
    let broker = serve(|mut s| async move {
        answer_api_versions(&mut s).await;
        stall(s).await;
    })
    .await;
    let conn = connect(&broker.address).await.expect("connect");
    let started = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(10), conn.send(metadata_request("t")))
        .await
        .expect("must not block forever")
        .expect_err("no answer");
    let elapsed = started.elapsed();
    match &err {
        Error::RequestTimeout {
            api,
            broker: b,
            timeout,
        } => {
            assert_eq!(*api, "Metadata");
            assert_eq!(b, &broker.address);
            assert_eq!(*timeout, REQUEST_TIMEOUT);
        }
        other => panic!("expected RequestTimeout, got {other:?}"),
    }
    assert!(
        elapsed >= REQUEST_TIMEOUT && elapsed < REQUEST_TIMEOUT + FAST,
        "{elapsed:?}"
    );
    assert!(err.is_retriable());
}

#[tokio::test]
async fn broker_that_accepts_and_never_speaks_fails_connect_on_the_api_versions_timeout() {
    let broker = serve(stall).await;
    let started = Instant::now();
    let err = tokio::time::timeout(Duration::from_secs(10), connect(&broker.address))
        .await
        .expect("must not block forever")
        .expect_err("silent broker");
    assert!(
        matches!(
            &err,
            Error::RequestTimeout {
                api: "ApiVersions",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains(&broker.address), "{err}");
    assert!(
        started.elapsed() < REQUEST_TIMEOUT + FAST,
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn response_trickled_one_byte_at_a_time_still_decodes() {
    let broker = serve(|mut s| async move {
        let request = read_request(&mut s).await.expect("request");
        let frame = response_frame(
            request.correlation_id(),
            &fake_broker::api_versions_response(),
            request.version(),
        );
        for byte in frame {
            if s.write_all(&[byte]).await.is_err() {
                return;
            }
            let _ = s.flush().await;
            tokio::task::yield_now().await;
        }
        let mut next = read_request(&mut s).await.expect("Metadata");
        let frame = metadata_answer(&mut next);
        for chunk in frame.chunks(3) {
            let _ = s.write_all(chunk).await;
            let _ = s.flush().await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        stall(s).await;
    })
    .await;
    let conn = connect(&broker.address).await.expect("connect");
    assert!(conn.broker_versions(3).is_some(), "Metadata versions known");
    let response = conn
        .send(metadata_request("trickle"))
        .await
        .expect("metadata");
    assert_eq!(first_topic(&response), Some("trickle"));
}

#[tokio::test]
async fn pipelined_requests_answered_in_reverse_order_reach_their_callers() {
    const N: usize = 32;
    let broker = serve(|mut s| async move {
        answer_api_versions(&mut s).await;
        let mut pending = Vec::new();
        for _ in 0..N {
            let mut request = read_request(&mut s).await.expect("Metadata");
            let topic = requested_topic(&mut request);
            pending.push((request.correlation_id(), request.version(), topic));
        }
        for (correlation_id, version, topic) in pending.into_iter().rev() {
            let frame = response_frame(correlation_id, &metadata_response_for(&topic), version);
            let _ = s.write_all(&frame).await;
        }
        stall(s).await;
    })
    .await;
    let conn = connect(&broker.address).await.expect("connect");
    let mut tasks = Vec::new();
    for i in 0..N {
        let conn = conn.clone();
        tasks.push(tokio::spawn(async move {
            let topic = format!("topic-{i}");
            let response = conn.send(metadata_request(&topic)).await?;
            Ok::<_, Error>((topic, response))
        }));
    }
    for task in tasks {
        let (topic, response) = task.await.expect("task").expect("response");
        assert_eq!(
            response.topics[0].name.as_ref().map(|n| n.0.to_string()),
            Some(topic)
        );
    }
}

#[tokio::test]
async fn oversized_frame_mid_session_poisons_the_connection_and_the_pool_reconnects() {
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = connections.clone();
    let broker = serve(move |mut s| {
        let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            answer_api_versions(&mut s).await;
            let mut request = read_request(&mut s).await.expect("Metadata");
            if n == 0 {
                let _ = s.write_all(&0x7fff_0000i32.to_be_bytes()).await;
            } else {
                let frame = metadata_answer(&mut request);
                let _ = s.write_all(&frame).await;
            }
            stall(s).await;
        }
    })
    .await;
    let pool = BrokerPool::new(Connector::new(config()).expect("connector"));
    let first = pool.get(&broker.address).await.expect("connect");
    let err = first
        .send(metadata_request("x"))
        .await
        .expect_err("oversized");
    assert!(matches!(err, Error::FrameTooLarge { .. }), "{err:?}");
    assert!(first.is_closed(), "poisoned");
    // Later requests on the poisoned connection fail the same way at once.
    let again = first
        .send(metadata_request("y"))
        .await
        .expect_err("poisoned");
    assert!(matches!(again, Error::FrameTooLarge { .. }), "{again:?}");

    let second = pool.get(&broker.address).await.expect("reconnect");
    assert!(!second.same_connection(&first));
    let response = second
        .send(metadata_request("z"))
        .await
        .expect("fresh connection");
    assert_eq!(first_topic(&response), Some("z"));
    assert_eq!(connections.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn client_bootstrap_against_a_garbage_broker_fails_with_a_clear_error_within_the_deadline() {
    let broker = serve(|mut s| async move {
        let _ = read_request(&mut s).await;
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        stall(s).await;
    })
    .await;
    let retry = RetryPolicy {
        deadline: Duration::from_secs(3),
        ..RetryPolicy::default()
    };
    let started = Instant::now();
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        Client::connect_with_retry(vec![broker.address.clone()], config(), retry),
    )
    .await
    .expect("must not block past the deadline")
    .expect_err("garbage broker");
    eprintln!("{err}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // "HTTP" read as a length prefix is 1.2 GB: rejected before allocation,
    // and the error says what answered.
    assert!(matches!(err, Error::FrameTooLarge { .. }), "{err:?}");
    assert!(err.to_string().contains(&broker.address), "{err}");
    assert!(err.to_string().contains("an HTTP server answered"), "{err}");
}

// ---- SASL against a lying broker ------------------------------------------

const PASSWORD: &str = "s3cret-pa55word-never-shown";

fn sasl_config(mechanism: SaslMechanismKind) -> ConnectionConfig {
    ConnectionConfig {
        sasl: Some(SaslConfig::with_password(
            mechanism,
            "alice",
            Secret::new(PASSWORD),
        )),
        request_timeout: LONG_REQUEST_TIMEOUT,
        ..config()
    }
}

fn assert_no_password(err: &Error) {
    let shown = format!("{err} | {err:?}");
    assert!(!shown.contains(PASSWORD), "password leaked: {shown}");
}

/// A broker that completes SCRAM's first round properly and then answers
/// the client-final message with `server_final`.
async fn scram_broker(
    mechanism: &'static str,
    iterations: u32,
    server_final: Vec<u8>,
) -> fake_broker::FakeBroker {
    serve(move |mut s| {
        let server_final = server_final.clone();
        async move {
            answer_api_versions(&mut s).await;
            answer_sasl_handshake(&mut s, mechanism).await;
            let (cid, version, client_first) = read_sasl_authenticate(&mut s).await;
            let client_first = String::from_utf8(client_first.to_vec()).expect("utf8");
            let client_nonce = client_first
                .split(',')
                .find_map(|a| a.strip_prefix("r="))
                .expect("client nonce")
                .to_string();
            let server_first =
                format!("r={client_nonce}fakeservernonce,s=c2FsdHNhbHQ=,i={iterations}");
            write_sasl_authenticate(&mut s, cid, version, server_first.into_bytes()).await;
            let Some(request) = read_request(&mut s).await else {
                return;
            };
            write_sasl_authenticate(
                &mut s,
                request.correlation_id(),
                request.version(),
                server_final,
            )
            .await;
            stall(s).await;
        }
    })
    .await
}

async fn sasl_connect(address: &str, mechanism: SaslMechanismKind) -> Result<(), Error> {
    let started = Instant::now();
    let result = tokio::time::timeout(
        FAST * 2,
        Connector::new(sasl_config(mechanism))
            .expect("connector")
            .connect(address),
    )
    .await
    .expect("must not block");
    assert!(started.elapsed() < FAST, "{:?}", started.elapsed());
    result.map(|_| ())
}

#[tokio::test]
async fn scram_server_final_with_a_wrong_signature_is_rejected() {
    for (kind, name) in [
        (SaslMechanismKind::ScramSha256, "SCRAM-SHA-256"),
        (SaslMechanismKind::ScramSha512, "SCRAM-SHA-512"),
    ] {
        // A well-formed signature of the right length, but not the one the
        // password implies: a broker that does not know the password.
        let bogus = format!("v={}", "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE=");
        let broker = scram_broker(name, 4096, bogus.into_bytes()).await;
        let err = sasl_connect(&broker.address, kind)
            .await
            .expect_err("bogus server signature");
        eprintln!("{err}");
        match &err {
            Error::Authentication {
                mechanism,
                broker: b,
                detail,
            } => {
                assert_eq!(mechanism, name);
                assert_eq!(b, &broker.address);
                assert!(detail.contains("signature"), "{detail}");
            }
            other => panic!("expected Authentication, got {other:?}"),
        }
        assert!(!err.is_retriable());
        assert_no_password(&err);
    }
}

#[tokio::test]
async fn scram_server_final_with_an_error_attribute_is_an_authentication_error() {
    let broker = scram_broker("SCRAM-SHA-512", 4096, b"e=invalid-proof".to_vec()).await;
    let err = sasl_connect(&broker.address, SaslMechanismKind::ScramSha512)
        .await
        .expect_err("server error");
    eprintln!("{err}");
    assert!(
        matches!(&err, Error::Authentication { detail, .. } if detail.contains("invalid-proof")),
        "{err:?}"
    );
    assert_no_password(&err);
}

#[tokio::test]
async fn scram_server_first_with_an_absurd_iteration_count_is_refused_fast() {
    // 2^31 PBKDF2 rounds would take minutes: the client must refuse.
    let broker = scram_broker("SCRAM-SHA-256", i32::MAX as u32, b"v=AAAA".to_vec()).await;
    let err = sasl_connect(&broker.address, SaslMechanismKind::ScramSha256)
        .await
        .expect_err("absurd iteration count");
    eprintln!("{err}");
    assert!(matches!(&err, Error::Authentication { .. }), "{err:?}");
    assert_no_password(&err);
}

#[tokio::test]
async fn sasl_authenticate_error_from_the_broker_names_the_mechanism_without_the_password() {
    let broker = serve(|mut s| async move {
        answer_api_versions(&mut s).await;
        answer_sasl_handshake(&mut s, "PLAIN").await;
        let (cid, version, _token) = read_sasl_authenticate(&mut s).await;
        let response = kafka_protocol::messages::SaslAuthenticateResponse::default()
            .with_error_code(58)
            .with_error_message(Some(StrBytes::from_static_str(
                "Authentication failed: Invalid username or password",
            )))
            .with_auth_bytes(Bytes::new());
        let _ = s.write_all(&response_frame(cid, &response, version)).await;
        stall(s).await;
    })
    .await;
    let err = sasl_connect(&broker.address, SaslMechanismKind::Plain)
        .await
        .expect_err("rejected");
    eprintln!("{err}");
    match &err {
        Error::Authentication {
            mechanism, detail, ..
        } => {
            assert_eq!(mechanism, "PLAIN");
            assert!(detail.contains("SASL_AUTHENTICATION_FAILED"), "{detail}");
        }
        other => panic!("expected Authentication, got {other:?}"),
    }
    assert_no_password(&err);
}
