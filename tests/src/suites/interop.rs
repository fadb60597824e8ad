//! Interop with real A2A agents written with the official Python SDK (`a2a-sdk` 1.3.0), started
//! from `tests/interop/agents.py`: one suite, compiled once per runtime. The including test file
//! binds `rt` (the runtime crate) and `block_on`. Ignored unless asked for: `tests/run` sets up
//! the Python environment, exports `A2AT_INTEROP_PYTHON` and runs them with `--ignored`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use a2at_core::a2a::{AgentCard, Binding};
use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
use a2at_core::host::{
    MessageContent, NegotiationReply, RouteDecision, TaskResult, TaskStatus, codes,
};
use a2at_core::run::RunStart;
use a2at_core::workflow::parse_and_validate;
use a2at_driver::{BuiltControlPoint, ControlPointBuilder};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;
use serde_json::{Value, json};

pub struct Peers {
    _child: Mutex<Child>,
    _stdin: Mutex<ChildStdin>,
    pub cards: Vec<AgentCard>,
}

const IGNORED: &str = "needs the Python interop peers: run tests/run (or set A2AT_INTEROP_PYTHON)";

pub fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        let python = std::env::var("A2AT_INTEROP_PYTHON").unwrap_or_else(|_| panic!("{IGNORED}"));
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let mut child = Command::new(python)
            .arg("tests/interop/agents.py")
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Python agents start");
        let stdin = child.stdin.take().expect("piped stdin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .expect("READY line");
        let json: Value =
            serde_json::from_str(line.trim().strip_prefix("READY ").expect("READY prefix"))
                .expect("READY json");
        let cards = json
            .as_object()
            .expect("object of cards")
            .values()
            .map(|c| AgentCard::from_json_value(c).expect("card parses"))
            .collect();
        Peers {
            _child: Mutex::new(child),
            _stdin: Mutex::new(stdin),
            cards,
        }
    })
}

fn engine<T: TestRuntime>(binding: Binding) -> Engine<T> {
    Engine::<T>::builder(peers().cards.clone())
        .preferred_binding(binding)
        .task_budget(Duration::from_secs(30))
        .poll_interval(Duration::from_millis(100))
        .build()
        .expect("valid cards")
}

fn host() -> BuiltControlPoint {
    ControlPointBuilder::new()
        .on_task(|r| async move {
            let content = MessageContent::text(r.instruction.clone());
            Ok(if r.agent_name == "negotiator" {
                content.with_extension(NEGOTIATION_T_URI)
            } else {
                content
            })
        })
        .on_self_task(|r| async move {
            let upstream: Vec<String> = r
                .workflow_input
                .upstream_results
                .iter()
                .map(|u| u.step_name.to_string())
                .collect();
            Ok(TaskResult::success(vec![json!({ "summary_of": upstream })]))
        })
        .on_route(|r| async move {
            Ok(RouteDecision {
                allowed: r.condition == "take it",
                reason: None,
            })
        })
        .on_negotiation(|r| async move {
            Ok(NegotiationReply::Send {
                content: r
                    .reply(Performative::Accept, "Accept: sites Site1, Site2")
                    .expect("valid context"),
            })
        })
        .build()
}

fn one_step(agent: &str, text: &str) -> a2at_core::workflow::ValidatedWorkflow {
    parse_and_validate(
        &json!({"steps": [{"name": "s", "subtasks": [{"agent": agent, "description": text}]}]})
            .to_string(),
    )
    .expect("valid workflow")
}

/// Every binding the peers serve (each card lists gRPC last, as a bare `host:port` target).
const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

pub fn a_blocking_agent_completes_on_every_binding<T: TestRuntime>() {
    T::block_on(async {
        for binding in BINDINGS {
            let r = engine::<T>(binding)
                .execute(
                    one_step("echo", "hello"),
                    RunStart::default(),
                    Arc::new(host()),
                )
                .await;
            assert!(r.success, "{binding:?}: {:?}", r.history);
            assert_eq!(
                r.step_outputs()["s"]["hello"],
                vec![json!("echo: hello")],
                "{binding:?}"
            );
            assert!(r.history[0].remote_task_id.is_some());
        }
    });
}

