//! `Engine::close` over loopback HTTP: drain or cancel the runs in flight, `CancelTask` for
//! what is abandoned, subscriptions closed, nothing new after the close, and the report.

use std::sync::Arc;
use std::time::Duration;

use crate::loopback::LoopbackServer;
use crate::{NotifyEvent as E, NotifyScript, Plan, ScriptedAgent, StreamEnding};
use a2at_core::a2at::NOTIFICATION_T_URI;
use a2at_core::host::{MessageContent, codes};
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::{CloseMode, ControlPointBuilder, ENGINE_CLOSED, RunHandle};
use serde_json::json;

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

fn single(agent: &str) -> Arc<ValidatedWorkflow> {
    Arc::new(
        parse_and_validate(
            &json!({"steps": [{"name": "s", "subtasks": [{"agent": agent, "description": "work"}]}]})
                .to_string(),
        )
        .expect("valid workflow"),
    )
}

fn start<T: TestRuntime>(engine: &Engine<T>, agent: &str) -> RunHandle {
    let host = ControlPointBuilder::new()
        .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
        .build();
    engine.run(single(agent), Arc::new(host)).spawn()
}

async fn wait_for_open_tasks<T: TestRuntime>(server: &LoopbackServer, agent: &str, n: usize) {
    for _ in 0..1000 {
        if server.agent(agent).open_tasks().len() >= n {
            return;
        }
        T::sleep(Duration::from_millis(2)).await;
    }
    panic!("agent {agent} never held {n} open tasks");
}

pub fn draining_lets_runs_finish_then_nothing_new_starts<T: TestRuntime>() {
    T::block_on(async {
        let slow = Plan::Delayed(
            Duration::from_millis(150),
            Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
        );
        let server =
            LoopbackServer::start(vec![ScriptedAgent::new("alpha").by_default(slow)]).await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        let runs = [start::<T>(&engine, "alpha"), start::<T>(&engine, "alpha")];
        let report = engine
            .close(CloseMode::Drain, Duration::from_secs(20))
            .await;
        assert_eq!(report.runs_drained, 2, "{report:?}");
        assert_eq!(report.runs_cancelled, 0);
        assert_eq!(report.tasks_cancelled, 0);
        assert!(!report.deadline_passed);
        assert!(engine.is_closed());
        for run in runs {
            let r = run.result().await;
            assert!(r.success, "{:?}", r.error);
        }
        // Nothing new starts, with a typed error.
        let mut late = start::<T>(&engine, "alpha");
        assert!(
            late.next_event().await.is_none(),
            "a refused run has no events"
        );
        let late = late.result().await;
        assert_eq!(late.error.unwrap().code, ENGINE_CLOSED);
        let sent = engine.send_task("alpha", MessageContent::text("x")).await;
        assert_eq!(sent.error_code.as_deref(), Some(ENGINE_CLOSED));
        let get = engine.get_task("alpha", "t").await.unwrap_err();
        assert_eq!(get.code, ENGINE_CLOSED);
        assert_eq!(
            engine.subscribe_to_task("alpha", "t").unwrap_err().code,
            ENGINE_CLOSED
        );
        assert_eq!(server.requests_to("alpha", "SendMessage").len(), 2);
        // Closing again reports nothing more.
        let again = engine.close(CloseMode::Cancel, Duration::ZERO).await;
        assert_eq!(again.runs_drained + again.runs_cancelled, 0, "{again:?}");
    })
}

pub fn a_drain_deadline_cancels_what_is_left_and_cancels_its_remote_tasks<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(10))
            .build()
            .expect("engine");
        let runs = [start::<T>(&engine, "alpha"), start::<T>(&engine, "alpha")];
        wait_for_open_tasks::<T>(&server, "alpha", 2).await;
        let report = engine
            .close(CloseMode::Drain, Duration::from_millis(100))
            .await;
        assert!(report.deadline_passed, "{report:?}");
        assert_eq!(report.runs_cancelled, 2, "{report:?}");
        assert_eq!(report.runs_drained, 0);
        assert_eq!(report.tasks_cancelled, 2);
        assert_eq!(server.agent("alpha").cancelled.len(), 2);
        assert!(server.agent("alpha").open_tasks().is_empty());
        for run in runs {
            let r = run.result().await;
            assert_eq!(r.error.unwrap().code, codes::CANCELLED);
        }
    })
}

pub fn cancel_mode_cancels_at_once_and_closes_every_subscription<T: TestRuntime>() {
    T::block_on(async {
        let script = NotifyScript::new(vec![E::Task("TASK_STATE_WORKING")], StreamEnding::StayOpen);
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
            ScriptedAgent::new("noc")
                .streaming()
                .with_extension(NOTIFICATION_T_URI)
                .then(Plan::Notify(script)),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_secs(60))
            .build()
            .expect("engine");
        let run = start::<T>(&engine, "alpha");
        wait_for_open_tasks::<T>(&server, "alpha", 1).await;
        let task_id = server.agent("alpha").open_tasks()[0].0.clone();
        let mut watching = engine
            .subscribe_to_task("alpha", &task_id)
            .expect("subscribe");
        assert!(watching.next_event().await.unwrap().is_ok());
        let sender = engine.extension_sender().expect("sender");
        let content = MessageContent::text("subscribe")
            .with_extension(NOTIFICATION_T_URI)
            .with_metadata(NOTIFICATION_T_URI, json!("alarms"))
            .with_metadata("templateUri", json!("Notification-T/alarm-subscription/v1"));
        let notification = sender
            .open_notification("noc", content, |_, _| {})
            .expect("open");
        notification.acknowledgement().await.expect("acknowledged");

        let report = engine
            .close(CloseMode::Cancel, Duration::from_secs(60))
            .await;
        assert_eq!(report.runs_cancelled, 1, "{report:?}");
        assert_eq!(report.tasks_cancelled, 1);
        assert_eq!(report.subscriptions_closed, 2);
        assert!(!report.deadline_passed);
        assert!(
            watching.next_event().await.is_none(),
            "the task stream ended"
        );
        assert_eq!(
            notification.completion().await.expect("closed"),
            a2at_driver::SubscriptionCompletion::Closed
        );
        assert_eq!(run.result().await.error.unwrap().code, codes::CANCELLED);
        assert_eq!(server.agent("alpha").cancelled, vec![task_id]);
    })
}

