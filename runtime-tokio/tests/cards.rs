//! The shared cards suite (adding, replacing and removing cards on a live engine; unusable
//! cards reported per card and refusing only the runs that need them) on the tokio runtime
//! (multi-thread, two workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::cards_suite!(OnTokio);
