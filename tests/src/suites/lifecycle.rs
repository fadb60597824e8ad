//! Lifecycle over real HTTP: event order, cancellation, panicking callbacks, `on_finish`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::loopback::LoopbackServer;
use crate::{Plan, ScriptedAgent};
use a2at_core::event::EventType;
use a2at_core::host::{MessageContent, TaskStatus, codes};
use a2at_core::run::RunStart;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::{BuiltControlPoint, ControlPointBuilder, EventEnvelope};
use futures::StreamExt;
use serde_json::{Value, json};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

fn workflow(v: Value) -> ValidatedWorkflow {
    parse_and_validate(&v.to_string()).expect("valid workflow")
}

fn chain() -> ValidatedWorkflow {
    workflow(json!({"name": "chain", "steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}]}
    ]}))
}

/// Three remote subtasks in parallel that stay WORKING until cancelled.
fn three_waiting() -> ValidatedWorkflow {
    workflow(json!({"name": "wait", "steps": [
        {"name": "w", "subtasks": [
            {"agent": "alpha", "description": "one"},
            {"agent": "alpha", "description": "two"},
            {"agent": "beta", "description": "three"}]}
    ]}))
}

/// The two agents of [`chain`], answering at once.
async fn chain_agents() -> LoopbackServer {
    LoopbackServer::start(vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta"),
    ])
    .await
}

fn echo_host() -> BuiltControlPoint {
    ControlPointBuilder::new()
        .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
        .build()
}

fn engine<T: TestRuntime>(server: &LoopbackServer) -> Engine<T> {
    Engine::<T>::builder(server.cards())
        .poll_interval(Duration::from_millis(5))
        .task_budget(Duration::from_secs(10))
        .cancel_budget(Duration::from_secs(2))
        .build()
        .expect("engine")
}

fn working(agent: ScriptedAgent) -> ScriptedAgent {
    agent.by_default(Plan::States(vec!["TASK_STATE_WORKING"]))
}

/// Waits (briefly) until `cond` holds.
async fn eventually<T: TestRuntime>(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..400 {
        if cond() {
            return;
        }
        T::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for: {what}");
}

pub fn events_stream_in_lifecycle_order_with_close_last<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").streaming(),
            ScriptedAgent::new("beta"),
        ])
        .await;
        let engine = engine::<T>(&server);
        let sunk: Arc<Mutex<Vec<&'static str>>> = Arc::default();
        let sink = sunk.clone();
        let finished: Arc<Mutex<Vec<&'static str>>> = Arc::default();
        let seen_by_finish = finished.clone();
        let mut handle = engine
            .run(chain(), Arc::new(echo_host()))
            .event_sink(move |e| sink.lock().unwrap().push(e.type_str()))
            .on_finish(move |result, events: &[EventEnvelope]| {
                assert!(result.success);
                *seen_by_finish.lock().unwrap() = events.iter().map(|e| e.type_str()).collect();
                Ok::<(), std::io::Error>(())
            })
            .spawn();
        let streamed: Vec<EventEnvelope> = handle.events().collect().await;
        let result = handle.result().await;
        assert!(result.success, "{:?}", result.error);

        let types: Vec<&str> = streamed.iter().map(|e| e.type_str()).collect();
        assert_eq!(types.first(), Some(&"start"));
        assert_eq!(
            &types[types.len() - 3..],
            ["workflow_complete", "complete", "close"]
        );
        assert_eq!(types.iter().filter(|t| **t == "close").count(), 1);
        assert!(types.contains(&"agent_artifact_update"), "{types:?}");
        let a = types.iter().position(|t| *t == "step_start").unwrap();
        let b = types.iter().rposition(|t| *t == "step_start").unwrap();
        assert!(a < b);
        // The sink saw the same events; on_finish saw everything but `close`.
        assert_eq!(*sunk.lock().unwrap(), types);
        assert_eq!(*finished.lock().unwrap(), types[..types.len() - 1]);
        // Timestamps are epoch seconds and never go backwards.
        assert!(streamed[0].timestamp > 1.6e9);
        assert!(
            streamed
                .windows(2)
                .all(|w| w[0].timestamp <= w[1].timestamp)
        );
        let envelope = serde_json::to_value(&streamed[0]).unwrap();
        assert_eq!(envelope["type"], "start");
        assert!(envelope["data"].is_object() && envelope["timestamp"].is_f64());
    })
}

