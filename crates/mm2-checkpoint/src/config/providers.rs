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

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

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

/// The declared providers plus a cache of the files already read.
pub(crate) struct Providers<'e> {
    declared: BTreeMap<String, Provider>,
    env: &'e dyn Environment,
    files: RefCell<BTreeMap<PathBuf, Properties>>,
}

impl<'e> Providers<'e> {
    /// Reads `config.providers` and `config.providers.<name>.*` from the file.
    pub(crate) fn declare(
        props: &Properties,
        env: &'e dyn Environment,
    ) -> Result<Self, ConfigError> {
        let mut declared = BTreeMap::new();
        if let Some(list) = props.get("config.providers") {
            for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
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
                        Some(v) => parse_allowed_paths(v).map(Some).map_err(|m| {
                            ConfigError::for_key(param.clone(), m).at_line(props.line(&param))
                        }),
                    }
                };
                let provider = match class {
                    ENV_PROVIDER_CLASS => {
                        let param = format!("config.providers.{name}.param.allowlist.pattern");
                        let allowlist = match props.get(&param) {
                            None => None,
                            Some(pattern) => Some((
                                WholeNamePattern::new("allowlist.pattern", pattern).map_err(
                                    |e| {
                                        ConfigError::for_key(param.clone(), e.to_string())
                                            .at_line(props.line(&param))
                                    },
                                )?,
                                param.clone(),
                            )),
                        };
                        Provider::Env { allowlist }
                    }
                    FILE_PROVIDER_CLASS => Provider::File {
                        allowed_paths: allowed_paths()?,
                    },
                    DIRECTORY_PROVIDER_CLASS => Provider::Directory {
                        allowed_paths: allowed_paths()?,
                    },
                    other => {
                        return Err(ConfigError::for_key(
                            class_key.clone(),
                            format!(
                                "config provider class `{other}` is not supported; only \
                                 {ENV_PROVIDER_CLASS}, {FILE_PROVIDER_CLASS} and \
                                 {DIRECTORY_PROVIDER_CLASS} are"
                            ),
                        )
                        .at_line(line));
                    }
                };
                declared.insert(name.to_string(), provider);
            }
        }
        Ok(Self {
            declared,
            env,
            files: RefCell::new(BTreeMap::new()),
        })
    }

    /// Replaces every `${provider:[path:]key}` in `value`, read from config `key`.
    ///
    /// Errors name `key` (and `line`) but never contain the resolved value.
    pub(crate) fn resolve(
        &self,
        key: &str,
        line: Option<usize>,
        value: &str,
    ) -> Result<String, ConfigError> {
        let err = |m: String| ConfigError::for_key(key, m).at_line(line);
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                out.push_str(&rest[start..]);
                rest = "";
                break;
            };
            let inner = &after[..end];
            let Some((provider, tail)) = inner.split_once(':') else {
                // Not a reference (Kafka's pattern needs a colon): keep the text.
                out.push_str("${");
                rest = after;
                continue;
            };
            let (path, name) = match tail.split_once(':') {
                Some((p, n)) => (Some(p), n),
                None => (None, tail),
            };
            let replacement = match self.declared.get(provider) {
                None => {
                    return Err(err(format!(
                        "refers to config provider `{provider}`, which is not declared in \
                         config.providers (declare it with config.providers={provider} and \
                         config.providers.{provider}.class=...)"
                    )));
                }
                Some(Provider::Env { allowlist }) => {
                    if path.is_some_and(|p| !p.is_empty()) {
                        return Err(err(format!(
                            "`${{{provider}:...}}` is an environment-variable reference and takes \
                             no path; write `${{{provider}:VARIABLE}}`"
                        )));
                    }
                    if let Some((pattern, param)) = allowlist
                        && !pattern.matches(name)
                    {
                        return Err(err(format!(
                            "environment variable `{name}` is not allowed by {param}"
                        )));
                    }
                    self.env
                        .var(name)
                        .ok_or_else(|| err(format!("environment variable `{name}` is not set")))?
                }
                Some(Provider::Directory { allowed_paths }) => {
                    let dir = match path {
                        Some(p) if !p.is_empty() => p,
                        _ => {
                            return Err(err(format!(
                                "directory reference `${{{provider}:{name}}}` needs a directory: \
                                 write `${{{provider}:/path/to/directory:{name}}}`"
                            )));
                        }
                    };
                    self.directory_value(Path::new(dir), name, allowed_paths.as_deref())
                        .map_err(err)?
                }
                Some(Provider::File { allowed_paths }) => {
                    let path = match path {
                        Some(p) if !p.is_empty() => p,
                        _ => {
                            return Err(err(format!(
                                "file reference `${{{provider}:{name}}}` needs a path: write \
                                 `${{{provider}:/path/to/file.properties:{name}}}`"
                            )));
                        }
                    };
                    self.file_value(Path::new(path), name, allowed_paths.as_deref())
                        .map_err(err)?
                }
            };
            out.push_str(&replacement);
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The content of file `name` directly inside `dir`, as Kafka's
    /// DirectoryConfigProvider gives it: the whole file, as UTF-8.
    fn directory_value(
        &self,
        dir: &Path,
        name: &str,
        allowed: Option<&[PathBuf]>,
    ) -> Result<String, String> {
        check_allowed(dir, allowed)?;
        // Only files directly in the directory are keys (Kafka lists the
        // directory's regular files); a name with a separator or `..` is not.
        if name.is_empty() || name == "." || name == ".." || name.contains('/') {
            return Err(format!(
                "`{name}` is not a file name in directory `{}`",
                dir.display()
            ));
        }
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

    fn file_value(
        &self,
        path: &Path,
        name: &str,
        allowed: Option<&[PathBuf]>,
    ) -> Result<String, String> {
        check_allowed(path, allowed)?;
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

    fn resolve(props: &str, env: &FakeEnvironment, value: &str) -> Result<String, ConfigError> {
        let props = Properties::parse(props).unwrap();
        Providers::declare(&props, env)?.resolve("some.key", Some(9), value)
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
        let providers = Providers::declare(&props, &ProcessEnvironment).unwrap();
        // PATH is set for any test process; the real file is this crate's manifest.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(providers.resolve("k", None, "${env:PATH}").unwrap(), path);
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let e = providers
            .resolve("k", None, &format!("${{file:{manifest}:nonexistent.key}}"))
            .unwrap_err();
        assert!(e.message().contains("nonexistent.key"), "{e}");
    }
}
