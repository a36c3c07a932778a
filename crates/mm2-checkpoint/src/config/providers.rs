//! Kafka config providers: `${env:NAME}`, `${file:/path/to/file.properties:key}`
//! and `${dir:/path/to/directory:file}`.
//!
//! Operators keep passwords out of `mm2.properties` by declaring providers
//!
//! ```properties
//! config.providers = env,file,dir
//! config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
//! config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider
//! config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider
//! ```
//!
//! and writing references in values. A reference has Kafka's `ConfigTransformer`
//! shape: `${provider:key}` or `${provider:path:key}`, where nothing inside the
//! braces is `}`. Provider names are the user's choice; the class decides what a
//! name does. Only the three classes above are supported. The directory
//! provider is what Kubernetes secret mounts are read with: the key is a file
//! name in the directory, the value that file's whole content.
//!
//! Differences from Kafka, all in the direction of failing loudly: a reference to an
//! undeclared provider, a missing environment variable, file or key is an error
//! naming the config key (Kafka leaves the `${...}` text in place, which then
//! becomes, say, a password). Resolution reads environment variables and local
//! files through [`Environment`] and never touches the network.
//!
//! Every problem is recorded in the check's `Checker` (each bad declaration,
//! each reference that fails) and the value is then marked as not resolved
//! (`Resolution`), so that nothing checks its content. With
//! `--no-secrets` ([`Secrets::Skip`](super::Secrets::Skip)) references are
//! checked (declared provider, form, `allowed.paths`, `allowlist.pattern`)
//! but never read, whether the secret is there or not.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Component, Path, PathBuf};

use super::check::{Checker, NotChecked};
use super::error::ConfigError;
use super::properties::Properties;
use crate::core::filter::WholeNamePattern;

const ENV_PROVIDER_CLASS: &str = "org.apache.kafka.common.config.provider.EnvVarConfigProvider";
const FILE_PROVIDER_CLASS: &str = "org.apache.kafka.common.config.provider.FileConfigProvider";
const DIRECTORY_PROVIDER_CLASS: &str =
    "org.apache.kafka.common.config.provider.DirectoryConfigProvider";

/// Where provider references get their data: environment variables and files.
///
/// [`ProcessEnvironment`] is the real one; tests may supply their own.
pub trait Environment {
    /// The value of environment variable `name`, if set and valid Unicode.
    fn var(&self, name: &str) -> Option<String>;
    /// The contents of a local file.
    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>>;
}

/// The process's real environment variables and file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
}

#[derive(Clone, Debug)]
enum Provider {
    /// Environment variables, those matching `allowlist.pattern` if it is set.
    Env {
        allowlist: Option<(WholeNamePattern, String)>,
    },
    /// Keys of a properties file.
    File { allowed_paths: Option<Vec<PathBuf>> },
    /// Files of a directory: the key is a file name, the value its content.
    Directory { allowed_paths: Option<Vec<PathBuf>> },
}

/// How a value's `${...}` references were resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// The value is the real one (with or without references).
    Resolved,
    /// A reference could not be resolved; the error is recorded.
    Failed,
    /// With [`Secrets::Skip`](super::Secrets::Skip): the value has references
    /// that were checked but not read; the value is the text as written.
    NotRead,
}

/// The declared providers plus a cache of the files already read.
pub(crate) struct Providers<'e> {
    declared: BTreeMap<String, Provider>,
    /// Names listed in `config.providers` whose declaration has an error.
    failed: BTreeSet<String>,
    env: &'e dyn Environment,
    files: RefCell<BTreeMap<PathBuf, Properties>>,
}

