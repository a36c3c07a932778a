//! The AWS credential chain the MSK IAM library uses (its
//! `MSKCredentialProvider`): first the providers its JAAS options ask for,
//! then the AWS SDK's default chain.
//!
//! 1. `awsProfileName`: that profile of the shared files.
//! 2. `awsRoleArn`: STS `AssumeRole` (session name `awsRoleSessionName`,
//!    default `aws-msk-iam-auth`; `awsRoleExternalId`), signed with the
//!    credentials of the default chain below, or with `awsRoleAccessKeyId`/
//!    `awsRoleSecretAccessKey`/`awsRoleSessionToken` when given.
//! 3. The default chain: environment variables (`AWS_ACCESS_KEY_ID`,
//!    `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`); web identity
//!    (`AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`, STS
//!    `AssumeRoleWithWebIdentity`: EKS IRSA); the shared credentials and
//!    config files (`AWS_PROFILE`, else `default`); container credentials
//!    (`AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` or `_FULL_URI`, with
//!    `AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE)`: ECS, EKS Pod Identity);
//!    EC2 instance metadata (IMDSv2), unless `AWS_EC2_METADATA_DISABLED`.
//!
//! A provider that is not configured is skipped; one that fails is noted
//! and the next one tried, as the SDK's chain does; when none gives
//! credentials the error lists why, without secrets. Temporary credentials
//! are kept until [`ChainOptions::refresh_before`] their expiry, then
//! fetched again. See docs/configuration.md, "AWS MSK IAM".

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::keys::AwsCredentials;
use super::sigv4::{self, AmzDate, Scope};
use crate::credentials::{BoxFuture, CredentialError, CredentialProvider, Secret};
use crate::http::{HttpClient, HttpClientConfig, HttpRequest, HttpResponse, HttpUrl};

/// What the chain reads from the host: environment variables and files.
/// A trait so that tests can give their own.
pub trait AwsEnvironment: Send + Sync + fmt::Debug {
    /// An environment variable, if set.
    fn var(&self, name: &str) -> Option<String>;
    /// A file's content.
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>>;
}

/// The process's own environment and file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnvironment;

impl AwsEnvironment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

/// The JAAS options of `IAMLoginModule` that choose credentials.
#[derive(Debug, Clone, Default)]
pub struct ChainOptions {
    /// `awsProfileName`.
    pub profile: Option<String>,
    /// `awsRoleArn`.
    pub role_arn: Option<String>,
    /// `awsRoleSessionName` (default `aws-msk-iam-auth`).
    pub role_session_name: Option<String>,
    /// `awsRoleExternalId`.
    pub role_external_id: Option<String>,
    /// `awsRoleAccessKeyId`, `awsRoleSecretAccessKey` and
    /// `awsRoleSessionToken`: the credentials that assume `role_arn`.
    pub role_credentials: Option<AwsCredentials>,
    /// `awsStsRegion` (default `aws-global`: `https://sts.amazonaws.com`).
    pub sts_region: Option<String>,
    /// How long before their expiry temporary credentials are fetched
    /// again (default 5 minutes, as the AWS SDK).
    pub refresh_before: Option<Duration>,
    /// `awsAddDefaultProviders=false` turns the default chain off (only the
    /// profile and role providers are tried).
    pub no_default_providers: bool,
    /// The session name of a web-identity role when `AWS_ROLE_SESSION_NAME`
    /// is unset is this prefix, a dash and the time in seconds (the caller
    /// names itself; default `kafka-lite`).
    pub web_identity_session_prefix: Option<String>,
}

/// Default [`ChainOptions::refresh_before`].
const REFRESH_BEFORE: Duration = Duration::from_secs(5 * 60);
/// The session name of `awsRoleArn` by default (the Java library's).
const DEFAULT_SESSION_NAME: &str = "aws-msk-iam-auth";
/// ECS's credential endpoint host for `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`.
const ECS_ENDPOINT: &str = "http://169.254.170.2";
/// The instance metadata service.
const IMDS_ENDPOINT: &str = "http://169.254.169.254";
/// STS API version.
const STS_VERSION: &str = "2011-06-15";

