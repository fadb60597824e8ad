//! The shared engine suite (concurrency limits, many concurrent runs, `send_task`, transport
//! failures, card and TLS validation, event selection) on the tokio runtime (multi-thread, two
//! workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::engine_api_suite!(OnTokio);
