//! Configuration read from the environment at build time: a host-loaded `.env` file
//! ([`EnvFile`]), the credential key and the protocol log knobs.
//!
//! The process environment is never modified (`std::env::set_var` is `unsafe` in Rust 2024 and
//! races with other threads): an [`EnvFile`] is handed to the builders instead, and its values
//! apply only to names the process environment does not set.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use a2at_core::protolog::LogConfig;

use crate::error::EngineError;

/// The entries of a `.env` file that the host loaded explicitly (the engine never reads one on
/// its own). Parsing: blank lines and `#` comments skipped, split on the
/// first `=`, trimmed, surrounding double quotes stripped, the first entry of a name wins.
/// A variable already set in the process environment always takes precedence over the file.
///
/// Values are treated as secrets: `Debug` shows only the names.
#[derive(Clone, Default)]
pub struct EnvFile {
    values: BTreeMap<String, String>,
}

impl std::fmt::Debug for EnvFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvFile")
            .field("names", &self.values.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl EnvFile {
    /// Reads and parses the file at `path`; a file that cannot be read is an error naming it.
    pub fn load(path: &Path) -> Result<EnvFile, EngineError> {
        let text = std::fs::read_to_string(path).map_err(|e| EngineError::EnvFile {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(EnvFile::parse(&text))
    }

    /// Parses `.env` text.
    pub fn parse(text: &str) -> EnvFile {
        EnvFile {
            values: a2at_core::envfile::parse_env_file(text)
                .into_iter()
                .collect(),
        }
    }

    /// How many entries take effect, i.e. name variables that the process environment does
    /// not set (never overwrite a variable already set).
    pub fn loaded(&self) -> usize {
        self.values
            .keys()
            .filter(|name| std::env::var_os(name).is_none())
            .count()
    }

    /// The value of `name`: the process environment's, else the file's.
    pub fn var(&self, name: &str) -> Option<String> {
        std::env::var(name)
            .ok()
            .or_else(|| self.values.get(name).cloned())
    }

    /// The names the file defines, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(String::as_str)
    }
}

/// Where configuration variables are read: the process environment, then an optional
/// host-loaded [`EnvFile`].
pub(crate) struct EnvLookup<'a> {
    file: Option<&'a EnvFile>,
}

impl<'a> EnvLookup<'a> {
    /// The process environment only.
    pub(crate) fn process() -> EnvLookup<'static> {
        EnvLookup { file: None }
    }

    /// The process environment, then `file`.
    pub(crate) fn with_file(file: Option<&'a EnvFile>) -> EnvLookup<'a> {
        EnvLookup { file }
    }

    pub(crate) fn var(&self, name: &str) -> Option<String> {
        match self.file {
            Some(f) => f.var(name),
            None => std::env::var(name).ok(),
        }
    }
}

/// Builder overrides of the protocol log knobs; each set one wins over the environment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LogOverrides {
    pub(crate) include_body: Option<bool>,
    pub(crate) max_body_chars: Option<usize>,
    pub(crate) pretty: Option<bool>,
}

/// The protocol log knobs: the environment's values, then the builder's overrides. A
/// variable that cannot be read is an error naming it. Redaction is not a knob.
pub(crate) fn protocol_log_config(
    env: &EnvLookup<'_>,
    overrides: Option<LogOverrides>,
) -> Result<LogConfig, EngineError> {
    let mut cfg = LogConfig::from_lookup(|name| env.var(name))
        .map_err(|e| EngineError::Environment(e.to_string()))?;
    if let Some(o) = overrides {
        if let Some(v) = o.include_body {
            cfg.include_body = v;
        }
        if let Some(v) = o.max_body_chars {
            cfg.max_body_chars = v.max(a2at_core::protolog::MIN_BODY_CHARS);
        }
        if let Some(v) = o.pretty {
            cfg.pretty = v;
        }
    }
    Ok(cfg)
}

/// Where each run's id seed comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SeedSource {
    /// A fresh seed from the OS per run (the default).
    #[default]
    Os,
    /// The same seed for every run, for reproduction.
    Fixed(u64),
}

/// The default deadline of a credential login.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(30);