/// The credential chain; see the module documentation. Cheap to share.
pub struct CredentialChain {
    options: ChainOptions,
    env: Arc<dyn AwsEnvironment>,
    /// For STS (https, the default roots).
    http: HttpClient,
    /// For the container and instance metadata endpoints: short timeouts,
    /// as the SDK's, so that a host without them is passed over quickly.
    local_http: HttpClient,
    cached: tokio::sync::Mutex<Option<AwsCredentials>>,
}

impl fmt::Debug for CredentialChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CredentialChain")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// One step of the chain: credentials, "not configured here", or why it
/// failed (no secret in it).
type Step = Result<Option<AwsCredentials>, String>;

impl CredentialChain {
    /// A chain with `options`, reading `env`; STS is reached over `http`
    /// (its TLS settings), the metadata endpoints with 1 s to connect and 2 s
    /// to answer.
    pub fn new(
        options: ChainOptions,
        env: Arc<dyn AwsEnvironment>,
        http: HttpClientConfig,
    ) -> Result<Self, crate::Error> {
        let local = HttpClientConfig {
            connect_timeout: Duration::from_secs(1),
            read_timeout: Duration::from_secs(2),
            ..http.clone()
        };
        Ok(CredentialChain {
            options,
            env,
            http: HttpClient::new(http)?,
            local_http: HttpClient::new(local)?,
            cached: tokio::sync::Mutex::new(None),
        })
    }

    /// Credentials now: cached ones while they are fresh, else the first
    /// provider of the chain that gives some.
    pub async fn resolve(&self) -> Result<AwsCredentials, CredentialError> {
        let mut cached = self.cached.lock().await;
        let margin = self.options.refresh_before.unwrap_or(REFRESH_BEFORE);
        if let Some(c) = cached.as_ref()
            && let Some(expires) = c.expires_at
            && expires > SystemTime::now() + margin
        {
            return Ok(c.clone());
        }
        let mut tried = Vec::new();
        if let Some(profile) = &self.options.profile {
            match self.profile(profile) {
                Ok(Some(c)) => return Ok(self.keep(&mut cached, c)),
                Ok(None) => tried.push(format!("profile `{profile}`: not found")),
                Err(e) => tried.push(format!("profile `{profile}`: {e}")),
            }
        }
        if let Some(role) = &self.options.role_arn {
            let source = match &self.options.role_credentials {
                Some(c) => Ok(c.clone()),
                None => self.default_chain().await.map_err(|why| why.join("; ")),
            };
            let step = match source {
                Ok(source) => self.assume_role(role, &source).await,
                Err(why) => Err(format!("no credentials to assume it with ({why})")),
            };
            match step {
                Ok(Some(c)) => return Ok(self.keep(&mut cached, c)),
                Ok(None) => {}
                Err(e) => tried.push(format!("awsRoleArn `{role}`: {e}")),
            }
        }
        let default = if self.options.no_default_providers {
            Err(vec![
                "the default chain: off (awsAddDefaultProviders=false)".to_string(),
            ])
        } else {
            self.default_chain().await
        };
        match default {
            Ok(c) => Ok(self.keep(&mut cached, c)),
            Err(why) => {
                tried.extend(why);
                Err(CredentialError {
                    source_name: "AWS credential chain".into(),
                    detail: format!("no AWS credentials found: {}", tried.join("; ")),
                    retriable: true,
                })
            }
        }
    }

    /// Keeps `c` for later and says (at debug level, without secrets) whose
    /// credentials they are.
    fn keep(&self, cached: &mut Option<AwsCredentials>, c: AwsCredentials) -> AwsCredentials {
        tracing::debug!(
            access_key_id = %c.access_key_id,
            temporary = c.session_token.is_some(),
            "AWS credentials resolved"
        );
        *cached = Some(c.clone());
        c
    }

