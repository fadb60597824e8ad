//! The shared engine suite (concurrency limits, many concurrent runs, `send_task`, transport
//! failures, card and TLS validation, event selection) on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::engine_api_suite!(OnSmol);
