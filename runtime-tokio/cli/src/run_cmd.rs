//! `a2at run`: runs a workflow against real agents with a declarative host policy file instead
//! of Rust callbacks.
//!
//! The policy is JSON; unknown keys are errors. Every string in content, metadata and outputs may
//! use the placeholders `{description}`, `{agent}`, `{skill}`, `{step}`, `{task_id}`,
//! `{execution_id}`, `{runtime_intent}` and `{upstream}` (the selected upstream outputs as compact
//! JSON: `{"step": [outputs…]}`). A decision the policy does not cover fails explicitly, as an
//! unimplemented callback does: there is no implicit content, approval or consent.
//!
//! ```json
//! {
//!   "content": {
//!     "default": {"parts": [{"text": "{description}"}]},
//!     "agents": {"negotiator": {"parts": [{"text": "{description}"}],
//!                               "extensions": ["https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1"]}},
//!     "steps": {"diagnose": {"parts": [{"text": "{description}"}, {"data": {"site": "A"}}],
//!                            "metadata": {"ticket": "T-1"}}}
//!   },
//!   "routes": {"aggregate -> remediate": {"allow": true, "reason": "fault confirmed"},
//!              "aggregate -> end": false},
//!   "self_tasks": {"aggregate": {"outputs": ["summary of {upstream}"]},
//!                  "default": {"failure": {"code": "local.unsupported", "message": "no local handler"}}},
//!   "negotiation": {"agents": {"negotiator": {"reply": "accept", "text": "Accept: sites A, B"}},
//!                   "default": {"stop": {"code": "biz.no_consent", "reason": "not negotiable"}}}
//! }
//! ```
//!
//! Content precedence: `steps.<step>`, then `agents.<agent>`, then `default`. Routes are keyed
//! `"<source> -> <target>"` (or `default`), each `true`/`false` or `{"allow", "reason"}`. Self
//! tasks are keyed by step (or `default`). Negotiation replies are keyed by agent (or
//! `default`): `{"reply": "accept"|"reject"|"abort", "text"}` builds the A2A-T reply (same
//! negotiation context, the reply performative, the matching `templateUri`); `{"stop": {"code",
//! "reason"}}` stops locally.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2at_core::a2a::{AgentCard, Binding, Part};
use a2at_core::a2at::Performative;
use a2at_core::host::{
    ControlPoint, HostError, MessageContent, NegotiationReply, NegotiationRequest, RouteDecision,
    RouteRequest, TaskRequest, TaskResult, WorkflowInput,
};
use a2at_core::run::RunStart;
use a2at_core::workflow::parse_and_validate;
use a2at_tokio::{Engine, EventEnvelope};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::progress::{Narrator, say, summary};

