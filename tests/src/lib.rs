//! Test support for the a2at engine: a deterministic simulator with scripted agents and a
//! scripted host on a virtual clock.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
