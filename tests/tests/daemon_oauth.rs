//! The daemon reaches its source cluster over SASL OAUTHBEARER on the test
//! clusters' `OAUTH` listener (JWTs checked by Kafka against the JWKS xtask
//! made; sessions re-authenticated every 10 s), with tokens from a real
//! HTTPS token endpoint served by the test (client credentials grant) or
//! from a file.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use e2e::binary::run_once;
use e2e::faults::{Daemon, free_port, get, wait_for};
use e2e::oauth::{EndpointSettings, TokenClaims, TokenEndpoint, sign_token};
use e2e::world::{World, rt};
use e2e::{Listener, OAuthListener, clusters};

const CLIENT_ID: &str = "mm2-daemon";
const SECRET: &str = "daemon-secret-Pv83";

fn oauth() -> &'static OAuthListener {
    clusters().source().oauth.as_ref().expect(
        "clusters.json has no OAUTH listener: restart the clusters with `cargo xtask kafka up`",
    )
}

fn endpoint(w: &World, lifetime: Duration, address: SocketAddr) -> TokenEndpoint {
    TokenEndpoint::start(
        oauth(),
        EndpointSettings {
            client_id: CLIENT_ID.into(),
            client_secret: SECRET.into(),
            token_lifetime: lifetime,
        },
        &w.dir.join("endpoint"),
        address,
    )
}

fn any_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// An mm2.properties whose source is reached with OAUTHBEARER at `url`
/// (`ca`: the endpoint's certificate), with `secret` and `extra` lines.
fn properties(
    w: &World,
    group: &str,
    url: &str,
    ca: Option<&Path>,
    secret: &str,
    extra: &str,
) -> std::path::PathBuf {
    let c = clusters();
    let trust = ca
        .map(|ca| {
            format!(
                " ssl.truststore.type=\"PEM\" ssl.truststore.location=\"{}\"",
                ca.display()
            )
        })
        .unwrap_or_default();
    let text = format!(
        "clusters = {s}, {t}\n\
         {s}.bootstrap.servers = {sb}\n\
         {s}.security.protocol = SASL_PLAINTEXT\n\
         {s}.sasl.mechanism = OAUTHBEARER\n\
         {s}.sasl.login.callback.handler.class = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
         {s}.sasl.oauthbearer.token.endpoint.url = {url}\n\
         {s}.sasl.jaas.config = org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
         clientId=\"{CLIENT_ID}\" clientSecret=\"{secret}\" scope=\"kafka\"{trust};\n\
         {s}.sasl.login.retry.backoff.ms = 200\n\
         {s}.sasl.login.retry.backoff.max.ms = 1000\n\
         {t}.bootstrap.servers = {tb}\n\
         {s}->{t}.enabled = true\n\
         groups = {group}\n\
         emit.checkpoints.interval.seconds = 1\n\
         admin.timeout.ms = 20000\n\
         {extra}\n",
        s = w.s,
        t = w.t,
        sb = oauth().bootstrap,
        tb = c.target().bootstrap.get(Listener::Plaintext),
    );
    let path = w.dir.join("mm2-oauth.properties");
    std::fs::write(&path, text).expect("write the config");
    path
}

#[test]
fn run_once_over_oauthbearer_writes_the_checkpoint_and_never_shows_the_secret() {
    let rt = rt();
    let w = World::new(&rt, "oauth-once", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let endpoint = endpoint(&w, Duration::from_secs(300), any_port());
    let config = properties(
        &w,
        &group,
        &endpoint.url(),
        Some(&endpoint.ca_pem),
        SECRET,
        "",
    );
    let out = run_once(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains(SECRET),
        "the client secret was logged:\n{stderr}"
    );
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 10, 13)]);
    // One token serves every connection of the run.
    assert_eq!(endpoint.issued(), 1);
    // validate shows the settings with the secret masked.
    let shown = e2e::binary::mm2(
        &["validate", "--config", config.to_str().expect("utf-8")],
        Duration::from_secs(30),
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&shown.stdout),
        String::from_utf8_lossy(&shown.stderr)
    );
    assert!(shown.status.success(), "{text}");
    assert!(text.contains("oauth client secret = [redacted]"), "{text}");
    assert!(text.contains(&endpoint.url()), "{text}");
    assert!(!text.contains(SECRET), "{text}");
}

