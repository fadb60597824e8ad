//! What a run's task keeps while it waits: a bound that catches a future holding a second copy
//! of the run or the driver (an `async fn` wrapper, a whole output kept across an await), which
//! no timing shows and which costs every waiting run.

use std::sync::Arc;

use a2at_core::Run;
use a2at_core::driver_support::{BuiltControlPoint, ControlPointBuilder};
use a2at_core::host::TaskResult;
use a2at_core::workflow::parse_and_validate;

use crate::Engine;
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
