//! The shared proxy suite (a real loopback CONNECT proxy, NO_PROXY, proxy authentication, the
//! request hook) on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::proxy_suite!(OnSmol);
