//! [`EngineError`]: why an engine, client or sender cannot be built.

use a2at_core::agents::DirectoryError;

/// Why an engine cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The cards are invalid as a set. For an engine: a blank or repeated name (a card that
    /// cannot be used on its own is kept as unusable instead, see
    /// [`Engine::card_errors`](crate::Engine::card_errors)); for an extension sender built from
    /// cards: any invalid card or one without a usable interface.
    #[error(transparent)]
    Cards(#[from] DirectoryError),
    /// A setting is out of range.
    #[error("invalid engine setting: {0}")]
    Config(&'static str),
    /// A run setting (budget, interval, limit or retry policy) is unusable; the message names
    /// it.
    #[error("invalid engine setting: {0}")]
    Run(#[from] a2at_core::run::ConfigError),
    /// The TLS configuration could not be built.
    #[error("TLS setup failed: {0}")]
    Tls(String),
    /// The proxy configuration (explicit or from the environment) cannot be used; the message
    /// names the variable or setting, never the proxy's password.
    #[error("proxy configuration: {0}")]
    Proxy(String),
    /// The credentials file could not be read, parsed or decrypted (never ignored), or
    /// credentials were given both as a file and inline.
    #[error("credentials: {0}")]
    Credentials(String),
    /// A configuration variable (environment or `.env` file) holds a value that cannot be
    /// read; the message names the variable.
    #[error("configuration variable: {0}")]
    Environment(String),
    /// A `.env` file could not be read.
    #[error("cannot read the .env file {path}: {message}")]
    EnvFile {
        /// The file.
        path: String,
        /// Why.
        message: String,
    },
}
