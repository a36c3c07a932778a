//! A small HTTP/1.1 client for credential endpoints (OAuth token
//! endpoints; cloud credential services), over kafka-lite's own TCP and
//! rustls stack ([`crate::transport`]), so the TLS provider and trust
//! settings are the ones the broker connections use.
//!
//! One request per connection (`Connection: close`); the response body is
//! read by `Content-Length`, as chunks (`Transfer-Encoding: chunked`) or up
//! to the end of the stream, and never beyond a size limit. Connecting
//! (TCP and TLS) and reading the whole response each have a timeout. Errors
//! name the URL and never contain the request (which may carry a client
//! secret) nor, by themselves, the response body.
//!
//! Why not hyper or ureq: hyper needs hyper-util and an executor glue layer
//! for a client, ureq brings its own TLS setup (ring by default) and a
//! synchronous I/O model; both are far larger than the few hundred lines
//! one short request per token refresh needs. `httparse` parses the
//! response head.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::TlsConfig;
use crate::error::Error;
use crate::transport;

/// Largest response head (status line and headers) accepted.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// Most headers a response may have.
const MAX_HEADERS: usize = 64;

/// A URL the client can request: `https://host[:port]/path?query`, or
/// `http://` when the caller allows it.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl {
    text: String,
    tls: bool,
    host: String,
    port: u16,
    target: String,
}

impl HttpUrl {
    /// Parses `url`. User information (`user:pass@`) and fragments are
    /// refused; the error never repeats the URL's user information.
    pub fn parse(url: &str) -> Result<Self, String> {
        let (tls, rest) = if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else {
            return Err(format!("`{url}` is not an http:// or https:// URL"));
        };
        let (authority, target) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return Err(
                "URL has user information (user:password@); give credentials another way".into(),
            );
        }
        if target.contains('#') || target.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "`{url}` has a fragment, a space or a control character in its path"
            ));
        }
        let default_port = if tls { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("`{url}` has an unterminated IPv6 address"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p),
                None if after.is_empty() => None,
                None => return Err(format!("`{url}` has text after its IPv6 address")),
            };
            (host.to_string(), port)
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host.to_string(), Some(port)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(format!("`{url}` has no host"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| format!("`{url}` has a port that is not a number in 0..=65535"))?,
            None => default_port,
        };
        Ok(HttpUrl {
            text: url.to_string(),
            tls,
            host,
            port,
            target,
        })
    }

    /// Whether the URL is `https://`.
    pub fn is_https(&self) -> bool {
        self.tls
    }

    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The host name or address (IPv6 without brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The path and query, e.g. `/latest/api/token`.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The `Host` header the client sends for this URL (the port only when
    /// it is not the scheme's default), which request signing must sign.
    pub fn host_header(&self) -> String {
        let default = if self.tls { 443 } else { 80 };
        match (self.host.contains(':'), self.port == default) {
            (true, true) => format!("[{}]", self.host),
            (true, false) => format!("[{}]:{}", self.host, self.port),
            (false, true) => self.host.clone(),
            (false, false) => format!("{}:{}", self.host, self.port),
        }
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HttpUrl({})", self.text)
    }
}

/// Why an HTTP request failed. Names the URL; never contains the request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{method} {url}: {detail}")]
pub struct HttpError {
    /// The request method.
    pub method: &'static str,
    /// The URL requested.
    pub url: String,
    /// What went wrong.
    pub detail: String,
    /// Whether trying again later may succeed (connection refused or timed
    /// out), as opposed to a TLS or protocol failure.
    pub retriable: bool,
}

/// An HTTP response. Its `Debug` output leaves the body out (it may hold
/// a token).
#[derive(Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case, in order.
    pub headers: Vec<(String, String)>,
    /// The body, transfer coding removed.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first header called `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

impl fmt::Debug for HttpResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpResponse")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .finish()
    }
}

/// A request to send. Header values may be secrets (`Authorization`): they
/// are written to the wire and nowhere else.
pub struct HttpRequest<'a> {
    /// `GET`, `POST`, `PUT`.
    pub method: &'static str,
    /// Where to.
    pub url: &'a HttpUrl,
    /// Extra headers (`Host`, `Content-Length` and `Connection` are set by
    /// the client).
    pub headers: Vec<(&'static str, String)>,
    /// The body (empty for none).
    pub body: Vec<u8>,
}

