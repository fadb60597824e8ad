//! The shared interop suite (agents written with the official Python SDK) on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::interop_suite!(OnSmol);
