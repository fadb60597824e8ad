//! The shared task passthrough suite (get, list, cancel, subscribe on both bindings) on the
//! smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::tasks_suite!(OnSmol);