impl fmt::Debug for HttpRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            )
            .field("body", &format_args!("<{} bytes>", self.body.len()))
            .finish()
    }
}

/// Settings of an [`HttpClient`].
#[derive(Debug, Clone)]
pub struct HttpClientConfig {
    /// TLS settings for `https://` URLs (the CA to trust; client
    /// certificates are not sent).
    pub tls: TlsConfig,
    /// Timeout for TCP connect plus the TLS handshake.
    pub connect_timeout: Duration,
    /// Timeout for sending the request and reading the whole response.
    pub read_timeout: Duration,
    /// Largest response body accepted.
    pub max_body_bytes: usize,
}

impl Default for HttpClientConfig {
    fn default() -> Self {
        HttpClientConfig {
            tls: TlsConfig::default(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(10),
            max_body_bytes: 1024 * 1024,
        }
    }
}

/// A small HTTP/1.1 client; see the module documentation. Cheap to clone.
#[derive(Clone)]
pub struct HttpClient {
    config: Arc<HttpClientConfig>,
    tls: Arc<rustls::ClientConfig>,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("config", &self.config)
            .finish()
    }
}

impl HttpClient {
    /// Builds the client; reads the CA file of `config.tls` now.
    pub fn new(config: HttpClientConfig) -> Result<Self, Error> {
        let tls = crate::tls::client_config(&config.tls)?;
        Ok(HttpClient {
            config: Arc::new(config),
            tls,
        })
    }

    /// Sends `request` and reads the response, whatever its status.
    pub async fn send(&self, request: HttpRequest<'_>) -> Result<HttpResponse, HttpError> {
        let url = request.url;
        let fail = |detail: String, retriable: bool| HttpError {
            method: request.method,
            url: url.to_string(),
            detail,
            retriable,
        };
        let address = url.address();
        let tls = url.is_https().then_some(&self.tls);
        let stream = transport::connect(&address, tls, self.config.connect_timeout)
            .await
            .map_err(|e| match e {
                Error::Io { source, .. } => fail(format!("cannot connect: {source}"), true),
                Error::ConnectTimeout { timeout, .. } => {
                    fail(format!("no connection within {timeout:?}"), true)
                }
                Error::Tls { detail, .. } => fail(format!("TLS failed: {detail}"), false),
                other => fail(other.to_string(), false),
            })?;
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: kafka-lite/{}\r\n",
            request.method,
            url.target,
            url.host_header(),
            env!("CARGO_PKG_VERSION")
        );
        for (name, value) in &request.headers {
            if value.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(fail(format!("header {name} has a line break"), false));
            }
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        if !request.body.is_empty() || request.method != "GET" {
            head.push_str(&format!("Content-Length: {}\r\n", request.body.len()));
        }
        head.push_str("\r\n");
        let exchange = async {
            let mut stream = stream;
            let mut message = head.into_bytes();
            message.extend_from_slice(&request.body);
            stream
                .write_all(&message)
                .await
                .map_err(|e| (format!("sending the request failed: {e}"), true))?;
            stream
                .flush()
                .await
                .map_err(|e| (format!("sending the request failed: {e}"), true))?;
            read_response(&mut stream, self.config.max_body_bytes).await
        };
        match tokio::time::timeout(self.config.read_timeout, exchange).await {
            Ok(result) => result.map_err(|(detail, retriable)| fail(detail, retriable)),
            Err(_) => Err(fail(
                format!("no complete response within {:?}", self.config.read_timeout),
                true,
            )),
        }
    }
}

type ReadError = (String, bool);

