//! A minimal HTTP/1.1 endpoint for Prometheus scrapes and health probes.
//!
//! Only three read-only paths exist, every answer is small and each connection
//! carries one request, so a hand-written handler on a `TcpListener` is enough
//! and pulls in no HTTP stack. It defends itself instead of trusting the peer:
//! the request head is read with a size limit and a deadline, at most
//! [`ServerLimits::max_connections`] connections are served at once (more are
//! closed at once), and every answer ends with `Connection: close`.
//!
//! | path | answer |
//! |---|---|
//! | `/metrics` | every metric; OpenMetrics if the `Accept` header asks for it, else Prometheus text 0.0.4 |
//! | `/healthz` | `200 ok` while the process runs |
//! | `/readyz`  | `200 ready`, or `503` with the unmet readiness conditions |
//! | other | `404`; methods other than GET and HEAD get `405` |

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::sync::Semaphore;

use super::{Metrics, Readiness};
use crate::shutdown::ShutdownSignal;

const PROMETHEUS_CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;
const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const TEXT: &str = "text/plain; charset=utf-8";

/// Bounds that keep one misbehaving client from costing more than a little
/// memory and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerLimits {
    /// Largest accepted request head (request line and headers), in bytes.
    pub max_head_bytes: usize,
    /// Time allowed to receive the whole request head.
    pub read_timeout: Duration,
    /// Time allowed to send the answer.
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
    let response = match request {
        Ok(request) => route(&request, metrics, readiness),
        Err(HeadError::Closed) => return,
        Err(HeadError::Malformed) => Response::text(400, "bad request\n"),
        Err(HeadError::TooLarge) => Response::text(431, "request head too large\n"),
        Err(HeadError::TimedOut) => Response::text(408, "request timed out\n"),
    };
    let written = tokio::time::timeout(limits.write_timeout, async {
        stream.write_all(&response.bytes()).await?;
        stream.shutdown().await
    })
    .await;
    if !matches!(written, Ok(Ok(()))) {
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
    for line in lines.take_while(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').ok_or(HeadError::Malformed)?;
        if name.trim().eq_ignore_ascii_case("accept")
            && value.contains("application/openmetrics-text")
        {
            wants_openmetrics = true;
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
    })
}

fn route(request: &Request, metrics: &Metrics, readiness: &Readiness) -> Response {
    let known = matches!(request.path.as_str(), "/metrics" | "/healthz" | "/readyz");
    if !known {
        return Response::text(404, "not found\n");
    }
    if request.method == Method::Other {
        return Response::text(405, "only GET and HEAD are allowed\n").allow();
    }
    let mut response = match request.path.as_str() {
        "/metrics" => {
            let encoded = if request.wants_openmetrics {
                metrics
                    .encode_openmetrics()
                    .map(|body| (OPENMETRICS_CONTENT_TYPE, body))
            } else {
                metrics
                    .encode_prometheus()
                    .map(|body| (PROMETHEUS_CONTENT_TYPE, body))
            };
            match encoded {
                Ok((content_type, body)) => Response {
                    status: 200,
                    content_type,
                    body: body.into_bytes(),
                    allow: false,
                    head_only: false,
                },
                Err(_) => Response::text(500, "could not encode the metrics\n"),
            }
        }
        "/healthz" => Response::text(200, "ok\n"),
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
    body: Vec<u8>,
    allow: bool,
    head_only: bool,
}

impl Response {
    fn text(status: u16, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: TEXT,
            body: body.into().into_bytes(),
            allow: false,
            head_only: false,
        }
    }

    fn allow(mut self) -> Self {
        self.allow = true;
        self
    }

    fn bytes(&self) -> Vec<u8> {
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
        let mut out = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.status,
            self.content_type,
            self.body.len()
        );
        if self.allow {
            out.push_str("Allow: GET, HEAD\r\n");
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if !self.head_only {
            bytes.extend_from_slice(&self.body);
        }
        bytes
    }
}

#[cfg(test)]
mod tests;
