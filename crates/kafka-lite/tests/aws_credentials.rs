//! The AWS credential chain of AWS_MSK_IAM against credential endpoints
//! served by the test itself (real HTTP servers on loopback, answering like
//! AWS): STS AssumeRole (signature checked) and AssumeRoleWithWebIdentity,
//! the ECS/EKS container endpoint with its authorization token, and IMDSv2
//! (session token first). Also the environment and shared-file providers,
//! the chain's order, expiry and refresh, and that no secret reaches an
//! error. See docs/configuration.md, "AWS MSK IAM".

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use kafka_lite::aws::credentials::{AwsEnvironment, ChainOptions, CredentialChain};
use kafka_lite::aws::sigv4::{self, AmzDate, Scope};
use kafka_lite::{HttpClientConfig, Secret};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A request as the test server received it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    /// Header names lowercased.
    headers: BTreeMap<String, String>,
    body: String,
}

type Route = Box<dyn Fn(&Seen) -> (u16, String) + Send + Sync>;

/// An HTTP/1.1 server on a loopback port: every request is recorded and
/// answered by `route`.
struct Server {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start(route: Route) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let route = Arc::new(route);
        tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    return;
                };
                let log = log.clone();
                let route = route.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    let head_end = loop {
                        let n = stream.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let mut lines = head.lines();
                    let mut first = lines.next().unwrap_or("").split(' ');
                    let method = first.next().unwrap_or("").to_string();
                    let target = first.next().unwrap_or("").to_string();
                    let headers: BTreeMap<String, String> = lines
                        .filter_map(|l| l.split_once(':'))
                        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                        .collect();
                    let length: usize = headers
                        .get("content-length")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + length {
                        let n = stream.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let seen = Seen {
                        method,
                        target,
                        headers,
                        body: String::from_utf8_lossy(&buf[head_end..]).into_owned(),
                    };
                    let (status, body) = route(&seen);
                    log.lock().unwrap().push(seen);
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Server { url, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// A fake host: variables and files given by the test.
#[derive(Debug, Default, Clone)]
struct Env {
    vars: BTreeMap<String, String>,
    files: BTreeMap<PathBuf, String>,
}

impl Env {
    fn var(mut self, k: &str, v: &str) -> Self {
        self.vars.insert(k.into(), v.into());
        self
    }
    fn file(mut self, path: &str, text: &str) -> Self {
        self.files.insert(path.into(), text.into());
        self
    }
}

impl AwsEnvironment for Env {
    fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.files
            .get(path)
            .map(|t| t.clone().into_bytes())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }
}

/// A host that is no EC2 instance and has nothing configured.
fn bare() -> Env {
    Env::default()
        .var("HOME", "/home/nobody")
        .var("AWS_EC2_METADATA_DISABLED", "true")
}

fn chain(env: Env, options: ChainOptions) -> CredentialChain {
    CredentialChain::new(options, Arc::new(env), HttpClientConfig::default()).unwrap()
}

fn iso(t: SystemTime) -> String {
    let d = AmzDate::of(t).timestamp;
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        &d[0..4],
        &d[4..6],
        &d[6..8],
        &d[9..11],
        &d[11..13],
        &d[13..15]
    )
}

fn sts_answer(action: &str, id: &str, expires: SystemTime) -> String {
    format!(
        "<{action}Response xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><{action}Result>\
         <Credentials><AccessKeyId>{id}</AccessKeyId><SecretAccessKey>secret-of-{id}\
         </SecretAccessKey><SessionToken>token-of-{id}</SessionToken><Expiration>{}</Expiration>\
         </Credentials></{action}Result></{action}Response>",
        iso(expires)
    )
}

fn form(body: &str) -> BTreeMap<String, String> {
    body.split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.replace("%3A", ":").replace("%2F", "/")))
        .collect()
}

