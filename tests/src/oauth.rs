//! OAUTHBEARER test helpers: RS256 tokens signed with the key `kafka up`
//! made for the clusters' `OAUTH` listener (signed by the `openssl` CLI), and
//! a real HTTPS token endpoint (client credentials grant) served by the test
//! process on tokio-rustls with a certificate made at test time.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

use crate::OAuthListener;

/// The claims of a test token.
#[derive(Debug, Clone)]
pub struct TokenClaims {
    /// `sub`.
    pub subject: String,
    /// `exp` - `iat`.
    pub lifetime: Duration,
    /// `aud` (the listener's audience unless a test wants a wrong one).
    pub audience: String,
}

/// Signs an RS256 JWT for `listener` with `claims`. Panics (test helper) if
/// `openssl` fails.
pub fn sign_token(listener: &OAuthListener, claims: &TokenClaims) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    let header = serde_json::json!({"alg": "RS256", "typ": "JWT", "kid": listener.key_id});
    let body = serde_json::json!({
        "iss": listener.issuer,
        "aud": claims.audience,
        "sub": claims.subject,
        "iat": now,
        "exp": now + claims.lifetime.as_secs(),
        "scope": "kafka",
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(body.to_string())
    );
    let mut child = Command::new("openssl")
        .args(["dgst", "-sha256", "-sign"])
        .arg(&listener.signing_key_pem)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running openssl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(signing_input.as_bytes())
        .expect("writing to openssl");
    let out = child.wait_with_output().expect("openssl output");
    assert!(
        out.status.success(),
        "openssl dgst -sign failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(out.stdout))
}

/// How the test token endpoint answers.
#[derive(Debug, Clone)]
pub struct EndpointSettings {
    /// The client id it accepts.
    pub client_id: String,
    /// The client secret it accepts.
    pub client_secret: String,
    /// Lifetime of the tokens it issues.
    pub token_lifetime: Duration,
}

/// A real HTTPS token endpoint in the test process (client credentials
/// grant, HTTP basic authentication), issuing tokens from [`sign_token`].
/// Stops when dropped.
pub struct TokenEndpoint {
    /// Where it listens.
    pub address: SocketAddr,
    /// The CA (its own self-signed certificate) a client must trust.
    pub ca_pem: PathBuf,
    issued: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TokenEndpoint {
    /// Starts the endpoint on `address` (port 0 for any free port), with a
    /// fresh certificate for `127.0.0.1` in `dir`.
    pub fn start(
        listener: &OAuthListener,
        settings: EndpointSettings,
        dir: &Path,
        address: SocketAddr,
    ) -> TokenEndpoint {
        std::fs::create_dir_all(dir).expect("endpoint dir");
        let (cert, key) = (dir.join("endpoint.pem"), dir.join("endpoint.key"));
        if !cert.exists() {
            let status = Command::new("openssl")
                .args([
                    "req",
                    "-x509",
                    "-newkey",
                    "rsa:2048",
                    "-nodes",
                    "-sha256",
                    "-days",
                    "1",
                    "-subj",
                    "/CN=127.0.0.1",
                    "-addext",
                    "subjectAltName=IP:127.0.0.1",
                    "-addext",
                    "basicConstraints=critical,CA:FALSE",
                    "-keyout",
                ])
                .arg(&key)
                .arg("-out")
                .arg(&cert)
                .stderr(Stdio::null())
                .status()
                .expect("running openssl");
            assert!(status.success(), "openssl req failed");
        }
        let tls = server_config(&cert, &key);
        let std_listener = std::net::TcpListener::bind(address).expect("binding the endpoint");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let address = std_listener.local_addr().expect("local address");
        let issued = Arc::new(AtomicUsize::new(0));
        let refused = Arc::new(AtomicUsize::new(0));
        let (stop, stopped) = oneshot::channel::<()>();
        let state = Arc::new(Serve {
            listener: listener.clone(),
            settings,
            issued: issued.clone(),
            refused: refused.clone(),
            seen_errors: Mutex::new(Vec::new()),
        });
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("endpoint runtime");
            rt.block_on(async move {
                let tcp = tokio::net::TcpListener::from_std(std_listener).expect("tokio listener");
                let acceptor = tokio_rustls::TlsAcceptor::from(tls);
                let serve = async {
                    loop {
                        let Ok((socket, _)) = tcp.accept().await else {
                            continue;
                        };
                        let acceptor = acceptor.clone();
                        let state = state.clone();
                        tokio::spawn(async move {
                            if let Ok(stream) = acceptor.accept(socket).await {
                                state.answer(stream).await;
                            }
                        });
                    }
                };
                tokio::select! {
                    _ = stopped => {}
                    _ = serve => {}
                }
            });
        });
        TokenEndpoint {
            address,
            ca_pem: cert,
            issued,
            refused,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `https://127.0.0.1:port/oauth2/token`.
    pub fn url(&self) -> String {
        format!("https://{}/oauth2/token", self.address)
    }

    /// Tokens issued so far.
    pub fn issued(&self) -> usize {
        self.issued.load(Ordering::SeqCst)
    }

    /// Requests refused (bad credentials or grant) so far.
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::SeqCst)
    }
}

