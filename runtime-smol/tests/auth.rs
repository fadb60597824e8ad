//! The shared credentials suite (static tokens, API keys, logins with a cached token, merging
//! with the host's hook, never sending unauthenticated) on the smol runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::auth_suite!(OnSmol);
