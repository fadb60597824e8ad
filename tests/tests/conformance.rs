//! The conformance suite: the scenario bodies in `tests/conformance/*.rs` are compiled once per
//! driver — the simulator, the tokio engine and the smol engine (both over loopback HTTP) — and
//! every scenario is checked against the simulator (`a2at_tests::conformance::check`). A new
//! scenario runs on all three drivers without extra code.
// Loading the same scenario files once per driver is the point of this suite.
#![allow(clippy::duplicate_mod)]

#[path = "drivers/on_sim.rs"]
mod on_sim;
#[path = "drivers/on_smol.rs"]
mod on_smol;
#[path = "drivers/on_tokio.rs"]
mod on_tokio;
