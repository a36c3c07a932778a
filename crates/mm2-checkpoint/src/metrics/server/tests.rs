//! Real TCP requests against a server bound to 127.0.0.1:0.

use super::*;
use crate::metrics::process::without_process_metrics;
use crate::metrics::readiness::STARTUP;
use crate::metrics::{LatencyGranularity, MetricsSettings};

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
    // Per-partition latency series, so that a few thousand checkpoints make
    // an exposition of several pieces.
    let metrics = Metrics::with_settings(
        "9.9.9",
        "test-tls",
        MetricsSettings {
            latency_granularity: LatencyGranularity::Partition,
            mm2_names: false,
            status_interval: None,
            ..MetricsSettings::default()
        },
    );
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

/// The body of `answer`, decoded if it is chunked (then it must end with the
/// last chunk).
fn body(answer: &str) -> String {
    let Some((head, body)) = answer.split_once("\r\n\r\n") else {
        return String::new();
    };
    if head.contains("\r\nTransfer-Encoding: chunked\r\n") {
        e2e::http::dechunk(body).expect("a whole chunked body")
    } else {
        body.to_string()
    }
}

/// A scraper with a 4 KB receive buffer that asked for `/metrics` and read
/// its first bytes (returned with it), then reads no more while it is held.
async fn slow_scraper(addr: SocketAddr) -> (TcpStream, Vec<u8>) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .set_recv_buffer_size(4096)
        .expect("small receive buffer");
    let mut stream = socket.connect(addr).await.expect("connect");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\n\r\n")
        .await
        .expect("send");
    let mut first = [0u8; 1024];
    let n = stream.read(&mut first).await.expect("first bytes");
    assert!(n > 0);
    (stream, first[..n].to_vec())
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
    // Streamed: chunked, no length, the same text as built whole.
    assert!(
        answer.contains("Transfer-Encoding: chunked\r\n"),
        "{answer}"
    );
    assert!(!answer.contains("Content-Length"), "{answer}");
    assert_eq!(
        without_process_metrics(&body(&answer)),
        without_process_metrics(&s.metrics.encode_prometheus().expect("encode"))
    );
}

/// `groups` groups with `partitions` latency series each.
fn many_series(metrics: &Metrics, groups: usize, partitions: i32) {
    for g in 0..groups {
        for p in 0..partitions {
            metrics.set_checkpoint_latency(
                "A->B",
                &format!("group-{g:06}"),
                "topic",
                p,
                Duration::from_millis(g as u64 + p as u64),
            );
        }
    }
}

#[tokio::test]
async fn a_large_exposition_is_streamed_in_pieces_byte_for_byte() {
    let s = start_default().await;
    // ~1.7 MB of text: some 25 pieces.
    many_series(&s.metrics, 2_000, 10);
    let whole = s.metrics.encode_prometheus().expect("encode");
    assert!(
        whole.len() > 20 * super::super::stream::PIECE,
        "{}",
        whole.len()
    );
    let answer = get(s.addr, "/metrics").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK");
    let (_, raw) = answer.split_once("\r\n\r\n").expect("head");
    let chunks = raw.matches("\r\n").count() / 2;
    assert!(chunks > 20, "{chunks} chunks");
    assert!(
        without_process_metrics(&body(&answer)) == without_process_metrics(&whole),
        "the streamed text differs"
    );

    let whole = s.metrics.encode_openmetrics().expect("encode");
    let answer = exchange(
        s.addr,
        b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text\r\n\r\n",
    )
    .await;
    assert!(
        without_process_metrics(&body(&answer)) == without_process_metrics(&whole),
        "the streamed OpenMetrics text differs"
    );
}

#[tokio::test]
async fn http_1_0_gets_the_exposition_until_the_close() {
    let s = start_default().await;
    many_series(&s.metrics, 500, 10);
    let whole = s.metrics.encode_prometheus().expect("encode");
    let answer = exchange(s.addr, b"GET /metrics HTTP/1.0\r\n\r\n").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK");
    assert!(
        !answer.contains("Transfer-Encoding"),
        "chunked for HTTP/1.0"
    );
    assert!(
        !answer.contains("Content-Length"),
        "a length for a streamed answer"
    );
    assert!(
        without_process_metrics(&body(&answer)) == without_process_metrics(&whole),
        "the HTTP/1.0 text differs"
    );
}

