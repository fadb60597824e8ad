//! What a driver learns from the run's output queue without taking from it.

use std::sync::Arc;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, TaskResult};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_core::{Input, Output, Timestamp};

#[test]
fn has_output_says_whether_poll_output_would_return_one() {
    let mut run = Run::new(
        Arc::new(
            parse_and_validate(
                r#"{"steps": [{"name": "local", "step_type": "SELF_LOOP",
                    "subtasks": [{"agent": "me", "description": "sum up"}]}]}"#,
            )
            .unwrap(),
        ),
        Arc::new(AgentDirectory::default()),
        RunConfig::default(),
        RunStart::default(),
    );
    let mut call = None;
    while run.has_output() {
        let output = run.poll_output().expect("has_output promised an output");
        if let Output::CallHost { call: c, .. } = output {
            call = Some(c);
        }
    }
    assert!(
        run.poll_output().is_none(),
        "has_output said the queue was empty"
    );
    let call = call.expect("a SELF_LOOP step asks its host");
    assert!(!run.is_finished(), "the run waits for its host");

    let reply = HostReply::SelfTask(Ok(TaskResult::success(vec!["done".into()])));
    run.handle(Input::HostReply { call, reply }, Timestamp::ZERO)
        .unwrap();
    assert!(
        run.has_output(),
        "the answer finishes the run: its end is queued"
    );
    let mut finished = false;
    while run.has_output() {
        let output = run.poll_output().expect("has_output promised an output");
        finished |= matches!(output, Output::Finished(_));
    }
    assert!(finished, "has_output went false before the Finished output");
    assert!(run.poll_output().is_none());
}
