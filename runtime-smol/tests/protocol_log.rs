//! The shared protocol log suite on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::protocol_log_suite!(OnSmol);