/// The host policy file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Policy {
    #[serde(default)]
    content: ContentPolicy,
    #[serde(default)]
    routes: BTreeMap<String, RouteRule>,
    #[serde(default)]
    self_tasks: BTreeMap<String, SelfTaskRule>,
    #[serde(default)]
    negotiation: NegotiationPolicy,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContentPolicy {
    default: Option<ContentTemplate>,
    #[serde(default)]
    agents: BTreeMap<String, ContentTemplate>,
    #[serde(default)]
    steps: BTreeMap<String, ContentTemplate>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ContentTemplate {
    parts: Vec<Value>,
    #[serde(default)]
    metadata: Map<String, Value>,
    #[serde(default)]
    extensions: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum RouteRule {
    Flag(bool),
    Decision {
        allow: bool,
        #[serde(default)]
        reason: Option<String>,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
enum SelfTaskRule {
    Outputs(Vec<Value>),
    Failure { code: String, message: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct NegotiationPolicy {
    default: Option<NegotiationRule>,
    #[serde(default)]
    agents: BTreeMap<String, NegotiationRule>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum NegotiationRule {
    Stop { stop: StopRule },
    Reply { reply: ReplyKind, text: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StopRule {
    code: String,
    reason: String,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ReplyKind {
    Accept,
    Reject,
    Abort,
}

impl Policy {
    /// Parses a policy; the error names the offending key or value.
    pub(crate) fn from_json(text: &str) -> Result<Policy, String> {
        let policy: Policy = serde_json::from_str(text).map_err(|e| e.to_string())?;
        // Validate templates up front so a typo fails before any agent is contacted.
        let templates = policy
            .content
            .default
            .iter()
            .chain(policy.content.agents.values())
            .chain(policy.content.steps.values());
        for t in templates {
            for part in &t.parts {
                Part::from_json(part).map_err(|e| format!("content part {part}: {e}"))?;
            }
        }
        for key in policy.routes.keys() {
            if key != "default" && !key.contains(" -> ") {
                return Err(format!(
                    "routes key {key:?} must be \"<source> -> <target>\" or \"default\""
                ));
            }
        }
        Ok(policy)
    }
}

/// Replaces the placeholders in every string of `value`.
fn fill(value: &Value, vars: &[(&str, String)]) -> Value {
    match value {
        Value::String(s) => {
            let mut out = s.clone();
            for (name, v) in vars {
                out = out.replace(&format!("{{{name}}}"), v);
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn upstream(input: &WorkflowInput) -> String {
    let map: Map<String, Value> = input
        .upstream_results
        .iter()
        .map(|u| {
            let outputs: Vec<Value> = u
                .task_results
                .iter()
                .flat_map(|t| t.outputs.iter().cloned())
                .collect();
            (u.step_name.to_string(), Value::Array(outputs))
        })
        .collect();
    Value::Object(map).to_string()
}

fn vars(r: &TaskRequest) -> Vec<(&'static str, String)> {
    vec![
        ("description", r.instruction.to_string()),
        ("agent", r.agent_name.to_string()),
        ("skill", r.skill.to_string()),
        ("step", r.step_name.to_string()),
        ("task_id", r.task_id.to_string()),
        ("execution_id", r.execution_id.to_string()),
        (
            "runtime_intent",
            r.workflow_input.runtime_intent.to_string(),
        ),
        ("language", r.language.to_string()),
        ("upstream", upstream(&r.workflow_input)),
    ]
}

fn missing(what: String) -> HostError {
    HostError {
        code: a2at_core::host::codes::HOST_HANDLER_MISSING.into(),
        message: format!("the host policy has no rule for {what}"),
        details: None,
    }
}

/// A [`ControlPoint`] answering from a [`Policy`].
pub(crate) struct PolicyHost(pub(crate) Arc<Policy>);

impl ControlPoint for PolicyHost {
    async fn on_task(&self, r: Arc<TaskRequest>) -> Result<MessageContent, HostError> {
        let c = &self.0.content;
        let template = c
            .steps
            .get(r.step_name.as_str())
            .or_else(|| c.agents.get(r.agent_name.as_str()))
            .or(c.default.as_ref())
            .ok_or_else(|| {
                missing(format!(
                    "the content of step {} (agent {})",
                    r.step_name, r.agent_name
                ))
            })?;
        let vars = vars(&r);
        let parts = template
            .parts
            .iter()
            .map(|p| {
                Part::from_json(&fill(p, &vars))
                    .map_err(|e| HostError::business("host.policy_invalid", e.to_string()))
            })
            .collect::<Result<Vec<Part>, HostError>>()?;
        let metadata = match fill(&Value::Object(template.metadata.clone()), &vars) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Ok(MessageContent {
            parts,
            metadata,
            extensions: template.extensions.clone(),
        })
    }

    async fn on_self_task(&self, r: TaskRequest) -> Result<TaskResult, HostError> {
        let rule = self
            .0
            .self_tasks
            .get(r.step_name.as_str())
            .or_else(|| self.0.self_tasks.get("default"))
            .ok_or_else(|| missing(format!("the local step {}", r.step_name)))?;
        Ok(match rule {
            SelfTaskRule::Outputs(outputs) => {
                let vars = vars(&r);
                TaskResult::success(outputs.iter().map(|o| fill(o, &vars)).collect())
            }
            SelfTaskRule::Failure { code, message } => {
                TaskResult::failure(code.clone(), message.clone())
            }
        })
    }

    async fn on_route(&self, r: RouteRequest) -> Result<RouteDecision, HostError> {
        let key = format!("{} -> {}", r.step_name, r.next_step);
        let rule = self
            .0
            .routes
            .get(&key)
            .or_else(|| self.0.routes.get("default"))
            .ok_or_else(|| missing(format!("the edge {key}")))?;
        Ok(match rule {
            RouteRule::Flag(allowed) => RouteDecision {
                allowed: *allowed,
                reason: None,
            },
            RouteRule::Decision { allow, reason } => RouteDecision {
                allowed: *allow,
                reason: reason.clone(),
            },
        })
    }

    async fn on_negotiation(&self, r: NegotiationRequest) -> Result<NegotiationReply, HostError> {
        let n = &self.0.negotiation;
        let rule = n
            .agents
            .get(r.task.agent_name.as_str())
            .or(n.default.as_ref())
            .ok_or_else(|| missing(format!("negotiations with {}", r.task.agent_name)))?;
        match rule {
            NegotiationRule::Stop { stop } => Ok(NegotiationReply::Stop {
                code: stop.code.clone(),
                reason: stop.reason.clone(),
            }),
            NegotiationRule::Reply { reply, text } => {
                let performative = match reply {
                    ReplyKind::Accept => Performative::Accept,
                    ReplyKind::Reject => Performative::Reject,
                    ReplyKind::Abort => Performative::Abort,
                };
                let text = match fill(&Value::String(text.clone()), &vars(&r.task)) {
                    Value::String(s) => s,
                    _ => text.clone(),
                };
                let content = r
                    .reply(performative, &text)
                    .map_err(|e| HostError::business("negotiation.invalid", e.to_string()))?;
                Ok(NegotiationReply::Send { content })
            }
        }
    }
}

/// Reads one card file (a card or an array of cards) or every `*.json` file of a directory.
pub(crate) fn load_cards(path: &Path) -> Result<Vec<AgentCard>, String> {
    let mut files: Vec<PathBuf> = if path.is_dir() {
        std::fs::read_dir(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    files.sort();
    let mut cards = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let value: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let items = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        for item in items {
            cards.push(
                AgentCard::from_json_value(&item)
                    .map_err(|e| format!("{}: {e}", file.display()))?,
            );
        }
    }
    Ok(cards)
}

/// Options of `a2at run`.
pub(crate) struct RunOptions {
    /// The workflow of a new run (`None` when resuming).
    pub workflow: Option<PathBuf>,
    pub cards: Option<PathBuf>,
    pub host: PathBuf,
    pub input: Option<String>,
    pub language: Option<String>,
    pub events: Option<PathBuf>,
    pub result: Option<PathBuf>,
    pub trace: Option<PathBuf>,
    pub credentials: Option<PathBuf>,
    pub env_file: Option<PathBuf>,
    pub login_timeout: Option<Duration>,
    pub tls: crate::discover_cmd::TlsArgs,
    pub binding: Option<Binding>,
    pub task_budget: Option<Duration>,
    pub retry: RetryArgs,
    /// The journal spec (`sqlite:PATH`, `postgres://…`) that makes the run durable.
    pub journal: Option<String>,
    /// The id of a journaled run to continue instead of starting one.
    pub resume: Option<String>,
    /// Keep the engine's metrics in memory and print them after the result.
    pub metrics: bool,
    /// After a restart, send again a message whose outcome the agent cannot tell.
    pub resend_ambiguous: bool,
}

/// The retry options of `a2at run`; each one left out keeps its default.
pub(crate) struct RetryArgs {
    pub attempts: Option<u32>,
    pub base_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
}

impl RetryArgs {
    fn policy(&self) -> a2at_tokio::RetryPolicy {
        let mut policy = a2at_tokio::RetryPolicy::default();
        if let Some(n) = self.attempts {
            policy.attempts = n;
        }
        if let Some(ms) = self.base_delay_ms {
            policy.base_delay = Duration::from_millis(ms);
        }
        if let Some(ms) = self.max_delay_ms {
            policy.max_delay = Duration::from_millis(ms);
        }
        policy
    }
}

/// Runs the command: exit code 0 on success, 1 when the run failed, 2 for unusable input.
pub(crate) fn run(opts: RunOptions) -> ExitCode {
    let opts_resume = opts.resume.is_some();
    // Installed before the engine exists, so every count of the run is kept.
    let metrics = opts
        .metrics
        .then(a2at_tokio::metrics::InMemoryMetrics::install_global)
        .flatten();
    let outcome = prepare_and_run(opts);
    if let Some(metrics) = metrics {
        say!("metrics:\n{}", metrics.summary().trim_end());
    }
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            let command = if opts_resume { "resume" } else { "run" };
            eprintln!("a2at {command}: {e}");
            ExitCode::from(2)
        }
    }
}

fn prepare_and_run(opts: RunOptions) -> Result<bool, String> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
    };
    let workflow = match &opts.workflow {
        Some(path) => Some(
            parse_and_validate(&read(path)?)
                .map_err(|e| format!("{} is not a valid workflow:\n{e}", path.display()))?,
        ),
        None => None,
    };
    let policy = Policy::from_json(&read(&opts.host)?)
        .map_err(|e| format!("{} is not a valid host policy: {e}", opts.host.display()))?;
    let cards = match &opts.cards {
        Some(path) => load_cards(path)?,
        None => Vec::new(),
    };
    let journal = match &opts.journal {
        Some(spec) => Some((
            crate::journal_cmd::open(spec)?,
            crate::journal_cmd::shown(spec),
        )),
        None => None,
    };
    let mut builder = Engine::builder(cards);
    if let Some(path) = &opts.env_file {
        builder = builder.env_file(a2at_tokio::EnvFile::load(path).map_err(|e| e.to_string())?);
    }
    if let Some(path) = &opts.credentials {
        builder = builder.credentials_file(path);
    }
    if let Some(timeout) = opts.login_timeout {
        builder = builder.login_timeout(timeout);
    }
    builder = builder.tls(opts.tls.config().map_err(|e| e.to_string())?);
    if let Some(b) = opts.binding {
        builder = builder.preferred_binding(b);
    }
    if let Some(budget) = opts.task_budget {
        builder = builder.task_budget(budget);
    }
    builder = builder.retry(opts.retry.policy());
    if opts.resend_ambiguous {
        builder = builder.ambiguous_send(a2at_core::AmbiguousSend::Resend);
    }
    let engine = builder.build().map_err(|e| e.to_string())?;
    let events_file = match &opts.events {
        Some(p) => Some(
            std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;
    let started = Instant::now();
    let narrator = Arc::new(Mutex::new(Narrator::default()));
    let events = Arc::new(Mutex::new(events_file));
    let start = RunStart {
        runtime_intent: opts.input.unwrap_or_default().into(),
        language: opts.language.unwrap_or_default().into(),
    };
    let host = Arc::new(PolicyHost(Arc::new(policy)));
    let trace_file = match &opts.trace {
        Some(p) => Some(
            std::fs::File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?,
        ),
        None => None,
    };
    let sink = move |e: &EventEnvelope| {
        if let Ok(mut n) = narrator.lock() {
            n.print(started.elapsed(), e);
        }
        if let Ok(mut file) = events.lock() {
            if let Some(f) = file.as_mut() {
                use std::io::Write as _;
                let _ = serde_json::to_writer(&mut *f, e);
                let _ = writeln!(f);
            }
        }
    };
    let result = runtime.block_on(async {
        let Some(workflow) = workflow else {
            // Resuming: the run and its workflow come from the journal.
            let (Some(run_id), Some((store, shown))) = (&opts.resume, &journal) else {
                return Err("a resume needs a run id and a journal".to_owned());
            };
            let mut handle = engine
                .resume(store.clone(), run_id, host)
                .await
                .map_err(|e| format!("cannot resume run {run_id} from {shown}: {e}"))?;
            say!("resuming run {run_id} from the journal {shown}");
            // The resumed run's events come through its handle: hand them to the same sink.
            let mut stream = handle.events();
            let forward = tokio::spawn(async move {
                use futures::StreamExt as _;
                while let Some(e) = stream.next().await {
                    sink(&e);
                }
            });
            let result = crate::progress::follow(handle).await;
            let _ = forward.await;
            return Ok(result);
        };
        let mut builder = engine.run(workflow, host).start(start);
        if let Some(file) = trace_file {
            builder = builder.record(std::io::BufWriter::new(file));
        }
        if let Some((store, _)) = &journal {
            builder = builder.journal(store.clone());
        }
        let handle = builder.event_sink(sink).spawn();
        if let Some((_, shown)) = &journal {
            say!(
                "run {} journaled to {shown} (continue it with `a2at resume {} --journal …`)",
                handle.execution_id(),
                handle.execution_id()
            );
        }
        Ok(crate::progress::follow(handle).await)
    })?;
    summary(
        &result,
        &format!(
            "time: {} ms; {} HTTP requests",
            started.elapsed().as_millis(),
            engine.http_client().requests_sent()
        ),
    );
    if let Some(p) = &opts.result {
        let text = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
        std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        say!("result written to {}", p.display());
    }
    Ok(result.success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_and_bad_routes_are_errors_naming_them() {
        let e = Policy::from_json(r#"{"contnet": {}}"#).unwrap_err();
        assert!(e.contains("contnet"), "{e}");
        let e = Policy::from_json(r#"{"routes": {"a to b": true}}"#).unwrap_err();
        assert!(e.contains("a to b"), "{e}");
        let e = Policy::from_json(r#"{"content": {"default": {"parts": [{"txt": "x"}]}}}"#)
            .unwrap_err();
        assert!(e.contains("content part"), "{e}");
        assert!(Policy::from_json(r#"{"self_tasks": {"s": {"outputs": ["x"]}}}"#).is_ok());
    }

    #[test]
    fn placeholders_are_filled_everywhere() {
        let v = serde_json::json!({"a": ["{step}/{agent}"], "b": {"c": "{description}!"}, "n": 1});
        let out = fill(
            &v,
            &[
                ("step", "s1".into()),
                ("agent", "x".into()),
                ("description", "go".into()),
            ],
        );
        assert_eq!(
            out,
            serde_json::json!({"a": ["s1/x"], "b": {"c": "go!"}, "n": 1})
        );
    }
}