#[test]
fn header_urlencode_sends_the_url_encoded_secret_the_endpoint_expects() {
    let rt = rt();
    let w = World::new(&rt, "oauth-urlencode", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    // An IdP that stores the secret as RFC 6749 section 2.3.1 sends it:
    // URL-encoded (written out here by hand), then base64 in the header.
    let raw = "s3cret/with+chars:1 é";
    let endpoint = TokenEndpoint::start(
        oauth(),
        EndpointSettings {
            client_id: CLIENT_ID.into(),
            client_secret: "s3cret%2Fwith%2Bchars%3A1+%C3%A9".into(),
            token_lifetime: Duration::from_secs(300),
        },
        &w.dir.join("endpoint"),
        any_port(),
    );
    let config = |extra: &str| {
        properties(
            &w,
            &group,
            &endpoint.url(),
            Some(&endpoint.ca_pem),
            raw,
            &format!("admin.timeout.ms = 5000\n{extra}"),
        )
    };
    // As sent without header.urlencode, the endpoint refuses it.
    let plain = config("");
    let out = e2e::binary::mm2(
        &["run", "--once", "--config", plain.to_str().expect("utf-8")],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains(raw), "the secret was shown:\n{stderr}");
    assert!(stderr.contains("HTTP 401: invalid_client"), "{stderr}");
    assert!(w.checkpoints(&rt).is_empty());
    // Encoded, it is accepted and the checkpoint written.
    let out = run_once(&config(&format!(
        "{}.sasl.oauthbearer.header.urlencode = true",
        w.s
    )));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(raw), "the secret was logged:\n{stderr}");
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 10, 13)]);
}

