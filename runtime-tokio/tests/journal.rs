//! The shared journal suite (durable runs: write-ahead journal, resume, damaged journals) on
//! the tokio runtime (multi-thread, two workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::journal_suite!(OnTokio);
