//! The shared cards suite (adding, replacing and removing cards on a live engine; unusable
//! cards reported per card and refusing only the runs that need them) on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::cards_suite!(OnSmol);
