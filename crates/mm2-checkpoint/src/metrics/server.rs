//! A minimal HTTP/1.1 endpoint for Prometheus scrapes and health probes.
//!
//! Only four read-only paths exist, every answer is small and each connection
//! carries one request, so a hand-written handler on a `TcpListener` is enough
//! and pulls in no HTTP stack. It defends itself instead of trusting the peer:
//! the request head is read with a size limit and a deadline, at most
//! [`ServerLimits::max_connections`] connections are served at once (more are
//! closed at once), and every answer ends with `Connection: close`.
//!
//! | path | answer |
//! |---|---|
//! | `/metrics` | every metric; OpenMetrics if the `Accept` header asks for it, else Prometheus text 0.0.4; streamed (below) |
//! | `/healthz` | `200 ok` while the process runs |
//! | `/readyz`  | `200 ready`, or `503` with the unmet readiness conditions |
//! | `/status`  | `200` with the last status document (JSON, docs/operations.md "status"), or `503` before the first |
//! | other | `404`; methods other than GET and HEAD get `405` |
//!
//! `/metrics` is written while it is encoded, in pieces of about 64 KB
//! ([`super::stream`]): with one latency series per group-partition the text
//! reaches ~150 MB at 1,000,000 group-partitions, and building it whole first
//! would cost that much memory per scrape. Its length is not known before the
//! end, so an HTTP/1.1 answer uses chunked transfer encoding (a scraper can
//! tell a cut answer from a whole one) and an HTTP/1.0 answer ends with the
//! connection. The encoding runs on a blocking thread and waits for the
//! connection to take each piece; it holds no lock a round takes while it
//! waits. Each write to the scraper gets [`ServerLimits::write_timeout`]; a
//! scraper that stops reading for that long loses the connection, and the
//! encoding stops. When the request's `Accept-Encoding` lists `gzip` (as
//! Prometheus' does), `/metrics` is gzip-compressed as it streams (fast
//! level, on a blocking thread of its own, `Content-Encoding: gzip`); the other
//! answers are never compressed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::{Semaphore, mpsc};

use super::{Metrics, Readiness, StatusBoard};
use crate::shutdown::ShutdownSignal;

const PROMETHEUS_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";
const JSON: &str = "application/json";

/// Bounds that keep one misbehaving client from costing more than a little
/// memory and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// Largest accepted request head (request line and headers), in bytes.
    pub max_head_bytes: usize,
    /// Time allowed to receive the whole request head.
    pub read_timeout: Duration,
    /// Time allowed to send the answer; for a streamed `/metrics`, to send
    /// each piece of it.
    pub write_timeout: Duration,
    /// Connections served at once; further ones are closed unanswered.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_head_bytes: 8 * 1024,
            read_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(5),
            max_connections: 32,
        }
    }
}

/// The bound listener of the metrics endpoint.
#[derive(Debug)]
pub struct MetricsServer {
    listener: TcpListener,
    limits: ServerLimits,
}

impl MetricsServer {
    /// Binds `addr` (`HOST:PORT`; a host name is resolved, port 0 picks a free port).
    pub async fn bind(addr: impl ToSocketAddrs) -> std::io::Result<Self> {
        Ok(Self {
            listener: TcpListener::bind(addr).await?,
            limits: ServerLimits::default(),
        })
    }

    /// Replaces the default [`ServerLimits`].
    pub fn with_limits(mut self, limits: ServerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves requests until `shutdown` is triggered. Connections already
    /// accepted finish on their own, within the limits' timeouts.
    pub async fn serve(self, metrics: Metrics, shutdown: ShutdownSignal) {
        let permits = Arc::new(Semaphore::new(self.limits.max_connections));
        let readiness = metrics.readiness();
        loop {
            let accepted = tokio::select! {
                _ = shutdown.triggered() => return,
                accepted = self.listener.accept() => accepted,
            };
            let (stream, peer) = match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Usually out of file descriptors: back off instead of spinning.
                    tracing::warn!(error = %e, "metrics endpoint: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
                tracing::debug!(%peer, "metrics endpoint: too many connections, closing");
                continue;
            };
            let metrics = metrics.clone();
            let readiness = readiness.clone();
            let limits = self.limits;
            tokio::spawn(async move {
                handle(stream, &metrics, &readiness, limits).await;
                drop(permit);
            });
        }
    }
}

/// The parts of a request the endpoint looks at.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    method: Method,
    /// The path without the query string.
    path: String,
    /// The `Accept` header asks for OpenMetrics.
    wants_openmetrics: bool,
    /// An HTTP/1.0 request: no chunked answer.
    http10: bool,
    /// `Accept-Encoding` accepts gzip.
    gzip: bool,
}