impl<'e> Providers<'e> {
    /// Reads `config.providers` and `config.providers.<name>.*` from the file,
    /// recording each declaration's errors in `checker`.
    pub(crate) fn declare(props: &Properties, env: &'e dyn Environment, checker: &Checker) -> Self {
        let mut declared = BTreeMap::new();
        let mut failed = BTreeSet::new();
        if let Some(list) = props.get("config.providers") {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                match declare_one(props, name) {
                    Ok(provider) => {
                        declared.insert(name.to_string(), provider);
                    }
                    Err(e) => {
                        checker.error(e);
                        failed.insert(name.to_string());
                    }
                }
            }
        }
        Self {
            declared,
            failed,
            env,
            files: RefCell::new(BTreeMap::new()),
        }
    }

    /// Replaces every `${provider:[path:]key}` in `value`, read from config
    /// `key`, recording every reference that fails in `checker`. With
    /// [`Secrets::Skip`](super::Secrets::Skip) the references are checked
    /// (declared provider, form, allowed paths and variables) but not read.
    ///
    /// Errors name `key` (and `line`) but never contain the resolved value.
    pub(crate) fn resolve(
        &self,
        key: &str,
        line: Option<usize>,
        value: &str,
        checker: &Checker,
    ) -> (String, Resolution) {
        let mut out = String::with_capacity(value.len());
        let mut outcome = Resolution::Resolved;
        let mut not_read = Vec::new();
        for part in references(value) {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Reference {
                    text,
                    provider,
                    path,
                    name,
                } => match self.reference(provider, path, name, checker.reads_secrets()) {
                    Ok(Some(replacement)) => out.push_str(&replacement),
                    Ok(None) => {
                        out.push_str(text);
                        not_read.push(text);
                        if outcome == Resolution::Resolved {
                            outcome = Resolution::NotRead;
                        }
                    }
                    Err(Refused::Error(m)) => {
                        out.push_str(text);
                        checker.error(ConfigError::for_key(key, m).at_line(line));
                        outcome = Resolution::Failed;
                    }
                    Err(Refused::ProviderFailed) => {
                        out.push_str(text);
                        checker.not_checked(NotChecked::new(
                            Some(key.to_string()),
                            line,
                            format!(
                                "it refers to config provider `{provider}`, whose declaration \
                                 has errors"
                            ),
                        ));
                        outcome = Resolution::Failed;
                    }
                },
            }
        }
        if outcome == Resolution::NotRead {
            checker.not_checked(NotChecked::new(
                Some(key.to_string()),
                line,
                format!(
                    "its value comes from {}, which --no-secrets does not read",
                    not_read.join(", ")
                ),
            ));
        }
        (out, outcome)
    }

    /// The value of one reference; `Ok(None)` when it is valid but `read`
    /// is false.
    fn reference(
        &self,
        provider: &str,
        path: Option<&str>,
        name: &str,
        read: bool,
    ) -> Result<Option<String>, Refused> {
        let declared = match self.declared.get(provider) {
            Some(declared) => declared,
            None if self.failed.contains(provider) => return Err(Refused::ProviderFailed),
            None => {
                return Err(Refused::Error(format!(
                    "refers to config provider `{provider}`, which is not declared in \
                     config.providers (declare it with config.providers={provider} and \
                     config.providers.{provider}.class=...)"
                )));
            }
        };
        match declared {
            Provider::Env { allowlist } => {
                if path.is_some_and(|p| !p.is_empty()) {
                    return Err(Refused::Error(format!(
                        "`${{{provider}:...}}` is an environment-variable reference and takes \
                         no path; write `${{{provider}:VARIABLE}}`"
                    )));
                }
                if let Some((pattern, param)) = allowlist
                    && !pattern.matches(name)
                {
                    return Err(Refused::Error(format!(
                        "environment variable `{name}` is not allowed by {param}"
                    )));
                }
                if !read {
                    return Ok(None);
                }
                self.env.var(name).map(Some).ok_or_else(|| {
                    Refused::Error(format!("environment variable `{name}` is not set"))
                })
            }
            Provider::Directory { allowed_paths } => {
                let dir = match path {
                    Some(p) if !p.is_empty() => p,
                    _ => {
                        return Err(Refused::Error(format!(
                            "directory reference `${{{provider}:{name}}}` needs a directory: \
                             write `${{{provider}:/path/to/directory:{name}}}`"
                        )));
                    }
                };
                let dir = Path::new(dir);
                check_allowed(dir, allowed_paths.as_deref()).map_err(Refused::Error)?;
                check_file_name(dir, name).map_err(Refused::Error)?;
                if !read {
                    return Ok(None);
                }
                self.directory_value(dir, name)
                    .map(Some)
                    .map_err(Refused::Error)
            }
            Provider::File { allowed_paths } => {
                let path = match path {
                    Some(p) if !p.is_empty() => p,
                    _ => {
                        return Err(Refused::Error(format!(
                            "file reference `${{{provider}:{name}}}` needs a path: write \
                             `${{{provider}:/path/to/file.properties:{name}}}`"
                        )));
                    }
                };
                let path = Path::new(path);
                check_allowed(path, allowed_paths.as_deref()).map_err(Refused::Error)?;
                if !read {
                    return Ok(None);
                }
                self.file_value(path, name)
                    .map(Some)
                    .map_err(Refused::Error)
            }
        }
    }

    /// The content of file `name` directly inside `dir`, as Kafka's
    /// DirectoryConfigProvider gives it: the whole file, as UTF-8.
    fn directory_value(&self, dir: &Path, name: &str) -> Result<String, String> {
        let path = dir.join(name);
        let bytes = self.env.read_file(&path).map_err(|e| {
            format!(
                "cannot read `{name}` in config provider directory `{}`: {e}",
                dir.display()
            )
        })?;
        String::from_utf8(bytes).map_err(|_| {
            format!(
                "`{name}` in config provider directory `{}` is not UTF-8 text",
                dir.display()
            )
        })
    }

    fn file_value(&self, path: &Path, name: &str) -> Result<String, String> {
        let mut files = self.files.borrow_mut();
        if !files.contains_key(path) {
            let bytes = self.env.read_file(path).map_err(|e| {
                format!("cannot read config provider file `{}`: {e}", path.display())
            })?;
            // FileConfigProvider reads the file as UTF-8 properties.
            let props = Properties::parse_bytes(&bytes).map_err(|e| {
                let at = e.line().map(|l| format!(" line {l}")).unwrap_or_default();
                format!(
                    "config provider file `{}`{at} is not a valid properties file: {}",
                    path.display(),
                    e.message()
                )
            })?;
            files.insert(path.to_path_buf(), props);
        }
        files
            .get(path)
            .and_then(|p| p.get(name))
            .map(str::to_string)
            .ok_or_else(|| {
                format!(
                    "key `{name}` is not in config provider file `{}`",
                    path.display()
                )
            })
    }
}

