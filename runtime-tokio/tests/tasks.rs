//! The shared task passthrough suite (get, list, cancel, subscribe on both bindings) on the
//! tokio runtime (multi-thread, two workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::tasks_suite!(OnTokio);