async fn assert_cancelled_everywhere(server: &LoopbackServer, result: &a2at_core::ExecutionResult) {
    assert!(!result.success);
    assert_eq!(
        result.error.as_ref().map(|e| e.code.as_str()),
        Some(codes::CANCELLED)
    );
    for agent in ["alpha", "beta"] {
        let a = server.agent(agent);
        assert!(a.open_tasks().is_empty(), "{agent}: {:?}", a.open_tasks());
    }
    assert_eq!(
        server.requests_to("alpha", "CancelTask").len()
            + server.requests_to("beta", "CancelTask").len(),
        3
    );
}

pub fn cancelling_through_the_handle_cancels_every_remote_task<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            working(ScriptedAgent::new("alpha")),
            working(ScriptedAgent::new("beta").rest()),
        ])
        .await;
        let engine = engine::<T>(&server);
        let mut handle = engine.run(three_waiting(), Arc::new(echo_host())).spawn();
        // Wait until all three tasks exist and are being polled.
        while let Some(e) = handle.next_event().await {
            if e.kind == EventType::AgentStatusUpdate
                && server.requests_to("alpha", "GetTask").len() >= 2
                && !server.requests_to("beta", "GetTask").is_empty()
            {
                break;
            }
        }
        handle.cancel();
        let result = handle.result().await;
        assert_cancelled_everywhere(&server, &result).await;
        assert!(
            result
                .history
                .iter()
                .all(|t| t.status == TaskStatus::Cancelled),
            "{:?}",
            result.history
        );
    })
}

pub fn dropping_the_execute_future_cancels_and_cleans_up_in_the_background<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            working(ScriptedAgent::new("alpha").streaming()),
            working(ScriptedAgent::new("beta")),
        ])
        .await;
        let engine = engine::<T>(&server);
        let finished = Arc::new(AtomicUsize::new(0));
        let f = finished.clone();
        let run = engine
            .run(three_waiting(), Arc::new(echo_host()))
            .on_finish(move |result, _: &[EventEnvelope]| {
                assert_eq!(result.error.as_ref().unwrap().code, codes::CANCELLED);
                f.fetch_add(1, Ordering::SeqCst);
                Ok::<(), std::io::Error>(())
            })
            .execute();
        let outcome = futures::future::select(
            Box::pin(run),
            Box::pin(T::sleep(Duration::from_millis(150))),
        )
        .await;
        assert!(
            matches!(outcome, futures::future::Either::Right(_)),
            "the run must still be waiting"
        );
        drop(outcome);
        eventually::<T>("every task cancelled", || {
            server.requests_to("alpha", "CancelTask").len()
                + server.requests_to("beta", "CancelTask").len()
                == 3
        })
        .await;
        eventually::<T>("on_finish ran", || finished.load(Ordering::SeqCst) == 1).await;
        for agent in ["alpha", "beta"] {
            assert!(server.agent(agent).open_tasks().is_empty());
        }
    })
}

/// `execute` gives a future that starts the run when first polled, like any future: one made
/// and not yet awaited sends nothing and asks the host nothing.
pub fn the_execute_future_starts_the_run_when_first_polled<T: TestRuntime>() {
    T::block_on(async {
        let server = chain_agents().await;
        let engine = engine::<T>(&server);
        let asked = Arc::new(AtomicUsize::new(0));
        let counter = asked.clone();
        let host = ControlPointBuilder::new()
            .on_task(move |req| {
                counter.fetch_add(1, Ordering::SeqCst);
                async move { Ok(MessageContent::text(&req.instruction)) }
            })
            .build();
        let run = engine.run(chain(), Arc::new(host)).execute();
        T::sleep(Duration::from_millis(100)).await;
        assert_eq!(
            asked.load(Ordering::SeqCst),
            0,
            "nothing asked before a poll"
        );
        assert!(server.requests_to("alpha", "SendMessage").is_empty());
        let result = run.await;
        assert!(result.success, "{:?}", result.error);
        assert_eq!(asked.load(Ordering::SeqCst), 2);
        assert_eq!(server.requests_to("beta", "SendMessage").len(), 1);
    })
}

