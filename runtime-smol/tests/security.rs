//! The shared security suite (discovery, login deadline, TLS, configuration, planted secrets) on
//! the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::security_suite!(OnSmol);