/// Reads one response from `stream`: the head, then the body per its
/// framing. Errors are (detail, retriable).
async fn read_response<S>(stream: &mut S, max_body: usize) -> Result<HttpResponse, ReadError>
where
    S: tokio::io::AsyncRead + Unpin,
{
    let io = |e: std::io::Error| (format!("reading the response failed: {e}"), true);
    let mut buffer = Vec::with_capacity(4096);
    let (status, headers, head_len) = loop {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.map_err(io)?;
        if n == 0 {
            return Err((
                format!(
                    "the server closed the connection after {} bytes, before a complete \
                     response head",
                    buffer.len()
                ),
                true,
            ));
        }
        buffer.extend_from_slice(&chunk[..n]);
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut slots);
        match response.parse(&buffer) {
            Ok(httparse::Status::Complete(len)) => {
                let status = response.code.unwrap_or(0);
                let headers: Vec<(String, String)> = response
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).trim().to_string(),
                        )
                    })
                    .collect();
                break (status, headers, len);
            }
            Ok(httparse::Status::Partial) if buffer.len() <= MAX_HEAD_BYTES => {}
            Ok(httparse::Status::Partial) => {
                return Err((
                    format!("response head is larger than {MAX_HEAD_BYTES} bytes"),
                    false,
                ));
            }
            Err(e) => return Err((format!("not an HTTP/1.x response: {e}"), false)),
        }
    };
    let mut rest = buffer.split_off(head_len);
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let chunked = find("transfer-encoding").is_some_and(|v| {
        v.to_ascii_lowercase()
            .split(',')
            .any(|c| c.trim() == "chunked")
    });
    let too_large = || {
        (
            format!("response body is larger than {max_body} bytes"),
            false,
        )
    };
    let body = if chunked {
        read_chunked(stream, rest, max_body).await?
    } else if let Some(length) = find("content-length") {
        let length: usize = length
            .parse()
            .map_err(|_| (format!("Content-Length `{length}` is not a number"), false))?;
        if length > max_body {
            return Err(too_large());
        }
        while rest.len() < length {
            let mut chunk = vec![0u8; (length - rest.len()).min(16 * 1024)];
            let n = stream.read(&mut chunk).await.map_err(io)?;
            if n == 0 {
                return Err((
                    format!(
                        "the server closed the connection after {} of {length} body bytes",
                        rest.len()
                    ),
                    true,
                ));
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        rest.truncate(length);
        rest
    } else {
        // No framing: the body runs to the end of the stream.
        loop {
            if rest.len() > max_body {
                return Err(too_large());
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.map_err(io)?;
            if n == 0 {
                break rest;
            }
            rest.extend_from_slice(&chunk[..n]);
        }
    };
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

/// Decodes a chunked body (RFC 9112 section 7.1), `pending` holding the
/// bytes already read past the head. Chunk extensions and trailers are
/// skipped.
async fn read_chunked<S>(
    stream: &mut S,
    mut pending: Vec<u8>,
    max_body: usize,
) -> Result<Vec<u8>, ReadError>
where
    S: tokio::io::AsyncRead + Unpin,
{
    let mut body = Vec::new();
    let mut more = async |pending: &mut Vec<u8>| -> Result<(), ReadError> {
        let mut chunk = [0u8; 4096];
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| (format!("reading the response failed: {e}"), true))?;
        if n == 0 {
            return Err((
                "the server closed the connection inside a chunked body".to_string(),
                true,
            ));
        }
        pending.extend_from_slice(&chunk[..n]);
        Ok(())
    };
    loop {
        // The chunk-size line.
        let line_end = loop {
            if let Some(i) = pending.windows(2).position(|w| w == b"\r\n") {
                break i;
            }
            if pending.len() > 1024 {
                return Err(("chunk-size line longer than 1024 bytes".to_string(), false));
            }
            more(&mut pending).await?;
        };
        let line = String::from_utf8_lossy(&pending[..line_end]).to_string();
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| {
            (
                format!("chunk size `{size_text}` is not hexadecimal"),
                false,
            )
        })?;
        pending.drain(..line_end + 2);
        if size == 0 {
            // Trailers up to the empty line; their content is not needed.
            return Ok(body);
        }
        if body.len().saturating_add(size) > max_body {
            return Err((
                format!("response body is larger than {max_body} bytes"),
                false,
            ));
        }
        while pending.len() < size + 2 {
            more(&mut pending).await?;
        }
        if &pending[size..size + 2] != b"\r\n" {
            return Err(("chunk not followed by CRLF".to_string(), false));
        }
        body.extend_from_slice(&pending[..size]);
        pending.drain(..size + 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpListener;

    #[test]
    fn urls_parse_with_default_and_explicit_ports() {
        let u = HttpUrl::parse("https://idp.example/oauth2/token?x=1").unwrap();
        assert!(u.is_https());
        assert_eq!(
            (u.address().as_str(), u.target.as_str()),
            ("idp.example:443", "/oauth2/token?x=1")
        );
        assert_eq!(u.host_header(), "idp.example");
        let u = HttpUrl::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(
            (u.address().as_str(), u.target.as_str()),
            ("127.0.0.1:8080", "/")
        );
        let u = HttpUrl::parse("https://[::1]:8443?q").unwrap();
        assert_eq!(
            (u.address().as_str(), u.target.as_str()),
            ("[::1]:8443", "/?q")
        );
        assert_eq!(u.host_header(), "[::1]:8443");
    }

    #[test]
    fn bad_urls_are_refused_without_user_information() {
        for bad in [
            "ftp://x/",
            "https://",
            "https://h:99999/",
            "https://h/a b",
            "https://h/#f",
        ] {
            assert!(HttpUrl::parse(bad).is_err(), "{bad}");
        }
        let err = HttpUrl::parse("https://user:hunter2@idp/").unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }

    /// Serves one connection with `answer`, returning what the client sent.
    async fn serve_once(answer: &'static [u8]) -> (HttpUrl, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url =
            HttpUrl::parse(&format!("http://{}/token", listener.local_addr().unwrap())).unwrap();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut chunk = [0u8; 4096];
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut chunk).await.unwrap();
                if n == 0 {
                    break;
                }
                seen.extend_from_slice(&chunk[..n]);
            }
            socket.write_all(answer).await.unwrap();
            socket.shutdown().await.unwrap();
            seen
        });
        (url, server)
    }

    fn client(max_body_bytes: usize) -> HttpClient {
        HttpClient::new(HttpClientConfig {
            max_body_bytes,
            read_timeout: Duration::from_secs(5),
            ..HttpClientConfig::default()
        })
        .unwrap()
    }

    fn post(url: &HttpUrl) -> HttpRequest<'_> {
        HttpRequest {
            method: "POST",
            url,
            headers: vec![("Authorization", "Basic c2VjcmV0".into())],
            body: b"grant_type=client_credentials".to_vec(),
        }
    }

    #[tokio::test]
    async fn content_length_body_is_read_and_the_request_is_well_formed() {
        let (url, server) =
            serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello").await;
        let response = client(1024).send(post(&url)).await.unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.body, b"hello");
        assert_eq!(response.header("x-a"), Some("b"));
        let sent = String::from_utf8(server.await.unwrap()).unwrap();
        assert!(sent.starts_with("POST /token HTTP/1.1\r\n"), "{sent}");
        assert!(sent.contains("Content-Length: 29\r\n"), "{sent}");
        assert!(sent.contains("Authorization: Basic c2VjcmV0\r\n"), "{sent}");
        assert!(!format!("{:?}", post(&url)).contains("c2VjcmV0"));
    }

    #[tokio::test]
    async fn chunked_and_unframed_bodies_are_read() {
        let (url, _server) = serve_once(
            b"HTTP/1.1 401 Unauthorized\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"er\r\n6\r\nror\":1\r\n0\r\n\r\n",
        )
        .await;
        let response = client(1024).send(post(&url)).await.unwrap();
        assert_eq!(response.status, 401);
        assert_eq!(response.body, b"{\"error\":1");
        let (url, _server) = serve_once(b"HTTP/1.0 200 OK\r\n\r\nto the end").await;
        assert_eq!(
            client(1024).send(post(&url)).await.unwrap().body,
            b"to the end"
        );
    }

    #[tokio::test]
    async fn oversized_truncated_and_garbage_responses_are_errors_naming_the_url() {
        let cases: [(&'static [u8], &str); 4] = [
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
                "closed the connection after 5 of 100",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n",
                "larger than 200 bytes",
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n",
                "larger than 200 bytes",
            ),
            (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x response"),
        ];
        for (answer, expected) in cases {
            let (url, _server) = serve_once(answer).await;
            let err = client(200).send(post(&url)).await.unwrap_err();
            let shown = err.to_string();
            assert!(shown.contains(expected), "{shown}");
            assert!(shown.contains(url.as_str()), "{shown}");
            assert!(!shown.contains("c2VjcmV0"), "{shown}");
        }
    }

    #[tokio::test]
    async fn refused_connection_is_retriable() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = HttpUrl::parse(&format!("https://{}/t", listener.local_addr().unwrap())).unwrap();
        drop(listener);
        let err = client(64).send(post(&url)).await.unwrap_err();
        assert!(err.retriable, "{err}");
        assert!(err.to_string().contains("cannot connect"), "{err}");
    }
}