pub fn a_panicking_on_task_fails_that_task_and_the_process_survives<T: TestRuntime>() {
    T::block_on(async {
        let server = chain_agents().await;
        let engine = engine::<T>(&server);
        let host = ControlPointBuilder::new()
            .on_task(|req| async move {
                if req.agent_name == "beta" {
                    panic!("secret content must not leak");
                }
                Ok(MessageContent::text(&req.instruction))
            })
            .build();
        let result = engine
            .execute(chain(), RunStart::default(), Arc::new(host))
            .await;
        assert!(!result.success);
        assert_eq!(result.error.as_ref().unwrap().code, codes::STEP_FAILED);
        let failed = result.history.iter().find(|t| t.step_name == "b").unwrap();
        assert_eq!(
            failed.error_code.as_deref(),
            Some(codes::HOST_CALLBACK_PANICKED)
        );
        assert!(!failed.error.as_deref().unwrap_or("").contains("secret"));
        // Nothing was sent for the panicking task; the engine still works afterwards.
        assert!(server.requests("beta").is_empty());
        let again = engine
            .execute(chain(), RunStart::default(), Arc::new(echo_host()))
            .await;
        assert!(again.success);
    })
}

/// Runs the chain with seed 7 against fresh agents, with the given run options.
async fn seeded_chain<T: TestRuntime>(
    options: impl FnOnce(
        a2at_driver::RunBuilder<T::Rt, BuiltControlPoint>,
    ) -> a2at_driver::RunBuilder<T::Rt, BuiltControlPoint>,
) -> a2at_core::ExecutionResult {
    let server = chain_agents().await;
    let engine = engine::<T>(&server);
    options(engine.run(chain(), Arc::new(echo_host())).seed(7))
        .execute()
        .await
}

pub fn a_failing_or_panicking_on_finish_never_changes_the_result<T: TestRuntime>() {
    T::block_on(async {
        let baseline = seeded_chain::<T>(|r| r).await;
        assert!(baseline.success);
        let failing = seeded_chain::<T>(|r| {
            r.on_finish(|_, _: &[EventEnvelope]| Err(std::io::Error::other("disk full")))
        })
        .await;
        let panicking = seeded_chain::<T>(|r| {
            r.on_finish_async(|_, _| async { panic!("hook bug") })
                .event_sink(|_| panic!("sink bug"))
        })
        .await;
        assert_eq!(failing, baseline);
        assert_eq!(panicking, baseline);
    })
}

pub fn unimplemented_callbacks_fail_explicitly<T: TestRuntime>() {
    T::block_on(async {
        let server = chain_agents().await;
        let engine = engine::<T>(&server);
        let result = engine
            .execute(
                chain(),
                RunStart::default(),
                Arc::new(ControlPointBuilder::new().build()),
            )
            .await;
        assert!(!result.success);
        assert_eq!(
            result.history[0].error_code.as_deref(),
            Some(codes::HOST_HANDLER_MISSING)
        );
    })
}