#[tokio::test]
async fn head_of_metrics_has_the_headers_of_get_and_no_body() {
    let s = start_default().await;
    let answer = exchange(s.addr, b"HEAD /metrics HTTP/1.1\r\n\r\n").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
    assert!(
        answer.contains("Transfer-Encoding: chunked\r\n"),
        "{answer}"
    );
    assert!(answer.ends_with("\r\n\r\n"), "{answer}");
}

/// A scraper that stops reading must not hold up the rounds: the encoding
/// waits for it with the latency index unlocked. Measured here: setting a
/// latency while a ~12 MB answer is stuck (more than the loopback socket
/// buffers hold, so the encoding must be waiting) takes as long as without
/// the scrape, not the 30 s write timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_scraper_does_not_block_latency_updates() {
    let s = start(ServerLimits {
        write_timeout: Duration::from_secs(30),
        ..ServerLimits::default()
    })
    .await;
    many_series(&s.metrics, 30_000, 5);
    let whole_len = s.metrics.encode_prometheus().expect("encode").len();
    assert!(
        whole_len > 8 << 20,
        "{whole_len} bytes fit in socket buffers"
    );

    let (mut stream, first) = slow_scraper(s.addr).await;
    // Not reading: the pieces pile up in the socket buffers, then the
    // encoding waits.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let metrics = s.metrics.clone();
    let slowest = tokio::task::spawn_blocking(move || {
        let mut slowest = Duration::ZERO;
        for p in 0..50 {
            let started = std::time::Instant::now();
            metrics.set_checkpoint_latency("A->B", "group-000001", "topic", p % 5, Duration::ZERO);
            metrics.set_checkpoint_latency("A->B", "zz-new", "topic", p, Duration::ZERO);
            slowest = slowest.max(started.elapsed());
        }
        slowest
    });
    let slowest = tokio::time::timeout(TIMEOUT, slowest)
        .await
        .expect("latency updates within 10 s while the scrape is stuck")
        .expect("join");
    assert!(
        slowest < Duration::from_secs(1),
        "an update took {slowest:?}"
    );

    // Reading on: the answer is whole and well framed.
    let mut rest = Vec::new();
    tokio::time::timeout(TIMEOUT * 3, stream.read_to_end(&mut rest))
        .await
        .expect("rest within the timeout")
        .expect("read");
    let mut answer = first;
    answer.extend_from_slice(&rest);
    let answer = String::from_utf8(answer).expect("utf-8");
    let body = body(&answer);
    assert!(body.len() >= whole_len, "{} < {whole_len}", body.len());
    assert!(body.starts_with("# HELP"), "{}", &body[..100]);
}