#[derive(Debug, PartialEq, Eq)]
enum Method {
    Get,
    Head,
    Other,
}

/// Why a request head was refused.
#[derive(Debug, PartialEq, Eq)]
enum HeadError {
    /// Not a well-formed HTTP/1.x request head.
    Malformed,
    /// Longer than the limit without ending.
    TooLarge,
    /// The peer closed the connection before the head ended.
    Closed,
    /// The head did not arrive in time.
    TimedOut,
}

async fn handle(
    mut stream: TcpStream,
    metrics: &Metrics,
    readiness: &Readiness,
    limits: ServerLimits,
) {
    let head = tokio::time::timeout(
        limits.read_timeout,
        read_head(&mut stream, limits.max_head_bytes),
    )
    .await
    .unwrap_or(Err(HeadError::TimedOut));
    let request = head.and_then(|bytes| parse_head(&bytes));
    let http10 = request.as_ref().is_ok_and(|r| r.http10);
    let response = match request {
        Ok(request) => route(&request, readiness, &metrics.status_board()),
        Err(HeadError::Closed) => return,
        Err(HeadError::Malformed) => Response::text(400, "bad request\n"),
        Err(HeadError::TooLarge) => Response::text(431, "request head too large\n"),
        Err(HeadError::TimedOut) => Response::text(408, "request timed out\n"),
    };
    let written = match response.body {
        Body::Exposition { openmetrics, gzip } => {
            let head = response.head(Framing::streamed(http10));
            let body = (!response.head_only).then_some(openmetrics);
            send_exposition(
                &mut stream,
                metrics,
                &head,
                body,
                Transfer { http10, gzip },
                limits.write_timeout,
            )
            .await
        }
        Body::Bytes(_) => write_within(limits.write_timeout, &mut stream, &response.bytes()).await,
    };
    let written = match written {
        Ok(()) => tokio::time::timeout(limits.write_timeout, stream.shutdown())
            .await
            .map_err(|_| ())
            .and_then(|r| r.map_err(|_| ())),
        Err(()) => Err(()),
    };
    if written.is_err() {
        tracing::debug!("metrics endpoint: could not send the answer");
        return;
    }
    // Read what the client may still be sending (e.g. the rest of an oversized
    // head) before closing, so the kernel does not answer it with a reset that
    // could destroy the response in flight. Bounded in bytes and time.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let mut sink = [0u8; 4096];
        let mut drained = 0usize;
        while drained < 64 * 1024 {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => drained += n,
            }
        }
    })
    .await;
}

