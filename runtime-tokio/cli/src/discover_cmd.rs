//! `a2at registry …` and `a2at psop …`: the discovery helpers from the command line, and the
//! TLS options shared with `a2at run`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use a2at_tokio::{EngineError, PsopClient, RegistryClient, TlsConfig};
use clap::{Args, Subcommand};

/// TLS options (TL-1, TL-2, TL-3).
#[derive(Args, Clone, Default)]
pub(crate) struct TlsArgs {
    /// Extra trusted CA certificates (PEM file), added to the built-in roots.
    #[arg(long)]
    pub ca_certs: Option<PathBuf>,
    /// Client certificate chain (PEM file) for mutual TLS; needs --client-key.
    #[arg(long, requires = "client_key")]
    pub client_cert: Option<PathBuf>,
    /// Client private key (PEM or DER file, not encrypted) for mutual TLS.
    #[arg(long, requires = "client_cert")]
    pub client_key: Option<PathBuf>,
    /// Certificate revocation lists (PEM file) to check server certificates against.
    #[arg(long)]
    pub crl: Option<PathBuf>,
    /// Development only: do not verify certificate chains (host names still are). Logs a
    /// warning.
    #[arg(long)]
    pub insecure_skip_tls_verify: bool,
}

impl TlsArgs {
    /// The TLS policy: files are read now and an unreadable one is an error.
    pub(crate) fn config(&self) -> Result<TlsConfig, EngineError> {
        let mut tls = TlsConfig::default();
        if let Some(ca) = &self.ca_certs {
            tls = tls.with_ca_file(ca)?;
        }
        if let (Some(cert), Some(key)) = (&self.client_cert, &self.client_key) {
            tls = tls.with_client_identity_files(cert, key)?;
        }
        if let Some(crl) = &self.crl {
            tls = tls.with_crl_file(crl)?;
        }
        if self.insecure_skip_tls_verify {
            eprintln!(
                "a2at: warning: INSECURE_TLS: certificate chains are not verified (host names still are); use only for development"
            );
            tls = tls.insecure();
        }
        Ok(tls)
    }
}

/// Options of every discovery command.
#[derive(Args)]
pub(crate) struct Common {
    /// The base URL of the registry or PSOP store.
    #[arg(long)]
    url: String,
    /// Deadline of the call in seconds, body included.
    #[arg(long, default_value_t = 30)]
    deadline_secs: u64,
    #[command(flatten)]
    tls: TlsArgs,
}

/// `a2at registry …`.
#[derive(Subcommand)]
pub(crate) enum RegistryCommand {
    /// Print the registry's cards (all, or those matching --name) as a JSON array.
    Cards {
        #[command(flatten)]
        common: Common,
        /// Only the first card with this name.
        #[arg(long)]
        name: Option<String>,
        /// With --name: the card's organisation.
        #[arg(long, requires = "name")]
        organization: Option<String>,
    },
}

/// `a2at psop …`.
#[derive(Subcommand)]
pub(crate) enum PsopCommand {
    /// Print the workflow JSON of a PSOP (after checking that it is a valid workflow).
    Load {
        #[command(flatten)]
        common: Common,
        /// The PSOP id.
        #[arg(long)]
        id: String,
        /// The environment variable holding the access token (tokens never go on the command
        /// line, where other users could read them).
        #[arg(long)]
        access_token_env: Option<String>,
    },
    /// Print the workflows matching an intent (JSON array of summaries).
    Search {
        #[command(flatten)]
        common: Common,
        /// What the workflow should do.
        #[arg(long)]
        intent: String,
        /// How many results (default 5).
        #[arg(long)]
        top_n: Option<u32>,
        /// The environment variable holding the access token.
        #[arg(long)]
        access_token_env: Option<String>,
    },
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))
}

fn finish(result: Result<String, String>, what: &str) -> ExitCode {
    match result {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("a2at {what}: {e}");
            ExitCode::from(1)
        }
    }
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

pub(crate) fn registry(command: RegistryCommand) -> ExitCode {
    let RegistryCommand::Cards {
        common,
        name,
        organization,
    } = command;
    let result = (|| {
        let client = RegistryClient::builder(&common.url)
            .tls(common.tls.config().map_err(|e| e.to_string())?)
            .deadline(Duration::from_secs(common.deadline_secs))
            .build()
            .map_err(|e| e.to_string())?;
        let cards = runtime()?.block_on(async {
            match &name {
                None => client.fetch_agent_cards().await,
                Some(n) => client
                    .fetch_agent_card(n, organization.as_deref())
                    .await
                    .map(|c| c.into_iter().collect()),
            }
        });
        let cards = cards.map_err(|e| e.to_string())?;
        Ok(pretty(&serde_json::Value::Array(
            cards.iter().map(|c| c.to_json()).collect(),
        )))
    })();
    finish(result, "registry")
}

fn psop_client(common: &Common, token_env: Option<&str>) -> Result<PsopClient, String> {
    let mut builder = PsopClient::builder(&common.url)
        .tls(common.tls.config().map_err(|e| e.to_string())?)
        .deadline(Duration::from_secs(common.deadline_secs));
    if let Some(var) = token_env {
        let token = std::env::var(var)
            .map_err(|_| format!("the access token variable {var} is not set"))?;
        builder = builder.access_token(token);
    }
    builder.build().map_err(|e| e.to_string())
}

pub(crate) fn psop(command: PsopCommand) -> ExitCode {
    let result = (|| match command {
        PsopCommand::Load {
            common,
            id,
            access_token_env,
        } => {
            let client = psop_client(&common, access_token_env.as_deref())?;
            let rt = runtime()?;
            let text = rt
                .block_on(client.load_json(&id))
                .map_err(|e| e.to_string())?;
            a2at_core::workflow::parse_and_validate(&text)
                .map_err(|e| format!("PSOP {id} is not a valid workflow:\n{e}"))?;
            Ok(match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) => pretty(&v),
                Err(_) => text,
            })
        }
        PsopCommand::Search {
            common,
            intent,
            top_n,
            access_token_env,
        } => {
            let client = psop_client(&common, access_token_env.as_deref())?;
            let hits = runtime()?
                .block_on(client.search(&intent, top_n))
                .map_err(|e| e.to_string())?;
            let list = hits
                .iter()
                .map(|h| {
                    serde_json::json!({
                        "workflow_id": h.workflow_id,
                        "workflow_type": h.workflow_type,
                        "name": h.name,
                        "description": h.description,
                        "tags": h.tags,
                        "created_at": h.created_at,
                        "score": h.score,
                        "user_intent": h.user_intent,
                        "related_preflow": h.related_preflow,
                        "tasks_summary": h.tasks_summary,
                    })
                })
                .collect();
            Ok(pretty(&serde_json::Value::Array(list)))
        }
    })();
    finish(result, "psop")
}
