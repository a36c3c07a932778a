//! Real TCP requests against a server bound to 127.0.0.1:0.

use super::*;
use crate::metrics::readiness::STARTUP;

const TIMEOUT: Duration = Duration::from_secs(10);

struct Running {
    addr: SocketAddr,
    metrics: Metrics,
    shutdown: ShutdownSignal,
    task: tokio::task::JoinHandle<()>,
}

async fn start(limits: ServerLimits) -> Running {
    let server = MetricsServer::bind("127.0.0.1:0")
        .await
        .expect("bind")
        .with_limits(limits);
    let addr = server.local_addr().expect("local addr");
    let metrics = Metrics::new("9.9.9", "test-tls");
    let shutdown = ShutdownSignal::new();
    let task = tokio::spawn(server.serve(metrics.clone(), shutdown.clone()));
    Running {
        addr,
        metrics,
        shutdown,
        task,
    }
}

async fn start_default() -> Running {
    start(ServerLimits::default()).await
}

/// Sends `request` and reads the whole answer (the server closes the connection).
async fn exchange(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    tokio::time::timeout(TIMEOUT, async {
        stream.write_all(request).await.expect("send request");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read answer");
        String::from_utf8_lossy(&answer).into_owned()
    })
    .await
    .expect("answer within the timeout")
}

async fn get(addr: SocketAddr, path: &str) -> String {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
    )
    .await
}

fn status_line(answer: &str) -> &str {
    answer.lines().next().unwrap_or_default()
}

fn body(answer: &str) -> &str {
    answer.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}

#[tokio::test]
async fn metrics_path_serves_prometheus_text() {
    let s = start_default().await;
    s.metrics.checkpoints_emitted("A->B", 3);
    let answer = get(s.addr, "/metrics").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
    assert!(
        answer.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
        "{answer}"
    );
    assert!(answer.contains("Connection: close\r\n"), "{answer}");
    assert!(
        body(&answer).contains("mm2_checkpoint_checkpoints_emitted_total{flow=\"A->B\"} 3\n"),
        "{answer}"
    );
    let length = format!("Content-Length: {}\r\n", body(&answer).len());
    assert!(answer.contains(&length), "{answer}");
}

#[tokio::test]
async fn metrics_path_serves_openmetrics_when_accepted() {
    let s = start_default().await;
    let answer = exchange(
        s.addr,
        b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text; version=1.0.0\r\n\r\n",
    )
    .await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
    assert!(
        answer.contains("Content-Type: application/openmetrics-text"),
        "{answer}"
    );
    assert!(body(&answer).ends_with("# EOF\n"), "{answer}");
}

#[tokio::test]
async fn query_string_is_ignored() {
    let s = start_default().await;
    let answer = get(s.addr, "/healthz?verbose=1").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
}

#[tokio::test]
async fn healthz_answers_ok() {
    let s = start_default().await;
    let answer = get(s.addr, "/healthz").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
    assert_eq!(body(&answer), "ok\n");
}

#[tokio::test]
async fn readyz_is_503_with_reasons_until_ready() {
    let s = start_default().await;
    let readiness = s.metrics.readiness();
    readiness.set_not_ready("A->B initial read", "offset-syncs topic 10% read");
    let answer = get(s.addr, "/readyz").await;
    assert_eq!(
        status_line(&answer),
        "HTTP/1.1 503 Service Unavailable",
        "{answer}"
    );
    assert!(
        body(&answer).contains("A->B initial read: offset-syncs topic 10% read"),
        "{answer}"
    );
    readiness.set_ready(STARTUP);
    readiness.set_ready("A->B initial read");
    let answer = get(s.addr, "/readyz").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
}

#[tokio::test]
async fn unknown_path_is_404() {
    let s = start_default().await;
    let answer = get(s.addr, "/admin").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 404 Not Found", "{answer}");
}

#[tokio::test]
async fn other_methods_are_405_with_allow() {
    let s = start_default().await;
    let answer = exchange(
        s.addr,
        b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
    )
    .await;
    assert_eq!(
        status_line(&answer),
        "HTTP/1.1 405 Method Not Allowed",
        "{answer}"
    );
    assert!(answer.contains("Allow: GET, HEAD\r\n"), "{answer}");
}

#[tokio::test]
async fn head_answers_without_body() {
    let s = start_default().await;
    let answer = exchange(s.addr, b"HEAD /healthz HTTP/1.0\r\n\r\n").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
    assert!(answer.contains("Content-Length: 3\r\n"), "{answer}");
    assert_eq!(body(&answer), "");
}

