//! A scripted fake Kafka broker for hostile-input tests.
//!
//! [`serve`] binds a TCP listener on `127.0.0.1:0` and runs the test's
//! script on every accepted connection. The helpers read request frames and
//! write response frames (well-formed or deliberately broken), so each test
//! spells out exactly what the "broker" does on the wire.
//!
//! This is test code: panics here only fail the script's task, and every
//! test asserts on what the *client* observed.

#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, RequestHeader, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{StrBytes, decode_request_header_from_buffer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

mod frames;
pub use frames::response_frame;

/// A running fake broker; dropping it stops accepting.
pub struct FakeBroker {
    /// `127.0.0.1:<port>`.
    pub address: String,
    accept: JoinHandle<()>,
}

impl Drop for FakeBroker {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Starts a fake broker that runs `script` on each accepted connection.
pub async fn serve<F, Fut>(script: F) -> FakeBroker
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("local addr").to_string();
    let accept = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(script(stream));
        }
    });
    FakeBroker { address, accept }
}

/// One request as the broker sees it: its header and its undecoded body.
pub struct ReceivedRequest {
    /// The request header.
    pub header: RequestHeader,
    /// The body after the header.
    pub body: Bytes,
}

impl ReceivedRequest {
    /// The API key.
    pub fn api_key(&self) -> i16 {
        self.header.request_api_key
    }

    /// The request version.
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }

    /// The correlation id.
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }
}

/// Reads one request; `None` when the client closed the connection.
pub async fn read_request<S: AsyncRead + Unpin>(stream: &mut S) -> Option<ReceivedRequest> {
    let mut frame = kafka_lite::frame::read_frame(stream, 1 << 20)
        .await
        .ok()??;
    let header = decode_request_header_from_buffer(&mut frame).ok()?;
    Some(ReceivedRequest {
        header,
        body: frame,
    })
}

/// A frame with the given correlation id followed by arbitrary body bytes.
pub fn raw_frame(correlation_id: i32, body: &[u8]) -> Vec<u8> {
    let mut buf = Vec::with_capacity(8 + body.len());
    let len = i32::try_from(4 + body.len()).expect("small frame");
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(&correlation_id.to_be_bytes());
    buf.extend_from_slice(body);
    buf
}

/// The ApiVersions answer of the fake broker: ApiVersions 0-3, Metadata
/// 0-12, SaslHandshake 0-1, SaslAuthenticate 0-2.
pub fn api_versions_response() -> ApiVersionsResponse {
    let api = |key: ApiKey, max: i16| {
        ApiVersion::default()
            .with_api_key(key as i16)
            .with_min_version(0)
            .with_max_version(max)
    };
    ApiVersionsResponse::default().with_api_keys(vec![
        api(ApiKey::ApiVersions, 3),
        api(ApiKey::Metadata, 12),
        api(ApiKey::SaslHandshake, 1),
        api(ApiKey::SaslAuthenticate, 2),
    ])
}

/// Reads the client's ApiVersions request and answers it properly.
pub async fn answer_api_versions<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) {
    let request = read_request(stream).await.expect("ApiVersions request");
    assert_eq!(request.api_key(), ApiKey::ApiVersions as i16);
    let frame = response_frame(
        request.correlation_id(),
        &api_versions_response(),
        request.version(),
    );
    stream.write_all(&frame).await.expect("write ApiVersions");
}

/// Answers a SaslHandshake request, accepting the mechanism.
pub async fn answer_sasl_handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    mechanism: &str,
) {
    let request = read_request(stream).await.expect("SaslHandshake request");
    assert_eq!(request.api_key(), ApiKey::SaslHandshake as i16);
    let response = SaslHandshakeResponse::default()
        .with_mechanisms(vec![StrBytes::from_string(mechanism.to_string())]);
    let frame = response_frame(request.correlation_id(), &response, request.version());
    stream.write_all(&frame).await.expect("write SaslHandshake");
}

/// Reads a SaslAuthenticate request, returning its correlation id, version
/// and auth bytes.
pub async fn read_sasl_authenticate<S: AsyncRead + Unpin>(stream: &mut S) -> (i32, i16, Bytes) {
    use kafka_protocol::messages::SaslAuthenticateRequest;
    use kafka_protocol::protocol::Decodable;
    let mut request = read_request(stream)
        .await
        .expect("SaslAuthenticate request");
    assert_eq!(request.api_key(), ApiKey::SaslAuthenticate as i16);
    let version = request.version();
    let body = SaslAuthenticateRequest::decode(&mut request.body, version)
        .expect("decode SaslAuthenticate");
    (request.correlation_id(), request.version(), body.auth_bytes)
}

/// Answers a SaslAuthenticate request with `auth_bytes` and no error.
pub async fn write_sasl_authenticate<S: AsyncWrite + Unpin>(
    stream: &mut S,
    correlation_id: i32,
    version: i16,
    auth_bytes: Vec<u8>,
) {
    let response = SaslAuthenticateResponse::default().with_auth_bytes(Bytes::from(auth_bytes));
    let frame = response_frame(correlation_id, &response, version);
    stream
        .write_all(&frame)
        .await
        .expect("write SaslAuthenticate");
}

/// Keeps the connection open without ever writing (until the test ends).
pub async fn stall<S>(stream: S) {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    drop(stream);
}
