//! The `a2at` command-line tool: check a workflow, draw it, and run the bundled demo.
#![forbid(unsafe_code)]

mod demo;
mod discover_cmd;
mod journal_cmd;
mod progress;
mod report;
mod run_cmd;
mod task_cmd;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use a2at_core::result::{ExecutionResult, StepStatus};
use a2at_core::workflow::{
    GraphFormat, ValidatedWorkflow, WorkflowError, parse_and_validate, render_graph,
};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "a2at", version, about = "The a2at A2A-T workflow engine tool")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

// Parsed once per process: the size of the largest variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the bundled workflow against in-process A2A agents and narrate it (the default).
    Demo {
        /// Have the host reject the second proposal, to see a failing run (exit code 1).
        #[arg(long)]
        reject: bool,
        /// Also write the run's HTML report (workflow, timeline, outputs) to this file.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Export the demo run's spans to this OpenTelemetry collector over OTLP/HTTP (as
        /// `a2at run --otlp-endpoint`).
        #[arg(long)]
        otlp_endpoint: Option<String>,
    },
    /// Check a workflow file and list every problem found (exit code 1 when there are any).
    Validate {
        /// The workflow JSON (the orchestration-center `{"data": …}` envelope is accepted).
        workflow: PathBuf,
    },
    /// Print the workflow as a Mermaid flowchart or a Graphviz digraph.
    Graph {
        /// The workflow JSON.
        workflow: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Mermaid)]
        format: Format,
        /// A finished run: an `ExecutionResult` JSON file or an a2at trace (JSON lines), whose
        /// step statuses colour the graph.
        #[arg(long)]
        result: Option<PathBuf>,
    },
    /// Print the `enc:` form of a credential value (AES-256-GCM, fresh random IV), for the
    /// credentials file.
    EncryptCredential {
        /// The plaintext value.
        plaintext: String,
        /// The key as 64 hex characters (default: the `A2AT_CRED_KEY` environment variable);
        /// `openssl rand -hex 32` makes one.
        #[arg(long)]
        key: Option<String>,
    },
    /// Write one self-contained HTML page showing a finished run: the workflow coloured by step
    /// status and a timeline of every subtask and exchange (the timeline needs a trace).
    Report {
        /// An a2at trace (JSON lines, from `a2at run --trace`) or an `ExecutionResult` JSON file.
        input: PathBuf,
        /// The HTML file to write.
        #[arg(short, long)]
        output: PathBuf,
        /// The workflow, to draw the graph of a result file (a trace carries its own).
        #[arg(long)]
        workflow: Option<PathBuf>,
    },
    /// Replay an a2at trace through a fresh core run and compare every output with the recording.
    Replay {
        /// The trace (JSON lines, as written by `a2at_core::trace`).
        trace: PathBuf,
    },
    /// Run a workflow against real agents, answering the host's decisions from a policy file.
    Run {
        /// The workflow JSON.
        #[arg(long)]
        workflow: PathBuf,
        /// An AgentCard JSON file (one card or an array), or a directory of them.
        #[arg(long)]
        cards: PathBuf,
        /// The declarative host policy (see the README, "Running a workflow from the command line").
        #[arg(long)]
        host: PathBuf,
        /// The runtime intent passed to every task request.
        #[arg(long)]
        input: Option<String>,
        /// The language hint passed to every task request (`{language}` in the host policy's
        /// templates); empty when not given.
        #[arg(long)]
        language: Option<String>,
        /// Also write every event as a JSON line to this file.
        #[arg(long)]
        events: Option<PathBuf>,
        /// Write the `ExecutionResult` as JSON to this file (usable with `a2at graph --result`).
        #[arg(long)]
        result: Option<PathBuf>,
        /// Record the run as an a2at trace (JSON lines) to this file; `a2at replay` replays it.
        #[arg(long)]
        trace: Option<PathBuf>,
        /// A credentials file for agents whose cards require authentication (`enc:` values are
        /// decrypted with `A2AT_CRED_KEY`).
        #[arg(long)]
        credentials: Option<PathBuf>,
        /// A `.env` file whose variables apply where the environment sets nothing
        /// (`A2AT_CRED_KEY`, `WORKFLOW_ENGINE_PROTOCOL_*`).
        #[arg(long)]
        env_file: Option<PathBuf>,
        /// Deadline of each credential login in seconds (default 30).
        #[arg(long)]
        login_timeout_secs: Option<u64>,
        #[command(flatten)]
        tls: discover_cmd::TlsArgs,
        /// Use this binding for every agent (an agent that does not offer it is an error);
        /// without it JSON-RPC and REST interfaces are taken in card order, gRPC only when an
        /// agent offers nothing else.
        #[arg(long, value_enum)]
        binding: Option<BindingArg>,
        /// Budget of each task activation in seconds (default 600).
        #[arg(long)]
        task_budget_secs: Option<u64>,
        /// Consecutive faults retried per subtask (default 5; 0 fails on the first fault).
        #[arg(long)]
        retry_attempts: Option<u32>,
        /// Delay before the first retry in milliseconds, doubled per attempt (default 200).
        #[arg(long)]
        retry_base_delay_ms: Option<u64>,
        /// Longest delay between retries in milliseconds (default 5000).
        #[arg(long)]
        retry_max_delay_ms: Option<u64>,
        /// Make the run durable: journal it to `sqlite:PATH` or a `postgres://` URL, so that
        /// `a2at resume` can continue it after this process dies.
        #[arg(long)]
        journal: Option<String>,
        /// Print the engine's metrics (runs, subtasks, request latency, retries, …) after the
        /// result.
        #[arg(long)]
        metrics: bool,
        /// With `--journal`: when the run is resumed, send again (same `messageId`) a message
        /// whose outcome an agent without `ListTasks` cannot tell, instead of failing that
        /// subtask with `run.resume_ambiguous`. Only for agents that de-duplicate by message id.
        #[arg(long)]
        resend_ambiguous: bool,
        /// Export the run's spans (run, steps, subtasks, exchanges) to this OpenTelemetry
        /// collector over OTLP/HTTP, e.g. `http://127.0.0.1:4318` (`/v1/traces` is appended to
        /// a URL without a path); they are flushed before the command exits.
        #[arg(long)]
        otlp_endpoint: Option<String>,
    },
    /// Continue a journaled run whose engine process died, from its journal.
    Resume {
        /// The run's id (its execution id, as `a2at run --journal` and `a2at runs list` show).
        run_id: String,
        /// The journal: `sqlite:PATH` or a `postgres://` URL.
        #[arg(long)]
        journal: String,
        /// The declarative host policy answering the decisions still to take.
        #[arg(long)]
        host: PathBuf,
        /// AgentCard files for the engine's transport settings (the run keeps the cards it
        /// journaled when it started).
        #[arg(long)]
        cards: Option<PathBuf>,
        /// Also write every event after the restart as a JSON line to this file.
        #[arg(long)]
        events: Option<PathBuf>,
        /// Write the `ExecutionResult` as JSON to this file.
        #[arg(long)]
        result: Option<PathBuf>,
        /// A credentials file for agents whose cards require authentication.
        #[arg(long)]
        credentials: Option<PathBuf>,
        /// A `.env` file whose variables apply where the environment sets nothing.
        #[arg(long)]
        env_file: Option<PathBuf>,
        #[command(flatten)]
        tls: discover_cmd::TlsArgs,
    },
    /// Look at the runs of a journal.
    Runs {
        #[command(subcommand)]
        command: journal_cmd::RunsCommand,
    },
    /// Query an agent card registry.
    Registry {
        #[command(subcommand)]
        command: discover_cmd::RegistryCommand,
    },
    /// Load or search workflows (PSOPs) in an orchestration center.
    Psop {
        #[command(subcommand)]
        command: discover_cmd::PsopCommand,
    },
    /// Look at, list, cancel or follow an agent's tasks.
    Task {
        #[command(subcommand)]
        command: task_cmd::TaskCommand,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum BindingArg {
    Jsonrpc,
    Rest,
    Grpc,
}

impl BindingArg {
    fn binding(self) -> a2at_core::a2a::Binding {
        match self {
            BindingArg::Jsonrpc => a2at_core::a2a::Binding::JsonRpc,
            BindingArg::Rest => a2at_core::a2a::Binding::HttpJson,
            BindingArg::Grpc => a2at_core::a2a::Binding::Grpc,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Mermaid,
    Dot,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => demo::run(false, None),
        Some(Command::Demo {
            reject,
            report,
            otlp_endpoint,
        }) => with_otlp(otlp_endpoint.as_deref(), || {
            demo::run(reject, report.as_deref())
        }),
        Some(Command::Validate { workflow }) => validate(&workflow),
        Some(Command::Graph {
            workflow,
            format,
            result,
        }) => graph(&workflow, format, result.as_deref()),
        Some(Command::Replay { trace }) => replay(&trace),
        Some(Command::Report {
            input,
            output,
            workflow,
        }) => report::run(&input, &output, workflow.as_deref()),
        Some(Command::EncryptCredential { plaintext, key }) => encrypt_credential(&plaintext, key),
        Some(Command::Run {
            workflow,
            cards,
            host,
            input,
            language,
            events,
            result,
            trace,
            credentials,
            env_file,
            login_timeout_secs,
            tls,
            binding,
            task_budget_secs,
            retry_attempts,
            retry_base_delay_ms,
            retry_max_delay_ms,
            journal,
            metrics,
            resend_ambiguous,
            otlp_endpoint,
        }) => with_otlp(otlp_endpoint.as_deref(), || {
            run_cmd::run(run_cmd::RunOptions {
                retry: run_cmd::RetryArgs {
                    attempts: retry_attempts,
                    base_delay_ms: retry_base_delay_ms,
                    max_delay_ms: retry_max_delay_ms,
                },
                credentials,
                env_file,
                login_timeout: login_timeout_secs.map(std::time::Duration::from_secs),
                tls,
                workflow: Some(workflow),
                cards: Some(cards),
                host,
                input,
                language,
                events,
                result,
                trace,
                binding: binding.map(BindingArg::binding),
                task_budget: task_budget_secs.map(std::time::Duration::from_secs),
                journal,
                resume: None,
                metrics,
                resend_ambiguous,
            })
        }),
        Some(Command::Resume {
            run_id,
            journal,
            host,
            cards,
            events,
            result,
            credentials,
            env_file,
            tls,
        }) => run_cmd::run(run_cmd::RunOptions {
            retry: run_cmd::RetryArgs {
                attempts: None,
                base_delay_ms: None,
                max_delay_ms: None,
            },
            credentials,
            env_file,
            login_timeout: None,
            tls,
            workflow: None,
            cards,
            host,
            input: None,
            language: None,
            events,
            result,
            trace: None,
            binding: None,
            task_budget: None,
            journal: Some(journal),
            resume: Some(run_id),
            metrics: false,
            // The policy the run was started with is in its journal.
            resend_ambiguous: false,
        }),
        Some(Command::Runs { command }) => journal_cmd::run(command),
        Some(Command::Registry { command }) => discover_cmd::registry(command),
        Some(Command::Psop { command }) => discover_cmd::psop(command),
        Some(Command::Task { command }) => task_cmd::run(command),
    }
}

/// Runs `command` with the engine's spans exported to `endpoint` over OTLP/HTTP (when given),
/// and flushes them before returning. The export layer is this process's subscriber: the CLI
/// owns its process, unlike the library, which leaves that choice to its host.
fn with_otlp(endpoint: Option<&str>, command: impl FnOnce() -> ExitCode) -> ExitCode {
    use tracing_subscriber::layer::SubscriberExt;
    let Some(endpoint) = endpoint else {
        return command();
    };
    let (layer, guard) = match a2at_tokio::otel::layer(a2at_tokio::otel::OtlpConfig::new(endpoint))
    {
        Ok(export) => export,
        Err(e) => {
            eprintln!("a2at: --otlp-endpoint: {e}");
            return ExitCode::from(2);
        }
    };
    if tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).is_err()
    {
        eprintln!("a2at: --otlp-endpoint: a tracing subscriber is already installed");
        return ExitCode::from(2);
    }
    let code = command();
    // Blocks until the queued spans are sent (or the exporter's timeout passed).
    if let Err(e) = guard.shutdown() {
        eprintln!("a2at: {e}");
    }
    code
}

fn load(path: &Path) -> Result<Result<ValidatedWorkflow, WorkflowError>, ExitCode> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse_and_validate(&text)),
        Err(e) => {
            eprintln!("a2at: cannot read {}: {e}", path.display());
            Err(ExitCode::from(2))
        }
    }
}