/// Sets its flag when dropped.
struct DropFlag(Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

pub fn a_callback_that_outlives_its_budget_is_dropped<T: TestRuntime>() {
    T::block_on(async {
        let card = a2at_core::a2a::AgentCard::from_json_value(&ScriptedAgent::new("alpha").card())
            .unwrap();
        let engine = Engine::<T>::builder(vec![card])
            .task_budget(Duration::from_millis(100))
            .build()
            .expect("engine");
        let dropped = Arc::new(AtomicUsize::new(0));
        let flag = dropped.clone();
        let host = ControlPointBuilder::new()
            .on_task(move |_| {
                let guard = DropFlag(flag.clone());
                async move {
                    let _guard = guard;
                    std::future::pending::<()>().await;
                    Ok(MessageContent::text("never"))
                }
            })
            .build();
        let wf = workflow(
            json!({"steps": [{"name": "a", "subtasks": [{"agent": "alpha", "description": "x"}]}]}),
        );
        let started = std::time::Instant::now();
        let result = engine
            .execute(wf, RunStart::default(), Arc::new(host))
            .await;
        assert_eq!(
            result.history[0].error_code.as_deref(),
            Some(codes::TIMEOUT)
        );
        assert!(started.elapsed() >= Duration::from_millis(100));
        eventually::<T>("the abandoned callback was dropped", || {
            dropped.load(Ordering::SeqCst) == 1
        })
        .await;
    })
}

pub fn the_event_hook_keeps_replaces_expands_or_drops_and_survives_a_panic<T: TestRuntime>() {
    T::block_on(async {
        let server = chain_agents().await;
        let engine = engine::<T>(&server);
        let sunk: Arc<Mutex<Vec<String>>> = Arc::default();
        let finished: Arc<Mutex<Vec<String>>> = Arc::default();
        let (s, f) = (sunk.clone(), finished.clone());
        let mut run = engine
            .run(chain(), Arc::new(echo_host()))
            .map_events(|e: &EventEnvelope| match e.kind {
                EventType::AgentRequest => vec![],
                EventType::StepStart => {
                    vec![e.derived(
                        EventType::HostEvent,
                        json!({"name": "step", "was": e.data["step"]}),
                    )]
                }
                EventType::TaskResponse => vec![
                    e.clone(),
                    e.derived(EventType::HostEvent, json!({"name": "billing"})),
                ],
                EventType::RouteDecision => panic!("a panicking hook keeps the original"),
                _ => vec![e.clone()],
            })
            .event_sink(move |e| s.lock().unwrap().push(e.type_str().to_owned()))
            .on_finish(move |_, events| {
                f.lock()
                    .unwrap()
                    .extend(events.iter().map(|e| e.type_str().to_owned()));
                Ok::<(), std::convert::Infallible>(())
            })
            .spawn();
        let mut streamed = Vec::new();
        let mut host_events = Vec::new();
        while let Some(e) = run.next_event().await {
            if e.kind == EventType::HostEvent {
                host_events.push(e.data.value().clone());
            }
            streamed.push(e.type_str().to_owned());
        }
        assert!(run.result().await.success);
        let count = |kind: &str| streamed.iter().filter(|k| *k == kind).count();
        assert_eq!(count("agent_request"), 0, "dropped");
        assert_eq!(count("step_start"), 0, "replaced");
        assert_eq!(count("task_response"), 2, "kept");
        assert_eq!(count("route_decision"), 1, "the original survives a panic");
        assert_eq!(
            count("host_event"),
            4,
            "two replacements and two injections"
        );
        assert!(host_events.contains(&json!({"name": "step", "was": "a"})));
        assert!(host_events.contains(&json!({"name": "billing"})));
        assert_eq!(streamed.last().map(String::as_str), Some("close"));
        // The sink sees what the stream sees; on_finish everything before close.
        assert_eq!(*sunk.lock().unwrap(), streamed);
        assert_eq!(
            *finished.lock().unwrap(),
            streamed[..streamed.len() - 1].to_vec()
        );
    })
}

pub fn a_full_event_queue_pauses_the_run_until_the_consumer_reads<T: TestRuntime>() {
    T::block_on(async {
        let server = chain_agents().await;
        let engine = Engine::<T>::builder(server.cards())
            .event_queue(1)
            .build()
            .expect("engine");
        let emitted = Arc::new(AtomicUsize::new(0));
        let counted = emitted.clone();
        let mut run = engine
            .run(chain(), Arc::new(echo_host()))
            .event_sink(move |_| {
                counted.fetch_add(1, Ordering::SeqCst);
            })
            .spawn();
        // Nobody reads: the run stops after a few events, before its second step.
        T::sleep(Duration::from_millis(300)).await;
        assert!(
            server.requests("beta").is_empty(),
            "a paused run does not go on"
        );
        // The stream holds exactly its one event; the run waits with the second (the sink sees
        // each event before the stream does).
        assert_eq!(emitted.load(Ordering::SeqCst), 2);
        // Reading releases it; nothing was lost.
        let mut kinds = Vec::new();
        while let Some(e) = run.next_event().await {
            kinds.push(e.type_str());
        }
        assert_eq!(kinds.first(), Some(&"start"));
        assert_eq!(kinds.last(), Some(&"close"));
        assert_eq!(kinds.iter().filter(|k| **k == "step_start").count(), 2);
        assert!(run.result().await.success);
        // Dropping the stream releases a run as well.
        let mut run = engine.run(chain(), Arc::new(echo_host())).spawn();
        drop(run.events());
        assert!(run.result().await.success);
    })
}

pub fn progress_is_a_consistent_snapshot_taken_while_the_run_goes_on<T: TestRuntime>() {
    use a2at_core::run::StepProgressState as S;
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            working(ScriptedAgent::new("beta")),
        ])
        .await;
        let engine = engine::<T>(&server);
        let wf = workflow(json!({"name": "p", "steps": [
            {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}],
             "next": [{"step": "b"}, {"step": "never", "condition": "never"}]},
            {"name": "b", "subtasks": [{"agent": "beta", "description": "x"}, {"agent": "beta", "description": "y"}],
             "next": [{"step": "c"}]},
            {"name": "c", "subtasks": [{"agent": "alpha", "description": "last"}]},
            {"name": "never", "subtasks": [{"agent": "alpha", "description": "no"}]}
        ]}));
        let host = ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .on_route(|_| async { Ok(a2at_core::host::RouteDecision::deny(None)) })
            .build();
        let mut run = engine.run(wf, Arc::new(host)).spawn();
        drop(run.events());
        let mut snapshot = None;
        for _ in 0..1000 {
            let p = run.progress().await.expect("the run is going on");
            if p.in_flight.get("beta") == Some(&2) {
                snapshot = Some(p);
                break;
            }
            T::sleep(Duration::from_millis(2)).await;
        }
        let p = snapshot.expect("both beta subtasks in flight");
        let state = |name: &str| p.steps.iter().find(|s| s.name == name).unwrap().state;
        assert_eq!(state("a"), S::Succeeded);
        assert_eq!(state("b"), S::Running);
        assert_eq!(state("c"), S::Pending);
        assert_eq!(state("never"), S::Skipped);
        assert_eq!(
            (p.done(), p.count(S::Running), p.count(S::Pending)),
            (1, 1, 1)
        );
        assert_eq!(p.in_flight.get("alpha"), None);
        assert_eq!(p.history.len(), 1);
        assert_eq!(p.step_outputs["a"]["first"], vec![json!("done: first")]);
        assert!(!p.finished);
        // Taking snapshots never stopped the run: it still reacts to a cancel.
        run.cancel();
        let r = run.result().await;
        assert_eq!(r.error.unwrap().code, codes::CANCELLED);
    })
}

