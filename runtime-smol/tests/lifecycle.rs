//! The shared lifecycle suite (event order, cancellation, panicking callbacks, `on_finish`,
//! budgets) on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::lifecycle_suite!(OnSmol);