fn validate(path: &Path) -> ExitCode {
    let wf = match load(path) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match wf {
        Ok(wf) => {
            let edges: usize = wf.step_ids().map(|id| wf.edges(id).len()).sum();
            let starts: Vec<&str> = wf
                .start_steps()
                .iter()
                .map(|id| wf.step(*id).name.as_str())
                .collect();
            println!(
                "ok: {} — {} steps, {} edges, start steps: {}",
                path.display(),
                wf.len(),
                edges,
                starts.join(", ")
            );
            ExitCode::SUCCESS
        }
        Err(WorkflowError::Parse(e)) => {
            println!(
                "invalid: {} — {} problem(s) while parsing",
                path.display(),
                e.problems.len()
            );
            for p in &e.problems {
                println!("  {}: {}", p.path, p.message);
            }
            ExitCode::from(1)
        }
        Err(WorkflowError::Invalid(e)) => {
            println!(
                "invalid: {} — {} problem(s) in the graph",
                path.display(),
                e.problems.len()
            );
            for p in &e.problems {
                println!("  {}", p.message);
            }
            ExitCode::from(1)
        }
    }
}

fn graph(path: &Path, format: Format, result: Option<&Path>) -> ExitCode {
    let wf = match load(path) {
        Ok(Ok(wf)) => wf,
        Ok(Err(e)) => {
            eprintln!(
                "a2at: {} is not a valid workflow (run `a2at validate`):\n{e}",
                path.display()
            );
            return ExitCode::from(1);
        }
        Err(code) => return code,
    };
    let statuses: Option<BTreeMap<String, StepStatus>> = match result {
        None => None,
        Some(p) => {
            let parsed = std::fs::read_to_string(p)
                .map_err(|e| e.to_string())
                .and_then(|t| result_of(&t));
            match parsed {
                Ok(r) => Some(
                    r.steps
                        .into_iter()
                        .map(|s| (s.name.into(), s.status))
                        .collect(),
                ),
                Err(e) => {
                    eprintln!("a2at: cannot read the result {}: {e}", p.display());
                    return ExitCode::from(2);
                }
            }
        }
    };
    let format = match format {
        Format::Mermaid => GraphFormat::Mermaid,
        Format::Dot => GraphFormat::Dot,
    };
    print!("{}", render_graph(&wf, format, statuses.as_ref()));
    ExitCode::SUCCESS
}

