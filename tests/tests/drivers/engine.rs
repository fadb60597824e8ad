//! A runtime engine as a conformance driver, written once against the public API both runtime
//! crates share: the including module binds `rt` (`a2at_tokio` or `a2at_smol`), `NAME`,
//! `block_on` and `sleep`.

use std::sync::Arc;

use a2at_tests::capture::SharedBuffer;
use a2at_tests::conformance::{Driver, Execution, Scenario, ScriptedControlPoint};
use a2at_tests::loopback::LoopbackServer;

use super::rt::{Engine, SeedSource};
use super::{NAME, block_on, sleep};

/// Runs scenarios on the engine over loopback HTTP.
pub struct EngineDriver;

impl Driver for EngineDriver {
    const NAME: &'static str = NAME;

    fn execute(s: &Scenario) -> Execution {
        let server = LoopbackServer::spawn(s.agents.clone());
        let engine = Engine::builder(server.cards())
            .task_budget(s.task_budget)
            .callback_budget(s.callback_budget)
            .poll_interval(s.poll_interval)
            .cancel_budget(s.cancel_budget)
            .retry(s.retry)
            .seed(SeedSource::Fixed(s.seed))
            .build()
            .expect("engine");
        let host = Arc::new(ScriptedControlPoint::new((s.host)(), sleep));
        let workflow = s.validated();
        let trace = SharedBuffer::default();
        let result = block_on(async {
            let handle = engine.run(workflow, host).record(trace.clone()).spawn();
            if let Some(after) = s.cancel_after {
                sleep(after).await;
                handle.cancel();
            }
            handle.result().await
        });
        // Thinness: the trace this runtime recorded replays through a fresh core to exactly the
        // outputs the runtime carried out.
        let text = trace.text();
        let parsed = a2at_core::trace::parse_trace(&text).expect("the recorded trace parses");
        if let Err(divergence) = a2at_core::trace::replay(&parsed) {
            panic!("{NAME}: the recorded trace does not replay: {divergence}");
        }
        let requests_per_agent = s
            .agents
            .iter()
            .map(|a| {
                let methods = server.requests(&a.name).into_iter().map(|r| r.method);
                (a.name.clone(), methods.collect())
            })
            .collect();
        Execution {
            result,
            requests_per_agent,
        }
    }
}
