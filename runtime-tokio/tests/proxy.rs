//! The shared proxy suite (a real loopback CONNECT proxy, NO_PROXY, proxy authentication, the
//! request hook) on the tokio runtime. A current-thread runtime, so that logs of spawned tasks
//! stay on the capturing thread too.

a2at_tests::tokio_test_runtime!(OnTokio, current_thread);
a2at_tests::proxy_suite!(OnTokio);
