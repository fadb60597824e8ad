//! The shared close suite (`Engine::close`, dropping the engine) on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::close_suite!(OnSmol);