/// Why a reference was not resolved.
enum Refused {
    /// An error about the reference, to be reported against the config key.
    Error(String),
    /// The provider's declaration has an error (already reported).
    ProviderFailed,
}

/// Reads the declaration of provider `name`: its class and parameters.
fn declare_one(props: &Properties, name: &str) -> Result<Provider, ConfigError> {
    let class_key = format!("config.providers.{name}.class");
    let line = props.line(&class_key).or(props.line("config.providers"));
    let class = props.get(&class_key).map(str::trim).ok_or_else(|| {
        ConfigError::for_key(
            class_key.clone(),
            format!(
                "config.providers lists `{name}` but its class is not set; use \
                 {ENV_PROVIDER_CLASS}, {FILE_PROVIDER_CLASS} or \
                 {DIRECTORY_PROVIDER_CLASS}"
            ),
        )
        .at_line(line)
    })?;
    let allowed_paths = || {
        let param = format!("config.providers.{name}.param.allowed.paths");
        match props.get(&param) {
            None => Ok(None),
            Some(v) => parse_allowed_paths(v)
                .map(Some)
                .map_err(|m| ConfigError::for_key(param.clone(), m).at_line(props.line(&param))),
        }
    };
    match class {
        ENV_PROVIDER_CLASS => {
            let param = format!("config.providers.{name}.param.allowlist.pattern");
            let allowlist = match props.get(&param) {
                None => None,
                Some(pattern) => Some((
                    WholeNamePattern::new("allowlist.pattern", pattern).map_err(|e| {
                        ConfigError::for_key(param.clone(), e.to_string())
                            .at_line(props.line(&param))
                    })?,
                    param.clone(),
                )),
            };
            Ok(Provider::Env { allowlist })
        }
        FILE_PROVIDER_CLASS => Ok(Provider::File {
            allowed_paths: allowed_paths()?,
        }),
        DIRECTORY_PROVIDER_CLASS => Ok(Provider::Directory {
            allowed_paths: allowed_paths()?,
        }),
        other => Err(ConfigError::for_key(
            class_key.clone(),
            format!(
                "config provider class `{other}` is not supported; only \
                 {ENV_PROVIDER_CLASS}, {FILE_PROVIDER_CLASS} and \
                 {DIRECTORY_PROVIDER_CLASS} are"
            ),
        )
        .at_line(line)),
    }
}

/// A piece of a value: literal text, or one `${provider:[path:]key}` reference.
#[derive(Debug, PartialEq, Eq)]
enum Part<'v> {
    Text(&'v str),
    Reference {
        /// The reference as written, `${...}`.
        text: &'v str,
        provider: &'v str,
        path: Option<&'v str>,
        name: &'v str,
    },
}