    /// The SDK's default chain; on failure, why each provider gave nothing.
    async fn default_chain(&self) -> Result<AwsCredentials, Vec<String>> {
        let mut why = Vec::new();
        let mut note = |name: &str, step: Step| -> Option<AwsCredentials> {
            match step {
                Ok(Some(c)) => return Some(c),
                Ok(None) => why.push(format!("{name}: not configured")),
                Err(e) => why.push(format!("{name}: {e}")),
            }
            None
        };
        if let Some(c) = note("environment", self.environment()) {
            return Ok(c);
        }
        if let Some(c) = note("web identity", self.web_identity().await) {
            return Ok(c);
        }
        let profile = self
            .env
            .var("AWS_PROFILE")
            .unwrap_or_else(|| "default".to_string());
        if let Some(c) = note(&format!("profile `{profile}`"), self.profile(&profile)) {
            return Ok(c);
        }
        if let Some(c) = note("container credentials", self.container().await) {
            return Ok(c);
        }
        if let Some(c) = note("instance metadata (IMDSv2)", self.instance_metadata().await) {
            return Ok(c);
        }
        Err(why)
    }

    fn var(&self, name: &str) -> Option<String> {
        self.env.var(name).filter(|v| !v.trim().is_empty())
    }

    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
    fn environment(&self) -> Step {
        let id = self.var("AWS_ACCESS_KEY_ID");
        let secret = self.var("AWS_SECRET_ACCESS_KEY");
        match (id, secret) {
            (None, None) => Ok(None),
            (Some(id), Some(secret)) => Ok(Some(AwsCredentials {
                access_key_id: id.trim().to_string(),
                secret_access_key: Secret::new(secret.trim()),
                session_token: self.var("AWS_SESSION_TOKEN").map(Secret::new),
                expires_at: None,
            })),
            (Some(_), None) => Err("AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY".into()),
            (None, Some(_)) => Err("AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID".into()),
        }
    }

    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }

    /// A profile of the shared credentials file (`[name]`) or config file
    /// (`[profile name]`, `[default]`); the credentials file wins.
    fn profile(&self, name: &str) -> Step {
        let credentials_file = self
            .var("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| self.home().map(|h| h.join(".aws/credentials")));
        let config_file = self
            .var("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| self.home().map(|h| h.join(".aws/config")));
        let config_section = if name == "default" {
            "default".to_string()
        } else {
            format!("profile {name}")
        };
        for (file, section) in [
            (credentials_file, name.to_string()),
            (config_file, config_section),
        ] {
            let Some(file) = file else { continue };
            let text = match self.env.read_file(&file) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
            };
            let Some(keys) = ini_section(&text, &section) else {
                continue;
            };
            let get = |k: &str| {
                keys.iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
                    .filter(|v| !v.is_empty())
            };
            match (get("aws_access_key_id"), get("aws_secret_access_key")) {
                (Some(id), Some(secret)) => {
                    return Ok(Some(AwsCredentials {
                        access_key_id: id,
                        secret_access_key: Secret::new(secret),
                        session_token: get("aws_session_token").map(Secret::new),
                        expires_at: None,
                    }));
                }
                (None, None) => {
                    let other: Vec<&str> = keys
                        .iter()
                        .map(|(k, _)| k.as_str())
                        .filter(|k| {
                            matches!(
                                *k,
                                "role_arn" | "credential_process" | "sso_session" | "sso_start_url"
                            )
                        })
                        .collect();
                    if !other.is_empty() {
                        return Err(format!(
                            "[{section}] in {} uses {}, which is not supported here; \
                             give the role as awsRoleArn, or static keys",
                            file.display(),
                            other.join(", ")
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "[{section}] in {} has only one of aws_access_key_id and \
                         aws_secret_access_key",
                        file.display()
                    ));
                }
            }
        }
        Ok(None)
    }

    /// The STS endpoint for `region` (`aws-global`: the global one), unless
    /// `AWS_ENDPOINT_URL_STS` or `AWS_ENDPOINT_URL` says otherwise (the
    /// SDKs' endpoint override, used for VPC endpoints).
    fn sts_endpoint(&self, region: &str) -> Result<HttpUrl, String> {
        let url = self
            .var("AWS_ENDPOINT_URL_STS")
            .or_else(|| self.var("AWS_ENDPOINT_URL"))
            .unwrap_or_else(|| {
                if region == "aws-global" {
                    "https://sts.amazonaws.com/".to_string()
                } else {
                    format!("https://sts.{region}.amazonaws.com/")
                }
            });
        HttpUrl::parse(url.trim()).map_err(|e| format!("STS endpoint: {e}"))
    }

    /// `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN`: STS
    /// `AssumeRoleWithWebIdentity` (unsigned; the token is the proof).
    async fn web_identity(&self) -> Step {
        let (Some(token_file), Some(role)) = (
            self.var("AWS_WEB_IDENTITY_TOKEN_FILE"),
            self.var("AWS_ROLE_ARN"),
        ) else {
            return Ok(None);
        };
        let token = self
            .env
            .read_file(Path::new(token_file.trim()))
            .map_err(|e| format!("cannot read AWS_WEB_IDENTITY_TOKEN_FILE {token_file}: {e}"))?;
        let token = String::from_utf8_lossy(&token).trim().to_string();
        let session = self.var("AWS_ROLE_SESSION_NAME").unwrap_or_else(|| {
            let prefix = self
                .options
                .web_identity_session_prefix
                .as_deref()
                .unwrap_or("kafka-lite");
            format!("{prefix}-{}", unix_seconds(SystemTime::now()))
        });
        let region = self
            .var("AWS_REGION")
            .or_else(|| self.var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "aws-global".to_string());
        let url = self.sts_endpoint(&region)?;
        let body = form(&[
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", STS_VERSION),
            ("RoleArn", &role),
            ("RoleSessionName", &session),
            ("WebIdentityToken", &token),
        ]);
        let response = self
            .send("POST", &url, vec![("Content-Type", FORM.to_string())], body)
            .await?;
        sts_credentials(&response, "AssumeRoleWithWebIdentity", &url).map(Some)
    }

    /// STS `AssumeRole` for `role`, signed with `source`.
    async fn assume_role(&self, role: &str, source: &AwsCredentials) -> Step {
        let region = self
            .options
            .sts_region
            .clone()
            .unwrap_or_else(|| "aws-global".to_string());
        let signing_region = if region == "aws-global" {
            "us-east-1"
        } else {
            region.as_str()
        };
        let url = self.sts_endpoint(&region)?;
        let session = self
            .options
            .role_session_name
            .clone()
            .unwrap_or_else(|| DEFAULT_SESSION_NAME.to_string());
        let mut params = vec![
            ("Action", "AssumeRole"),
            ("Version", STS_VERSION),
            ("RoleArn", role),
            ("RoleSessionName", session.as_str()),
        ];
        if let Some(id) = &self.options.role_external_id {
            params.push(("ExternalId", id));
        }
        let body = form(&params);
        let headers = signed_headers(
            &url,
            "POST",
            &body,
            vec![("content-type".to_string(), FORM.to_string())],
            signing_region,
            "sts",
            source,
            SystemTime::now(),
        );
        let response = self.send("POST", &url, headers, body).await?;
        sts_credentials(&response, "AssumeRole", &url).map(Some)
    }

    /// ECS / EKS Pod Identity container credentials.
    async fn container(&self) -> Step {
        let url = if let Some(relative) = self.var("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
            format!("{ECS_ENDPOINT}{}", relative.trim())
        } else if let Some(full) = self.var("AWS_CONTAINER_CREDENTIALS_FULL_URI") {
            full.trim().to_string()
        } else {
            return Ok(None);
        };
        let url = HttpUrl::parse(&url).map_err(|e| format!("credentials URI: {e}"))?;
        if !url.is_https() && !container_host_allowed(url.host()) {
            return Err(format!(
                "{url}: plain http is allowed only to loopback and the ECS/EKS credential \
                 addresses (169.254.170.2, 169.254.170.23, fd00:ec2::23)"
            ));
        }
        let token = match self.var("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
            Some(file) => Some(
                self.env
                    .read_file(Path::new(file.trim()))
                    .map(|b| String::from_utf8_lossy(&b).trim().to_string())
                    .map_err(|e| {
                        format!("cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {file}: {e}")
                    })?,
            ),
            None => self.var("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
        };
        let mut headers = vec![("Accept", "application/json".to_string())];
        if let Some(token) = token {
            if token.contains(['\r', '\n']) {
                return Err("the container authorization token has a line break".into());
            }
            headers.push(("Authorization", token));
        }
        let response = self.send_local("GET", &url, headers, Vec::new()).await?;
        if response.status != 200 {
            return Err(format!("{url} answered HTTP {}", response.status));
        }
        json_credentials(&response.body, &url).map(Some)
    }

    /// EC2 instance metadata, IMDSv2: a session token (PUT), the role name,
    /// then its credentials.
    async fn instance_metadata(&self) -> Step {
        if self
            .var("AWS_EC2_METADATA_DISABLED")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            return Ok(None);
        }
        let base = self
            .var("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .unwrap_or_else(|| IMDS_ENDPOINT.to_string());
        let base = base.trim().trim_end_matches('/');
        let url = |path: &str| {
            HttpUrl::parse(&format!("{base}{path}")).map_err(|e| format!("IMDS endpoint: {e}"))
        };
        let token_url = url("/latest/api/token")?;
        let response = self
            .send(
                "PUT",
                &token_url,
                vec![("X-aws-ec2-metadata-token-ttl-seconds", "21600".to_string())],
                Vec::new(),
            )
            .await?;
        if response.status != 200 {
            return Err(format!("{token_url} answered HTTP {}", response.status));
        }
        let token = String::from_utf8_lossy(&response.body).trim().to_string();
        if token.is_empty() || token.contains(['\r', '\n']) {
            return Err(format!("{token_url} gave no usable session token"));
        }
        let auth = || vec![("X-aws-ec2-metadata-token", token.clone())];
        let roles_url = url("/latest/meta-data/iam/security-credentials/")?;
        let response = self
            .send_local("GET", &roles_url, auth(), Vec::new())
            .await?;
        if response.status == 404 {
            return Err("the instance has no IAM role (instance profile)".into());
        }
        if response.status != 200 {
            return Err(format!("{roles_url} answered HTTP {}", response.status));
        }
        let body = String::from_utf8_lossy(&response.body).into_owned();
        let role = body
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .ok_or_else(|| format!("{roles_url} names no role"))?;
        if role.contains(['/', '?', '#', ' ']) {
            return Err(format!(
                "{roles_url} gave a role name that is not a path segment"
            ));
        }
        let creds_url = url(&format!(
            "/latest/meta-data/iam/security-credentials/{role}"
        ))?;
        let response = self
            .send_local("GET", &creds_url, auth(), Vec::new())
            .await?;
        if response.status != 200 {
            return Err(format!("{creds_url} answered HTTP {}", response.status));
        }
        json_credentials(&response.body, &creds_url).map(Some)
    }

    async fn send(
        &self,
        method: &'static str,
        url: &HttpUrl,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> Result<HttpResponse, String> {
        send(&self.http, method, url, headers, body).await
    }

    async fn send_local(
        &self,
        method: &'static str,
        url: &HttpUrl,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    ) -> Result<HttpResponse, String> {
        send(&self.local_http, method, url, headers, body).await
    }
}

async fn send(
    client: &HttpClient,
    method: &'static str,
    url: &HttpUrl,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
) -> Result<HttpResponse, String> {
    client
        .send(HttpRequest {
            method,
            url,
            headers,
            body,
        })
        .await
        .map_err(|e| e.to_string())
}

/// The region to sign for when a broker's host name names none, as the
/// AWS SDK's default region chain finds it: `AWS_REGION`,
/// `AWS_DEFAULT_REGION`, then `region` of the profile (`AWS_PROFILE`, else
/// `default`) in the shared config file.
pub fn default_region(env: &dyn AwsEnvironment) -> Option<String> {
    let var = |name: &str| {
        env.var(name)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    if let Some(region) = var("AWS_REGION").or_else(|| var("AWS_DEFAULT_REGION")) {
        return Some(region);
    }
    let profile = var("AWS_PROFILE").unwrap_or_else(|| "default".to_string());
    let file = var("AWS_CONFIG_FILE")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".aws/config")))?;
    let text = String::from_utf8_lossy(&env.read_file(&file).ok()?).into_owned();
    let section = if profile == "default" {
        profile
    } else {
        format!("profile {profile}")
    };
    ini_section(&text, &section)?
        .into_iter()
        .find(|(k, v)| k == "region" && !v.is_empty())
        .map(|(_, v)| v)
}

impl CredentialProvider<AwsCredentials> for CredentialChain {
    fn credential(&self) -> BoxFuture<'_, Result<AwsCredentials, CredentialError>> {
        Box::pin(self.resolve())
    }
}