/// The `traceparent` a Python `a2a-sdk` agent received (the `tracer` agent answers with it)
/// joins the host's trace on every binding: the host's trace id, a span id of its own, the same
/// on both ends of the wire.
pub fn a_python_agent_receives_a_traceparent_of_the_run_on_every_binding<T: TestRuntime>() {
    const HOST: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let host_parent = a2at_core::tracectx::TraceParent::parse(HOST).unwrap();
    T::block_on(async {
        let mut seen = std::collections::BTreeSet::new();
        for binding in BINDINGS {
            for parent in [None, Some(HOST)] {
                // The engine outlives the run (dropping the last handle closes it).
                let engine = engine::<T>(binding);
                let mut run = engine
                    .run(one_step("tracer", "trace me"), Arc::new(host()))
                    .seed(7);
                if let Some(p) = parent {
                    run = run.traceparent(p);
                }
                let r = run.execute().await;
                assert!(r.success, "{binding:?}: {:?}", r.history);
                let received = r.step_outputs()["s"]["trace me"][0]
                    .as_str()
                    .expect("the agent answers with text")
                    .to_owned();
                let got = a2at_core::tracectx::TraceParent::parse(&received)
                    .unwrap_or_else(|e| panic!("{binding:?}: {received:?}: {e}"));
                // Seed 7 fixes the run's own trace id and the send's span id.
                let own = a2at_core::tracectx::TraceContext::new(7, None, None);
                let want_trace = parent.map_or(own.trace_id(), |_| host_parent.trace_id());
                assert_eq!(got.trace_id(), want_trace, "{binding:?} {parent:?}");
                assert_eq!(
                    got.parent_id(),
                    own.span_id(a2at_core::OpId(1)),
                    "{binding:?}"
                );
                assert_eq!(got.flags(), 1);
                seen.insert(received);
            }
        }
        assert_eq!(
            seen.len(),
            2,
            "same seed, same header on every binding: {seen:?}"
        );
    });
}

pub fn a_streaming_agent_delivers_assembled_artifact_chunks_on_every_binding<T: TestRuntime>() {
    T::block_on(async {
        for binding in BINDINGS {
            let r = engine::<T>(binding)
                .execute(
                    one_step("streamer", "go"),
                    RunStart::default(),
                    Arc::new(host()),
                )
                .await;
            assert!(r.success, "{binding:?}: {:?}", r.history);
            assert_eq!(
                r.step_outputs()["s"]["go"],
                vec![json!("chunk1 "), json!("chunk2: go")],
                "{binding:?}"
            );
        }
    });
}

pub fn an_input_required_negotiation_round_trip_completes_on_every_binding<T: TestRuntime>() {
    T::block_on(async {
        for binding in BINDINGS {
            let r = engine::<T>(binding)
                .execute(
                    one_step("negotiator", "energy saving"),
                    RunStart::default(),
                    Arc::new(host()),
                )
                .await;
            assert!(r.success, "{binding:?}: {:?}", r.history);
            assert_eq!(
                r.step_outputs()["s"]["energy saving"],
                vec![json!("agreed after 2 rounds")]
            );
        }
    });
}

pub fn a_failed_task_keeps_its_evidence<T: TestRuntime>() {
    T::block_on(async {
        let r = engine::<T>(Binding::JsonRpc)
            .execute(
                one_step("failer", "x"),
                RunStart::default(),
                Arc::new(host()),
            )
            .await;
        assert!(!r.success);
        let h = &r.history[0];
        assert_eq!(h.error_code.as_deref(), Some(codes::REMOTE_TASK_FAILED));
        let evidence = serde_json::to_string(&h.received_messages).unwrap();
        assert!(
            evidence.contains("simulated business failure"),
            "{evidence}"
        );
    });
}

/// The peers' cards, with `agent` claiming (or not) to stream whatever its card says.
fn cards_claiming_streaming(agent: &str, streaming: bool) -> Vec<AgentCard> {
    peers()
        .cards
        .iter()
        .cloned()
        .map(|mut c| {
            if c.name == agent {
                c.capabilities.streaming = Some(streaming);
            }
            c
        })
        .collect()
}

