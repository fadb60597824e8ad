//! The response decoder never panics and always ends with exactly one `End` item.
//! The body is `a2at_tests::fuzz_bodies::response_decoder` (run over the corpus by `cargo test`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| a2at_tests::fuzz_bodies::response_decoder(data));
