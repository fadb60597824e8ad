//! The shared interop suite (agents written with the official Python SDK) on the tokio runtime
//! (multi-thread, two workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::interop_suite!(OnTokio);
