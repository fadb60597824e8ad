//! Workflow model, strict parsing of the orchestration-center JSON, and graph validation.
//!
//! * [`Workflow`] and friends ([`model`]) are the owned document model.
//! * [`Workflow::from_json_str`] / [`Workflow::from_json_value`] ([`parse`]) parse strictly and
//!   report every problem with its JSON path.
//! * [`ValidatedWorkflow::new`] ([`validate`]) checks the graph rules and gives
//!   index-based, precomputed access for the executor: edges, predecessors, start steps,
//!   topological order and resolved `context_from` sources.
//! * [`parse_and_validate`] does both.
//!
//! ```
//! use a2at_core::workflow::{ContextSources, EdgeTarget, TerminalMarker, parse_and_validate};
//!
//! let wf = parse_and_validate(
//!     r#"{"data": {"steps": [
//!         {"name": "a", "next": [{"step": "b"}, {"step": "end", "condition": "done early"}]},
//!         {"name": "b", "stepType": "any_success", "context_from": ["a"]}
//!     ]}}"#,
//! )?;
//! let (a, b) = (wf.step_id("a").unwrap(), wf.step_id("b").unwrap());
//! assert_eq!(wf.start_steps(), [a]);
//! assert_eq!(wf.edges(a)[1].target, EdgeTarget::Terminal(TerminalMarker::End));
//! assert!(wf.edges(a)[1].is_conditional());
//! assert_eq!(wf.context_sources(b), &ContextSources::Named(vec![a]));
//!
//! let err = parse_and_validate(r#"{"steps": [{"name": "a", "next": [{"step": "a"}]}]}"#)
//!     .unwrap_err();
//! assert!(err.to_string().contains(r#"edge "a" -> "a""#));
//! # Ok::<(), a2at_core::workflow::WorkflowError>(())
//! ```

pub mod graph;
pub mod model;
pub mod parse;
pub mod validate;

pub use graph::{GraphFormat, render as render_graph};
pub use model::{
    BusinessInput, ContextFrom, Edge, Step, StepStatus, StepType, Subtask, TERMINAL_MARKERS,
    Workflow, is_terminal_marker,
};
pub use parse::{ParseProblem, WorkflowParseError};
pub use validate::{
    CYCLE_NAMES_SHOWN, ContextSources, EdgeTarget, ProblemKind, ResolvedEdge, TerminalMarker,
    ValidatedWorkflow, ValidationProblem, WorkflowError, WorkflowValidationError,
    parse_and_validate,
};
