//! The tokio runtime of the a2at engine: it carries out what `a2at-core` asks (HTTP exchanges,
//! timers, host callbacks, events) and decides nothing itself.
//!
//! Not built yet: this crate is a skeleton until its own issue lands.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use a2at_core as core;
