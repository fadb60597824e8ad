//! Human-readable progress and result summaries, shared by `a2at demo` and `a2at run`.

use std::collections::HashMap;
use std::time::Duration;

use a2at_core::event::EventType;
use a2at_core::result::{ExecutionResult, StepStatus};
use a2at_tokio::EventEnvelope;
use serde_json::{Value, json};

/// `println!` that ignores a closed stdout (e.g. `a2at demo | head`) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}
pub(crate) use say;

/// Prints events as they happen.
#[derive(Default)]
pub(crate) struct Narrator {
    /// Step name → step type, to tell local (SELF_LOOP) tasks from remote ones.
    step_types: HashMap<String, String>,
    /// Agent → its latest dispatched `step#index`, for stream events that only name the agent.
    current: HashMap<String, String>,
    /// Agent → the text of its latest Propose.
    proposals: HashMap<String, String>,
}

impl Narrator {
    pub(crate) fn print(&mut self, at: Duration, e: &EventEnvelope) {
        let d = &e.data;
        let s = |k: &str| d[k].as_str().unwrap_or("?").to_owned();
        let task = || format!("{}#{}", s("step"), d["subtask_index"]);
        let line = match e.kind {
            EventType::StepStart => {
                self.step_types.insert(s("step"), s("step_type"));
                format!("step {} started ({})", s("step"), s("step_type"))
            }
            EventType::TaskRequest if self.is_self_loop(&s("step")) => {
                format!("  task {} → host (on_self_task)", task())
            }
            EventType::TaskRequest => {
                self.current.insert(s("agent"), task());
                format!("  task {} → {} sent", task(), s("agent"))
            }
            EventType::AgentStatusUpdate => {
                let state = s("state");
                if state == "TASK_STATE_INPUT_REQUIRED" {
                    let text = message_text(&d["message"]);
                    self.proposals.insert(s("agent"), text);
                }
                if d["snapshot"] != json!(false) {
                    return;
                }
                format!(
                    "    {} ← {} {}",
                    self.task_of(&s("agent")),
                    s("agent"),
                    state.trim_start_matches("TASK_STATE_")
                )
            }
            EventType::AgentArtifactUpdate => format!(
                "    {} ← {} streamed chunk {:?}{}",
                self.task_of(&s("agent")),
                s("agent"),
                d["artifact"]["parts"][0]["text"].as_str().unwrap_or(""),
                if d["last_chunk"] == json!(true) {
                    " (last)"
                } else {
                    ""
                }
            ),
            EventType::NegotiationRequest => format!(
                "  negotiation round {} of max {} with {}: proposal {:?}",
                d["round"],
                d["maxRounds"],
                s("agent"),
                self.proposals.get(&s("agent")).map_or("", String::as_str)
            ),
            EventType::NegotiationResolved => {
                let verdict = match s("performative").as_str() {
                    "ACCEPT" => "accepted".to_owned(),
                    "REJECT" => "rejected".to_owned(),
                    "ABORT" => "aborted".to_owned(),
                    other => other.to_owned(),
                };
                format!(
                    "  negotiation round {} with {}: {verdict}",
                    d["round"],
                    s("agent")
                )
            }
            EventType::NegotiationFailed => {
                format!("  negotiation with {} failed: {}", s("agent"), s("error"))
            }
            EventType::TaskResponse => {
                let who = if self.is_self_loop(&s("step")) {
                    "host".to_owned()
                } else {
                    s("agent")
                };
                if d["success"] == json!(true) {
                    format!("  task {} → {who} succeeded", task())
                } else {
                    format!(
                        "  task {} → {who} {} ({}: {})",
                        task(),
                        s("status"),
                        s("errorCode"),
                        s("error")
                    )
                }
            }
            EventType::StepComplete => format!("step {} succeeded", s("step")),
            EventType::Error if d["step"].is_string() => {
                format!("step {} failed ({})", s("step"), s("errorCode"))
            }
            EventType::Error => format!("run failed: {} ({})", s("error"), s("errorCode")),
            EventType::RouteDecision if d["conditional"] != json!(true) => {
                format!("  route {} → {}: unconditional", s("step"), s("next"))
            }
            EventType::RouteDecision => format!(
                "  route {} → {}: {} (\"{}\"; {})",
                s("step"),
                s("next"),
                if d["allowed"] == json!(true) {
                    "allowed"
                } else {
                    "denied"
                },
                s("condition"),
                d["reason"].as_str().unwrap_or("no reason")
            ),
            _ => return,
        };
        say!("[{:>5}ms] {line}", at.as_millis());
    }

    fn is_self_loop(&self, step: &str) -> bool {
        self.step_types.get(step).is_some_and(|t| t == "SELF_LOOP")
    }