/// A host whose callbacks answer at once never makes the run wait for anything, yet the run
/// still answers progress requests and sees its cancel between two steps: it does not hold its
/// thread to the end.
pub fn a_host_that_answers_at_once_still_lets_its_run_be_watched_and_cancelled<T: TestRuntime>() {
    const STEPS: usize = 20_000;
    T::block_on(async {
        let steps: Vec<Value> = (0..STEPS)
            .map(|i| {
                let mut step = json!({"name": format!("s{i}"), "step_type": "SELF_LOOP",
                    "subtasks": [{"agent": "me", "description": "local work"}]});
                if i + 1 < STEPS {
                    step["next"] = json!([{"step": format!("s{}", i + 1)}]);
                }
                step
            })
            .collect();
        let wf = workflow(json!({"name": "long", "steps": steps}));
        let engine = Engine::<T>::builder(Vec::new()).build().expect("engine");
        let host = ControlPointBuilder::new()
            .on_self_task(|_| async { Ok(a2at_core::host::TaskResult::success(vec!["ok".into()])) })
            .build();
        let mut run = engine.run(wf, Arc::new(host)).spawn();
        let first = run.next_event().await.expect("the run starts");
        assert_eq!(first.kind, EventType::Start);
        drop(run.events());
        // Progress requests are answered too while the run never waits.
        let progress = run
            .progress()
            .await
            .expect("answered while the run goes on");
        assert!(!progress.finished);
        assert!(progress.history.len() < STEPS, "{}", progress.history.len());
        run.cancel();
        let result = run.result().await;
        assert_eq!(
            result.error.as_ref().map(|e| e.code.as_str()),
            Some(codes::CANCELLED),
            "the run ran to its end: {} subtasks",
            result.history.len()
        );
        assert!(result.history.len() < STEPS, "{}", result.history.len());
    })
}

