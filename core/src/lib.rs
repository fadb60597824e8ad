//! # a2at-core
//!
//! The pure, synchronous heart of the a2at A2A-T workflow engine. It holds every rule of the
//! engine (DAG traversal, step policies, per-edge routing, the upstream context window, the A2A
//! protocol codecs, Negotiation-T correlation) as state machines that take inputs and produce
//! outputs. The driver (`a2at-driver`, run by the adapters `a2at-tokio` and `a2at-smol`) carries
//! out the outputs and feeds the results back in.
//!
//! ## What the core does not do
//!
//! No I/O, no async runtime, no clock, no randomness, no threads, no environment reads, and no
//! content generation: the host produces final content, the engine only wraps it in A2A
//! envelopes. `core/clippy.toml` and a dependency check in CI keep it that way.
//!
//! ## The run loop
//!
//! 1. Build a [`ValidatedWorkflow`](workflow::ValidatedWorkflow) (parse and validate the JSON) and
//!    an [`AgentDirectory`](agents::AgentDirectory) (validated cards with selected endpoints).
//! 2. Create a [`Run`] with a [`RunConfig`] (budgets and the id seed).
//! 3. Drain [`Run::poll_output`](run::Run::poll_output) and carry out each [`Output`]: call the
//!    host, transmit HTTP requests, abort exchanges, deliver events. Stop at
//!    [`Output::Finished`].
//! 4. Feed every completion back with [`Run::handle`](run::Run::handle) and the current time;
//!    when the clock reaches [`Run::poll_timeout`](run::Run::poll_timeout), call
//!    [`Run::handle_timeout`](run::Run::handle_timeout). Go to 3.
//!
//! ```
//! use std::sync::Arc;
//! use a2at_core::{Input, Output, Timestamp};
//! use a2at_core::agents::AgentDirectory;
//! use a2at_core::host::{HostReply, HostRequest, TaskResult};
//! use a2at_core::run::{Run, RunConfig, RunStart};
//! use a2at_core::workflow::parse_and_validate;
//!
//! let wf = parse_and_validate(r#"{"steps": [{"name": "local", "step_type": "SELF_LOOP",
//!     "subtasks": [{"agent": "me", "description": "sum up"}]}]}"#).unwrap();
//! let mut run = Run::new(Arc::new(wf), Arc::new(AgentDirectory::default()),
//!     RunConfig::default(), RunStart::default());
//! let now = Timestamp::ZERO;
//! let result = loop {
//!     match run.poll_output() {
//!         Some(Output::CallHost { call, request: HostRequest::SelfTask(_) }) => {
//!             let reply = HostReply::SelfTask(Ok(TaskResult::success(vec!["ok".into()])));
//!             run.handle(Input::HostReply { call, reply }, now).unwrap();
//!         }
//!         Some(Output::Finished(result)) => break result,
//!         Some(_) => {}
//!         None => unreachable!("a self-loop step needs no timers"),
//!     }
//! };
//! assert!(result.success);
//! assert_eq!(result.step_outputs()["local"]["sum up"], vec![serde_json::json!("ok")]);
//! ```
//!
//! Authorization-T and Notification-T, which are independent of any workflow, have their own
//! machines with the same contract in [`extension`].
//!
//! ## Time
//!
//! Time is a [`Timestamp`] (microseconds since the run's epoch) passed with every mutation.
//! Budgets (`on_task` through the end of negotiation, route and self-task calls, `GetTask`
//! polling, `CancelTask` cleanup) are deadlines reported by `poll_timeout`. Time going
//! backwards is an [`ApiMisuse`] and leaves the run unchanged.
//!
//! ## Identifiers
//!
//! Local ids are typed sequence numbers ([`StepId`], [`CallId`], [`OpId`], [`TaskKey`]). Wire ids
//! (message, context and JSON-RPC ids) come from a SplitMix64 generator seeded through
//! [`RunConfig::seed`](run::RunConfig::seed): the same seed and the same inputs give
//! byte-identical outputs.
//!
//! ## Errors, failures and bugs
//!
//! * A caller bug (time going backwards, an answer of the wrong kind, input after the end) is an
//!   [`ApiMisuse`] returned by `handle`; the state is unchanged.
//! * An invalid workflow is a [`WorkflowError`](workflow::WorkflowError) before any run exists.
//! * Everything that goes wrong during a run (remote failures, protocol rejections, timeouts,
//!   host failures, cancellation) is data: a stable code in the task's result, in events and in
//!   the [`ExecutionResult`]. The codes are listed in
//!   [`host::codes`] and [`a2a`] (`a2a.<reason>`).
//! * A panic is a bug in this crate.
//!
//! ## Failure codes
//!
//! | code | where | meaning |
//! |---|---|---|
//! | `a2a.<reason>` | task | the agent rejected the call before creating a task (REST error envelope or JSON-RPC error; the ErrorInfo reason lowercased, non-alphanumerics to `_`); never retried, never negotiated |
//! | `a2a.jsonrpc.<code>` | task | a JSON-RPC error code outside the A2A table, without a reason |
//! | `a2a.http.<status>` | task | a non-2xx answer without an A2A reason (e.g. a plain-text 404 from a router) |
//! | `remote.problem.<status>` | task | an RFC 9457 problem-details body |
//! | `a2a.invalid_agent_response` | task | bytes that are not a valid A2A response (bad JSON, wrong shape, wrong JSON-RPC id) |
//! | `a2a.event_too_large` / `a2a.body_too_large` | task | an SSE event or a unary body over [`DecodeLimits`](a2a::DecodeLimits) |
//! | `a2a.empty_stream` | task | a stream closed before any A2A event, or ended with no state |
//! | `a2a.unsupported_task_state` | task | `AUTH_REQUIRED`/unknown states, or `INPUT_REQUIRED` without a valid Propose or without Negotiation-T activated |
//! | `remote.task_failed` / `remote.task_canceled` / `remote.task_rejected` | task | the remote task ended FAILED / CANCELED / REJECTED (its evidence is kept) |
//! | `remote.no_response` | task | transport failure: connect, TLS, I/O, authentication headers |
//! | `remote.identity_changed` | task | the remote task id or context id changed between replies |
//! | `workflow.timeout` | task | the task's budget (content, send, waiting, negotiation) or a self-task's callback budget expired |
//! | `workflow.cancelled` | task, run | the run was cancelled, or an ANY_SUCCESS peer won |
//! | `workflow.agent_not_found` | task | no card for the subtask's agent |
//! | `workflow.invalid_content` | task | the host's content cannot be sent (no parts, blank or undeclared extension, Task-T inconsistency, required extension not activated) |
//! | `workflow.execution_failed` | task | a host callback failed without a code of its own |
//! | `host.handler_missing` / `host.callback_panicked` | task, run | a needed callback is not implemented / panicked |
//! | `negotiation.invalid` | task | a Propose or a reply broke a Negotiation-T rule (malformed, exhausted or regressed context, conflicting layers, reply not matching) |
//! | `negotiation.budget_exhausted` | task | more Proposes than `max_negotiation_exchanges` |
//! | `negotiation.aborted` | task | the host sent an Abort: never a success |
//! | `workflow.step_failed` | run | a step failed; nothing new is dispatched |
//! | `workflow.route_failed` | run | an `on_route` call failed, timed out or was missing; no successor of that step runs |
//! | `workflow.deadlock` | run | guard: steps that can never become ready (unreachable for a validated DAG) |
//!
//! A host's own codes (`TaskResult::failure`, `HostError::business`, `NegotiationReply::Stop`) are
//! kept verbatim. The constants are in [`host::codes`] and [`a2a::error::codes`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod a2a;
pub mod a2at;
pub mod agents;
pub mod auth;
mod config;
pub mod discovery;
pub mod driver_support;
pub mod envfile;
pub mod event;
mod exchange;
pub mod extension;
pub mod host;
pub mod ids;
pub mod io;
mod machine;
pub mod protolog;
pub mod redact;
mod remote;
pub mod result;
pub mod retry;
pub mod run;
mod shared_str;
pub mod tasks;
pub mod time;
pub mod trace;
pub mod tracectx;
mod urlenc;
pub mod workflow;

pub use event::{Event, EventData, EventSelection, EventType};
pub use ids::{CallId, IdGenerator, OpId, StepId, TaskKey};
pub use io::{ApiMisuse, HeaderField, HttpRequest, Input, Output};
pub use result::ExecutionResult;
pub use retry::{AmbiguousSend, RetryPolicy};
pub use run::{Run, RunConfig, RunStart};
pub use shared_str::SharedStr;
pub use time::Timestamp;
