//! The conformance suite: every scenario of `a2at_tests::conformance` runs on the simulator, the
//! tokio engine and the smol engine (both over loopback HTTP), and is checked against the
//! simulator (`a2at_tests::conformance::check`). A new scenario runs on all three drivers
//! without extra code here. The `grpc` modules run every scenario again with all agents
//! speaking gRPC (HTTP/2 on loopback), still checked against the simulator on the scenario's own
//! bindings.

mod on_sim {
    a2at_tests::conformance_suite!(a2at_tests::conformance::SimDriver);
}

/// On a current-thread tokio runtime.
mod on_tokio {
    a2at_tests::tokio_test_runtime!(OnTokio, current_thread);
    a2at_tests::conformance_suite!(a2at_tests::conformance::EngineDriver<OnTokio>);
}

/// With `smol::block_on` on the test thread (no tokio runtime exists there).
mod on_smol {
    a2at_tests::smol_test_runtime!(OnSmol);
    a2at_tests::conformance_suite!(a2at_tests::conformance::EngineDriver<OnSmol>);
}

/// Every scenario with its agents on gRPC, on the simulator.
mod grpc_on_sim {
    a2at_tests::conformance_suite!(
        a2at_tests::conformance::OnGrpc<a2at_tests::conformance::SimDriver>
    );
}

/// Every scenario with its agents on gRPC, on a current-thread tokio runtime.
mod grpc_on_tokio {
    a2at_tests::tokio_test_runtime!(OnTokio, current_thread);
    a2at_tests::conformance_suite!(
        a2at_tests::conformance::OnGrpc<a2at_tests::conformance::EngineDriver<OnTokio>>
    );
}

/// Every scenario with its agents on gRPC, with `smol::block_on` on the test thread.
mod grpc_on_smol {
    a2at_tests::smol_test_runtime!(OnSmol);
    a2at_tests::conformance_suite!(
        a2at_tests::conformance::OnGrpc<a2at_tests::conformance::EngineDriver<OnSmol>>
    );
}
