//! A whole run driven by fuzz-chosen time steps, host answers and agent bytes never panics,
//! finishes exactly once, and finishes on its deadlines.
//! The body is `a2at_tests::fuzz_bodies::run_inputs` (run over the corpus by `cargo test`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| a2at_tests::fuzz_bodies::run_inputs(data));