#[tokio::test]
async fn a_scraper_that_goes_away_mid_answer_frees_its_connection() {
    let s = start(ServerLimits {
        max_connections: 1,
        ..ServerLimits::default()
    })
    .await;
    many_series(&s.metrics, 20_000, 5);
    drop(slow_scraper(s.addr).await);
    // The only connection slot comes back once the answer fails.
    let started = std::time::Instant::now();
    loop {
        // A connection over the limit is closed unanswered, maybe reset.
        let mut probe = TcpStream::connect(s.addr).await.expect("connect");
        let _ = probe.write_all(b"GET /healthz HTTP/1.1\r\n\r\n").await;
        let mut answer = Vec::new();
        let _ = tokio::time::timeout(TIMEOUT, probe.read_to_end(&mut answer)).await;
        if answer.starts_with(b"HTTP/1.1 200 OK\r\n") {
            break;
        }
        assert!(started.elapsed() < TIMEOUT, "the slot never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
async fn status_is_503_until_a_document_is_published_then_serves_it_as_json() {
    let s = start_default().await;
    let answer = get(s.addr, "/status").await;
    assert_eq!(
        status_line(&answer),
        "HTTP/1.1 503 Service Unavailable",
        "{answer}"
    );
    s.metrics
        .status_board()
        .publish("{\"generated_ms\":1,\"flows\":[]}".to_owned());
    let answer = get(s.addr, "/status").await;
    assert_eq!(status_line(&answer), "HTTP/1.1 200 OK", "{answer}");
    assert!(
        answer.contains("\r\nContent-Type: application/json\r\n"),
        "{answer}"
    );
    assert_eq!(body(&answer), "{\"generated_ms\":1,\"flows\":[]}");
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
            wants_openmetrics: true,
            http10: false,
            gzip: false,
        }
    );
}

#[test]
fn accept_encoding_asks_for_gzip_unless_its_q_is_0() {
    for (value, gzip) in [
        ("gzip", true),
        ("identity, gzip;q=0.5", true),
        ("deflate, GZIP", true),
        ("x-gzip", true),
        ("gzip;q=0", false),
        ("gzip; q=0.000", false),
        ("deflate", false),
        ("*", false),
        ("gzipped", false),
    ] {
        let head = format!("GET /metrics HTTP/1.1\r\nAccept-Encoding: {value}\r\n\r\n");
        let r = parse_head(head.as_bytes()).expect("parses");
        assert_eq!(r.gzip, gzip, "{value}");
    }
}

/// Sends `request`, reads the whole answer as bytes: the head and the body,
/// dechunked (it must end with the last chunk) if chunked.
async fn exchange_bytes(addr: SocketAddr, request: &[u8]) -> (String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let answer = tokio::time::timeout(TIMEOUT, async {
        stream.write_all(request).await.expect("send request");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read answer");
        answer
    })
    .await
    .expect("answer within the timeout");
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let mut rest = &answer[end + 4..];
    if !head.contains("\r\nTransfer-Encoding: chunked") {
        return (head, rest.to_vec());
    }
    let mut body = Vec::new();
    loop {
        let line = rest.windows(2).position(|w| w == b"\r\n").expect("a size");
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).expect("hex"), 16)
            .expect("a chunk size");
        rest = &rest[line + 2..];
        if size == 0 {
            assert_eq!(rest, b"\r\n", "the last chunk ends the answer");
            return (head, body);
        }
        body.extend_from_slice(&rest[..size]);
        assert_eq!(&rest[size..size + 2], b"\r\n");
        rest = &rest[size + 2..];
    }
}

fn gunzip(bytes: &[u8]) -> String {
    use std::io::Read as _;
    let mut text = String::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_string(&mut text)
        .expect("a whole gzip stream");
    text
}

#[tokio::test]
async fn metrics_are_gzipped_when_asked_byte_for_byte_the_text() {
    let s = start_default().await;
    // Enough series for several pieces of the stream.
    for g in 0..3000 {
        s.metrics.set_checkpoint_latency(
            "A->B",
            &format!("group-{g}"),
            "topic",
            g % 10,
            Duration::from_millis(5),
        );
    }
    let text = s.metrics.encode_prometheus().expect("encodes");
    assert!(
        text.len() > 3 * super::super::stream::PIECE,
        "{}",
        text.len()
    );
    for version in ["HTTP/1.1", "HTTP/1.0"] {
        let request = format!("GET /metrics {version}\r\nAccept-Encoding: gzip\r\n\r\n");
        let (head, body) = exchange_bytes(s.addr, request.as_bytes()).await;
        assert!(head.contains("\r\nContent-Encoding: gzip\r\n"), "{head}");
        assert!(
            body.len() < text.len() / 4,
            "{} of {}",
            body.len(),
            text.len()
        );
        let sent = gunzip(&body);
        // The process metrics may change between two expositions.
        let ours = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| !l.starts_with("process_"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(ours(&sent), ours(&text), "{version}");
    }
    // Without the header, or refused, the text is sent as it is.
    for request in [
        "GET /metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip;q=0\r\n\r\n",
    ] {
        let (head, body) = exchange_bytes(s.addr, request.as_bytes()).await;
        assert!(!head.contains("Content-Encoding"), "{head}");
        assert!(
            String::from_utf8(body)
                .expect("text")
                .contains("mm2_checkpoint_build_info")
        );
    }
    // The other paths are never compressed.
    let (head, body) = exchange_bytes(
        s.addr,
        b"GET /healthz HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
    )
    .await;
    assert!(!head.contains("Content-Encoding"), "{head}");
    assert_eq!(body, b"ok\n");
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
