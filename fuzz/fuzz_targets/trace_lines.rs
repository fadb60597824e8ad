//! Trace parsing (and replay of whatever parses) never panics.
//! The body is `a2at_tests::fuzz_bodies::trace_lines` (run over the corpus by `cargo test`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| a2at_tests::fuzz_bodies::trace_lines(data));