#[test]
fn a_wrong_client_secret_fails_naming_the_endpoints_answer_not_the_secret() {
    let rt = rt();
    let w = World::new(&rt, "oauth-badsecret", 1);
    let group = w.seed(&rt, &[(0, 0, 3)], &[(0, 1)]);
    let endpoint = endpoint(&w, Duration::from_secs(300), any_port());
    let wrong = "wrong-secret-Qd71";
    let config = properties(
        &w,
        &group,
        &endpoint.url(),
        Some(&endpoint.ca_pem),
        wrong,
        "admin.timeout.ms = 3000\n",
    );
    let out = e2e::binary::mm2(
        &["run", "--once", "--config", config.to_str().expect("utf-8")],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert!(
        !out.status.success(),
        "run --once succeeded with a wrong secret"
    );
    assert!(
        stderr.contains(&format!("token endpoint {}", endpoint.url())),
        "{stderr}"
    );
    assert!(stderr.contains("HTTP 401: invalid_client"), "{stderr}");
    assert!(!stderr.contains(wrong), "the secret was shown:\n{stderr}");
    assert!(w.checkpoints(&rt).is_empty());
}

#[test]
fn an_endpoint_down_at_start_is_retried_with_readyz_naming_it_then_ready() {
    let rt = rt();
    let w = World::new(&rt, "oauth-down", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let port = free_port();
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let url = format!("https://{address}/oauth2/token");
    // The endpoint's certificate is made now, so the config can name it;
    // the endpoint itself starts later.
    drop(endpoint(&w, Duration::from_secs(300), any_port()));
    let ca = w.dir.join("endpoint").join("endpoint.pem");
    let config = properties(&w, &group, &url, Some(&ca), SECRET, "");
    let mut daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    let addr = daemon.addr.clone();
    wait_for(
        "/readyz to name the token endpoint",
        Duration::from_secs(60),
        || get(&addr, "/readyz").is_some_and(|(status, body)| status == 503 && body.contains(&url)),
    );
    let (_, body) = get(&addr, "/readyz").expect("readyz");
    println!("{body}");
    daemon.assert_running();
    let up = endpoint(&w, Duration::from_secs(300), address);
    wait_for("readiness", Duration::from_secs(90), || {
        daemon.ready() == Some(200)
    });
    wait_for("the checkpoint", Duration::from_secs(30), || {
        !w.checkpoints(&rt).is_empty()
    });
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 10, 13)]);
    assert!(up.issued() >= 1);
    let log = daemon.log_text();
    assert!(log.contains("cannot connect"), "{log}");
    assert!(!log.contains(SECRET), "the secret was logged");
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn short_lived_tokens_are_refreshed_and_checkpoints_keep_flowing() {
    let rt = rt();
    let w = World::new(&rt, "oauth-refresh", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let endpoint = endpoint(&w, Duration::from_secs(15), any_port());
    let config = properties(
        &w,
        &group,
        &endpoint.url(),
        Some(&endpoint.ca_pem),
        SECRET,
        "",
    );
    let daemon = Daemon::start(&config, &w.dir.join("daemon.log"));
    wait_for("the first checkpoint", Duration::from_secs(60), || {
        !w.checkpoints(&rt).is_empty()
    });
    // 45 s, three token lifetimes: a new sync and commit every 5 s, each
    // checkpointed.
    let started = Instant::now();
    let mut next = 20;
    while started.elapsed() < Duration::from_secs(45) {
        w.write_syncs(&rt, &w.source, &w.syncs_topic(), &[(0, next, next + 3)]);
        w.commit_source(&rt, &group, &[(0, next)]);
        let expected = next + 3;
        wait_for(
            "the checkpoint of the new sync",
            Duration::from_secs(20),
            || w.checkpoints(&rt).last().map(|c| c.downstream_offset) == Some(expected),
        );
        next += 10;
        std::thread::sleep(Duration::from_secs(5));
    }
    let reauth = format!(
        "mm2_checkpoint_requests_total{{cluster=\"{}\",api=\"SaslAuthenticate\"}}",
        w.s
    );
    let reauthentications = daemon.metric(&reauth).unwrap_or(0.0);
    println!(
        "tokens issued: {}, re-authentications: {reauthentications}, checkpoints: {}",
        endpoint.issued(),
        w.checkpoints(&rt).len()
    );
    assert!(endpoint.issued() >= 3, "{}", endpoint.issued());
    assert!(reauthentications >= 3.0, "{reauthentications}");
    assert_eq!(daemon.ready(), Some(200));
    let log = daemon.log_text();
    assert!(!log.contains("re-authentication failed"), "{log}");
    assert!(!log.contains(SECRET), "the secret was logged");
    assert_eq!(daemon.sigterm().code(), Some(0));
}

#[test]
fn a_file_token_is_read_from_its_file() {
    let rt = rt();
    let w = World::new(&rt, "oauth-file", 1);
    let group = w.seed(&rt, &[(0, 0, 3), (0, 10, 13)], &[(0, 10)]);
    let token = sign_token(
        oauth(),
        &TokenClaims {
            subject: "mm2-file".into(),
            lifetime: Duration::from_secs(300),
            audience: oauth().audience.clone(),
        },
    );
    let file = w.dir.join("token.jwt");
    std::fs::write(&file, format!("{token}\n")).expect("write the token");
    let url = format!("file://{}", file.display());
    let config = properties(&w, &group, &url, None, SECRET, "");
    let out = run_once(&config);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains(&token), "the token was logged");
    let got: Vec<_> = w.checkpoints(&rt).iter().map(e2e::world::tuple).collect();
    assert_eq!(got, vec![(group, w.remote_topic(), 0, 10, 13)]);
}
