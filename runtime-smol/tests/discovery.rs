//! The shared discovery / login-deadline / TLS / configuration suite on the smol runtime.

use a2at_smol as rt;

#[path = "../../runtime-tokio/tests/shared/discovery_suite.rs"]
mod suite;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    smol::block_on(future)
}
