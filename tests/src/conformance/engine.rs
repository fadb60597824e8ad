//! A runtime's engine as a conformance driver, written once over [`TestRuntime`].

use std::marker::PhantomData;
use std::sync::Arc;

use a2at_driver::{Engine, SeedSource};

use super::{Driver, Execution, Scenario, ScriptedControlPoint};
use crate::capture::SharedBuffer;
use crate::loopback::LoopbackServer;
use crate::runtime::TestRuntime;

/// Runs scenarios on the engine of runtime `T` over loopback HTTP.
pub struct EngineDriver<T>(PhantomData<T>);

impl<T: TestRuntime> Driver for EngineDriver<T> {
    const NAME: &'static str = T::NAME;

    fn execute(s: &Scenario) -> Execution {
        let server = LoopbackServer::spawn(s.agents.clone());
        let engine = Engine::<T::Rt>::builder(server.cards())
            .task_budget(s.task_budget)
            .callback_budget(s.callback_budget)
            .poll_interval(s.poll_interval)
            .cancel_budget(s.cancel_budget)
            .retry(s.retry)
            .seed(SeedSource::Fixed(s.seed))
            .build()
            .expect("engine");
        let host = Arc::new(ScriptedControlPoint::new((s.host)(), T::sleep));
        let workflow = s.validated();
        let trace = SharedBuffer::default();
        let result = T::block_on(async {
            let handle = engine.run(workflow, host).record(trace.clone()).spawn();
            if let Some(after) = s.cancel_after {
                T::sleep(after).await;
                handle.cancel();
            }
            handle.result().await
        });
        // Thinness: the trace this runtime recorded replays through a fresh core to exactly the
        // outputs the runtime carried out.
        crate::trace_io::assert_replays(&trace.text(), T::NAME);
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