/// Writes `bytes` within `timeout`.
async fn write_within(timeout: Duration, stream: &mut TcpStream, bytes: &[u8]) -> Result<(), ()> {
    match tokio::time::timeout(timeout, stream.write_all(bytes)).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

/// How the exposition's bytes travel.
#[derive(Clone, Copy)]
struct Transfer {
    /// Raw until the connection closes, not chunked.
    http10: bool,
    /// gzip-compressed.
    gzip: bool,
}

/// The pieces of the exposition as they are to be sent.
enum Pieces {
    /// The text as the encoder hands it over.
    Plain(mpsc::Receiver<String>),
    /// The compressor's output.
    Gzip(mpsc::Receiver<Vec<u8>>),
}

impl Pieces {
    async fn next(&mut self) -> Option<Vec<u8>> {
        match self {
            Pieces::Plain(rx) => rx.recv().await.map(String::into_bytes),
            Pieces::Gzip(rx) => rx.recv().await,
        }
    }
}

/// Compresses the encoder's pieces from `rx` into gzip pieces to `tx`, on a
/// blocking thread. The gzip trailer is sent only once `encoder` ended well, so
/// a failed encoding never looks like a whole (shorter) answer. An error
/// means the answer was not sent whole.
fn gzip_pieces(
    mut rx: mpsc::Receiver<String>,
    tx: mpsc::Sender<Vec<u8>>,
    encoder: tokio::task::JoinHandle<Result<(), std::fmt::Error>>,
    runtime: tokio::runtime::Handle,
) -> Result<(), ()> {
    use std::io::Write as _;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    while let Some(piece) = rx.blocking_recv() {
        gz.write_all(piece.as_bytes()).map_err(|_| ())?;
        if !gz.get_ref().is_empty() {
            tx.blocking_send(std::mem::take(gz.get_mut()))
                .map_err(|_| ())?;
        }
    }
    if !matches!(runtime.block_on(encoder), Ok(Ok(()))) {
        return Err(());
    }
    let rest = gz.finish().map_err(|_| ())?;
    tx.blocking_send(rest).map_err(|_| ())
}

/// Writes `head`, then, unless `openmetrics` is `None` (a HEAD request), the
/// exposition piece by piece as a blocking thread encodes it (and, for
/// gzip, another compresses it): as chunks, or raw for an HTTP/1.0 request.
/// Each write gets `timeout`. Returning early drops the receiver, which ends
/// the encoding at its next piece.
async fn send_exposition(
    stream: &mut TcpStream,
    metrics: &Metrics,
    head: &[u8],
    openmetrics: Option<bool>,
    transfer: Transfer,
    timeout: Duration,
) -> Result<(), ()> {
    let http10 = transfer.http10;
    write_within(timeout, stream, head).await?;
    let Some(openmetrics) = openmetrics else {
        return Ok(());
    };
    // One piece in the channel, one being written, one being filled.
    let (tx, rx) = mpsc::channel::<String>(1);
    let encoder = {
        let metrics = metrics.clone();
        tokio::task::spawn_blocking(move || metrics.stream_exposition(openmetrics, tx))
    };
    // The task whose success means the whole answer was handed over.
    let (mut pieces, finished) = if transfer.gzip {
        let (ztx, zrx) = mpsc::channel::<Vec<u8>>(1);
        let runtime = tokio::runtime::Handle::current();
        let compressor =
            tokio::task::spawn_blocking(move || gzip_pieces(rx, ztx, encoder, runtime));
        let finished = tokio::spawn(async move { matches!(compressor.await, Ok(Ok(()))) });
        (Pieces::Gzip(zrx), finished)
    } else {
        let finished = tokio::spawn(async move { matches!(encoder.await, Ok(Ok(()))) });
        (Pieces::Plain(rx), finished)
    };
    while let Some(piece) = pieces.next().await {
        if piece.is_empty() {
            // A zero-size chunk would end the body.
            continue;
        }
        if http10 {
            write_within(timeout, stream, &piece).await?;
        } else {
            let size = format!("{:x}\r\n", piece.len());
            write_within(timeout, stream, size.as_bytes()).await?;
            write_within(timeout, stream, &piece).await?;
            write_within(timeout, stream, b"\r\n").await?;
        }
    }
    // The sender is gone: the encoding ended. If it failed, end without the
    // last chunk, so that the scraper sees a cut answer, not a short one.
    if !finished.await.unwrap_or(false) {
        tracing::debug!("metrics endpoint: the exposition could not be encoded");
        return Err(());
    }
    if http10 {
        return Ok(());
    }
    write_within(timeout, stream, b"0\r\n\r\n").await
}

/// Reads until the blank line ending the head; never buffers more than
/// `max` bytes plus one read.
async fn read_head(stream: &mut TcpStream, max: usize) -> Result<Vec<u8>, HeadError> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|_| HeadError::Closed)?;
        if n == 0 {
            return Err(if head.is_empty() {
                HeadError::Closed
            } else {
                HeadError::Malformed
            });
        }
        let searched_from = head.len().saturating_sub(3);
        head.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if let Some(end) = find_head_end(head.get(searched_from..).unwrap_or_default()) {
            head.truncate(searched_from + end);
            return Ok(head);
        }
        if head.len() > max {
            return Err(HeadError::TooLarge);
        }
    }
}

/// The offset just past `\r\n\r\n` (or a bare `\n\n`, which HTTP tolerates).
fn find_head_end(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| p + 4);
    let lf = bytes.windows(2).position(|w| w == b"\n\n").map(|p| p + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn parse_head(head: &[u8]) -> Result<Request, HeadError> {
    let text = std::str::from_utf8(head).map_err(|_| HeadError::Malformed)?;
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let request_line = lines.next().ok_or(HeadError::Malformed)?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed);
    };
    let is_token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic());
    if !is_token(method) || !target.starts_with('/') || !matches!(version, "HTTP/1.0" | "HTTP/1.1")
    {
        return Err(HeadError::Malformed);
    }
    let mut wants_openmetrics = false;
    let mut gzip = false;
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or(HeadError::Malformed)?;
        let name = name.trim();
        if name.eq_ignore_ascii_case("accept") && value.contains("application/openmetrics-text") {
            wants_openmetrics = true;
        }
        if name.eq_ignore_ascii_case("accept-encoding") {
            gzip |= accepts_gzip(value);
        }
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    Ok(Request {
        method: match method {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            _ => Method::Other,
        },
        path: path.to_string(),
        wants_openmetrics,
        http10: version == "HTTP/1.0",
        gzip,
    })
}

