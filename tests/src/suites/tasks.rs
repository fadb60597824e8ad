//! Task passthroughs on the engine over loopback HTTP, on both bindings: `get_task`,
//! `list_tasks` (paging, filters), `cancel_task`, `subscribe_to_task`, and their typed errors.

use std::sync::Arc;
use std::time::Duration;

use crate::loopback::LoopbackServer;
use crate::{Plan, ScriptedAgent};
use a2at_core::a2a::{ListTasksParams, StreamResponse, TaskState};
use a2at_core::host::{MessageContent, TaskStatus, codes};
use a2at_core::tasks::codes as task_codes;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::{ControlPointBuilder, RunHandle};
use serde_json::json;

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

/// One JSON-RPC agent and one HTTP+JSON agent.
const AGENTS: [&str; 2] = ["rpc", "rest"];

fn agents(plan: Plan) -> Vec<ScriptedAgent> {
    vec![
        ScriptedAgent::new("rpc").paging().by_default(plan.clone()),
        ScriptedAgent::new("rest").rest().paging().by_default(plan),
    ]
}

fn single(agent: &str) -> Arc<ValidatedWorkflow> {
    Arc::new(
        parse_and_validate(
            &json!({"steps": [{"name": "s", "subtasks": [{"agent": agent, "description": "work"}]}]})
                .to_string(),
        )
        .expect("valid workflow"),
    )
}

/// Starts a run whose task stays open at the agent, and waits until the agent holds it.
async fn open_task<T: TestRuntime>(
    engine: &Engine<T>,
    server: &LoopbackServer,
    agent: &str,
) -> (RunHandle, String) {
    let host = ControlPointBuilder::new()
        .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
        .build();
    let run = engine.run(single(agent), Arc::new(host)).spawn();
    for _ in 0..500 {
        if let Some((id, _)) = server.agent(agent).open_tasks().into_iter().next() {
            return (run, id);
        }
        T::sleep(Duration::from_millis(2)).await;
    }
    panic!("agent {agent} never got a task");
}

pub fn get_and_cancel_a_task_on_both_bindings<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(agents(Plan::States(vec!["TASK_STATE_WORKING"]))).await;
        // The run polls rarely: the test, not the run, moves the task.
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_secs(60))
            .auth_headers(Arc::new(|_| Ok(vec![("x-gateway".into(), "g1".into())])))
            .build()
            .expect("engine");
        for agent in AGENTS {
            let (run, id) = open_task::<T>(&engine, &server, agent).await;
            let task = engine.get_task(agent, &id).await.expect("get_task");
            assert_eq!(task.id, id);
            assert_eq!(task.status.state, TaskState::Working);
            let with = engine
                .get_task_with_history(agent, &id, Some(0))
                .await
                .expect("get_task with history");
            assert_eq!(with.id, id);

            let cancelled = engine.cancel_task(agent, &id).await.expect("cancel_task");
            assert_eq!(cancelled.status.state, TaskState::Canceled);
            assert!(server.agent(agent).cancelled.contains(&id));
            // Cancelling it again is the agent's typed refusal.
            let again = engine.cancel_task(agent, &id).await.unwrap_err();
            assert_eq!(again.code, "a2a.task_not_cancelable", "{again}");
            let details = again.details.expect("details");
            assert_eq!(details["reason"], "TASK_NOT_CANCELABLE");

            // Same authentication as workflow subtasks.
            for method in ["GetTask", "CancelTask", "SendMessage"] {
                for req in server.requests_to(agent, method) {
                    assert_eq!(req.header("x-gateway"), Some("g1"), "{method} on {agent}");
                    assert_eq!(req.header("A2A-Version"), Some("1.0"));
                }
            }
            run.cancel();
        }
        let gets = server.requests_to("rpc", "GetTask");
        assert_eq!(gets.last().unwrap().params["historyLength"], json!(0));
    })
}

pub fn list_tasks_pages_with_next_page_token_and_filters<T: TestRuntime>() {
    T::block_on(async {
        let server =
            LoopbackServer::start(agents(Plan::States(vec!["TASK_STATE_COMPLETED"]))).await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        for agent in AGENTS {
            let mut contexts = Vec::new();
            for i in 0..5 {
                let done = engine
                    .send_task(agent, MessageContent::text(format!("t{i}")))
                    .await;
                assert_eq!(done.status, TaskStatus::Success, "{:?}", done.error);
                contexts.push(done.context_id.expect("context id"));
            }
            // Three pages of 2, 2 and 1, chained by nextPageToken.
            let mut params = ListTasksParams {
                page_size: Some(2),
                status: Some(TaskState::Completed),
                ..ListTasksParams::default()
            };
            let mut sizes = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            loop {
                let page = engine
                    .list_tasks(agent, params.clone())
                    .await
                    .expect("list_tasks");
                assert_eq!(page.total_size, Some(5));
                sizes.push(page.tasks.len());
                seen.extend(page.tasks.iter().map(|t| t.id.clone()));
                match page.next_page_token {
                    Some(token) => params.page_token = Some(token),
                    None => break,
                }
            }
            assert_eq!(sizes, vec![2, 2, 1], "{agent}");
            assert_eq!(seen.len(), 5);
            // Filters go out as given.
            let working = engine
                .list_tasks(
                    agent,
                    ListTasksParams {
                        status: Some(TaskState::Working),
                        ..ListTasksParams::default()
                    },
                )
                .await
                .expect("list_tasks");
            assert!(working.tasks.is_empty());
            assert_eq!(working.next_page_token, None);
            let one = engine
                .list_tasks(
                    agent,
                    ListTasksParams {
                        context_id: Some(contexts[3].clone()),
                        history_length: Some(0),
                        include_artifacts: Some(true),
                        ..ListTasksParams::default()
                    },
                )
                .await
                .expect("list_tasks");
            assert_eq!(one.tasks.len(), 1);
            assert_eq!(one.tasks[0].context_id.as_ref(), Some(&contexts[3]));
            let sent = server.requests_to(agent, "ListTasks");
            let last = &sent.last().unwrap().params;
            assert_eq!(last["contextId"], json!(contexts[3]));
            let text = |v: &serde_json::Value| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            assert_eq!(text(&last["includeArtifacts"]), "true");
            assert_eq!(text(&last["historyLength"]), "0");
            assert_eq!(text(&sent[0].params["status"]), "TASK_STATE_COMPLETED");
            assert_eq!(text(&sent[1].params["pageToken"]), "2");
        }
    })
}

