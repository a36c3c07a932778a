//! Feeds arbitrary bytes to the `mm2.properties` parser and, when they
//! parse, to `MirrorConfig::from_properties` with an environment that has no
//! variables and no files (so `${env:..}` and `${file:..}` references fail
//! as they would on a bare host). Every step must return `Ok` or a
//! `ConfigError`, never panic; an accepted config must also render, and its
//! `Debug` output must not panic.
#![no_main]

use std::io;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mm2_checkpoint::config::{Environment, MirrorConfig, Properties, render_effective_settings};

/// A host with no environment variables and no readable files.
struct Empty;

impl Environment for Empty {
    fn var(&self, _name: &str) -> Option<String> {
        None
    }

    fn read_file(&self, path: &Path) -> io::Result<Vec<u8>> {
        Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} does not exist in the fuzz environment", path.display()),
        ))
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(props) = Properties::parse_bytes(data) else {
        return;
    };
    let _ = format!("{props:?}");
    match MirrorConfig::from_properties(&props, &Empty) {
        Ok(config) => {
            let _ = render_effective_settings(&config);
            let _ = format!("{config:?}");
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
