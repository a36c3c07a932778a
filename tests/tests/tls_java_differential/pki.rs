//! The matrix of server certificates, made with `openssl` at test time: v1
//! and v3, subjectAltName DNS, IP or none, wildcards, validity, untrusted and
//! name-constrained CAs, intermediate chains, key usage variants, RSA and
//! ECDSA.

use super::*;

/// A key and CSR `name.key`, `name.csr` (RSA 2048 or P-256).
fn csr(dir: &Path, name: &str, subject: &str, rsa: bool) {
    let (kind, opt) = if rsa {
        ("rsa", "rsa_keygen_bits:2048")
    } else {
        ("ec", "ec_paramgen_curve:P-256")
    };
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            kind,
            "-pkeyopt",
            opt,
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
            "-subj",
            subject,
        ],
    );
}

/// A self-signed v3 CA `name`.
fn ca(dir: &Path, name: &str, rsa: bool) {
    csr(dir, name, &format!("/CN={name}"), rsa);
    write(
        dir,
        &format!("{name}.ext"),
        "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n",
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-signkey",
            &format!("{name}.key"),
            "-days",
            "30",
            "-out",
            &format!("{name}.pem"),
            "-extfile",
            &format!("{name}.ext"),
        ],
    );
}

/// `name.pem`: `name.csr` signed by `issuer` for 30 days, with the
/// extension lines `ext` (v3) or none (v1, as Kafka's documentation signs).
fn sign(dir: &Path, name: &str, issuer: &str, ext: Option<&str>) {
    let mut args: Vec<String> = [
        "x509",
        "-req",
        "-in",
        &format!("{name}.csr"),
        "-CA",
        &format!("{issuer}.pem"),
        "-CAkey",
        &format!("{issuer}.key"),
        "-CAcreateserial",
        "-days",
        "30",
        "-out",
        &format!("{name}.pem"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if let Some(ext) = ext {
        write(dir, &format!("{name}.ext"), ext);
        args.extend(["-extfile".into(), format!("{name}.ext")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    openssl(dir, &args);
}

/// `name.pem`: `name.csr` signed by `issuer` (`openssl ca`, which takes
/// explicit dates) from `start` to `end`, v3 with a server extension set or
/// v1 without extensions.
fn sign_dated(dir: &Path, name: &str, issuer: &str, start: &str, end: &str, v3: bool) {
    let db = dir.join(format!("{name}-db"));
    std::fs::create_dir_all(db.join("newcerts")).expect("mkdir");
    write(&db, "index.txt", "");
    write(&db, "serial", "1000\n");
    write(
        &db,
        "ca.cnf",
        &format!(
            "[ca]\ndefault_ca = test\n\
             [test]\ndir = {db}\ndatabase = {db}/index.txt\nnew_certs_dir = {db}/newcerts\n\
             serial = {db}/serial\ndefault_md = sha256\npolicy = any\nunique_subject = no\n\
             [any]\ncommonName = supplied\n\
             [leaf]\nsubjectAltName = DNS:localhost\nbasicConstraints = CA:FALSE\n\
             extendedKeyUsage = serverAuth\n",
            db = db.display()
        ),
    );
    let mut args = vec![
        "ca".to_string(),
        "-batch".into(),
        "-config".into(),
        db.join("ca.cnf").display().to_string(),
        "-cert".into(),
        format!("{issuer}.pem"),
        "-keyfile".into(),
        format!("{issuer}.key"),
        "-in".into(),
        format!("{name}.csr"),
        "-out".into(),
        format!("{name}.pem"),
        "-startdate".into(),
        start.into(),
        "-enddate".into(),
        end.into(),
        "-notext".into(),
    ];
    if v3 {
        args.extend(["-extensions".into(), "leaf".into()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    openssl(dir, &args);
}

const SERVER: &str = "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n";

fn san(names: &str) -> String {
    format!("{SERVER}subjectAltName={names}\n")
}

/// One server certificate: its name (files `name.pem`, `name.key`) and the
/// intermediates it sends after it.
pub(super) struct Identity {
    pub(super) name: &'static str,
    pub(super) chain: &'static [&'static str],
}

/// Makes the matrix in `dir`; returns the identities served and the PEM
/// file of the trusted CAs.
pub(super) fn make_pki(dir: &Path) -> (Vec<Identity>, PathBuf) {
    ca(dir, "ca", false);
    ca(dir, "rsaca", true);
    ca(dir, "untrusted", false);
    // A root limited to names under corp.example.
    csr(dir, "ncca", "/CN=ncca", false);
    write(
        dir,
        "ncca.ext",
        "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n\
         nameConstraints=critical,permitted;DNS:corp.example\n",
    );
    openssl(
        dir,
        &[
            "x509", "-req", "-in", "ncca.csr", "-signkey", "ncca.key", "-days", "30", "-extfile",
            "ncca.ext", "-out", "ncca.pem",
        ],
    );
    // A v1 root, as `openssl x509 -req -signkey` makes it.
    csr(dir, "v1ca", "/CN=v1ca", false);
    openssl(
        dir,
        &[
            "x509", "-req", "-in", "v1ca.csr", "-signkey", "v1ca.key", "-days", "30", "-out",
            "v1ca.pem",
        ],
    );
    let leaf = |name: &str, subject: &str, issuer: &str, rsa: bool, ext: Option<&str>| {
        csr(dir, name, subject, rsa);
        sign(dir, name, issuer, ext);
    };
    leaf("v1", "/CN=localhost", "ca", false, None);
    leaf("v1rsa", "/CN=localhost", "rsaca", true, None);
    leaf(
        "v1twocn",
        "/CN=localhost/CN=broker.example",
        "ca",
        false,
        None,
    );
    leaf("nosan", "/CN=localhost", "ca", false, Some(SERVER));
    leaf("nosanrsa", "/CN=localhost", "rsaca", true, Some(SERVER));
    leaf(
        "sanother",
        "/CN=localhost",
        "ca",
        false,
        Some(&san("DNS:broker.example")),
    );
    leaf(
        "wildsan",
        "/CN=x",
        "ca",
        false,
        Some(&san("DNS:*.kafka.example")),
    );
    leaf(
        "partialcn",
        "/CN=b*.kafka.example",
        "ca",
        false,
        Some(SERVER),
    );
    leaf(
        "midwild",
        "/CN=x",
        "ca",
        false,
        Some(&san("DNS:a.*.kafka.example")),
    );
    leaf("tldwild", "/CN=*.example", "ca", false, None);
    leaf(
        "partialsan",
        "/CN=x",
        "ca",
        false,
        Some(&san("DNS:b*.kafka.example")),
    );
    leaf("ipsan6", "/CN=localhost", "ca", false, Some(&san("IP:::1")));
    leaf("nccn", "/CN=b.corp.example", "ncca", false, Some(SERVER));
    leaf("nccnout", "/CN=localhost", "ncca", false, Some(SERVER));
    leaf(
        "ncsan",
        "/CN=x",
        "ncca",
        false,
        Some(&san("DNS:b.corp.example")),
    );
    leaf(
        "ncsanout",
        "/CN=x",
        "ncca",
        false,
        Some(&san("DNS:localhost")),
    );
    // The same limits on an intermediate under the unconstrained root.
    leaf(
        "ncint",
        "/CN=ncint",
        "ca",
        false,
        Some(
            "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n\
             nameConstraints=critical,permitted;DNS:corp.example\n",
        ),
    );
    leaf(
        "ncintcn",
        "/CN=b.corp.example",
        "ncint",
        false,
        Some(SERVER),
    );
    leaf("ncintcnout", "/CN=localhost", "ncint", false, Some(SERVER));
    leaf(
        "ncintsan",
        "/CN=x",
        "ncint",
        false,
        Some(&san("DNS:b.corp.example")),
    );
    leaf(
        "ncintsanout",
        "/CN=x",
        "ncint",
        false,
        Some(&san("DNS:localhost")),
    );
    leaf(
        "nsclient",
        "/CN=localhost",
        "ca",
        false,
        Some(&format!("{}nsCertType=client\n", san("DNS:localhost"))),
    );
    leaf(
        "nsserver",
        "/CN=localhost",
        "ca",
        false,
        Some(&format!("{}nsCertType=server\n", san("DNS:localhost"))),
    );
    leaf(
        "anyeku",
        "/CN=localhost",
        "ca",
        false,
        Some(
            "basicConstraints=CA:FALSE\nextendedKeyUsage=anyExtendedKeyUsage\nsubjectAltName=DNS:localhost\n",
        ),
    );
    // SHA-1 signatures, v1 and v3, as old estates have them.
    for (name, ext) in [("sha1v1", None), ("sha1v3", Some(san("DNS:localhost")))] {
        csr(dir, name, "/CN=localhost", false);
        let mut args = vec![
            "x509".to_string(),
            "-req".into(),
            "-sha1".into(),
            "-in".into(),
            format!("{name}.csr"),
            "-CA".into(),
            "ca.pem".into(),
            "-CAkey".into(),
            "ca.key".into(),
            "-CAcreateserial".into(),
            "-days".into(),
            "30".into(),
            "-out".into(),
            format!("{name}.pem"),
        ];
        if let Some(ext) = ext {
            write(dir, &format!("{name}.ext"), &ext);
            args.extend(["-extfile".into(), format!("{name}.ext")]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        openssl(dir, &args);
    }
    leaf(
        "ipsan",
        "/CN=localhost",
        "ca",
        false,
        Some(&san("IP:127.0.0.1")),
    );
    leaf(
        "iponly",
        "/CN=localhost",
        "ca",
        false,
        Some(&san("IP:10.0.0.1")),
    );
    leaf("ipcn", "/CN=127.0.0.1", "ca", false, None);
    leaf("v1untrusted", "/CN=localhost", "untrusted", false, None);
    leaf(
        "untrusted3",
        "/CN=localhost",
        "untrusted",
        false,
        Some(&san("DNS:localhost")),
    );
    leaf(
        "underv1",
        "/CN=localhost",
        "v1ca",
        false,
        Some(&san("DNS:localhost")),
    );
    leaf("v1underv1", "/CN=localhost", "v1ca", false, None);
    leaf("v1int", "/CN=v1int", "ca", false, None);
    leaf(
        "v3int",
        "/CN=v3int",
        "ca",
        false,
        Some("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n"),
    );
    leaf(
        "underv1int",
        "/CN=localhost",
        "v1int",
        false,
        Some(&san("DNS:localhost")),
    );
    leaf(
        "underv3int",
        "/CN=localhost",
        "v3int",
        false,
        Some(&san("DNS:localhost")),
    );
    leaf("v1underv3int", "/CN=localhost", "v3int", false, None);
    leaf(
        "ekuclient",
        "/CN=localhost",
        "ca",
        false,
        Some(
            "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\nsubjectAltName=DNS:localhost\n",
        ),
    );
    leaf(
        "noeku",
        "/CN=localhost",
        "ca",
        false,
        Some("subjectAltName=DNS:localhost\n"),
    );
    leaf(
        "kucertsign",
        "/CN=localhost",
        "ca",
        false,
        Some(&format!(
            "{}keyUsage=critical,keyCertSign\n",
            san("DNS:localhost")
        )),
    );
    leaf(
        "kursaenc",
        "/CN=localhost",
        "rsaca",
        true,
        Some(&format!(
            "{}keyUsage=critical,keyEncipherment\n",
            san("DNS:localhost")
        )),
    );
    leaf(
        "kusig",
        "/CN=localhost",
        "ca",
        false,
        Some(&format!(
            "{}keyUsage=critical,digitalSignature\n",
            san("DNS:localhost")
        )),
    );
    leaf(
        "caleaf",
        "/CN=localhost",
        "ca",
        false,
        Some("basicConstraints=critical,CA:TRUE\nsubjectAltName=DNS:localhost\n"),
    );
    for (name, start, end, v3) in [
        ("expired", "20200101000000Z", "20200102000000Z", true),
        ("expiredv1", "20200101000000Z", "20200102000000Z", false),
        ("notyet", "20400101000000Z", "20410101000000Z", true),
        ("notyetv1", "20400101000000Z", "20410101000000Z", false),
    ] {
        csr(dir, name, "/CN=localhost", false);
        sign_dated(dir, name, "ca", start, end, v3);
    }
    let trust: String = ["ca", "rsaca", "v1ca", "ncca"]
        .iter()
        .map(|c| std::fs::read_to_string(dir.join(format!("{c}.pem"))).expect("CA"))
        .collect();
    write(dir, "trust.pem", &trust);
    let identities = [
        "v1",
        "v1rsa",
        "v1twocn",
        "nosan",
        "nosanrsa",
        "sanother",
        "wildsan",
        "partialcn",
        "midwild",
        "sha1v1",
        "sha1v3",
        "nsclient",
        "nsserver",
        "anyeku",
        "partialsan",
        "ipsan6",
        "nccn",
        "nccnout",
        "ncsan",
        "ncsanout",
        "tldwild",
        "ipsan",
        "iponly",
        "ipcn",
        "v1untrusted",
        "untrusted3",
        "underv1",
        "v1underv1",
        "ekuclient",
        "noeku",
        "kucertsign",
        "kursaenc",
        "kusig",
        "caleaf",
        "expired",
        "expiredv1",
        "notyet",
        "notyetv1",
    ]
    .into_iter()
    .map(|name| Identity { name, chain: &[] })
    .chain([
        Identity {
            name: "underv1int",
            chain: &["v1int"],
        },
        Identity {
            name: "underv3int",
            chain: &["v3int"],
        },
        Identity {
            name: "v1underv3int",
            chain: &["v3int"],
        },
        Identity {
            name: "ncintcn",
            chain: &["ncint"],
        },
        Identity {
            name: "ncintcnout",
            chain: &["ncint"],
        },
        Identity {
            name: "ncintsan",
            chain: &["ncint"],
        },
        Identity {
            name: "ncintsanout",
            chain: &["ncint"],
        },
    ])
    .collect();
    (identities, dir.join("trust.pem"))
}