impl Drop for TokenEndpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Serve {
    listener: OAuthListener,
    settings: EndpointSettings,
    issued: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
    seen_errors: Mutex<Vec<String>>,
}

impl Serve {
    async fn answer<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(&self, mut stream: S) {
        let mut request = Vec::new();
        let mut chunk = [0u8; 4096];
        let (head_end, length) = loop {
            let Ok(n) = stream.read(&mut chunk).await else {
                return;
            };
            if n == 0 {
                return;
            }
            request.extend_from_slice(&chunk[..n]);
            if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                break (end + 4, length);
            }
        };
        while request.len() < head_end + length {
            let Ok(n) = stream.read(&mut chunk).await else {
                return;
            };
            if n == 0 {
                break;
            }
            request.extend_from_slice(&chunk[..n]);
        }
        let head = String::from_utf8_lossy(&request[..head_end]).to_string();
        let body = String::from_utf8_lossy(&request[head_end..]).to_string();
        let expected = format!(
            "Basic {}",
            STANDARD.encode(format!(
                "{}:{}",
                self.settings.client_id, self.settings.client_secret
            ))
        );
        let authorized = head
            .lines()
            .any(|l| l.eq_ignore_ascii_case(&format!("authorization: {expected}")));
        let grant = body
            .split('&')
            .any(|p| p == "grant_type=client_credentials");
        let (status, answer) = if !head.starts_with("POST /oauth2/token ") || !grant {
            self.refused.fetch_add(1, Ordering::SeqCst);
            (
                "400 Bad Request",
                r#"{"error":"invalid_request","error_description":"POST a client_credentials grant"}"#
                    .to_string(),
            )
        } else if !authorized {
            self.refused.fetch_add(1, Ordering::SeqCst);
            (
                "401 Unauthorized",
                r#"{"error":"invalid_client","error_description":"client authentication failed"}"#
                    .to_string(),
            )
        } else {
            let token = sign_token(
                &self.listener,
                &TokenClaims {
                    subject: self.settings.client_id.clone(),
                    lifetime: self.settings.token_lifetime,
                    audience: self.listener.audience.clone(),
                },
            );
            self.issued.fetch_add(1, Ordering::SeqCst);
            (
                "200 OK",
                serde_json::json!({
                    "access_token": token,
                    "token_type": "Bearer",
                    "expires_in": self.settings.token_lifetime.as_secs(),
                })
                .to_string(),
            )
        };
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        );
        if let Err(e) = stream.write_all(response.as_bytes()).await {
            self.seen_errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(e.to_string());
        }
        let _ = stream.shutdown().await;
    }
}

fn server_config(cert: &Path, key: &Path) -> Arc<rustls::ServerConfig> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .expect("endpoint certificate")
        .collect::<Result<_, _>>()
        .expect("endpoint certificate PEM");
    let key = PrivateKeyDer::from_pem_file(key).expect("endpoint key");
    let provider = kafka_lite::crypto_provider().expect("crypto provider");
    Arc::new(
        rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("endpoint TLS config"),
    )
}