const FORM: &str = "application/x-www-form-urlencoded; charset=utf-8";

fn unix_seconds(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `application/x-www-form-urlencoded` body of an STS request.
fn form(params: &[(&str, &str)]) -> Vec<u8> {
    sigv4::encode_pairs(params.iter().copied()).into_bytes()
}

/// Headers for a SigV4 header-signed request to `url`: `extra` plus
/// `x-amz-date`, `x-amz-security-token` (temporary credentials) and
/// `Authorization`. `Host` is signed as the client sends it.
#[allow(clippy::too_many_arguments)]
pub fn signed_headers(
    url: &HttpUrl,
    method: &str,
    body: &[u8],
    extra: Vec<(String, String)>,
    region: &str,
    service: &str,
    credentials: &AwsCredentials,
    now: SystemTime,
) -> Vec<(&'static str, String)> {
    let date = AmzDate::of(now);
    let (path, query) = match url.target().split_once('?') {
        Some((p, q)) => (p, q),
        None => (url.target(), ""),
    };
    let query: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_string(), v.to_string())
        })
        .collect();
    let mut headers = extra.clone();
    headers.push(("host".into(), url.host_header()));
    headers.push(("x-amz-date".into(), date.timestamp.clone()));
    if let Some(token) = &credentials.session_token {
        headers.push(("x-amz-security-token".into(), token.expose().to_string()));
    }
    let scope = Scope {
        region,
        service,
        date: &date,
    };
    let signed = sigv4::sign(
        &sigv4::Request {
            method,
            path,
            query,
            headers,
            payload_hash: sigv4::sha256_hex(body),
        },
        &scope,
        credentials.secret_access_key.expose(),
    );
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for (k, v) in extra {
        if k.eq_ignore_ascii_case("content-type") {
            out.push(("Content-Type", v));
        }
    }
    out.push(("X-Amz-Date", date.timestamp.clone()));
    if let Some(token) = &credentials.session_token {
        out.push(("X-Amz-Security-Token", token.expose().to_string()));
    }
    out.push((
        "Authorization",
        format!(
            "{} Credential={}/{}, SignedHeaders={}, Signature={}",
            sigv4::ALGORITHM,
            credentials.access_key_id,
            scope.credential_scope(),
            signed.signed_headers,
            signed.signature
        ),
    ));
    out
}

