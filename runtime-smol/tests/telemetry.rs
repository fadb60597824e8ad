//! The shared telemetry suite (spans, W3C trace context, no secret in spans) on the smol
//! runtime.

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::telemetry_suite!(OnSmol);
