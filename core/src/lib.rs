//! # a2at-core
//!
//! The pure, synchronous heart of the a2at A2A-T workflow engine. It holds every rule of the
//! engine (DAG traversal, step policies, per-edge routing, the upstream context window, the A2A
//! protocol codecs, Negotiation-T correlation) as state machines that take inputs and produce
//! outputs. The runtime crates (`a2at-tokio`, `a2at-smol`) carry out the outputs and feed the
//! results back in.
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
//! assert_eq!(result.step_outputs["local"]["sum up"], vec![serde_json::json!("ok")]);
//! ```
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
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod a2a;
pub mod a2at;
pub mod agents;
pub mod event;
pub mod host;
pub mod ids;
pub mod io;
mod machine;
mod remote;
pub mod result;
pub mod run;
pub mod time;
pub mod trace;
pub mod workflow;

pub use event::{Event, EventType};
pub use ids::{CallId, IdGenerator, OpId, StepId, TaskKey};
pub use io::{ApiMisuse, HttpRequest, Input, Output};
pub use result::ExecutionResult;
pub use run::{Run, RunConfig, RunStart};
pub use time::Timestamp;
