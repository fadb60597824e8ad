//! The complete result of a run.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::SharedStr;
use crate::host::{TaskExecutionResult, TaskStatus};

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
    pub name: SharedStr,
    /// How it ended.
    pub status: StepStatus,
}

/// Everything a run produced.
///
/// Its JSON form also carries `step_outputs` (see [`ExecutionResult::step_outputs`]), written
/// from the history; reading a result back derives it again and ignores the field.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    /// Every step of the workflow with its final status, in declaration order.
    pub steps: Vec<StepReport>,
}

/// One step's outputs by task key, borrowed from a result's history (see
/// [`ExecutionResult::step_outputs`]).
pub type TaskOutputs<'a> = BTreeMap<Cow<'a, str>, &'a [Value]>;

impl ExecutionResult {
    /// The outputs of every step that ran to its end, succeeded or failed: step name → task
    /// key → outputs, cancelled subtasks left out.
    ///
    /// The task key is the subtask's description, or `"<description> [<agent>#<index>]"` when
    /// the description repeats within its step. The map borrows from [`ExecutionResult::history`],
    /// which holds each output once, and is built on each call: keep it rather than calling
    /// again in a loop.
    pub fn step_outputs(&self) -> BTreeMap<&str, TaskOutputs<'_>> {
        let mut by_step: BTreeMap<&str, Vec<&TaskExecutionResult>> = BTreeMap::new();
        for result in &self.history {
            by_step.entry(&result.step_name).or_default().push(result);
        }
        self.steps
            .iter()
            .filter(|report| matches!(report.status, StepStatus::Succeeded | StepStatus::Failed))
            .map(|report| {
                let results = by_step
                    .get(report.name.as_str())
                    .map_or(&[][..], Vec::as_slice);
                (report.name.as_str(), outputs_by_task_key(results))
            })
            .collect()
    }
}

/// A step that ran to its end has a result for every one of its subtasks, so counting the
/// descriptions among its results counts them among its subtasks.
fn outputs_by_task_key<'a>(results: &[&'a TaskExecutionResult]) -> TaskOutputs<'a> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for result in results {
        *seen.entry(&result.task_description).or_default() += 1;
    }
    results
        .iter()
        .filter(|result| result.status != TaskStatus::Cancelled)
        .map(|result| {
            let repeated = seen[result.task_description.as_str()] > 1;
            let key = task_key(
                &result.task_description,
                &result.agent_name,
                result.subtask_index,
                repeated,
            );
            (key, result.outputs.as_slice())
        })
        .collect()
}

/// A subtask's key among its step's outputs: its description, made unique with the agent and
/// the subtask's index when the description repeats within the step.
pub(crate) fn task_key<'a>(
    description: &'a str,
    agent: &str,
    subtask_index: u32,
    repeated: bool,
) -> Cow<'a, str> {
    if repeated {
        Cow::Owned(format!("{description} [{agent}#{subtask_index}]"))
    } else {
        Cow::Borrowed(description)
    }
}

/// Written field by field so that `step_outputs` keeps its place in the JSON form between the
/// history and the steps, as readers of earlier results expect.
impl Serialize for ExecutionResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let fields = if self.error.is_some() { 6 } else { 5 };
        let mut out = serializer.serialize_struct("ExecutionResult", fields)?;
        out.serialize_field("execution_id", &self.execution_id)?;
        out.serialize_field("success", &self.success)?;
        match &self.error {
            Some(error) => out.serialize_field("error", error)?,
            None => out.skip_field("error")?,
        }
        out.serialize_field("history", &self.history)?;
        out.serialize_field("step_outputs", &self.step_outputs())?;
        out.serialize_field("steps", &self.steps)?;
        out.end()
    }
}
