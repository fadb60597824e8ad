//! The SSE decoder never panics, whatever the bytes and however they are split.
//! The body is `a2at_tests::fuzz_bodies::sse_decoder` (run over the corpus by `cargo test`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| a2at_tests::fuzz_bodies::sse_decoder(data));