/// Hosts container credentials may be fetched from over plain http.
fn container_host_allowed(host: &str) -> bool {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return ip.is_loopback()
            || ip == std::net::IpAddr::from([169, 254, 170, 2])
            || ip == std::net::IpAddr::from([169, 254, 170, 23])
            || ip
                == "fd00:ec2::23"
                    .parse::<std::net::IpAddr>()
                    .expect("a valid IPv6 address");
    }
    host.eq_ignore_ascii_case("localhost")
}

/// Credentials from the JSON of the container and instance metadata
/// endpoints: `AccessKeyId`, `SecretAccessKey`, `Token`, `Expiration`.
fn json_credentials(body: &[u8], url: &HttpUrl) -> Result<AwsCredentials, String> {
    let json: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("{url} did not answer JSON ({e})"))?;
    if let Some(code) = json.get("Code").and_then(|c| c.as_str())
        && code != "Success"
    {
        return Err(format!("{url} answered Code `{code}`"));
    }
    let field = |k: &str| json.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let (Some(id), Some(secret)) = (field("AccessKeyId"), field("SecretAccessKey")) else {
        return Err(format!(
            "{url} answered without AccessKeyId and SecretAccessKey"
        ));
    };
    let expires_at = match field("Expiration") {
        Some(t) => Some(
            sigv4::parse_iso8601(&t)
                .ok_or_else(|| format!("{url} answered an Expiration that is not ISO 8601"))?,
        ),
        None => None,
    };
    Ok(AwsCredentials {
        access_key_id: id,
        secret_access_key: Secret::new(secret),
        session_token: field("Token").map(Secret::new),
        expires_at,
    })
}