pub fn a_plain_input_required_is_declined_by_default_or_answered_by_the_host<T: TestRuntime>() {
    use a2at_core::host::InputDecision;
    T::block_on(async {
        let asks_input = || Plan::States(vec!["TASK_STATE_INPUT_REQUIRED"]);
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("rpc").by_default(asks_input()),
            ScriptedAgent::new("rest")
                .rest()
                .streaming()
                .by_default(asks_input()),
        ])
        .await;
        for agent in ["rpc", "rest"] {
            let wf = workflow(json!({"steps": [{"name": "s",
                "subtasks": [{"agent": agent, "description": "which site?"}]}]}));
            let asked = Arc::new(AtomicUsize::new(0));
            let host = |answer: Option<&'static str>| {
                let asked = asked.clone();
                ControlPointBuilder::new()
                    .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
                    .on_input_required(move |req| {
                        asked.fetch_add(1, Ordering::SeqCst);
                        assert_eq!(req.previous_replies, 0);
                        assert!(!req.remote_task_id.is_empty());
                        async move {
                            Ok(match answer {
                                Some(text) => InputDecision::Reply {
                                    content: MessageContent::text(text),
                                },
                                None => InputDecision::Decline,
                            })
                        }
                    })
                    .build()
            };
            // Default: the host is not asked; the task fails and is cancelled.
            let r = engine::<T>(&server)
                .execute(wf.clone(), RunStart::default(), Arc::new(host(Some("A"))))
                .await;
            assert_eq!(
                r.history[0].error_code.as_deref(),
                Some(codes::UNSUPPORTED_TASK_STATE),
                "{agent}"
            );
            assert_eq!(asked.load(Ordering::SeqCst), 0);
            assert_eq!(server.agent(agent).cancelled.len(), 1);
            // Allowed: the host answers on the same task and the task completes.
            let allowing = Engine::<T>::builder(server.cards())
                .poll_interval(Duration::from_millis(5))
                .max_input_replies(2)
                .build()
                .expect("engine");
            let r = allowing
                .execute(
                    wf.clone(),
                    RunStart::default(),
                    Arc::new(host(Some("site A"))),
                )
                .await;
            assert!(r.success, "{agent}: {:?}", r.error);
            assert_eq!(asked.load(Ordering::SeqCst), 1);
            let task = &r.history[0];
            let sends: Vec<_> = server
                .requests(agent)
                .into_iter()
                .filter(|q| q.message().is_some())
                .collect();
            let follow_up = sends.last().unwrap().message().unwrap().clone();
            assert_eq!(follow_up["parts"][0]["text"], "site A");
            assert_eq!(follow_up["taskId"].as_str(), task.remote_task_id.as_deref());
            assert_eq!(follow_up["contextId"].as_str(), task.context_id.as_deref());
            // Declined: the default outcome.
            let r = allowing
                .execute(wf, RunStart::default(), Arc::new(host(None)))
                .await;
            assert_eq!(
                r.history[0].error_code.as_deref(),
                Some(codes::UNSUPPORTED_TASK_STATE),
                "{agent}"
            );
            assert_eq!(asked.load(Ordering::SeqCst), 2);
        }
    })
}

pub fn follow_ups_on_input_required_stop_at_the_limit<T: TestRuntime>() {
    use a2at_core::host::InputDecision;
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("thrice").by_default(Plan::AsksInput(3)),
            ScriptedAgent::new("twice")
                .rest()
                .by_default(Plan::AsksInput(2)),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(5))
            .max_input_replies(2)
            .build()
            .expect("engine");
        for (agent, succeeds) in [("thrice", false), ("twice", true)] {
            let seen: Arc<Mutex<Vec<u32>>> = Arc::default();
            let record = seen.clone();
            let host = ControlPointBuilder::new()
                .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
                .on_input_required(move |req| {
                    record.lock().unwrap().push(req.previous_replies);
                    async {
                        Ok(InputDecision::Reply {
                            content: MessageContent::text("more"),
                        })
                    }
                })
                .build();
            let wf = workflow(json!({"steps": [{"name": "s",
                "subtasks": [{"agent": agent, "description": "ask"}]}]}));
            let r = engine
                .execute(wf, RunStart::default(), Arc::new(host))
                .await;
            assert_eq!(*seen.lock().unwrap(), vec![0, 1], "{agent}");
            if succeeds {
                assert!(r.success, "{agent}: {:?}", r.error);
            } else {
                let task = &r.history[0];
                assert_eq!(
                    task.error_code.as_deref(),
                    Some(codes::UNSUPPORTED_TASK_STATE)
                );
                assert_eq!(task.error_details.as_ref().unwrap()["limit"], json!(2));
                assert_eq!(
                    server.agent(agent).cancelled.len(),
                    1,
                    "the task is cancelled"
                );
            }
        }
        // A follow-up follows the content rules of any send: no undeclared extension.
        let host = ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .on_input_required(|_| async {
                Ok(InputDecision::Reply {
                    content: MessageContent::text("x").with_extension("urn:not-declared"),
                })
            })
            .build();
        let wf = workflow(json!({"steps": [{"name": "s",
            "subtasks": [{"agent": "twice", "description": "ask"}]}]}));
        let r = engine
            .execute(wf, RunStart::default(), Arc::new(host))
            .await;
        assert_eq!(
            r.history[0].error_code.as_deref(),
            Some(codes::INVALID_CONTENT)
        );
    })
}