pub fn subscribe_to_task_streams_typed_events_until_the_agent_ends_it<T: TestRuntime>() {
    T::block_on(async {
        let plan = Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]);
        let server = LoopbackServer::start(agents(plan)).await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_secs(60))
            .build()
            .expect("engine");
        for agent in AGENTS {
            let (run, id) = open_task::<T>(&engine, &server, agent).await;
            let mut sub = engine.subscribe_to_task(agent, &id).expect("subscribe");
            assert_eq!(sub.task_id(), id);
            let mut kinds = Vec::new();
            while let Some(item) = sub.next_event().await {
                let kind = match item.expect("no error") {
                    StreamResponse::Task(t) => format!("task:{}", t.status.state.as_str()),
                    StreamResponse::StatusUpdate(s) => {
                        format!("status:{}", s.status.state.as_str())
                    }
                    StreamResponse::ArtifactUpdate(a) => {
                        format!("artifact:{}", a.artifact.name.unwrap_or_default())
                    }
                    StreamResponse::Message(_) => "message".to_owned(),
                };
                kinds.push(kind);
            }
            assert_eq!(
                kinds,
                vec![
                    "task:TASK_STATE_WORKING",
                    "status:TASK_STATE_WORKING",
                    "artifact:result",
                    "status:TASK_STATE_COMPLETED",
                ],
                "{agent}"
            );
            run.cancel();
        }
    })
}

pub fn closing_a_subscription_drops_the_stream_and_sends_nothing<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(agents(Plan::States(vec!["TASK_STATE_WORKING"]))).await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_secs(60))
            .build()
            .expect("engine");
        for agent in AGENTS {
            let (run, id) = open_task::<T>(&engine, &server, agent).await;
            // The agent sends the snapshot and keeps the stream open.
            let mut sub = engine.subscribe_to_task(agent, &id).expect("subscribe");
            let first = sub.next_event().await.expect("an event").expect("no error");
            assert!(matches!(first, StreamResponse::Task(ref t) if t.id == id));
            sub.close();
            sub.close();
            assert!(sub.next_event().await.is_none(), "closed streams end");
            assert!(server.agent(agent).cancelled.is_empty(), "no CancelTask");
            // Dropping an open subscription closes it too.
            let sub = engine.subscribe_to_task(agent, &id).expect("subscribe");
            drop(sub);
            run.cancel();
        }
    })
}

pub fn task_call_errors_are_typed<T: TestRuntime>() {
    T::block_on(async {
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let ghost = a2at_core::a2a::AgentCard::from_json_value(
            &ScriptedAgent::new("ghost").card_at(&format!("http://127.0.0.1:{closed}/ghost")),
        )
        .unwrap();
        let server =
            LoopbackServer::start(agents(Plan::States(vec!["TASK_STATE_COMPLETED"]))).await;
        let mut cards = server.cards();
        cards.push(ghost);
        let engine = Engine::<T>::builder(cards).build().expect("engine");
        for agent in AGENTS {
            let missing = engine.get_task(agent, "no-such-task").await.unwrap_err();
            assert_eq!(missing.code, "a2a.task_not_found", "{agent}: {missing}");
            let missing = engine.cancel_task(agent, "no-such-task").await.unwrap_err();
            assert_eq!(missing.code, "a2a.task_not_found", "{agent}: {missing}");
            let mut sub = engine
                .subscribe_to_task(agent, "no-such-task")
                .expect("subscribe");
            let err = sub.next_event().await.expect("an item").unwrap_err();
            assert_eq!(err.code, "a2a.task_not_found", "{agent}: {err}");
            assert!(sub.next_event().await.is_none());
        }
        let requests = server.total_requests();
        // Refused before anything is sent.
        let unknown = engine.get_task("nobody", "t").await.unwrap_err();
        assert_eq!(unknown.code, codes::AGENT_NOT_FOUND);
        let blank = engine.cancel_task("rpc", "  ").await.unwrap_err();
        assert_eq!(blank.code, task_codes::INVALID_REQUEST);
        assert!(blank.message.contains("task_id"), "{blank}");
        for size in [0, 101] {
            let bad = engine
                .list_tasks(
                    "rest",
                    ListTasksParams {
                        page_size: Some(size),
                        ..ListTasksParams::default()
                    },
                )
                .await
                .unwrap_err();
            assert_eq!(bad.code, task_codes::INVALID_REQUEST);
            assert!(bad.message.contains("page_size"), "{bad}");
        }
        assert!(engine.subscribe_to_task("nobody", "t").is_err());
        assert_eq!(server.total_requests(), requests, "nothing was sent");
        // Nobody listening.
        let down = engine.get_task("ghost", "t").await.unwrap_err();
        assert_eq!(down.code, codes::REMOTE_NO_RESPONSE, "{down}");
        let down = engine
            .list_tasks("ghost", ListTasksParams::default())
            .await
            .unwrap_err();
        assert_eq!(down.code, codes::REMOTE_NO_RESPONSE, "{down}");
    })
}