/// An `ExecutionResult` from a result file, or from replaying a trace file.
fn result_of(text: &str) -> Result<ExecutionResult, String> {
    if let Ok(result) = serde_json::from_str::<ExecutionResult>(text) {
        return Ok(result);
    }
    let trace = a2at_core::trace::parse_trace(text).map_err(|e| e.to_string())?;
    let report = a2at_core::trace::replay(&trace).map_err(|e| e.to_string())?;
    report
        .result
        .ok_or_else(|| "the trace ends before the run finished".to_owned())
}

fn replay(path: &Path) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("a2at: cannot read {}: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    let trace = match a2at_core::trace::parse_trace(&text) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("a2at: {} is not an a2at trace: {e}", path.display());
            return ExitCode::from(2);
        }
    };
    match a2at_core::trace::replay(&trace) {
        Ok(report) => {
            println!(
                "replayed {}: {} inputs, {} timeouts, {} outputs ({} compared with the recording), identical",
                path.display(),
                report.inputs,
                report.timeouts,
                report.outputs,
                report.compared
            );
            if let Some(r) = &report.result {
                let outcome = match &r.error {
                    None => "success".to_owned(),
                    Some(e) => format!("failed: {} ({})", e.message, e.code),
                };
                println!("result: {outcome}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("replay of {} diverged:\n{e}", path.display());
            ExitCode::from(1)
        }
    }
}

fn encrypt_credential(plaintext: &str, key: Option<String>) -> ExitCode {
    use a2at_core::auth::{CredentialKey, encrypt_value};
    let Some(hex) = key.or_else(|| std::env::var(a2at_tokio::CREDENTIAL_KEY_ENV).ok()) else {
        eprintln!(
            "a2at: no key: pass --key or set {}",
            a2at_tokio::CREDENTIAL_KEY_ENV
        );
        return ExitCode::from(2);
    };
    let key = match CredentialKey::from_hex(hex.trim()) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("a2at: bad key: {e}");
            return ExitCode::from(2);
        }
    };
    let mut iv = [0u8; 12];
    if let Err(e) = getrandom::fill(&mut iv) {
        eprintln!("a2at: no randomness for the IV: {e}");
        return ExitCode::from(2);
    }
    println!("{}", encrypt_value(plaintext, &key, iv));
    ExitCode::SUCCESS
}
