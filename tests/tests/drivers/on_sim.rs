//! The scenarios on the simulator (virtual time, in-memory agents).

type D = a2at_tests::conformance::SimDriver;

#[path = "../../conformance/mod.rs"]
mod suite;
