//! The smol runtime of the a2at engine, with the same public API as `a2at-tokio`.
//!
//! Not built yet: this crate is a skeleton until its own issue lands.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub use a2at_core as core;