    fn task_of(&self, agent: &str) -> String {
        self.current
            .get(agent)
            .cloned()
            .unwrap_or_else(|| "task".to_owned())
    }
}

/// The last line of a message's first text part (skips a `## heading`).
fn message_text(message: &Value) -> String {
    let text = message["parts"][0]["text"].as_str().unwrap_or("");
    text.lines().last().unwrap_or("").to_owned()
}

/// Prints the result: status, steps, outputs, and the timing line given by the caller.
pub(crate) fn summary(result: &ExecutionResult, timing: &str) {
    say!();
    if result.success {
        say!("result: success");
    } else {
        let e = result.error.as_ref();
        say!(
            "result: FAILED — {} ({})",
            e.map_or("no error", |e| e.message.as_str()),
            e.map_or("?", |e| e.code.as_str())
        );
    }
    say!("steps:");
    for step in &result.steps {
        let status = match step.status {
            StepStatus::NotRun => "not run",
            StepStatus::Skipped => "skipped (route not taken)",
            StepStatus::Succeeded => "succeeded",
            StepStatus::Failed => "failed",
            StepStatus::Cancelled => "cancelled",
        };
        let tasks: Vec<String> = result
            .history
            .iter()
            .filter(|t| t.step_name == step.name)
            .map(|t| format!("{} {}", t.agent_name, t.status.as_str()))
            .collect();
        say!("  {:<10} {:<26} {}", step.name, status, tasks.join(", "));
    }
    say!("outputs:");
    for t in &result.history {
        let mut text: Vec<String> = t.outputs.iter().map(short).collect();
        if let Some(code) = &t.error_code {
            text.push(format!(
                "error {code}: {}",
                t.error.as_deref().unwrap_or("")
            ));
        }
        let mut lines = text
            .join(" | ")
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        if lines.is_empty() {
            lines.push(String::new());
        }
        say!("  {:<10} {:<17} {}", t.step_name, t.agent_name, lines[0]);
        for line in &lines[1..] {
            say!("  {:<10} {:<17} {line}", "", "");
        }
    }
    say!("{timing}");
}

fn short(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if s.chars().count() > 90 && !s.contains('\n') {
        format!("{}…", s.chars().take(90).collect::<String>())
    } else {
        s
    }
}

/// One line of live progress: steps done/running/pending/skipped out of all, subtasks in
/// flight per agent, subtasks finished.
pub(crate) fn progress_line(p: &a2at_tokio::RunProgress) -> String {
    use a2at_tokio::StepProgressState as S;
    let flight: Vec<String> = p
        .in_flight
        .iter()
        .map(|(agent, n)| format!("{agent}×{n}"))
        .collect();
    format!(
        "[{}/{} steps done, {} running, {} pending, {} skipped; in flight: {}; {} tasks finished]",
        p.done(),
        p.steps.len(),
        p.count(S::Running),
        p.count(S::Pending),
        p.count(S::Skipped),
        if flight.is_empty() {
            "none".to_owned()
        } else {
            flight.join(", ")
        },
        p.history.len()
    )
}

/// Follows a started (or resumed) run to its end; on a terminal, shows [`progress_line`] (from
/// `run.progress()`, refreshed twice a second) on stderr, rewritten in place and cleared at the
/// end.
pub(crate) async fn follow(mut run: a2at_tokio::RunHandle) -> ExecutionResult {
    use std::io::{IsTerminal, Write};
    // Events go to the sink; nobody reads the stream, so it must not hold the run.
    drop(run.events());
    if !std::io::stderr().is_terminal() {
        return run.result().await;
    }
    let mut shown = false;
    loop {
        match run.progress().await {
            Some(p) if !p.finished => {
                let mut err = std::io::stderr();
                let _ = write!(err, "\r\x1b[2K{}", progress_line(&p));
                let _ = err.flush();
                shown = true;
            }
            _ => break,
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if shown {
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    run.result().await
}

#[cfg(test)]
mod progress_tests {
    use super::*;
    use a2at_tokio::{RunProgress, StepProgress, StepProgressState};

    #[test]
    fn the_progress_line_counts_steps_and_agents() {
        let step = |name: &str, state| StepProgress {
            name: name.into(),
            state,
        };
        let p = RunProgress {
            execution_id: "e".into(),
            finished: false,
            steps: vec![
                step("a", StepProgressState::Succeeded),
                step("b", StepProgressState::Running),
                step("c", StepProgressState::Pending),
                step("d", StepProgressState::Skipped),
            ],
            in_flight: [("alpha".to_owned(), 2)].into_iter().collect(),
            step_outputs: Default::default(),
            history: Vec::new(),
        };
        assert_eq!(
            progress_line(&p),
            "[1/4 steps done, 1 running, 1 pending, 1 skipped; in flight: alpha×2; 0 tasks finished]"
        );
    }
}
