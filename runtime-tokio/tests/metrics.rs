//! The shared metrics suite on the tokio runtime (multi-thread). Alone in its binary: it
//! installs the process-global `metrics` recorder.

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::metrics_suite!(OnTokio);
