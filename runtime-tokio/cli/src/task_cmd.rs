//! `a2at task get|list|cancel|watch`: the engine's task passthroughs from the command line.
//!
//! Output is JSON on stdout (a task, a page, or one stream item per line for `watch`); a
//! failure prints its typed code on stderr with exit code 1; unusable input exits with 2.

use std::path::PathBuf;
use std::process::ExitCode;

use a2at_core::a2a::{ListTasksParams, TaskPage, TaskState};
use a2at_tokio::{Engine, TaskError};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::BindingArg;

/// The options every task command shares: which agent, and how to reach it.
#[derive(Args)]
pub(crate) struct Target {
    /// An AgentCard JSON file (one card or an array), or a directory of them.
    #[arg(long)]
    cards: PathBuf,
    /// The agent (card name) holding the tasks.
    #[arg(long)]
    agent: String,
    /// A credentials file for agents whose cards require authentication.
    #[arg(long)]
    credentials: Option<PathBuf>,
    /// A `.env` file whose variables apply where the environment sets nothing.
    #[arg(long)]
    env_file: Option<PathBuf>,
    /// Prefer this binding when the agent offers several.
    #[arg(long, value_enum)]
    binding: Option<BindingArg>,
    /// Deadline of the answer in seconds (default 600).
    #[arg(long)]
    timeout_secs: Option<u64>,
    #[command(flatten)]
    tls: crate::discover_cmd::TlsArgs,
}

/// `a2at task …`.
#[derive(Subcommand)]
pub(crate) enum TaskCommand {
    /// Print one task (GetTask).
    Get {
        #[command(flatten)]
        target: Target,
        /// The agent's task id.
        #[arg(long)]
        task_id: String,
        /// History messages to include.
        #[arg(long)]
        history_length: Option<u32>,
    },
    /// Print a page of tasks (ListTasks) with its nextPageToken, or every page with --all.
    List {
        #[command(flatten)]
        target: Target,
        /// Only tasks of this context.
        #[arg(long)]
        context_id: Option<String>,
        /// Only tasks in this state (`working`, `TASK_STATE_COMPLETED`, …).
        #[arg(long)]
        status: Option<String>,
        /// Tasks per page (1 to 100).
        #[arg(long)]
        page_size: Option<u32>,
        /// The nextPageToken of the previous page.
        #[arg(long)]
        page_token: Option<String>,
        /// History messages to include per task.
        #[arg(long)]
        history_length: Option<u32>,
        /// Only tasks whose status changed after this RFC 3339 time.
        #[arg(long)]
        status_timestamp_after: Option<String>,
        /// Include artifacts (`true` or `false`).
        #[arg(long)]
        include_artifacts: Option<bool>,
        /// Follow nextPageToken to the last page and print every task.
        #[arg(long)]
        all: bool,
    },
    /// Cancel a task (CancelTask) and print it as the agent answered.
    Cancel {
        #[command(flatten)]
        target: Target,
        /// The agent's task id.
        #[arg(long)]
        task_id: String,
    },
    /// Follow a task (SubscribeToTask): one JSON line per event until the agent ends the
    /// stream.
    Watch {
        #[command(flatten)]
        target: Target,
        /// The agent's task id.
        #[arg(long)]
        task_id: String,
    },
}

