//! The shared journal suite (durable runs: write-ahead journal, resume, damaged journals) on
//! the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::journal_suite!(OnSmol);