/// Splits `value` into text and references, in Kafka's `ConfigTransformer`
/// shape: `${provider:key}` or `${provider:path:key}`, with no `}` inside; a
/// `${...}` without a colon is text.
fn references(value: &str) -> Vec<Part<'_>> {
    let mut parts = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        let inner = &after[..end];
        let Some((provider, tail)) = inner.split_once(':') else {
            // Not a reference (Kafka's pattern needs a colon): keep the text.
            parts.push(Part::Text(&rest[..start + 2]));
            rest = after;
            continue;
        };
        let (path, name) = match tail.split_once(':') {
            Some((p, n)) => (Some(p), n),
            None => (None, tail),
        };
        if start > 0 {
            parts.push(Part::Text(&rest[..start]));
        }
        parts.push(Part::Reference {
            text: &rest[start..start + 2 + end + 1],
            provider,
            path,
            name,
        });
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        parts.push(Part::Text(rest));
    }
    parts
}

/// `value` with every `${provider:...}` reference replaced by `with`.
pub(crate) fn replace_references(value: &str, with: &str) -> String {
    references(value)
        .into_iter()
        .map(|part| match part {
            Part::Text(text) => text,
            Part::Reference { .. } => with,
        })
        .collect()
}

/// Whether `value` is exactly one reference (blanks around it aside).
pub(crate) fn is_one_reference(value: &str) -> bool {
    matches!(
        references(value.trim()).as_slice(),
        [Part::Reference { .. }]
    )
}

/// Only files directly in the directory are keys (Kafka lists the
/// directory's regular files); a name with a separator or `..` is not.
fn check_file_name(dir: &Path, name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(format!(
            "`{name}` is not a file name in directory `{}`",
            dir.display()
        ));
    }
    Ok(())
}

/// Fails unless `path` is inside one of the provider's `allowed.paths`.
fn check_allowed(path: &Path, allowed: Option<&[PathBuf]>) -> Result<(), String> {
    if let Some(allowed) = allowed {
        let normal = normalize(path);
        if !allowed.iter().any(|a| normal.starts_with(a)) {
            return Err(format!(
                "`{}` is outside the provider's allowed.paths",
                path.display()
            ));
        }
    }
    Ok(())
}

fn parse_allowed_paths(value: &str) -> Result<Vec<PathBuf>, String> {
    let mut paths = Vec::new();
    for raw in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let path = Path::new(raw);
        if !path.is_absolute() {
            return Err(format!(
                "allowed.paths entry `{raw}` is not an absolute path"
            ));
        }
        paths.push(normalize(path));
    }
    Ok(paths)
}

