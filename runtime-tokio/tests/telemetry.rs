//! The shared telemetry suite (spans, W3C trace context, no secret in spans) on the tokio
//! runtime (multi-thread: spawned tasks carry the capturing subscriber with them).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::telemetry_suite!(OnTokio);