/// The text of the first `<tag>...</tag>` in `xml` (STS answers are flat
/// enough for this; entities are decoded).
fn xml_text<'a>(xml: &'a str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let end = start + xml[start..].find(&close)?;
    let raw: &'a str = &xml[start..end];
    Some(
        raw.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&")
            .trim()
            .to_string(),
    )
}

/// Credentials from an STS `AssumeRole*` answer, or its error.
fn sts_credentials(
    response: &HttpResponse,
    action: &str,
    url: &HttpUrl,
) -> Result<AwsCredentials, String> {
    let xml = String::from_utf8_lossy(&response.body);
    if response.status != 200 {
        let code = xml_text(&xml, "Code").unwrap_or_default();
        let message = xml_text(&xml, "Message").unwrap_or_default();
        return Err(format!(
            "STS {action} at {url} answered HTTP {}: {code} {message}",
            response.status
        ));
    }
    let get = |tag: &str| xml_text(&xml, tag).filter(|v| !v.is_empty());
    let (Some(id), Some(secret), Some(token)) = (
        get("AccessKeyId"),
        get("SecretAccessKey"),
        get("SessionToken"),
    ) else {
        return Err(format!(
            "STS {action} at {url} answered without credentials"
        ));
    };
    let expires_at = get("Expiration")
        .map(|t| {
            sigv4::parse_iso8601(&t)
                .ok_or_else(|| format!("STS {action} answered an Expiration that is not ISO 8601"))
        })
        .transpose()?;
    Ok(AwsCredentials {
        access_key_id: id,
        secret_access_key: Secret::new(secret),
        session_token: Some(Secret::new(token)),
        expires_at,
    })
}