pub fn dropping_the_engine_cancels_its_runs_without_waiting<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(10))
            .build()
            .expect("engine");
        let run = start::<T>(&engine, "alpha");
        wait_for_open_tasks::<T>(&server, "alpha", 1).await;
        drop(engine);
        let r = run.result().await;
        assert_eq!(r.error.unwrap().code, codes::CANCELLED);
        assert_eq!(
            server.agent("alpha").cancelled.len(),
            1,
            "CancelTask was sent"
        );
    })
}

pub fn the_conversation_hook_runs_once_per_context_after_its_whole_cycle<T: TestRuntime>() {
    use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
    use a2at_core::host::{NegotiationReply, TaskResult};
    use std::sync::Mutex;
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").rest(),
            ScriptedAgent::new("neg")
                .by_default(Plan::Negotiate(crate::agent::Negotiation::rounds(2, 3))),
        ])
        .await;
        let server = Arc::new(server);
        // (agent, context id, requests the agent had received when the hook ran)
        let closed: Arc<Mutex<Vec<(String, String, usize)>>> = Arc::default();
        let (record, seen_by) = (closed.clone(), server.clone());
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(5))
            .on_conversation_closed(move |c| {
                let requests = seen_by.requests(&c.agent).len();
                record
                    .lock()
                    .unwrap()
                    .push((c.agent.clone(), c.context_id.clone(), requests));
                if c.agent == "alpha" {
                    panic!("a panicking hook changes nothing");
                }
            })
            .build()
            .expect("engine");
        let host = ControlPointBuilder::new()
            .on_task(|req| async move {
                let content = MessageContent::text(req.instruction.clone());
                Ok(if req.agent_name == "neg" {
                    content.with_extension(NEGOTIATION_T_URI)
                } else {
                    content
                })
            })
            .on_self_task(|_| async { Ok(TaskResult::success(vec![json!("local")])) })
            .on_negotiation(|r| async move {
                Ok(NegotiationReply::Send {
                    content: r.reply(Performative::Accept, "ok").expect("valid context"),
                })
            })
            .build();
        let wf = parse_and_validate(
            &json!({"steps": [
                {"name": "a", "subtasks": [{"agent": "alpha", "description": "x"}, {"agent": "neg", "description": "y"}],
                 "next": [{"step": "local"}]},
                {"name": "local", "step_type": "SELF_LOOP", "subtasks": [{"agent": "me", "description": "z"}]}
            ]})
            .to_string(),
        )
        .expect("valid workflow");
        let result = engine.execute(wf, Default::default(), Arc::new(host)).await;
        assert!(result.success, "{:?}", result.error);
        let mut closed = closed.lock().unwrap().clone();
        closed.sort();
        assert_eq!(
            closed.len(),
            2,
            "one call per conversation, none for local tasks: {closed:?}"
        );
        let contexts: Vec<Option<String>> = ["alpha", "neg"]
            .iter()
            .map(|a| {
                result
                    .history
                    .iter()
                    .find(|t| t.agent_name == *a)
                    .and_then(|t| t.context_id.clone())
            })
            .collect();
        assert_eq!(Some(closed[0].1.clone()), contexts[0]);
        assert_eq!(Some(closed[1].1.clone()), contexts[1]);
        // After the whole cycle: the send and both negotiation replies had gone out.
        assert_eq!(closed[0].2, server.requests("alpha").len());
        assert_eq!(closed[1].2, server.requests("neg").len());
        assert!(closed[1].2 >= 3, "{closed:?}");
    })
}

pub fn a_close_never_waits_for_an_event_consumer_that_stopped_reading<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").by_default(Plan::States(vec!["TASK_STATE_WORKING"])),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(5))
            .event_queue(1)
            .build()
            .expect("engine");
        // The handle keeps its event stream and never reads it: the run pauses.
        let run = start::<T>(&engine, "alpha");
        T::sleep(Duration::from_millis(100)).await;
        let close = engine.close(CloseMode::Cancel, Duration::from_secs(1));
        let limit = T::sleep(Duration::from_secs(20));
        futures::pin_mut!(close, limit);
        let report = match futures::future::select(close, limit).await {
            futures::future::Either::Left((report, _)) => report,
            futures::future::Either::Right(_) => panic!("close waited for the event consumer"),
        };
        assert_eq!(report.runs_cancelled, 1, "{report:?}");
        assert_eq!(run.result().await.error.unwrap().code, codes::CANCELLED);
    })
}