#[tokio::test]
async fn garbage_request_is_400_and_the_server_keeps_serving() {
    let s = start_default().await;
    let answer = exchange(
        s.addr,
        b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n",
    )
    .await;
    assert_eq!(status_line(&answer), "HTTP/1.1 400 Bad Request", "{answer}");
    let answer = exchange(s.addr, b"hello there\r\n\r\n").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 400 Bad Request", "{answer}");
    let answer = get(s.addr, "/healthz").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
}

#[tokio::test]
async fn head_ending_early_is_400() {
    let s = start_default().await;
    let mut stream = TcpStream::connect(s.addr).await.expect("connect");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\n")
        .await
        .expect("send");
    stream.shutdown().await.expect("half-close");
    let mut answer = Vec::new();
    tokio::time::timeout(TIMEOUT, stream.read_to_end(&mut answer))
        .await
        .expect("answer in time")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    assert_eq!(status_line(&answer), "HTTP/1.1 400 Bad Request", "{answer}");
}

#[tokio::test]
async fn oversized_head_is_431_and_the_server_keeps_serving() {
    let s = start_default().await;
    let mut request = b"GET /metrics HTTP/1.1\r\nX-Filler: ".to_vec();
    request.extend(std::iter::repeat_n(b'a', 32 * 1024));
    request.extend_from_slice(b"\r\n\r\n");
    let answer = exchange(s.addr, &request).await;
    assert_eq!(
        status_line(&answer),
        "HTTP/1.1 431 Request Header Fields Too Large",
        "{answer}"
    );
    let answer = get(s.addr, "/healthz").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
}

#[tokio::test]
async fn silent_client_gets_408_after_the_read_timeout() {
    let s = start(ServerLimits {
        read_timeout: Duration::from_millis(200),
        ..ServerLimits::default()
    })
    .await;
    let answer = exchange(s.addr, b"GET /metr").await;
    assert_eq!(
        status_line(&answer),
        "HTTP/1.1 408 Request Timeout",
        "{answer}"
    );
}

#[tokio::test]
async fn connections_beyond_the_limit_are_closed_unanswered() {
    let s = start(ServerLimits {
        max_connections: 1,
        read_timeout: Duration::from_secs(30),
        ..ServerLimits::default()
    })
    .await;
    // Holds the only slot by never finishing its request.
    let mut idle = TcpStream::connect(s.addr).await.expect("connect");
    idle.write_all(b"GET").await.expect("send");
    // Give the server time to accept the idle connection first.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut refused = TcpStream::connect(s.addr).await.expect("connect");
    let mut answer = Vec::new();
    // The server closes at once: a clean end of stream or a reset, never bytes.
    let read = tokio::time::timeout(TIMEOUT, async {
        let _ = refused.write_all(b"GET /healthz HTTP/1.1\r\n\r\n").await;
        refused.read_to_end(&mut answer).await
    })
    .await
    .expect("closed within the timeout");
    assert!(read.is_err() || answer.is_empty(), "{answer:?}");
    drop(idle);
}

#[tokio::test]
async fn serve_returns_on_shutdown() {
    let s = start_default().await;
    s.shutdown
        .trigger(crate::shutdown::ShutdownReason::Requested);
    tokio::time::timeout(TIMEOUT, s.task)
        .await
        .expect("serve returned")
        .expect("serve task");
    assert!(TcpStream::connect(s.addr).await.is_err(), "listener closed");
}

#[test]
fn parses_request_line_path_and_accept() {
    let r = parse_head(
        b"GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\naccept: application/openmetrics-text\r\n\r\n",
    )
    .expect("parses");
    assert_eq!(
        r,
        Request {
            method: Method::Get,
            path: "/metrics".to_string(),
            wants_openmetrics: true
        }
    );
}

#[test]
fn refuses_malformed_request_lines() {
    for head in [
        &b"GET /metrics\r\n\r\n"[..],
        b"GET /metrics HTTP/2.0\r\n\r\n",
        b"GET metrics HTTP/1.1\r\n\r\n",
        b"G\xffT /metrics HTTP/1.1\r\n\r\n",
        b"GET  /metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n",
        b"",
    ] {
        assert_eq!(parse_head(head), Err(HeadError::Malformed), "{head:?}");
    }
}
