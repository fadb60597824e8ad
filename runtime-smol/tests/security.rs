//! The shared security suite (discovery, login deadline, TLS, configuration, planted secrets) on the smol runtime.

use a2at_smol as rt;

#[path = "../../runtime-tokio/tests/shared/security_suite.rs"]
mod suite;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    smol::block_on(future)
}
