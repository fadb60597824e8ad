//! # a2at-core
//!
//! The pure, synchronous heart of the a2at A2A-T workflow engine. It holds every rule of the
//! engine (DAG traversal, step policies, per-edge routing, the upstream context window, the A2A
//! protocol codecs, Negotiation-T correlation) as state machines that take inputs and produce
//! outputs. It never blocks, never sleeps, never reads a clock, never draws random numbers and
//! never performs I/O: the runtime crates (`a2at-tokio`, `a2at-smol`) do that and feed the results
//! back in.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod a2a;
pub mod a2at;
pub mod ids;
pub mod time;
pub mod workflow;

pub use ids::{CallId, IdGenerator, OpId, StepId, TaskKey};
pub use time::Timestamp;