/// The keys of section `[name]` of an INI text (AWS shared files: `#` and
/// `;` comments, `key = value`, section names trimmed).
fn ini_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut in_section = false;
    let mut found = false;
    let mut keys = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[') {
            let section = section.split(']').next().unwrap_or("").trim();
            let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
            in_section = section == name;
            found |= in_section;
            continue;
        }
        if in_section && let Some((k, v)) = line.split_once('=') {
            keys.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    found.then_some(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ini_sections_are_found_with_comments_and_spacing() {
        let text = "# comment\n[default]\naws_access_key_id = A1\n\n[profile  prod ]\n\
                    ; another\nAWS_Secret_Access_Key=s=x\n[other]\nk=v\n";
        assert_eq!(
            ini_section(text, "default"),
            Some(vec![("aws_access_key_id".into(), "A1".into())])
        );
        assert_eq!(
            ini_section(text, "profile prod"),
            Some(vec![("aws_secret_access_key".into(), "s=x".into())])
        );
        assert_eq!(ini_section(text, "missing"), None);
    }

    #[test]
    fn sts_answers_and_errors_are_read_without_secrets_in_errors() {
        let url = HttpUrl::parse("https://sts.amazonaws.com/").unwrap();
        let ok = HttpResponse {
            status: 200,
            headers: Vec::new(),
            body: b"<AssumeRoleResponse><AssumeRoleResult><Credentials>\
                    <AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s&amp;1</SecretAccessKey>\
                    <SessionToken>t1</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration>\
                    </Credentials></AssumeRoleResult></AssumeRoleResponse>"
                .to_vec(),
        };
        let c = sts_credentials(&ok, "AssumeRole", &url).unwrap();
        assert_eq!(c.access_key_id, "ASIA1");
        assert_eq!(c.secret_access_key.expose(), "s&1");
        assert_eq!(c.expires_at, sigv4::parse_iso8601("2030-01-01T00:00:00Z"));
        let denied = HttpResponse {
            status: 403,
            headers: Vec::new(),
            body: b"<ErrorResponse><Error><Code>AccessDenied</Code><Message>not allowed</Message>\
                    </Error></ErrorResponse>"
                .to_vec(),
        };
        let e = sts_credentials(&denied, "AssumeRole", &url).unwrap_err();
        assert!(
            e.contains("403") && e.contains("AccessDenied") && e.contains("not allowed"),
            "{e}"
        );
    }

    #[test]
    fn plain_http_container_endpoints_are_limited_to_known_hosts() {
        for ok in [
            "127.0.0.1",
            "169.254.170.2",
            "169.254.170.23",
            "fd00:ec2::23",
            "::1",
            "localhost",
        ] {
            assert!(container_host_allowed(ok), "{ok}");
        }
        for bad in ["10.0.0.1", "example.com", "169.254.169.254"] {
            assert!(!container_host_allowed(bad), "{bad}");
        }
    }
}