#[tokio::test]
async fn environment_variables_come_first_and_profiles_are_read_from_the_shared_files() {
    let files = bare()
        .file(
            "/home/nobody/.aws/credentials",
            "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s-default\n\
             [prod]\naws_access_key_id=AKIDPROD\naws_secret_access_key=s-prod\naws_session_token=t-prod\n",
        )
        .file(
            "/home/nobody/.aws/config",
            "[profile cfg]\naws_access_key_id = AKIDCFG\naws_secret_access_key = s-cfg\n\
             [profile sso]\nsso_session = corp\n",
        );
    let env_keys = files
        .clone()
        .var("AWS_ACCESS_KEY_ID", "AKIDENV")
        .var("AWS_SECRET_ACCESS_KEY", "s-env")
        .var("AWS_SESSION_TOKEN", "t-env");
    let c = chain(env_keys.clone(), ChainOptions::default())
        .resolve()
        .await
        .unwrap();
    assert_eq!(c.access_key_id, "AKIDENV");
    assert_eq!(c.session_token.as_ref().map(Secret::expose), Some("t-env"));
    // awsProfileName comes before the default chain (environment included).
    let options = ChainOptions {
        profile: Some("prod".into()),
        ..ChainOptions::default()
    };
    let c = chain(env_keys, options).resolve().await.unwrap();
    assert_eq!(c.access_key_id, "AKIDPROD");
    assert_eq!(c.session_token.as_ref().map(Secret::expose), Some("t-prod"));
    let c = chain(files.clone(), ChainOptions::default())
        .resolve()
        .await
        .unwrap();
    assert_eq!(c.access_key_id, "AKIDDEFAULT");
    let c = chain(
        files.clone().var("AWS_PROFILE", "cfg"),
        ChainOptions::default(),
    )
    .resolve()
    .await
    .unwrap();
    assert_eq!(c.access_key_id, "AKIDCFG");
    // A profile that needs what is not supported says so; nothing left.
    let e = chain(
        files.clone().var("AWS_PROFILE", "sso"),
        ChainOptions::default(),
    )
    .resolve()
    .await
    .unwrap_err();
    assert!(e.detail.contains("sso_session"), "{e}");
    assert!(!e.to_string().contains("s-default"), "{e}");
    // Half the environment pair is an error, not silently skipped.
    let e = chain(
        bare().var("AWS_ACCESS_KEY_ID", "AKIDENV"),
        ChainOptions::default(),
    )
    .resolve()
    .await
    .unwrap_err();
    assert!(e.detail.contains("without AWS_SECRET_ACCESS_KEY"), "{e}");
}

#[tokio::test]
async fn aws_role_arn_assumes_the_role_through_sts_with_a_valid_signature() {
    let expires = SystemTime::now() + Duration::from_secs(3600);
    let sts = Server::start(Box::new(move |_| {
        (200, sts_answer("AssumeRole", "ASIAROLE", expires))
    }))
    .await;
    let env = bare()
        .var("AWS_ACCESS_KEY_ID", "AKIDSOURCE")
        .var("AWS_SECRET_ACCESS_KEY", "source-secret")
        .var("AWS_ENDPOINT_URL_STS", &sts.url);
    let options = ChainOptions {
        role_arn: Some("arn:aws:iam::123456789012:role/mm2".into()),
        role_session_name: Some("mm2-session".into()),
        role_external_id: Some("ext-1".into()),
        sts_region: Some("eu-west-1".into()),
        ..ChainOptions::default()
    };
    let c = chain(env, options).resolve().await.unwrap();
    assert_eq!(c.access_key_id, "ASIAROLE");
    assert_eq!(c.secret_access_key.expose(), "secret-of-ASIAROLE");
    assert_eq!(
        c.session_token.as_ref().map(Secret::expose),
        Some("token-of-ASIAROLE")
    );
    assert!(c.expires_at.is_some());

    let seen = sts.seen();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!((r.method.as_str(), r.target.as_str()), ("POST", "/"));
    let params = form(&r.body);
    assert_eq!(params["Action"], "AssumeRole");
    assert_eq!(params["Version"], "2011-06-15");
    assert_eq!(params["RoleArn"], "arn:aws:iam::123456789012:role/mm2");
    assert_eq!(params["RoleSessionName"], "mm2-session");
    assert_eq!(params["ExternalId"], "ext-1");
    // The server checks the SigV4 signature as STS would: it recomputes it
    // from what it received, with the source secret.
    let auth = &r.headers["authorization"];
    let amz_date = &r.headers["x-amz-date"];
    let (_, rest) = auth.split_once("Credential=").expect("credential");
    let (credential, rest) = rest.split_once(", SignedHeaders=").unwrap();
    let (signed, signature) = rest.split_once(", Signature=").unwrap();
    let day = &amz_date[..8];
    assert_eq!(
        credential,
        format!("AKIDSOURCE/{day}/eu-west-1/sts/aws4_request")
    );
    let date = AmzDate {
        timestamp: amz_date.clone(),
        day: day.to_string(),
    };
    let headers = signed
        .split(';')
        .map(|h| (h.to_string(), r.headers[h].clone()))
        .collect();
    let expected = sigv4::sign(
        &sigv4::Request {
            method: "POST",
            path: "/",
            query: Vec::new(),
            headers,
            payload_hash: sigv4::sha256_hex(r.body.as_bytes()),
        },
        &Scope {
            region: "eu-west-1",
            service: "sts",
            date: &date,
        },
        "source-secret",
    );
    assert_eq!(signed, "content-type;host;x-amz-date");
    assert_eq!(signature, expected.signature);
}

