//! The shared HTTP workflow suite on the smol runtime, plus a run on a thread where no tokio
//! runtime exists.

use a2at_tests::ScriptedAgent;
use a2at_tests::suites::http_runs::run_fan_out;

a2at_tests::smol_test_runtime!(OnSmol);
a2at_tests::http_runs_suite!(OnSmol);

#[test]
fn a_multi_step_workflow_runs_on_a_plain_thread_without_any_tokio_runtime() {
    // A fresh std thread has no tokio context: any hidden tokio call in the engine would panic.
    std::thread::spawn(|| {
        smol::block_on(async {
            run_fan_out::<OnSmol>(vec![
                ScriptedAgent::new("alpha").rest().streaming(),
                ScriptedAgent::new("beta"),
            ])
            .await;
            run_fan_out::<OnSmol>(vec![
                ScriptedAgent::new("alpha").streaming(),
                ScriptedAgent::new("beta").rest(),
            ])
            .await;
        })
    })
    .join()
    .expect("the run completed without panicking");
}
