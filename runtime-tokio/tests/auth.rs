//! The shared credentials suite (static tokens, API keys, logins with a cached token, merging
//! with the host's hook, never sending unauthenticated) on the tokio runtime (multi-thread, two
//! workers).

a2at_tests::tokio_test_runtime!(OnTokio, multi_thread);
a2at_tests::auth_suite!(OnTokio);
