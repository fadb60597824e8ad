//! What a run's task keeps while it waits, and what the host's own future keeps: bounds that
//! catch a future holding a second copy of the run, the driver or the run's builder (an `async
//! fn` wrapper, a whole output kept across an await), which no timing shows and which costs
//! every waiting run.

use std::sync::Arc;

use a2at_core::Run;
use a2at_core::driver_support::{BuiltControlPoint, ControlPointBuilder};
use a2at_core::host::TaskResult;
use a2at_core::workflow::parse_and_validate;

use crate::Engine;
use crate::events::ResultWait;
use crate::run_loop::Driver;
use crate::test_runtime::{TestTokio, spawned_sizes};

/// Room for the loop's own state beside the run and the driver: channels, maps, the waiter,
/// the span table and the largest future it awaits (the wait for the next input). About
/// 720 bytes today; an output, an input or an event's delivery kept across an await would
/// each pass it.
const LOOP_STATE: usize = 736;

#[tokio::test(flavor = "current_thread")]
async fn a_run_task_holds_the_run_and_the_driver_once() {
    let engine = Engine::<TestTokio>::builder(Vec::new()).build().unwrap();
    let workflow = parse_and_validate(
        r#"{"steps": [{"name": "local", "step_type": "SELF_LOOP",
            "subtasks": [{"agent": "me", "description": "sum up"}]}]}"#,
    )
    .unwrap();
    let host = Arc::new(
        ControlPointBuilder::new()
            .on_self_task(|_| async { Ok(TaskResult::success(vec!["done".into()])) })
            .build(),
    );
    let before = spawned_sizes().len();
    let result = engine.run(workflow, host).spawn().result().await;
    assert!(result.success, "{:?}", result.error);

    let run_task = spawned_sizes()[before];
    let held_once =
        std::mem::size_of::<Run>() + std::mem::size_of::<Driver<TestTokio, BuiltControlPoint>>();
    assert!(
        run_task <= held_once + LOOP_STATE,
        "the run's task is {run_task} bytes: more than the run and the driver ({held_once} \
         bytes) once plus {LOOP_STATE} of loop state"
    );
}

/// The futures a host awaits for a run's result keep only the wait for it: not the builder
/// (`execute` boxes it until the first poll), and not the handle's event stream or progress
/// channel.
#[tokio::test(flavor = "current_thread")]
async fn the_result_futures_hold_only_the_wait() {
    let engine = Engine::<TestTokio>::builder(Vec::new()).build().unwrap();
    let workflow = Arc::new(
        parse_and_validate(
            r#"{"steps": [{"name": "local", "step_type": "SELF_LOOP",
                "subtasks": [{"agent": "me", "description": "sum up"}]}]}"#,
        )
        .unwrap(),
    );
    let host = Arc::new(
        ControlPointBuilder::new()
            .on_self_task(|_| async { Ok(TaskResult::success(vec!["done".into()])) })
            .build(),
    );
    let wait = std::mem::size_of::<ResultWait>();

    let executed = engine.run(workflow.clone(), host.clone()).execute();
    let size = std::mem::size_of_val(&executed);
    // A variant tag beside the wait, no more.
    assert!(
        size <= wait + std::mem::size_of::<usize>(),
        "execute's future is {size} bytes, the wait {wait}"
    );
    assert!(executed.await.success);

    let result = engine.run(workflow, host).spawn().result();
    let size = std::mem::size_of_val(&result);
    assert!(
        size <= wait,
        "result's future is {size} bytes, the wait {wait}"
    );
    assert!(result.await.success);
}
