//! The complete result of a run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::host::TaskExecutionResult;

/// How a step ended; defined with the workflow model so that drawing a graph needs no result
/// types.
pub use crate::workflow::StepStatus;

/// Why a run did not succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    /// Stable code, e.g. `workflow.step_failed`, `workflow.route_failed`, `workflow.cancelled`.
    pub code: String,
    /// Human-readable message naming the step or edge involved.
    pub message: String,
}

/// The status of one step at the end of the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepReport {
    /// The step name.
    pub name: String,
    /// How it ended.
    pub status: StepStatus,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResult {
    /// The run's execution id.
    pub execution_id: String,
    /// True only when every dispatched step succeeded and the run was not cancelled.
    pub success: bool,
    /// Why the run failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    /// One entry per finished subtask, in the order they finished.
    pub history: Vec<TaskExecutionResult>,
    /// step name → task key → outputs. The task key is the subtask description, or
    /// `"<description> [<agent>#<index>]"` when descriptions repeat within the step.
    pub step_outputs: BTreeMap<String, BTreeMap<String, Vec<Value>>>,
    /// Every step of the workflow with its final status, in declaration order.
    pub steps: Vec<StepReport>,
}
