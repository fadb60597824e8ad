//! The shared HTTP workflow suite on the smol runtime, plus a run on a thread where no tokio
//! runtime exists.

use a2at_smol as rt;

#[path = "../../runtime-tokio/tests/shared/http_runs_suite.rs"]
mod suite;

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    smol::block_on(future)
}

#[test]
fn a_multi_step_workflow_runs_on_a_plain_thread_without_any_tokio_runtime() {
    // A fresh std thread has no tokio context: any hidden tokio call in the engine would panic.
    std::thread::spawn(|| {
        smol::block_on(async {
            suite::run_fan_out(vec![
                a2at_tests::ScriptedAgent::new("alpha").rest().streaming(),
                a2at_tests::ScriptedAgent::new("beta"),
            ])
            .await;
            suite::run_fan_out(vec![
                a2at_tests::ScriptedAgent::new("alpha").streaming(),
                a2at_tests::ScriptedAgent::new("beta").rest(),
            ])
            .await;
        })
    })
    .join()
    .expect("the run completed without panicking");
}
