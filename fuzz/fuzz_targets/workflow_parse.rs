//! Workflow parsing and validation never panic, and a valid workflow round-trips.
//! The body is `a2at_tests::fuzz_bodies::workflow_parse` (run over the corpus by `cargo test`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| a2at_tests::fuzz_bodies::workflow_parse(data));
