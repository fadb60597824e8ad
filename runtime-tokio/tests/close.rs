//! The shared close suite (`Engine::close`, dropping the engine) on the tokio runtime
//! (multi-thread, two workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::close_suite!(OnTokio);
