//! The owned workflow model, as parsed from the orchestration-center JSON.
//!
//! These types are plain data: they hold what the document said, with defaults filled in, and
//! nothing else. Graph rules (unique names, known targets, no cycles, `context_from` ancestry) are
//! checked by [`ValidatedWorkflow::new`](super::ValidatedWorkflow::new).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::SharedStr;

/// The edge targets that end a branch instead of naming a step.
///
/// They are reserved: no step may carry one of these names. `retry` has no retry semantics.
pub const TERMINAL_MARKERS: [&str; 3] = ["end", "retry", "endNode"];

/// Whether `name` is exactly one of the [`TERMINAL_MARKERS`] (case-sensitive).
pub fn is_terminal_marker(name: &str) -> bool {
    TERMINAL_MARKERS.contains(&name)
}

/// A workflow: an ordered list of steps forming a DAG through their `next` edges.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Workflow {
    /// Identifier given by the orchestration center (`""` when absent).
    pub id: String,
    /// Human-readable name (`""` when absent).
    pub name: String,
    /// Free-text description (`""` when absent).
    pub description: String,
    /// The steps in declaration order; the position is the step's [`StepId`](crate::StepId).
    pub steps: Vec<Step>,
}

/// One step of a workflow.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Step {
    /// The step name, also the routing target identifier. Shared: every request and result
    /// of the step names it without a copy.
    pub name: SharedStr,
    /// Design-time hint only; readiness comes from the DAG. Defaults to 0.
    pub layer: i64,
    /// How the subtasks' outcomes combine into the step outcome.
    pub step_type: StepType,
    /// Which upstream results the step's tasks see.
    #[serde(skip_serializing_if = "ContextFrom::is_absent")]
    pub context_from: ContextFrom,
    /// The units of work of this step, run concurrently.
    pub subtasks: Vec<Subtask>,
    /// Outgoing edges, in declaration order. Empty means the step is terminal.
    pub next: Vec<Edge>,
}

/// The step policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StepType {
    /// The step succeeds only if every subtask succeeds.
    #[default]
    AllSuccess,
    /// The first successful subtask wins; the rest are cancelled.
    AnySuccess,
    /// Subtasks are handled locally by the host (`onSelfTask`), with no network call.
    SelfLoop,
}

impl StepType {
    /// The canonical enum name: `"ALL_SUCCESS"`, `"ANY_SUCCESS"` or `"SELF_LOOP"`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepType::AllSuccess => "ALL_SUCCESS",
            StepType::AnySuccess => "ANY_SUCCESS",
            StepType::SelfLoop => "SELF_LOOP",
        }
    }

    /// Parses a step type as the workflow format defines it: case-insensitive against the value form
    /// (`AllSuccess`, `AnySuccess`, `SelfLoop`) or the enum name (`ALL_SUCCESS`, ...).
    ///
    /// Returns `None` for anything else, including the empty string.
    pub fn from_name(s: &str) -> Option<StepType> {
        match s.to_ascii_lowercase().as_str() {
            "allsuccess" | "all_success" => Some(StepType::AllSuccess),
            "anysuccess" | "any_success" => Some(StepType::AnySuccess),
            "selfloop" | "self_loop" => Some(StepType::SelfLoop),
            _ => None,
        }
    }
}

impl core::fmt::Display for StepType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `context_from` field of a step as written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(untagged)]
pub enum ContextFrom {
    /// The key was missing, `null`, or a blank string: the direct predecessors are used.
    #[default]
    Absent,
    /// An explicit list. `[]` means no upstream results; `["*"]` means all ancestors; otherwise
    /// the named steps. A single string `"x"` in the document becomes `List(vec!["x"])`.
    List(Vec<String>),
}

impl ContextFrom {
    /// Whether this is [`ContextFrom::Absent`].
    pub fn is_absent(&self) -> bool {
        matches!(self, ContextFrom::Absent)
    }
}

/// One unit of work of a step: a task for one agent (or for the host, under SELF_LOOP).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Subtask {
    /// The agent name; must match an AgentCard name at run time.
    pub agent: SharedStr,
    /// The skill, informational only.
    pub skill: SharedStr,
    /// The task text; also the default business input.
    pub description: SharedStr,
    /// The explicit business input, if the document gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<BusinessInput>,
}

impl Subtask {
    /// The input the engine passes to the host: the explicit `input`, or else
    /// `BusinessInput::Text(description)`.
    pub fn effective_input(&self) -> BusinessInput {
        match &self.input {
            Some(input) => input.clone(),
            None => BusinessInput::Text(self.description.clone()),
        }
    }
}