#[tokio::test]
async fn web_identity_tokens_are_exchanged_at_sts_and_refused_ones_are_named() {
    let expires = SystemTime::now() + Duration::from_secs(3600);
    let sts = Server::start(Box::new(move |r| {
        if form(&r.body).get("WebIdentityToken").map(String::as_str) == Some("eyJ.good.jwt") {
            (
                200,
                sts_answer("AssumeRoleWithWebIdentity", "ASIAIRSA", expires),
            )
        } else {
            (
                400,
                "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>\
                 <Message>Token is expired</Message></Error></ErrorResponse>"
                    .into(),
            )
        }
    }))
    .await;
    let env = |token: &str| {
        bare()
            .var("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/secrets/eks/token")
            .var("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/irsa")
            .var("AWS_ROLE_SESSION_NAME", "pod-1")
            .var("AWS_ENDPOINT_URL_STS", &sts.url)
            .file("/var/run/secrets/eks/token", token)
    };
    let c = chain(env("eyJ.good.jwt\n"), ChainOptions::default())
        .resolve()
        .await
        .unwrap();
    assert_eq!(c.access_key_id, "ASIAIRSA");
    let r = &sts.seen()[0];
    let params = form(&r.body);
    assert_eq!(params["Action"], "AssumeRoleWithWebIdentity");
    assert_eq!(params["RoleArn"], "arn:aws:iam::123456789012:role/irsa");
    assert_eq!(params["RoleSessionName"], "pod-1");
    assert!(
        !r.headers.contains_key("authorization"),
        "the call is not signed"
    );

    let e = chain(env("eyJ.old.jwt"), ChainOptions::default())
        .resolve()
        .await
        .unwrap_err();
    assert!(
        e.detail.contains("InvalidIdentityToken") && e.detail.contains("Token is expired"),
        "{e}"
    );
    assert!(!e.to_string().contains("eyJ.old.jwt"), "{e}");
}

/// Without `AWS_ROLE_SESSION_NAME`, a web-identity session is named by the
/// caller's prefix and the time (kafka-lite's own name when none is given).
#[tokio::test]
async fn a_web_identity_session_without_a_name_takes_the_callers_prefix() {
    let expires = SystemTime::now() + Duration::from_secs(3600);
    let sts = Server::start(Box::new(move |_| {
        (
            200,
            sts_answer("AssumeRoleWithWebIdentity", "ASIAIRSA", expires),
        )
    }))
    .await;
    let env = bare()
        .var("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/secrets/eks/token")
        .var("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/irsa")
        .var("AWS_ENDPOINT_URL_STS", &sts.url)
        .file("/var/run/secrets/eks/token", "eyJ.good.jwt");
    let named = ChainOptions {
        web_identity_session_prefix: Some("mm2-checkpoint".into()),
        ..ChainOptions::default()
    };
    for (options, prefix) in [
        (named, "mm2-checkpoint-"),
        (ChainOptions::default(), "kafka-lite-"),
    ] {
        chain(env.clone(), options).resolve().await.unwrap();
        let seen = sts.seen();
        let params = form(&seen.last().expect("an STS call").body);
        let name = &params["RoleSessionName"];
        let secs = name
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{name}"));
        assert!(
            secs.parse::<u64>().is_ok_and(|s| s > 1_600_000_000),
            "{name}"
        );
    }
}

