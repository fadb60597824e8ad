//! The gRPC response decoder and the protobuf message decoders never panic, and their output
//! is bounded by the input.
//! The body is `a2at_tests::fuzz_bodies::grpc_decoder` (run over the corpus by `cargo test`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| a2at_tests::fuzz_bodies::grpc_decoder(data));
