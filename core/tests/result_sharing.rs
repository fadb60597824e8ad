//! The finished result is handed out once, not copied: the `Finished` output and
//! `Run::result` are the same value, and a driver that drops the run owns it alone.

use std::sync::Arc;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest, TaskResult};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_core::{ExecutionResult, Input, Output, Timestamp};

fn finished_run() -> (Run, Arc<ExecutionResult>) {
    let wf = parse_and_validate(
        r#"{"steps": [{"name": "local", "step_type": "SELF_LOOP",
            "subtasks": [{"agent": "me", "description": "sum up"}]}]}"#,
    )
    .unwrap();
    let mut run = Run::new(
        Arc::new(wf),
        Arc::new(AgentDirectory::default()),
        RunConfig::default(),
        RunStart::default(),
    );
    loop {
        match run.poll_output() {
            Some(Output::CallHost {
                call,
                request: HostRequest::SelfTask(_),
            }) => {
                let reply = HostReply::SelfTask(Ok(TaskResult::success(vec!["ok".into()])));
                run.handle(Input::HostReply { call, reply }, Timestamp::ZERO)
                    .unwrap();
            }
            Some(Output::Finished(result)) => return (run, result),
            Some(_) => {}
            None => panic!("a self-loop step needs no timers"),
        }
    }
}

#[test]
fn the_finished_output_and_run_result_are_one_value() {
    let (run, result) = finished_run();
    assert!(result.success);
    let kept = run.result().expect("a finished run has its result");
    assert!(
        std::ptr::eq(kept, &*result),
        "Run::result is a second copy of the Finished output's result"
    );
}

#[test]
fn dropping_the_run_leaves_the_output_the_only_owner() {
    let (run, result) = finished_run();
    drop(run);
    let owned =
        Arc::try_unwrap(result).expect("nothing else holds the result once the run is gone");
    assert_eq!(
        owned.step_outputs["local"]["sum up"],
        vec![serde_json::json!("ok")]
    );
}