/// The business input of a task: exactly one of non-blank text or arbitrary JSON data.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum BusinessInput {
    /// Natural-language text.
    Text(SharedStr),
    /// Structured JSON data (never `null`).
    Data(Value),
}

/// An outgoing edge (`JumpCondition{step, condition}`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Edge {
    /// The target: a step name or a terminal marker.
    pub step: String,
    /// The routing condition as written; `None` when missing or `null`.
    pub condition: Option<String>,
}

impl Edge {
    /// Whether the edge needs an `onRoute` decision: its condition is non-blank after trimming.
    ///
    /// `null`, `""` and whitespace-only conditions are all unconditional.
    pub fn is_conditional(&self) -> bool {
        self.condition
            .as_deref()
            .is_some_and(|c| !c.trim().is_empty())
    }
}

impl Workflow {
    /// The canonical JSON form: snake_case keys, `step_type` as the enum name, `context_from`
    /// omitted when absent, `input` omitted when absent. Parsing it gives back an equal workflow.
    pub fn to_json(&self) -> Value {
        // Serialising these types cannot fail: every map key is a string and every value is
        // representable, so the fallback is never taken.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn terminal_markers_match_exactly() {
        assert!(is_terminal_marker("end"));
        assert!(is_terminal_marker("retry"));
        assert!(is_terminal_marker("endNode"));
        assert!(!is_terminal_marker("End"));
        assert!(!is_terminal_marker("endnode"));
        assert!(!is_terminal_marker(" end"));
    }

    #[test]
    fn blank_conditions_are_unconditional() {
        let e = |c: Option<&str>| Edge {
            step: "x".into(),
            condition: c.map(str::to_owned),
        };
        assert!(!e(None).is_conditional());
        assert!(!e(Some("")).is_conditional());
        assert!(!e(Some(" \t\n ")).is_conditional());
        assert!(e(Some(" ok ")).is_conditional());
    }

    #[test]
    fn step_type_names() {
        for (s, t) in [
            ("AllSuccess", StepType::AllSuccess),
            ("ALL_SUCCESS", StepType::AllSuccess),
            ("allsuccess", StepType::AllSuccess),
            ("any_success", StepType::AnySuccess),
            ("anysuccess", StepType::AnySuccess),
            ("SELFLOOP", StepType::SelfLoop),
            ("selfloop", StepType::SelfLoop),
            ("Self_Loop", StepType::SelfLoop),
        ] {
            assert_eq!(StepType::from_name(s), Some(t), "{s}");
        }
        assert_eq!(StepType::from_name("any-success"), None);
        assert_eq!(StepType::from_name(""), None);
        assert_eq!(StepType::SelfLoop.as_str(), "SELF_LOOP");
        assert_eq!(StepType::default(), StepType::AllSuccess);
    }

    #[test]
    fn effective_input_defaults_to_description() {
        let mut s = Subtask {
            description: "do it".into(),
            ..Subtask::default()
        };
        assert_eq!(s.effective_input(), BusinessInput::Text("do it".into()));
        s.input = Some(BusinessInput::Data(json!({"k": 1})));
        assert_eq!(s.effective_input(), BusinessInput::Data(json!({"k": 1})));
    }

    #[test]
    fn canonical_json_shape() {
        let wf = Workflow {
            id: "w".into(),
            name: "n".into(),
            description: String::new(),
            steps: vec![Step {
                name: "a".into(),
                layer: 0,
                step_type: StepType::AnySuccess,
                context_from: ContextFrom::List(vec!["*".into()]),
                subtasks: vec![Subtask {
                    agent: "ag".into(),
                    skill: "sk".into(),
                    description: "d".into(),
                    input: Some(BusinessInput::Text("t".into())),
                }],
                next: vec![Edge {
                    step: "end".into(),
                    condition: None,
                }],
            }],
        };
        assert_eq!(
            wf.to_json(),
            json!({
                "id": "w", "name": "n", "description": "",
                "steps": [{
                    "name": "a", "layer": 0, "step_type": "ANY_SUCCESS", "context_from": ["*"],
                    "subtasks": [{"agent": "ag", "skill": "sk", "description": "d", "input": "t"}],
                    "next": [{"step": "end", "condition": null}]
                }]
            })
        );
    }
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Never reached: the run stopped or was cancelled first.
    NotRun,
    /// On a branch that was not taken (dead path); never dispatched.
    Skipped,
    /// Ran and succeeded.
    Succeeded,
    /// Ran and failed.
    Failed,
    /// Was running when the run was cancelled.
    Cancelled,
}