/// Runs one task command.
pub(crate) fn run(command: TaskCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("a2at task: cannot start the tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(execute(command))
}

fn engine(target: &Target) -> Result<Engine, String> {
    let cards = crate::run_cmd::load_cards(&target.cards)?;
    let mut builder = Engine::builder(cards);
    if let Some(path) = &target.env_file {
        builder = builder.env_file(a2at_tokio::EnvFile::load(path).map_err(|e| e.to_string())?);
    }
    if let Some(path) = &target.credentials {
        builder = builder.credentials_file(path);
    }
    builder = builder.tls(target.tls.config().map_err(|e| e.to_string())?);
    if let Some(b) = target.binding {
        builder = builder.preferred_binding(b.binding());
    }
    if let Some(secs) = target.timeout_secs {
        builder = builder.task_budget(std::time::Duration::from_secs(secs));
    }
    builder.build().map_err(|e| e.to_string())
}

fn page_json(page: &TaskPage) -> Value {
    json!({
        "tasks": page.tasks.iter().map(|t| t.to_json()).collect::<Vec<_>>(),
        "nextPageToken": page.next_page_token,
        "pageSize": page.page_size,
        "totalSize": page.total_size,
    })
}

fn failed(e: &TaskError) -> ExitCode {
    eprintln!("a2at task: {}: {}", e.code, e.message);
    if let Some(d) = &e.details {
        eprintln!("  details: {d}");
    }
    ExitCode::from(1)
}

fn status_of(name: &str) -> Result<TaskState, String> {
    let upper = name.trim().to_ascii_uppercase().replace('-', "_");
    let full = if upper.starts_with("TASK_STATE_") {
        upper
    } else {
        format!("TASK_STATE_{upper}")
    };
    match TaskState::from_name(&full) {
        TaskState::Unrecognized | TaskState::Unspecified => Err(format!("unknown state {name:?}")),
        s => Ok(s),
    }
}

async fn execute(command: TaskCommand) -> ExitCode {
    let target = match &command {
        TaskCommand::Get { target, .. }
        | TaskCommand::List { target, .. }
        | TaskCommand::Cancel { target, .. }
        | TaskCommand::Watch { target, .. } => target,
    };
    let engine = match engine(target) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("a2at task: {e}");
            return ExitCode::from(2);
        }
    };
    let agent = target.agent.as_str();
    match &command {
        TaskCommand::Get {
            task_id,
            history_length,
            ..
        } => match engine
            .get_task_with_history(agent, task_id, *history_length)
            .await
        {
            Ok(task) => {
                println!("{}", task.to_json());
                ExitCode::SUCCESS
            }
            Err(e) => failed(&e),
        },
        TaskCommand::Cancel { task_id, .. } => match engine.cancel_task(agent, task_id).await {
            Ok(task) => {
                println!("{}", task.to_json());
                ExitCode::SUCCESS
            }
            Err(e) => failed(&e),
        },
        TaskCommand::List {
            context_id,
            status,
            page_size,
            page_token,
            history_length,
            status_timestamp_after,
            include_artifacts,
            all,
            ..
        } => {
            let status = match status.as_deref().map(status_of).transpose() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("a2at task list: --status: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut params = ListTasksParams {
                context_id: context_id.clone(),
                status,
                page_size: *page_size,
                page_token: page_token.clone(),
                history_length: *history_length,
                status_timestamp_after: status_timestamp_after.clone(),
                include_artifacts: *include_artifacts,
            };
            let mut everything = TaskPage::default();
            loop {
                let page = match engine.list_tasks(agent, params.clone()).await {
                    Ok(p) => p,
                    Err(e) => return failed(&e),
                };
                if !*all {
                    println!("{}", page_json(&page));
                    return ExitCode::SUCCESS;
                }
                everything.tasks.extend(page.tasks);
                everything.total_size = page.total_size;
                match page.next_page_token {
                    // A token that does not move would loop forever.
                    Some(token) if params.page_token.as_ref() != Some(&token) => {
                        params.page_token = Some(token);
                    }
                    _ => break,
                }
            }
            println!("{}", page_json(&everything));
            ExitCode::SUCCESS
        }
        TaskCommand::Watch { task_id, .. } => {
            let mut sub = match engine.subscribe_to_task(agent, task_id) {
                Ok(s) => s,
                Err(e) => return failed(&e),
            };
            while let Some(item) = sub.next_event().await {
                match item {
                    Ok(event) => println!("{}", event.to_json()),
                    Err(e) => return failed(&e),
                }
            }
            ExitCode::SUCCESS
        }
    }
}