pub fn a_rejected_call_projects_the_error_envelope_on_every_binding<T: TestRuntime>() {
    // Claim streaming for the blocking echo agent: the server rejects the streaming call before
    // creating a task, with the standard error envelope (gRPC: status and ErrorInfo).
    T::block_on(async {
        let mut codes = Vec::new();
        for binding in BINDINGS {
            let engine = Engine::<T>::builder(cards_claiming_streaming("echo", true))
                .preferred_binding(binding)
                .build()
                .unwrap();
            let r = engine
                .execute(one_step("echo", "x"), RunStart::default(), Arc::new(host()))
                .await;
            assert!(!r.success);
            let code = r.history[0].error_code.clone().unwrap();
            assert!(code.starts_with("a2a."), "{binding:?}: {code}");
            assert!(r.history[0].remote_task_id.is_none());
            codes.push((
                binding,
                code,
                r.history[0].error_details.clone(),
                r.history[0].error.clone(),
            ));
        }
        // The SDK's gRPC handler sends the reason in an ErrorInfo in grpc-status-details-bin:
        // the same code as the JSON bindings, so the host cannot tell which binding failed.
        assert_eq!(codes[0].1, "a2a.unsupported_operation", "{codes:?}");
        assert!(codes.iter().all(|c| c.1 == codes[0].1), "{codes:?}");
        assert!(codes.iter().all(|c| c.3 == codes[0].3), "{codes:?}");
        let grpc = &codes[2];
        assert_eq!(grpc.0, Binding::Grpc);
        let details = grpc.2.as_ref().expect("details");
        assert_eq!(details["reason"], "UNSUPPORTED_OPERATION", "{details}");
        let info = &details["details"][0];
        assert_eq!(
            info["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
            "the reason came from an ErrorInfo, not from the message: {details}"
        );
        assert_eq!(info["domain"], "a2a-protocol.org", "{details}");
    });
}

/// Reads a task's state straight from the agent over HTTP+JSON (no engine involved).
fn remote_state(card: &AgentCard, task_id: &str) -> String {
    let rest = card
        .supported_interfaces
        .iter()
        .find(|i| i.protocol_binding == "HTTP+JSON")
        .expect("REST interface")
        .url
        .clone();
    let without_scheme = rest.strip_prefix("http://").expect("http url");
    let (authority, base) = without_scheme.split_once('/').unwrap();
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET /{base}/tasks/{task_id} HTTP/1.1\r\nHost: {authority}\r\nA2A-Version: 1.0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    let start = body.find('{').unwrap_or(0);
    let end = body.rfind('}').map_or(body.len(), |e| e + 1);
    let task: Value = serde_json::from_str(&body[start..end]).unwrap_or(Value::Null);
    task.pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned()
}

pub fn cancelling_midway_cancels_the_remote_task_on_every_binding<T: TestRuntime>() {
    T::block_on(async {
        for binding in BINDINGS {
            // The engine must outlive the run: dropping it would cancel the run.
            let engine = engine::<T>(binding);
            let mut handle = engine
                .run(one_step("slow", "wait"), Arc::new(host()))
                .spawn();
            while let Some(event) = handle.next_event().await {
                if event.type_str() == "agent_status_update"
                    && event.data["state"] == "TASK_STATE_WORKING"
                {
                    break;
                }
            }
            handle.cancel();
            let r = handle.result().await;
            assert!(!r.success);
            assert_eq!(r.error.as_ref().unwrap().code, codes::CANCELLED);
            let h = &r.history[0];
            assert_eq!(h.status, TaskStatus::Cancelled);
            let task = h.remote_task_id.clone().expect("the task was known");
            let card = peers().cards.iter().find(|c| c.name == "slow").unwrap();
            assert_eq!(
                remote_state(card, &task),
                "TASK_STATE_CANCELED",
                "{binding:?}"
            );
        }
    });
}

pub fn a_multi_step_workflow_with_fan_out_and_routing_runs_against_python_agents<T: TestRuntime>() {
    let wf = parse_and_validate(&json!({"name": "interop", "steps": [
        {"name": "fan", "subtasks": [{"agent": "echo", "description": "a"}, {"agent": "streamer", "description": "b"}],
         "next": [{"step": "negotiate"}, {"step": "merge"}]},
        {"name": "negotiate", "subtasks": [{"agent": "negotiator", "description": "c"}], "next": [{"step": "merge"}]},
        {"name": "merge", "step_type": "SELF_LOOP", "context_from": "*", "subtasks": [{"agent": "me", "description": "m"}],
         "next": [{"step": "taken", "condition": "take it"}, {"step": "not_taken", "condition": "leave it"}]},
        {"name": "taken", "subtasks": [{"agent": "echo", "description": "t"}]},
        {"name": "not_taken", "subtasks": [{"agent": "failer", "description": "n"}]}
    ]}).to_string()).unwrap();
    T::block_on(async {
        for binding in BINDINGS {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let seen2 = seen.clone();
            let r = engine::<T>(binding)
                .run(wf.clone(), Arc::new(host()))
                .event_sink(move |e| seen2.lock().unwrap().push(e.type_str()))
                .execute()
                .await;
            assert!(r.success, "{binding:?}: {:?}", r.error);
            assert_eq!(
                r.step_outputs()["merge"]["m"],
                vec![json!({"summary_of": ["fan", "negotiate"]})]
            );
            assert_eq!(r.step_outputs()["taken"]["t"], vec![json!("echo: t")]);
            assert!(!r.step_outputs().contains_key("not_taken"));
            let seen = seen.lock().unwrap();
            assert_eq!(seen.first(), Some(&"start"));
            assert_eq!(seen.last(), Some(&"close"));
        }
    });
}

pub fn an_answer_in_the_final_status_message_is_the_output_blocking_and_streaming<
    T: TestRuntime,
>() {
    // The `replier` agent finishes with `TaskUpdater.complete(message)` and no artifact.
    T::block_on(async {
        for binding in BINDINGS {
            for streaming in [false, true] {
                let engine = Engine::<T>::builder(cards_claiming_streaming("replier", streaming))
                    .preferred_binding(binding)
                    .build()
                    .unwrap();
                let r = engine
                    .execute(
                        one_step("replier", "hi"),
                        RunStart::default(),
                        Arc::new(host()),
                    )
                    .await;
                assert!(
                    r.success,
                    "{binding:?} streaming={streaming}: {:?}",
                    r.history
                );
                assert_eq!(
                    r.step_outputs()["s"]["hi"],
                    vec![json!("reply: hi")],
                    "{binding:?} streaming={streaming}"
                );
            }
        }
    });
}

pub fn a_stream_reset_by_the_network_after_the_task_is_known_still_succeeds<T: TestRuntime>() {
    use crate::fault_proxy::{FaultPlan, FaultProxy};
    T::block_on(async {
        // The fault proxy counts SSE events of HTTP/1.1 responses: the JSON bindings only.
        for binding in [Binding::JsonRpc, Binding::HttpJson] {
            let card = peers().cards.iter().find(|c| c.name == "paced").unwrap();
            let url = card
                .supported_interfaces
                .iter()
                .find(|i| i.protocol_binding == binding.as_str())
                .expect("interface")
                .url
                .clone();
            let authority = url.split('/').nth(2).unwrap();
            let upstream = authority.parse().expect("socket address");
            // The snapshot and WORKING reach the engine, then the connection breaks.
            let proxy = FaultProxy::start(
                upstream,
                FaultPlan {
                    cut_after_events: Some(2),
                    cuts: 1,
                    ..FaultPlan::default()
                },
            );
            let mut proxied = card.clone();
            for i in &mut proxied.supported_interfaces {
                i.url = proxy.rewrite(&i.url);
            }
            let engine = Engine::<T>::builder(vec![proxied])
                .preferred_binding(binding)
                .task_budget(Duration::from_secs(30))
                .build()
                .unwrap();
            let r = engine
                .execute(
                    one_step("paced", "go"),
                    RunStart::default(),
                    Arc::new(host()),
                )
                .await;
            assert!(r.success, "{binding:?}: {:?}", r.history);
            assert_eq!(
                r.step_outputs()["s"]["go"],
                vec![json!("chunk1 "), json!("chunk2: go")],
                "{binding:?}"
            );
            assert_eq!(proxy.cuts_done(), 1, "{binding:?}");
            let (send, cancel) = match binding {
                Binding::JsonRpc => ("\"SendStreamingMessage\"", "\"CancelTask\""),
                _ => ("/message:stream", ":cancel"),
            };
            assert_eq!(proxy.count_sent(send), 1, "{binding:?}: one message sent");
            assert_eq!(
                proxy.count_sent(cancel),
                0,
                "{binding:?}: nothing cancelled"
            );
        }
    });
}

/// The peers' cards with every interface but gRPC removed.
fn grpc_only_cards() -> Vec<AgentCard> {
    peers()
        .cards
        .iter()
        .cloned()
        .map(|mut c| {
            c.supported_interfaces
                .retain(|i| i.protocol_binding == "GRPC");
            c
        })
        .collect()
}

pub fn agents_offering_only_grpc_run_without_a_preference<T: TestRuntime>() {
    T::block_on(async {
        let engine = Engine::<T>::builder(grpc_only_cards())
            .task_budget(Duration::from_secs(30))
            .build()
            .expect("a gRPC-only card is usable");
        let wf = parse_and_validate(
            &json!({"steps": [
                {"name": "a", "subtasks": [{"agent": "echo", "description": "hello"},
                                           {"agent": "streamer", "description": "go"}],
                 "next": [{"step": "b"}]},
                {"name": "b", "subtasks": [{"agent": "negotiator", "description": "n"}]}
            ]})
            .to_string(),
        )
        .unwrap();
        let r = engine
            .execute(wf, RunStart::default(), Arc::new(host()))
            .await;
        assert!(r.success, "{:?}", r.history);
        assert_eq!(r.step_outputs()["a"]["hello"], vec![json!("echo: hello")]);
        assert_eq!(
            r.step_outputs()["a"]["go"],
            vec![json!("chunk1 "), json!("chunk2: go")]
        );
        assert_eq!(
            r.step_outputs()["b"]["n"],
            vec![json!("agreed after 2 rounds")]
        );
    });
}

pub fn grpc_stream_events_arrive_as_their_frames_do<T: TestRuntime>() {
    // `paced` pauses 0.3 s between its chunks: the first chunk's event must reach the event
    // sink well before the run ends, not all at once at the end of the stream.
    T::block_on(async {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let r = engine::<T>(Binding::Grpc)
            .run(one_step("paced", "go"), Arc::new(host()))
            .event_sink(move |e| {
                seen2
                    .lock()
                    .unwrap()
                    .push((e.type_str(), std::time::Instant::now()))
            })
            .execute()
            .await;
        assert!(r.success, "{:?}", r.history);
        let seen = seen.lock().unwrap();
        let first_update = seen
            .iter()
            .find(|(t, _)| t.starts_with("agent_"))
            .expect("an agent event")
            .1;
        let close = seen.last().expect("close").1;
        assert!(
            close.duration_since(first_update) >= Duration::from_millis(250),
            "events were delivered together at the end: {:?}",
            seen.iter().map(|(t, _)| *t).collect::<Vec<_>>()
        );
    });
}

pub fn task_passthroughs_get_list_subscribe_and_cancel_python_tasks_on_both_bindings<
    T: TestRuntime,
>() {
    use a2at_core::a2a::{ListTasksParams, StreamResponse, TaskState};
    T::block_on(async {
        for binding in BINDINGS {
            let engine = engine::<T>(binding);
            // A finished task: get it, find it by its context, miss an unknown one.
            let done = engine
                .send_task("echo", MessageContent::text("passthrough"))
                .await;
            assert_eq!(done.status, TaskStatus::Success, "{:?}", done.error);
            let id = done.remote_task_id.clone().expect("task id");
            let task = engine.get_task("echo", &id).await.expect("get_task");
            assert_eq!(task.id, id);
            assert_eq!(task.status.state, TaskState::Completed);
            let page = engine
                .list_tasks(
                    "echo",
                    ListTasksParams {
                        context_id: done.context_id.clone(),
                        page_size: Some(10),
                        ..ListTasksParams::default()
                    },
                )
                .await
                .expect("list_tasks");
            assert!(
                page.tasks.iter().any(|t| t.id == id),
                "{binding:?}: {page:?}"
            );
            // Paging: one task per page, chained by nextPageToken.
            engine
                .send_task("echo", MessageContent::text("second"))
                .await;
            let first = engine
                .list_tasks(
                    "echo",
                    ListTasksParams {
                        page_size: Some(1),
                        status: Some(TaskState::Completed),
                        ..ListTasksParams::default()
                    },
                )
                .await
                .expect("first page");
            assert_eq!(first.tasks.len(), 1, "{binding:?}");
            let token = first.next_page_token.clone().expect("more pages");
            let second = engine
                .list_tasks(
                    "echo",
                    ListTasksParams {
                        page_size: Some(1),
                        status: Some(TaskState::Completed),
                        page_token: Some(token),
                        ..ListTasksParams::default()
                    },
                )
                .await
                .expect("second page");
            assert_eq!(second.tasks.len(), 1, "{binding:?}");
            assert_ne!(second.tasks[0].id, first.tasks[0].id, "{binding:?}");
            let missing = engine.get_task("echo", "no-such-task").await.unwrap_err();
            assert_eq!(missing.code, "a2a.task_not_found", "{binding:?}: {missing}");

            // A working task: follow it, cancel it, see the cancellation on the stream.
            let mut handle = engine
                .run(one_step("slow", "wait"), Arc::new(host()))
                .spawn();
            let mut working = None;
            while let Some(event) = handle.next_event().await {
                if event.type_str() == "agent_status_update"
                    && event.data["state"] == "TASK_STATE_WORKING"
                {
                    working = event.data["taskId"].as_str().map(str::to_owned);
                    break;
                }
            }
            let id = working.expect("a working task");
            let mut sub = engine.subscribe_to_task("slow", &id).expect("subscribe");
            let first = sub.next_event().await.expect("an event").expect("no error");
            assert_eq!(first.task_id(), Some(id.as_str()), "{binding:?}");
            let cancelled = engine.cancel_task("slow", &id).await.expect("cancel_task");
            assert_eq!(cancelled.status.state, TaskState::Canceled, "{binding:?}");
            let mut saw_cancel = false;
            while let Some(item) = sub.next_event().await {
                match item.expect("no error") {
                    StreamResponse::StatusUpdate(u) if u.status.state == TaskState::Canceled => {
                        saw_cancel = true;
                    }
                    StreamResponse::Task(t) if t.status.state == TaskState::Canceled => {
                        saw_cancel = true;
                    }
                    _ => {}
                }
            }
            assert!(saw_cancel, "{binding:?}: the stream told the cancellation");
            let again = engine.cancel_task("slow", &id).await.unwrap_err();
            assert_eq!(
                again.code, "a2a.task_not_cancelable",
                "{binding:?}: {again}"
            );
            handle.cancel();
            let _ = handle.result().await;
        }
    });
}

pub fn a_plain_input_required_is_answered_by_the_host_on_both_bindings<T: TestRuntime>() {
    use a2at_core::host::InputDecision;
    T::block_on(async {
        for binding in BINDINGS {
            let host = ControlPointBuilder::new()
                .on_task(|r| async move { Ok(MessageContent::text(&r.instruction)) })
                .on_input_required(|r| async move {
                    let question = r
                        .received
                        .message
                        .as_ref()
                        .and_then(|m| m.parts.first())
                        .and_then(|p| p.as_text())
                        .unwrap_or_default()
                        .to_owned();
                    assert_eq!(question, "Which site?");
                    Ok(InputDecision::Reply {
                        content: MessageContent::text("Site1"),
                    })
                })
                .build();
            let host = Arc::new(host);
            // Default: declined, as before.
            let r = engine::<T>(binding)
                .execute(
                    one_step("asker", "where?"),
                    RunStart::default(),
                    host.clone(),
                )
                .await;
            assert_eq!(
                r.history[0].error_code.as_deref(),
                Some(codes::UNSUPPORTED_TASK_STATE),
                "{binding:?}"
            );
            // Allowed: the follow-up goes to the same task, which completes.
            let engine = Engine::<T>::builder(peers().cards.clone())
                .preferred_binding(binding)
                .task_budget(Duration::from_secs(30))
                .poll_interval(Duration::from_millis(100))
                .max_input_replies(1)
                .build()
                .expect("valid cards");
            let r = engine
                .execute(one_step("asker", "where?"), RunStart::default(), host)
                .await;
            assert!(r.success, "{binding:?}: {:?}", r.error);
            assert_eq!(
                r.history[0].outputs,
                vec![json!("answer: Site1")],
                "{binding:?}"
            );
        }
    });
}