/// Lexical normalisation like Java's `Path.normalize`: drops `.`, folds `..`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::Secrets;

    /// A fixed set of environment variables and files, for tests.
    #[derive(Default)]
    pub(crate) struct FakeEnvironment {
        pub(crate) vars: BTreeMap<String, String>,
        pub(crate) files: BTreeMap<PathBuf, Vec<u8>>,
    }

    impl FakeEnvironment {
        pub(crate) fn with_var(mut self, k: &str, v: &str) -> Self {
            self.vars.insert(k.into(), v.into());
            self
        }
        pub(crate) fn with_file(mut self, p: &str, content: &str) -> Self {
            self.files.insert(p.into(), content.as_bytes().to_vec());
            self
        }
    }

    impl Environment for FakeEnvironment {
        fn var(&self, name: &str) -> Option<String> {
            self.vars.get(name).cloned()
        }
        fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
            self.files
                .get(path)
                .cloned()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
        }
    }

    const DECLARE_BOTH: &str = "config.providers = env, file\n\
        config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider\n\
        config.providers.file.class = org.apache.kafka.common.config.provider.FileConfigProvider\n";

    /// Resolves `value` of `some.key` (line 9): the value, or the first error.
    fn resolve(props: &str, env: &FakeEnvironment, value: &str) -> Result<String, ConfigError> {
        let checker = Checker::new(Secrets::Read);
        let resolved = resolve_in(props, env, value, &checker);
        match checker.into_findings().0.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(resolved.0),
        }
    }

    fn resolve_in(
        props: &str,
        env: &FakeEnvironment,
        value: &str,
        checker: &Checker,
    ) -> (String, Resolution) {
        let props = Properties::parse(props).unwrap();
        Providers::declare(&props, env, checker).resolve("some.key", Some(9), value, checker)
    }

    #[test]
    fn env_reference_is_replaced_by_the_variable() {
        let env = FakeEnvironment::default().with_var("PW", "s3cret");
        assert_eq!(
            resolve(DECLARE_BOTH, &env, "pw=${env:PW};").unwrap(),
            "pw=s3cret;"
        );
    }

    #[test]
    fn file_reference_reads_the_key_from_a_properties_file() {
        let env =
            FakeEnvironment::default().with_file("/run/secrets/a.properties", "password = p@ss\n");
        assert_eq!(
            resolve(
                DECLARE_BOTH,
                &env,
                "${file:/run/secrets/a.properties:password}"
            )
            .unwrap(),
            "p@ss"
        );
    }

    #[test]
    fn several_references_in_one_value_are_all_replaced() {
        let env = FakeEnvironment::default()
            .with_var("U", "alice")
            .with_var("P", "pw");
        assert_eq!(
            resolve(DECLARE_BOTH, &env, "${env:U}/${env:P}").unwrap(),
            "alice/pw"
        );
    }

    #[test]
    fn text_without_references_is_unchanged() {
        let env = FakeEnvironment::default();
        assert_eq!(
            resolve("", &env, "a{1,3}$ {x} ${nocolon}").unwrap(),
            "a{1,3}$ {x} ${nocolon}"
        );
    }

    #[test]
    fn custom_provider_names_work() {
        let props = "config.providers = secrets\n\
            config.providers.secrets.class = org.apache.kafka.common.config.provider.FileConfigProvider\n";
        let env = FakeEnvironment::default().with_file("/s.properties", "k=v\n");
        assert_eq!(
            resolve(props, &env, "${secrets:/s.properties:k}").unwrap(),
            "v"
        );
    }

    #[test]
    fn missing_env_var_is_an_error_naming_the_config_key() {
        let e = resolve(DECLARE_BOTH, &FakeEnvironment::default(), "${env:NOPE}").unwrap_err();
        assert_eq!(e.key(), Some("some.key"));
        assert_eq!(e.line(), Some(9));
        assert!(e.message().contains("NOPE"), "{e}");
    }

    #[test]
    fn missing_file_is_an_error_naming_the_config_key() {
        let e = resolve(
            DECLARE_BOTH,
            &FakeEnvironment::default(),
            "${file:/nope.properties:k}",
        )
        .unwrap_err();
        assert_eq!(e.key(), Some("some.key"));
        assert!(e.message().contains("/nope.properties"), "{e}");
    }

    #[test]
    fn missing_key_in_file_is_an_error_without_other_values() {
        let env = FakeEnvironment::default().with_file("/a.properties", "other = topsecret\n");
        let e = resolve(DECLARE_BOTH, &env, "${file:/a.properties:password}").unwrap_err();
        assert!(e.message().contains("password"), "{e}");
        assert!(!e.to_string().contains("topsecret"), "{e}");
    }

    #[test]
    fn undeclared_provider_is_an_error() {
        let e = resolve(
            "",
            &FakeEnvironment::default().with_var("X", "1"),
            "${env:X}",
        )
        .unwrap_err();
        assert!(e.message().contains("not declared"), "{e}");
    }

    #[test]
    fn declared_name_without_class_is_an_error() {
        let e = resolve("config.providers = env\n", &FakeEnvironment::default(), "x").unwrap_err();
        assert_eq!(e.key(), Some("config.providers.env.class"));
    }

    #[test]
    fn unsupported_provider_class_is_an_error() {
        let props = "config.providers = vault\nconfig.providers.vault.class = com.example.Vault\n";
        let e = resolve(props, &FakeEnvironment::default(), "x").unwrap_err();
        assert_eq!(e.key(), Some("config.providers.vault.class"));
        assert!(e.message().contains("com.example.Vault"));
    }

    const DECLARE_DIR: &str = "config.providers = dir\n\
        config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider\n";
    const DECLARE_DIR_ENTRY: &str = "config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider\n";

    #[test]
    fn directory_reference_is_the_whole_file_in_the_directory() {
        // A Kubernetes secret mount: one file per key, content as is.
        let env = FakeEnvironment::default()
            .with_file("/etc/secret/password", "s3cret\n")
            .with_file("/etc/secret/user", "alice");
        assert_eq!(
            resolve(
                DECLARE_DIR,
                &env,
                "${dir:/etc/secret:user}/${dir:/etc/secret:password}"
            )
            .unwrap(),
            "alice/s3cret\n"
        );
    }

    #[test]
    fn directory_reference_errors_name_the_key_and_never_leave_the_directory() {
        let env = FakeEnvironment::default().with_file("/etc/other", "x");
        for value in [
            "${dir:/etc/secret:missing}",
            "${dir:/etc/secret:../other}",
            "${dir:/etc/secret:..}",
            "${dir:user}",
        ] {
            let e = resolve(DECLARE_DIR, &env, value).unwrap_err();
            assert_eq!(e.key(), Some("some.key"), "{value}: {e}");
        }
        let allowed =
            format!("{DECLARE_DIR}config.providers.dir.param.allowed.paths = /etc/secret\n");
        let env = FakeEnvironment::default().with_file("/etc/private/user", "x");
        let e = resolve(&allowed, &env, "${dir:/etc/private:user}").unwrap_err();
        assert!(e.message().contains("allowed.paths"), "{e}");
    }

    #[test]
    fn env_allowlist_pattern_limits_the_variables_like_kafka() {
        // Strimzi renders this; Kafka matches the whole variable name.
        let props =
            format!("{DECLARE_BOTH}config.providers.env.param.allowlist.pattern = ^KAFKA_.*\n");
        let env = FakeEnvironment::default()
            .with_var("KAFKA_PASSWORD", "pw")
            .with_var("HOME", "/root")
            .with_var("MY_KAFKA_X", "x");
        assert_eq!(
            resolve(&props, &env, "${env:KAFKA_PASSWORD}").unwrap(),
            "pw"
        );
        for refused in ["${env:HOME}", "${env:MY_KAFKA_X}"] {
            let e = resolve(&props, &env, refused).unwrap_err();
            assert!(
                e.message()
                    .contains("not allowed by config.providers.env.param.allowlist.pattern"),
                "{e}"
            );
        }
        let bad = format!("{DECLARE_BOTH}config.providers.env.param.allowlist.pattern = (\n");
        let e = resolve(&bad, &env, "x").unwrap_err();
        assert_eq!(
            e.key(),
            Some("config.providers.env.param.allowlist.pattern")
        );
    }

    #[test]
    fn env_reference_with_a_path_is_an_error() {
        let env = FakeEnvironment::default().with_var("X", "1");
        assert!(resolve(DECLARE_BOTH, &env, "${env:/p:X}").is_err());
    }

    #[test]
    fn file_reference_without_a_path_is_an_error() {
        assert!(resolve(DECLARE_BOTH, &FakeEnvironment::default(), "${file:key}").is_err());
    }

    #[test]
    fn file_outside_allowed_paths_is_refused() {
        let props = format!("{DECLARE_BOTH}config.providers.file.param.allowed.paths = /etc/mm2\n");
        let env = FakeEnvironment::default()
            .with_file("/etc/mm2/a.properties", "k=ok\n")
            .with_file("/etc/passwd.properties", "k=no\n");
        assert_eq!(
            resolve(&props, &env, "${file:/etc/mm2/a.properties:k}").unwrap(),
            "ok"
        );
        assert!(resolve(&props, &env, "${file:/etc/passwd.properties:k}").is_err());
        assert!(resolve(&props, &env, "${file:/etc/mm2/../passwd.properties:k}").is_err());
    }

    #[test]
    fn relative_allowed_path_is_an_error() {
        let props = format!("{DECLARE_BOTH}config.providers.file.param.allowed.paths = etc/mm2\n");
        assert!(resolve(&props, &FakeEnvironment::default(), "x").is_err());
    }

    #[test]
    fn process_environment_reads_real_variables_and_files() {
        let props = Properties::parse(DECLARE_BOTH).unwrap();
        let checker = Checker::new(Secrets::Read);
        let providers = Providers::declare(&props, &ProcessEnvironment, &checker);
        // PATH is set for any test process; the real file is this crate's manifest.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(
            providers.resolve("k", None, "${env:PATH}", &checker),
            (path, Resolution::Resolved)
        );
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let (_, outcome) = providers.resolve(
            "k",
            None,
            &format!("${{file:{manifest}:nonexistent.key}}"),
            &checker,
        );
        assert_eq!(outcome, Resolution::Failed);
        let (errors, _, _) = checker.into_findings();
        assert!(
            errors[0].message().contains("nonexistent.key"),
            "{errors:?}"
        );
    }

    #[test]
    fn every_failing_reference_of_a_value_is_an_error() {
        let checker = Checker::new(Secrets::Read);
        let (_, outcome) = resolve_in(
            DECLARE_BOTH,
            &FakeEnvironment::default(),
            "${env:NOPE_1}/${env:NOPE_2}/${vault:x}",
            &checker,
        );
        assert_eq!(outcome, Resolution::Failed);
        let (errors, _, _) = checker.into_findings();
        let messages: Vec<&str> = errors.iter().map(ConfigError::message).collect();
        assert_eq!(errors.len(), 3, "{messages:?}");
        assert!(messages[0].contains("NOPE_1") && messages[1].contains("NOPE_2"));
        assert!(messages[2].contains("`vault`, which is not declared"));
    }

    #[test]
    fn every_bad_declaration_is_an_error_and_its_references_are_not_checked() {
        let props = "config.providers = vault, env, nope
\
            config.providers.vault.class = com.example.Vault
\
            config.providers.env.class = org.apache.kafka.common.config.provider.EnvVarConfigProvider
";
        let checker = Checker::new(Secrets::Read);
        let env = FakeEnvironment::default().with_var("X", "1");
        let (value, outcome) = resolve_in(props, &env, "${vault:a}${env:X}", &checker);
        assert_eq!(outcome, Resolution::Failed);
        assert_eq!(value, "${vault:a}1");
        let (errors, _, not_checked) = checker.into_findings();
        let keys: Vec<_> = errors.iter().map(ConfigError::key).collect();
        assert_eq!(
            keys,
            [
                Some("config.providers.vault.class"),
                Some("config.providers.nope.class")
            ]
        );
        assert_eq!(not_checked.len(), 1);
        assert!(
            not_checked[0]
                .why()
                .contains("`vault`, whose declaration has errors"),
            "{not_checked:?}"
        );
    }

    #[test]
    fn without_secrets_references_are_checked_but_never_read() {
        let props = format!(
            "{DECLARE_BOTH}{DECLARE_DIR_ENTRY}\
             config.providers.file.param.allowed.paths = /etc/mm2\n"
        )
        .replace(
            "config.providers = env, file\n",
            "config.providers = env, file, dir\n",
        );
        // Present or not, nothing is read: the outcome does not depend on it.
        let env = FakeEnvironment::default()
            .with_var("PW", "s3cret")
            .with_file("/etc/mm2/a.properties", "k = s3cret\n");
        let checker = Checker::new(Secrets::Skip);
        let (value, outcome) = resolve_in(
            &props,
            &env,
            "u=${env:PW} p=${file:/etc/mm2/a.properties:k} d=${dir:/run/s:pw}",
            &checker,
        );
        assert_eq!(outcome, Resolution::NotRead);
        assert!(!value.contains("s3cret"), "{value}");
        let (errors, _, not_checked) = checker.into_findings();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            not_checked[0].to_string(),
            "some.key (line 9) (its value comes from ${env:PW}, \
             ${file:/etc/mm2/a.properties:k}, ${dir:/run/s:pw}, which --no-secrets does not read)"
        );
        // What is wrong with a reference itself is still an error.
        for bad in [
            "${file:/etc/other.properties:k}",
            "${env:/p:X}",
            "${nope:X}",
            "${dir:/run/s:../x}",
        ] {
            let checker = Checker::new(Secrets::Skip);
            let (_, outcome) = resolve_in(&props, &env, bad, &checker);
            assert_eq!(outcome, Resolution::Failed, "{bad}");
            assert_eq!(checker.error_count(), 1, "{bad}");
        }
    }

    #[test]
    fn references_are_found_like_kafka_finds_them() {
        assert_eq!(
            replace_references("a${x:y}b${nocolon}c${p:/f:k}", "R"),
            "aRb${nocolon}cR"
        );
        assert_eq!(replace_references("${open", "R"), "${open");
        assert!(is_one_reference(" ${env:X} "));
        assert!(!is_one_reference("x${env:X}"));
        assert!(!is_one_reference("${env:X}${env:Y}"));
    }
}
