//! The shared lifecycle suite (event order, cancellation, panicking callbacks, `on_finish`,
//! budgets) on the tokio runtime, plus budgets on tokio's paused clock.

use std::sync::Arc;
use std::time::Duration;

use a2at_tokio::a2at_core::host::{TaskResult, codes};
use a2at_tokio::{ControlPointBuilder, Engine, RunStart, parse_and_validate};
use serde_json::json;

a2at_tests::tokio_test_runtime!(OnTokio, current_thread);
a2at_tests::lifecycle_suite!(OnTokio);

fn workflow(v: serde_json::Value) -> a2at_tokio::ValidatedWorkflow {
    parse_and_validate(&v.to_string()).expect("valid workflow")
}

#[tokio::test(start_paused = true)]
async fn budgets_run_on_tokios_clock() {
    let engine = Engine::builder(vec![])
        .callback_budget(Duration::from_secs(60))
        .build()
        .expect("engine");
    let host = ControlPointBuilder::new()
        .on_self_task(|_| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(TaskResult::success(vec![]))
        })
        .build();
    let wf = workflow(json!({"steps": [{"name": "local", "step_type": "SELF_LOOP",
        "subtasks": [{"agent": "me", "description": "slow"}]}]}));
    let started = tokio::time::Instant::now();
    let result = engine
        .execute(wf, RunStart::default(), Arc::new(host))
        .await;
    assert_eq!(
        result.history[0].error_code.as_deref(),
        Some(codes::TIMEOUT)
    );
    assert_eq!(started.elapsed(), Duration::from_secs(60));
}