#[tokio::test]
async fn container_credentials_send_the_authorization_token_from_its_file() {
    let expires = SystemTime::now() + Duration::from_secs(3600);
    let endpoint = Server::start(Box::new(move |r| {
        if r.headers.get("authorization").map(String::as_str) != Some("pod-identity-token") {
            return (401, "{\"message\":\"bad token\"}".into());
        }
        (
            200,
            format!(
                "{{\"AccessKeyId\":\"ASIAPOD\",\"SecretAccessKey\":\"pod-secret\",\
                 \"Token\":\"pod-session\",\"Expiration\":\"{}\"}}",
                iso(expires)
            ),
        )
    }))
    .await;
    let env = bare()
        .var(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            &format!("{}/v1/credentials", endpoint.url),
        )
        .var(
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
            "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token",
        )
        .file(
            "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token",
            "pod-identity-token\n",
        );
    let c = chain(env.clone(), ChainOptions::default())
        .resolve()
        .await
        .unwrap();
    assert_eq!(c.access_key_id, "ASIAPOD");
    assert_eq!(c.secret_access_key.expose(), "pod-secret");
    assert_eq!(
        c.session_token.as_ref().map(Secret::expose),
        Some("pod-session")
    );
    assert_eq!(endpoint.seen()[0].target, "/v1/credentials");

    let wrong = env.clone().file(
        "/var/run/secrets/pods.eks.amazonaws.com/serviceaccount/eks-pod-identity-token",
        "stale",
    );
    let e = chain(wrong, ChainOptions::default())
        .resolve()
        .await
        .unwrap_err();
    assert!(e.detail.contains("HTTP 401"), "{e}");
    // Plain http to anything but the known addresses is refused.
    let e = chain(
        bare().var(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "http://10.1.2.3/creds",
        ),
        ChainOptions::default(),
    )
    .resolve()
    .await
    .unwrap_err();
    assert!(e.detail.contains("plain http is allowed only"), "{e}");
}

#[tokio::test]
async fn imdsv2_takes_a_session_token_first_and_credentials_are_refreshed_before_expiry() {
    // Credentials that expire in 2 minutes: inside the 5-minute refresh
    // margin, so every resolve fetches again; then ones that last an hour,
    // which are kept.
    let lifetime = Arc::new(Mutex::new(Duration::from_secs(120)));
    let serial = Arc::new(Mutex::new(0u32));
    let (l, n) = (lifetime.clone(), serial.clone());
    let imds = Server::start(Box::new(move |r| match (r.method.as_str(), r.target.as_str()) {
        ("PUT", "/latest/api/token") => {
            if r.headers.get("x-aws-ec2-metadata-token-ttl-seconds").map(String::as_str)
                == Some("21600")
            {
                (200, "imds-session-token".into())
            } else {
                (400, String::new())
            }
        }
        (_, _) if r.headers.get("x-aws-ec2-metadata-token").map(String::as_str)
            != Some("imds-session-token") =>
        {
            (401, String::new())
        }
        ("GET", "/latest/meta-data/iam/security-credentials/") => (200, "mm2-role\n".into()),
        ("GET", "/latest/meta-data/iam/security-credentials/mm2-role") => {
            let mut n = n.lock().unwrap();
            *n += 1;
            let expires = SystemTime::now() + *l.lock().unwrap();
            (
                200,
                format!(
                    "{{\"Code\":\"Success\",\"Type\":\"AWS-HMAC\",\"AccessKeyId\":\"ASIAEC2{n}\",\
                     \"SecretAccessKey\":\"ec2-secret\",\"Token\":\"ec2-token\",\
                     \"Expiration\":\"{}\"}}",
                    iso(expires)
                ),
            )
        }
        _ => (404, String::new()),
    }))
    .await;
    let env = Env::default()
        .var("HOME", "/home/nobody")
        .var("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.url);
    let chain = chain(env, ChainOptions::default());
    let first = chain.resolve().await.unwrap();
    assert_eq!(first.access_key_id, "ASIAEC21");
    let seen = imds.seen();
    assert_eq!(
        seen.iter()
            .map(|r| (r.method.as_str(), r.target.as_str()))
            .collect::<Vec<_>>(),
        [
            ("PUT", "/latest/api/token"),
            ("GET", "/latest/meta-data/iam/security-credentials/"),
            ("GET", "/latest/meta-data/iam/security-credentials/mm2-role"),
        ]
    );
    let second = chain.resolve().await.unwrap();
    assert_eq!(
        second.access_key_id, "ASIAEC22",
        "refreshed: expiry inside the margin"
    );
    *lifetime.lock().unwrap() = Duration::from_secs(3600);
    let third = chain.resolve().await.unwrap();
    assert_eq!(third.access_key_id, "ASIAEC23");
    let kept = chain.resolve().await.unwrap();
    assert_eq!(kept.access_key_id, "ASIAEC23", "kept while fresh");
    assert_eq!(*serial.lock().unwrap(), 3);
}

#[tokio::test]
async fn with_nothing_configured_the_error_lists_every_provider() {
    let e = chain(bare(), ChainOptions::default())
        .resolve()
        .await
        .unwrap_err();
    for provider in [
        "environment: not configured",
        "web identity: not configured",
        "profile `default`: not configured",
        "container credentials: not configured",
        "instance metadata (IMDSv2): not configured",
    ] {
        assert!(e.detail.contains(provider), "{provider}: {e}");
    }
}