/// Whether an `Accept-Encoding` value accepts gzip: a `gzip` (or `x-gzip`)
/// coding whose `q` is not 0. A bare `*` is not taken as a request to
/// compress.
fn accepts_gzip(value: &str) -> bool {
    value.split(',').any(|coding| {
        let mut parts = coding.split(';').map(str::trim);
        let name = parts.next().unwrap_or_default();
        let refused = parts.any(|p| {
            p.split_once('=').is_some_and(|(k, v)| {
                k.trim().eq_ignore_ascii_case("q")
                    && v.trim().parse::<f64>().is_ok_and(|q| q <= 0.0)
            })
        });
        (name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip")) && !refused
    })
}

fn route(request: &Request, readiness: &Readiness, status: &StatusBoard) -> Response {
    let known = matches!(
        request.path.as_str(),
        "/metrics" | "/healthz" | "/readyz" | "/status"
    );
    if !known {
        return Response::text(404, "not found\n");
    }
    if request.method == Method::Other {
        return Response::text(405, "only GET and HEAD are allowed\n").allow();
    }
    let mut response = match request.path.as_str() {
        "/metrics" => Response {
            status: 200,
            content_type: if request.wants_openmetrics {
                OPENMETRICS_CONTENT_TYPE
            } else {
                PROMETHEUS_CONTENT_TYPE
            },
            // Encoded while it is sent (`send_exposition`).
            body: Body::Exposition {
                openmetrics: request.wants_openmetrics,
                gzip: request.gzip,
            },
            allow: false,
            head_only: false,
        },
        "/healthz" => Response::text(200, "ok\n"),
        "/status" => match status.document() {
            Some(json) => Response {
                status: 200,
                content_type: JSON,
                body: Body::Bytes(json.into_bytes()),
                allow: false,
                head_only: false,
            },
            None => Response::text(
                503,
                "no status yet: the status pass is off (mm2-checkpoint.status.interval.ms = 0) or its first pass has not finished\n",
            ),
        },
        _ => match readiness.status() {
            Ok(()) => Response::text(200, "ready\n"),
            Err(reasons) => Response::text(503, format!("not ready\n{reasons}\n")),
        },
    };
    response.head_only = request.method == Method::Head;
    response
}

struct Response {
    status: u16,
    content_type: &'static str,
    body: Body,
    allow: bool,
    head_only: bool,
}

/// What follows the head of an answer.
enum Body {
    /// A small answer, sent whole with its length.
    Bytes(Vec<u8>),
    /// The metrics exposition, encoded (and gzip-compressed if `gzip`) while
    /// it is sent.
    Exposition { openmetrics: bool, gzip: bool },
}

/// How the end of the body is marked.
#[derive(Clone, Copy)]
enum Framing {
    /// `Content-Length`.
    Length(usize),
    /// `Transfer-Encoding: chunked` (HTTP/1.1).
    Chunked,
    /// The connection's end (HTTP/1.0, which has no chunked encoding).
    Close,
}

impl Framing {
    /// The framing of a body of unknown length.
    fn streamed(http10: bool) -> Self {
        if http10 {
            Framing::Close
        } else {
            Framing::Chunked
        }
    }
}

impl Response {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: TEXT,
            body: Body::Bytes(body.into().into_bytes()),
            allow: false,
            head_only: false,
        }
    }

    fn allow(mut self) -> Self {
        self.allow = true;
        self
    }

    /// The whole answer of a [`Body::Bytes`]: head and (unless HEAD) body.
    fn bytes(&self) -> Vec<u8> {
        let body = match &self.body {
            Body::Bytes(body) => body.as_slice(),
            Body::Exposition { .. } => &[],
        };
        let mut bytes = self.head(Framing::Length(body.len()));
        if !self.head_only {
            bytes.extend_from_slice(body);
        }
        bytes
    }

    /// The status line and headers, blank line included.
    fn head(&self, framing: Framing) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            431 => "Request Header Fields Too Large",
            503 => "Service Unavailable",
            _ => "Internal Server Error",
        };
        let framing = match framing {
            Framing::Length(length) => format!("Content-Length: {length}\r\n"),
            Framing::Chunked => "Transfer-Encoding: chunked\r\n".to_string(),
            Framing::Close => String::new(),
        };
        let encoding = match self.body {
            Body::Exposition { gzip: true, .. } => "Content-Encoding: gzip\r\n",
            _ => "",
        };
        let mut out = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\n{encoding}{framing}Connection: close\r\n",
            self.status, self.content_type,
        );
        if self.allow {
            out.push_str("Allow: GET, HEAD\r\n");
        }
        out.push_str("\r\n");
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests;
