//! The shared ExtensionSender suite on the tokio runtime (multi-thread, two workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::extension_suite!(OnTokio);
