//! The shared metrics suite on the smol runtime. Alone in its binary: it installs the
//! process-global `metrics` recorder.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::metrics_suite!(OnSmol);
