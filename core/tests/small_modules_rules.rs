//! Rules of the core's small modules, stated against what a host or a driver sees: the text of
//! every event type (JSON and `Display`) and which events a selection keeps, the `.env` parsing
//! rules, the terminal markers and step type names of the workflow model, timestamps, the run
//! settings' checks, the agent directory, the closure-built control point and the event
//! envelope, the JSON form of inputs and requests, the keys of a step's outputs, and the
//! identity checks of one exchange with an agent.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake};
use std::time::Duration;

use a2at_core::a2a::{AgentCard, Binding, HttpMethod, ReceivedMessage};
use a2at_core::agents::{AgentDirectory, DirectoryError};
use a2at_core::driver_support::{
    ControlPointBuilder, EventEnvelope, answer_guarded, answer_guarded_shared,
};
use a2at_core::envfile::parse_env_file;
use a2at_core::host::{
    HostError, HostReply, HostRequest, InputDecision, InputRequest, MessageContent,
    NegotiationReply, NegotiationRequest, RouteDecision, RouteRequest, TaskExecutionResult,
    TaskRequest, TaskResult, TaskStatus, WorkflowInput, codes,
};
use a2at_core::io::{Correlation, OpPurpose};
use a2at_core::result::{RunError, StepReport, StepStatus};
use a2at_core::retry::RetryPolicyError;
use a2at_core::run::{ConfigError, RunConfig};
use a2at_core::tracectx::TraceContextError;
use a2at_core::workflow::{
    BusinessInput, ContextFrom, Edge, Step, StepType, Subtask, TERMINAL_MARKERS, Workflow,
    is_terminal_marker,
};
use a2at_core::{
    Event, EventData, EventSelection, EventType, ExecutionResult, HttpRequest, Input, OpId,
    Timestamp,
};
use proptest::prelude::*;
use serde_json::{Value, json};

mod common;
use common::host_failure;

// ----- event types and selections -----

/// Every event type with its stable text.
const EVENT_TYPES: [(EventType, &str); 24] = [
    (EventType::Start, "start"),
    (EventType::Complete, "complete"),
    (EventType::Close, "close"),
    (EventType::StepStart, "step_start"),
    (EventType::StepComplete, "step_complete"),
    (EventType::TaskRequest, "task_request"),
    (EventType::TaskResponse, "task_response"),
    (EventType::TaskStatusChanged, "task_status_changed"),
    (EventType::RouteDecision, "route_decision"),
    (EventType::WorkflowComplete, "workflow_complete"),
    (EventType::AgentRequest, "agent_request"),
    (EventType::AgentResponse, "agent_response"),
    (EventType::AgentStatusUpdate, "agent_status_update"),
    (EventType::AgentArtifactUpdate, "agent_artifact_update"),
    (EventType::AgentMessageEvent, "agent_message_event"),
    (EventType::NegotiationRequest, "negotiation_request"),
    (EventType::NegotiationResolved, "negotiation_resolved"),
    (EventType::NegotiationFailed, "negotiation_failed"),
    (EventType::AgentRetry, "agent_retry"),
    (EventType::Error, "error"),
    (EventType::AuthorizationRequest, "authorization_request"),
    (EventType::AuthorizationResolved, "authorization_resolved"),
    (EventType::Notification, "notification"),
    (EventType::HostEvent, "host_event"),
];

/// An event type has one text everywhere: its stable string, its `Display`, its JSON and the
/// JSON it is read back from. Hosts route events by this text, so each one is fixed.
#[test]
fn every_event_type_has_one_stable_text_in_json_and_display() {
    for (kind, text) in EVENT_TYPES {
        assert_eq!(kind.as_str(), text);
        assert_eq!(kind.to_string(), text);
        assert_eq!(format!("[{kind}]"), format!("[{text}]"));
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(text));
        let back: EventType = serde_json::from_value(json!(text)).unwrap();
        assert_eq!(back, kind);
    }
}

/// An event is written as `{"type", "data"}` with the type's stable text, and read back equal.
#[test]
fn an_event_is_written_as_its_type_text_and_its_payload() {
    for (kind, text) in EVENT_TYPES {
        let event = Event::new(kind, json!({"n": 1}));
        let written = serde_json::to_string(&event).unwrap();
        assert_eq!(written, format!(r#"{{"type":"{text}","data":{{"n":1}}}}"#));
        let back: Event = serde_json::from_str(&written).unwrap();
        assert_eq!(back, event);
        assert_eq!(back.data.value(), &json!({"n": 1}));
    }
}

/// `All` keeps every type, `None` none, `Only` exactly the listed ones.
#[test]
fn a_selection_keeps_exactly_the_types_it_names() {
    let only = EventSelection::Only(vec![EventType::Error, EventType::StepStart]);
    for (kind, _) in EVENT_TYPES {
        assert!(EventSelection::All.includes(kind), "{kind}");
        assert!(!EventSelection::None.includes(kind), "{kind}");
        assert_eq!(
            only.includes(kind),
            matches!(kind, EventType::Error | EventType::StepStart),
            "{kind}"
        );
    }
}

/// A trace stores a selection as `None` (all), `[]` (none) or the list of types, and reads
/// each of them back as the same selection.
#[test]
fn a_selection_is_stored_as_nothing_an_empty_list_or_its_types() {
    assert_eq!(EventSelection::All.to_list(), None);
    assert_eq!(EventSelection::None.to_list(), Some(vec![]));
    let two = vec![EventType::Complete, EventType::Close];
    assert_eq!(
        EventSelection::Only(two.clone()).to_list(),
        Some(two.clone())
    );
    assert_eq!(EventSelection::from_list(None), EventSelection::All);
    assert_eq!(
        EventSelection::from_list(Some(vec![])),
        EventSelection::None
    );
    assert_eq!(
        EventSelection::from_list(Some(two.clone())),
        EventSelection::Only(two)
    );
    assert_eq!(
        EventSelection::from_list(Some(vec![EventType::Start])),
        EventSelection::Only(vec![EventType::Start])
    );
}

/// A payload reads, compares, prints and serialises as the JSON it holds, and is read back
/// from that JSON: two payloads are equal exactly when their JSON is.
#[test]
fn a_payload_is_its_json_in_every_form() {
    let value = json!({"step": "a", "results": [1, 2]});
    let data = EventData::from(value.clone());
    assert_eq!(data.value(), &value);
    assert_eq!(&*data, &value);
    assert_eq!(data["step"], "a");
    assert_eq!(data.as_ref(), &value);
    assert!(data == value);
    assert!(data != json!({"step": "b"}));
    let same = EventData::from(value.clone());
    let other = EventData::from(json!({"step": "a"}));
    assert!(data == same);
    assert!(data != other);
    assert_eq!(format!("{data:?}"), format!("{value:?}"));
    assert_eq!(
        serde_json::to_string(&data).unwrap(),
        r#"{"step":"a","results":[1,2]}"#
    );
    let back: EventData = serde_json::from_str(r#"{"step":"a","results":[1,2]}"#).unwrap();
    assert_eq!(back.value(), &value);
    assert_eq!(Value::from(data.clone()), value);
    assert_eq!(data.into_value(), value);
}

// ----- .env files -----

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect()
}

/// A line starting with `#` is a comment even when it holds a `=`, and blank lines are
/// skipped: commenting a setting out must switch it off.
#[test]
fn a_commented_out_setting_is_not_read() {
    assert_eq!(
        parse_env_file("#A=1\n   # B = 2\n\n   \nC=3\n"),
        env(&[("C", "3")])
    );
    assert_eq!(parse_env_file("# only=comment\n"), env(&[]));
}

/// A line without a name (`=value`) is skipped; the next named lines still count.
#[test]
fn a_line_without_a_name_is_skipped() {
    assert_eq!(
        parse_env_file("=v\n  = w\nA=1\nB=2\n"),
        env(&[("A", "1"), ("B", "2")])
    );
}

/// Every distinct name is kept in file order, and when a name repeats the first value wins
/// (a later line would overwrite a variable already set).
#[test]
fn distinct_names_are_kept_in_order_and_the_first_of_a_repeated_name_wins() {
    assert_eq!(
        parse_env_file("A=1\nB=2\nA=3\nC=4\nB=5\n"),
        env(&[("A", "1"), ("B", "2"), ("C", "4")])
    );
}

/// The value is everything after the first `=`, trimmed, with one pair of surrounding double
/// quotes removed; single quotes and a lone quote stay; `export` is not special (the name is
/// the text before the `=`).
#[test]
fn values_split_on_the_first_equals_and_lose_one_pair_of_double_quotes() {
    assert_eq!(
        parse_env_file(
            "K = a=b=c \nQ=\"\"x\"\"\nS='s'\nH=\"half\nE=\nexport X=1\nNOEQUALS\n\t T\t=\t\"  v \"\t\n"
        ),
        env(&[
            ("K", "a=b=c"),
            ("Q", "\"x\""),
            ("S", "'s'"),
            ("H", "\"half"),
            ("E", ""),
            ("export X", "1"),
            ("T", "  v "),
        ])
    );
}

proptest! {
    /// Any `NAME=value` line reads back as that name and value, whatever blanks surround them
    /// and whether the value is double-quoted.
    #[test]
    fn a_name_and_value_read_back_whatever_the_blanks_and_quotes(
        name in "[A-Za-z_][A-Za-z0-9_]{0,12}",
        value in "[A-Za-z0-9_=:/.#-]{0,16}",
        before in "[ \t]{0,3}",
        after in "[ \t]{0,3}",
        quoted in any::<bool>(),
    ) {
        let written = if quoted { format!("\"{value}\"") } else { value.clone() };
        let text = format!("{before}{name}{after}={before}{written}{after}\n");
        prop_assert_eq!(parse_env_file(&text), vec![(name, value)]);
    }
}

// ----- workflow model -----

/// `end`, `retry` and `endNode` end a branch, matched exactly: any other spelling is a step
/// name, so a step called `End` is an ordinary step.
#[test]
fn exactly_the_three_terminal_markers_end_a_branch() {
    assert_eq!(TERMINAL_MARKERS, ["end", "retry", "endNode"]);
    for marker in ["end", "retry", "endNode"] {
        assert!(is_terminal_marker(marker), "{marker}");
    }
    for step in ["End", "END", "endnode", "Retry", "end ", "", "ends", "a"] {
        assert!(!is_terminal_marker(step), "{step:?}");
    }
}

/// A step type is written as its enum name and read from either form in any case; anything
/// else is no step type.
#[test]
fn each_step_type_has_one_written_name_and_two_readable_ones() {
    for (kind, name, value_form) in [
        (StepType::AllSuccess, "ALL_SUCCESS", "AllSuccess"),
        (StepType::AnySuccess, "ANY_SUCCESS", "AnySuccess"),
        (StepType::SelfLoop, "SELF_LOOP", "SelfLoop"),
    ] {
        assert_eq!(kind.as_str(), name);
        assert_eq!(kind.to_string(), name);
        assert_eq!(format!("<{kind}>"), format!("<{name}>"));
        for written in [
            name.to_owned(),
            name.to_ascii_lowercase(),
            value_form.to_owned(),
            value_form.to_ascii_uppercase(),
        ] {
            assert_eq!(StepType::from_name(&written), Some(kind), "{written}");
        }
    }
    for other in ["", "ALL", "ALL-SUCCESS", "any success", "SELF_LOOPS"] {
        assert_eq!(StepType::from_name(other), None, "{other:?}");
    }
}

/// An edge needs a routing decision exactly when its condition has a non-blank character.
#[test]
fn an_edge_is_conditional_exactly_when_its_condition_is_not_blank() {
    let edge = |c: Option<&str>| Edge {
        step: "b".into(),
        condition: c.map(str::to_owned),
    };
    assert!(edge(Some("x")).is_conditional());
    assert!(edge(Some(" \tok\n")).is_conditional());
    assert!(!edge(Some(" \t\n")).is_conditional());
    assert!(!edge(Some("")).is_conditional());
    assert!(!edge(None).is_conditional());
}

/// The canonical JSON leaves `context_from` out only when the document had none; an explicit
/// list, even an empty one, is kept (it means "no upstream results").
#[test]
fn context_from_is_written_only_when_the_document_gave_one() {
    assert!(ContextFrom::Absent.is_absent());
    assert!(!ContextFrom::List(vec![]).is_absent());
    let workflow = |context_from: ContextFrom| Workflow {
        id: "w".into(),
        steps: vec![Step {
            name: "a".into(),
            context_from,
            subtasks: vec![Subtask {
                agent: "ag".into(),
                description: "d".into(),
                ..Subtask::default()
            }],
            ..Step::default()
        }],
        ..Workflow::default()
    };
    let step = |wf: &Workflow| wf.to_json()["steps"][0].clone();
    assert_eq!(
        step(&workflow(ContextFrom::Absent)),
        json!({"name": "a", "layer": 0, "step_type": "ALL_SUCCESS",
               "subtasks": [{"agent": "ag", "skill": "", "description": "d"}], "next": []})
    );
    assert_eq!(
        step(&workflow(ContextFrom::List(vec![])))["context_from"],
        json!([])
    );
    assert_eq!(
        step(&workflow(ContextFrom::List(vec!["x".into()])))["context_from"],
        json!(["x"])
    );
}

/// A subtask without an explicit input hands the host its description as text.
#[test]
fn a_subtask_without_input_hands_over_its_description() {
    let mut subtask = Subtask {
        description: "summarise".into(),
        ..Subtask::default()
    };
    assert_eq!(
        subtask.effective_input(),
        BusinessInput::Text("summarise".into())
    );
    subtask.input = Some(BusinessInput::Text("other".into()));
    assert_eq!(
        subtask.effective_input(),
        BusinessInput::Text("other".into())
    );
}

// ----- timestamps -----

/// A timestamp counts microseconds: built from micros or millis (saturating), read back as
/// micros, and printed with its unit.
#[test]
fn a_timestamp_counts_microseconds_and_prints_its_unit() {
    assert_eq!(Timestamp::from_micros(1_234).as_micros(), 1_234);
    assert_eq!(Timestamp::from_micros(7), Timestamp(7));
    assert_eq!(Timestamp::from_millis(3), Timestamp(3_000));
    assert_eq!(Timestamp::from_millis(u64::MAX), Timestamp(u64::MAX));
    assert_eq!(Timestamp::ZERO.as_micros(), 0);
    assert_eq!(
        Timestamp(10).saturating_add(Duration::from_micros(5)),
        Timestamp(15)
    );
    assert_eq!(
        Timestamp(15).saturating_duration_since(Timestamp(10)),
        Duration::from_micros(5)
    );
    assert_eq!(Timestamp(1_500).to_string(), "1500us");
    assert_eq!(format!("at {}", Timestamp::ZERO), "at 0us");
}

// ----- run settings -----

/// Each refusal names the setting at fault, so an operator knows what to fix.
#[test]
fn each_configuration_error_names_its_setting() {
    for (error, field) in [
        (ConfigError::ZeroDuration("task_budget"), "task_budget"),
        (
            ConfigError::ZeroLimit("max_input_replies"),
            "max_input_replies",
        ),
        (ConfigError::Negative("history_length"), "history_length"),
        (ConfigError::Retry(RetryPolicyError::ZeroBaseDelay), "retry"),
        (
            ConfigError::Reattach(RetryPolicyError::ZeroBaseDelay),
            "reattach",
        ),
        (
            ConfigError::TraceContext(TraceContextError::TraceState),
            "trace_state",
        ),
        (
            ConfigError::TraceContext(TraceContextError::Malformed),
            "trace_parent",
        ),
        (
            ConfigError::TraceContext(TraceContextError::ZeroTraceId),
            "trace_parent",
        ),
    ] {
        assert_eq!(error.field(), field, "{error}");
    }
}

/// A `historyLength` of zero or more is sent as it is; only a negative one is refused.
#[test]
fn only_a_negative_history_length_is_refused() {
    for (history, ok) in [
        (None, true),
        (Some(-5), false),
        (Some(-1), false),
        (Some(0), true),
        (Some(1), true),
        (Some(40), true),
    ] {
        let config = RunConfig {
            history_length: history,
            ..RunConfig::default()
        };
        let want = if ok {
            Ok(())
        } else {
            Err(ConfigError::Negative("history_length"))
        };
        assert_eq!(config.validate(), want, "{history:?}");
    }
}

/// A limit of one is usable, zero is not; follow-up replies are off (`None`) or at least one.
#[test]
fn a_limit_of_one_is_usable_and_zero_is_named() {
    let mut config = RunConfig {
        max_negotiation_exchanges: 1,
        max_input_replies: Some(1),
        ..RunConfig::default()
    };
    config.decode_limits.max_event_bytes = 1;
    config.decode_limits.max_body_bytes = 1;
    assert_eq!(config.validate(), Ok(()));
    config.max_input_replies = Some(0);
    assert_eq!(
        config.validate(),
        Err(ConfigError::ZeroLimit("max_input_replies"))
    );
    config.max_input_replies = None;
    assert_eq!(config.validate(), Ok(()));
    config.decode_limits.max_body_bytes = 0;
    assert_eq!(
        config.validate().map_err(|e| e.field()),
        Err("decode_limits.max_body_bytes")
    );
}

/// A `tracestate` is checked with the rest: an empty one is refused as `trace_state`.
#[test]
fn an_unusable_tracestate_is_refused_by_name() {
    let mut config = RunConfig {
        trace_state: Some(String::new()),
        ..RunConfig::default()
    };
    let err = config.validate().unwrap_err();
    assert_eq!(
        err,
        ConfigError::TraceContext(TraceContextError::TraceState)
    );
    assert_eq!(err.field(), "trace_state");
    config.trace_state = Some("vendor=v1".into());
    assert_eq!(config.validate(), Ok(()));
}

// ----- agent directory -----

fn card(name: &str, streaming: bool) -> AgentCard {
    AgentCard::from_json_value(&json!({
        "name": name,
        "supportedInterfaces": [{"url": format!("http://{name}.test/a2a"),
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming},
    }))
    .expect("a valid card")
}

/// The directory counts, lists, finds, replaces and removes agents by name.
#[test]
fn a_directory_counts_finds_replaces_and_removes_agents_by_name() {
    let mut dir = AgentDirectory::default();
    assert!(dir.is_empty());
    assert_eq!(dir.len(), 0);
    assert_eq!(dir.names().count(), 0);
    assert_eq!(dir.get("a"), None);

    let a = AgentDirectory::entry(card("a", false), None).unwrap();
    assert_eq!(a.card.name, "a");
    assert_eq!(a.endpoint.url, "http://a.test/a2a");
    assert_eq!(a.endpoint.binding, Binding::JsonRpc);
    assert_eq!(dir.insert(a.clone()), None);
    assert!(!dir.is_empty());
    assert_eq!(dir.len(), 1);
    assert_eq!(dir.get("a"), Some(&a));
    assert_eq!(dir.get("b"), None);

    dir.insert(AgentDirectory::entry(card("c", false), None).unwrap());
    dir.insert(AgentDirectory::entry(card("b", false), None).unwrap());
    assert_eq!(dir.len(), 3);
    assert_eq!(dir.names().collect::<Vec<_>>(), ["a", "b", "c"]);

    let a2 = AgentDirectory::entry(card("a", true), None).unwrap();
    assert_eq!(dir.insert(a2.clone()), Some(a.clone()));
    assert_eq!(dir.get("a"), Some(&a2));
    assert_eq!(dir.remove("a"), Some(a2));
    assert_eq!(dir.remove("a"), None);
    assert_eq!(dir.names().collect::<Vec<_>>(), ["b", "c"]);
    assert_eq!(dir.len(), 2);
}

/// A card without a usable interface is refused with the agent's name.
#[test]
fn an_agent_without_a_usable_interface_is_refused_by_name() {
    let err = AgentDirectory::entry(card("a", false), Some(Binding::Grpc)).unwrap_err();
    assert!(
        matches!(&err, DirectoryError::Endpoint { agent, .. } if agent == "a"),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("agent a: "), "{err}");
}

// ----- control point builder and event envelope -----

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Polls `future` to its end, counting the polls that were pending.
fn block_on<F: Future>(future: F) -> (F::Output, usize) {
    let waker = Arc::new(Noop).into();
    let mut cx = Context::from_waker(&waker);
    let mut future = Box::pin(future);
    let mut pending = 0;
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return (v, pending),
            Poll::Pending => pending += 1,
        }
    }
}

/// A future that is pending `n` times before it gives `value`.
struct PendingThen<T> {
    n: usize,
    value: Option<T>,
}

impl<T: Unpin> Future for PendingThen<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if self.n == 0 {
            Poll::Ready(self.value.take().expect("polled after its end"))
        } else {
            self.n -= 1;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

fn task_request() -> TaskRequest {
    TaskRequest {
        execution_id: "e".into(),
        task_id: "t".into(),
        step_name: "s".into(),
        subtask_index: 0,
        agent_name: "a".into(),
        skill: "".into(),
        instruction: "do it".into(),
        input: BusinessInput::Text("do it".into()),
        language: "en".into(),
        workflow_input: WorkflowInput::default(),
    }
}

fn route_request() -> RouteRequest {
    RouteRequest {
        execution_id: "e".into(),
        step_name: "a".into(),
        next_step: "b".into(),
        condition: "c".into(),
        workflow_input: WorkflowInput::default(),
        current_results: vec![],
    }
}

/// One request of each callback.
fn every_request() -> [HostRequest; 5] {
    let task = Arc::new(task_request());
    [
        HostRequest::Task(Arc::clone(&task)),
        HostRequest::SelfTask(Box::new(task_request())),
        HostRequest::Route(Box::new(route_request())),
        HostRequest::Negotiation(Box::new(NegotiationRequest {
            task: Arc::clone(&task),
            original_submission: MessageContent::text("do it"),
            received: ReceivedMessage::default(),
            previous_exchanges: vec![],
            remaining_wait: Duration::from_secs(1),
        })),
        HostRequest::InputRequired(Box::new(InputRequest {
            task,
            remote_task_id: "r".into(),
            received: ReceivedMessage::default(),
            previous_replies: 0,
            remaining_wait: Duration::from_secs(1),
        })),
    ]
}

/// A control point with every callback registered; `on_task` answers after one pending poll.
fn full_control_point() -> a2at_core::driver_support::BuiltControlPoint {
    ControlPointBuilder::new()
        .on_task(|req| PendingThen {
            n: 1,
            value: Some(Ok(MessageContent::text(format!(
                "task {}",
                req.instruction
            )))),
        })
        .on_self_task(|req| async move {
            Ok(TaskResult::success(vec![json!(format!(
                "self {}",
                req.step_name
            ))]))
        })
        .on_route(|req| async move { Ok(RouteDecision::allow(Some(req.next_step))) })
        .on_negotiation(|_| async {
            Ok(NegotiationReply::Stop {
                code: "no".into(),
                reason: "enough".into(),
            })
        })
        .on_input_required(|req| async move {
            Ok(InputDecision::Reply {
                content: MessageContent::text(format!("more for {}", req.remote_task_id)),
            })
        })
        .build()
}

/// Each registered callback answers its own requests, and the answer is the one it built; a
/// pending callback makes the answer pending too, without being dropped.
#[test]
fn each_registered_callback_answers_its_own_requests() {
    let cp = full_control_point();
    let answers: Vec<(HostReply, usize)> = every_request()
        .into_iter()
        .map(|request| block_on(answer_guarded(&cp, request)))
        .collect();
    assert_eq!(
        answers,
        vec![
            (HostReply::Task(Ok(MessageContent::text("task do it"))), 1),
            (
                HostReply::SelfTask(Ok(TaskResult::success(vec![json!("self s")]))),
                0
            ),
            (
                HostReply::Route(Ok(RouteDecision::allow(Some("b".into())))),
                0
            ),
            (
                HostReply::Negotiation(Ok(NegotiationReply::Stop {
                    code: "no".into(),
                    reason: "enough".into(),
                })),
                0
            ),
            (
                HostReply::InputRequired(Ok(InputDecision::Reply {
                    content: MessageContent::text("more for r"),
                })),
                0
            ),
        ]
    );
}

/// A callback the host did not register fails its request with `host.handler_missing`, in
/// the reply kind of that request; an unanswered `INPUT_REQUIRED` is declined instead.
#[test]
fn an_unregistered_callback_fails_with_handler_missing() {
    let cp = ControlPointBuilder::new().build();
    for request in every_request() {
        let name = request.callback_name();
        if name == "on_input_required" {
            let (reply, _) = block_on(answer_guarded(&cp, request));
            assert_eq!(reply, HostReply::InputRequired(Ok(InputDecision::Decline)));
            continue;
        }
        let (reply, _) = block_on(answer_guarded(&cp, request));
        assert_eq!(reply.callback_name(), name);
        let error = host_failure(reply);
        assert_eq!(error.code, codes::HOST_HANDLER_MISSING, "{name}");
    }
}

/// A callback that panics, while its future is made or while it runs, fails its request with
/// `host.callback_panicked` naming the callback, and never with the panic's text.
#[test]
fn a_panicking_callback_fails_its_request_without_the_panic_text() {
    let when_made = ControlPointBuilder::new()
        .on_route(
            |_| -> std::future::Ready<Result<RouteDecision, HostError>> { panic!("secret made") },
        )
        .build();
    let when_run = ControlPointBuilder::new()
        .on_route(|_| async { panic!("secret run") })
        .build();
    for cp in [when_made, when_run] {
        let (reply, _) = block_on(answer_guarded(
            &cp,
            HostRequest::Route(Box::new(route_request())),
        ));
        assert_eq!(
            reply,
            HostReply::Route(Err(HostError::panicked("on_route"))),
            "{cp:?}"
        );
        let HostReply::Route(Err(e)) = reply else {
            unreachable!()
        };
        assert_eq!(e.code, codes::HOST_CALLBACK_PANICKED);
        assert!(!e.message.contains("secret"));
    }
}

/// A shared answer holds its own share of the control point: one that is not ready where it
/// was first polled moves elsewhere and ends there, after the caller's share is gone, with the
/// answer its own callback built.
#[test]
fn a_shared_answer_moves_when_not_ready_and_ends_with_its_callbacks_answer() {
    let waker = Arc::new(Noop).into();
    let mut cx = Context::from_waker(&waker);
    let mut moved = 0;
    for request in every_request() {
        let cp = Arc::new(full_control_point());
        let (expected, _) = block_on(answer_guarded(&*cp, request.clone()));
        let mut answer = answer_guarded_shared(Arc::clone(&cp), request);
        let first = Pin::new(&mut answer).poll(&mut cx);
        drop(cp);
        let reply = match first {
            Poll::Ready(reply) => reply,
            Poll::Pending => {
                moved += 1;
                block_on(Box::new(answer)).0
            }
        };
        assert_eq!(reply, expected);
    }
    assert_eq!(moved, 1, "the task callback is pending once");
}

/// A shared answer whose callback panics ends with that callback's failure, and says so.
#[test]
fn a_shared_answer_turns_a_panic_into_its_callbacks_failure() {
    let cp = Arc::new(
        ControlPointBuilder::new()
            .on_task(|_| async { panic!("secret") })
            .build(),
    );
    let mut answer = answer_guarded_shared(cp, HostRequest::Task(Arc::new(task_request())));
    assert!(format!("{answer:?}").contains("on_task"));
    let (reply, _) = block_on(&mut answer);
    assert_eq!(reply, HostReply::Task(Err(HostError::panicked("on_task"))));
    assert!(
        format!("{answer:?}").contains("answered: true"),
        "{answer:?}"
    );
}

/// A control point's debug form says which callbacks are registered (never their code).
#[test]
fn a_control_point_shows_which_callbacks_are_registered() {
    let some = ControlPointBuilder::new()
        .on_self_task(|_| async { Ok(TaskResult::success(vec![])) })
        .on_negotiation(|_| async {
            Ok(NegotiationReply::Stop {
                code: "c".into(),
                reason: "r".into(),
            })
        });
    let text = "BuiltControlPoint { on_task: false, on_self_task: true, on_route: false, \
                on_negotiation: true, on_input_required: false }";
    assert_eq!(format!("{some:?}"), text);
    assert_eq!(format!("{:?}", some.build()), text);
    assert_eq!(
        format!("{:?}", full_control_point()),
        "BuiltControlPoint { on_task: true, on_self_task: true, on_route: true, \
         on_negotiation: true, on_input_required: true }"
    );
}

/// An envelope carries the event's type, payload and the runtime's clock reading; a derived
/// event keeps that time; the envelope is written as `{type, data, timestamp}`.
#[test]
fn an_envelope_carries_the_event_and_its_time() {
    let envelope = EventEnvelope::at(Event::new(EventType::StepStart, json!({"step": "a"})), 12.5);
    assert_eq!(envelope.kind, EventType::StepStart);
    assert_eq!(envelope.type_str(), "step_start");
    assert_eq!(envelope.data, json!({"step": "a"}));
    assert_eq!(envelope.timestamp, 12.5);
    assert_eq!(
        serde_json::to_string(&envelope).unwrap(),
        r#"{"type":"step_start","data":{"step":"a"},"timestamp":12.5}"#
    );
    let derived = envelope.derived(EventType::HostEvent, json!({"biz": 1}));
    assert_eq!(derived.type_str(), "host_event");
    assert_eq!(derived.data, json!({"biz": 1}));
    assert_eq!(derived.timestamp, 12.5);
    for (kind, text) in EVENT_TYPES {
        assert_eq!(envelope.derived(kind, json!({})).type_str(), text);
    }
}

// ----- inputs and requests as JSON -----

fn http_request(method: HttpMethod, body: Vec<u8>) -> HttpRequest {
    HttpRequest {
        op: OpId(3),
        agent: "a".into(),
        purpose: OpPurpose::Send,
        method,
        url: "http://a.test/a2a".into(),
        headers: vec![(Cow::Borrowed("A2A-Version"), Cow::Owned("1.0".into()))],
        body,
        streaming: false,
        http2: false,
        correlation: Arc::new(Correlation::default()),
    }
}

/// A request's method is written as its HTTP name and only `GET` and `POST` are read back; a
/// UTF-8 body is written as text, any other body as base64, and both read back byte for byte.
#[test]
fn a_request_is_written_with_its_method_name_and_a_readable_body() {
    let post = http_request(HttpMethod::Post, br#"{"a":1}"#.to_vec());
    let written = serde_json::to_value(&post).unwrap();
    assert_eq!(written["method"], "POST");
    assert_eq!(written["body"], r#"{"a":1}"#);
    let back: HttpRequest = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(back, post);

    let get = http_request(HttpMethod::Get, vec![0xff, 0x00, 0x01]);
    let written = serde_json::to_value(&get).unwrap();
    assert_eq!(written["method"], "GET");
    assert_eq!(written["body"], json!({"base64": "/wAB"}));
    let back: HttpRequest = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(back, get);

    let mut bad = written;
    bad["method"] = json!("PUT");
    let err = serde_json::from_value::<HttpRequest>(bad).unwrap_err();
    assert!(err.to_string().contains("unknown HTTP method PUT"), "{err}");
}

/// A response chunk in a recorded trace is its text when it is UTF-8 and base64 otherwise,
/// and replays as the same bytes.
#[test]
fn a_response_chunk_replays_as_the_same_bytes() {
    for (chunk, written) in [
        (b"data: {}\n\n".to_vec(), json!("data: {}\n\n")),
        (vec![0x80, 0x81], json!({"base64": "gIE="})),
        (Vec::new(), json!("")),
    ] {
        let input = Input::ResponseBody {
            op: OpId(1),
            chunk: chunk.clone(),
        };
        let value = serde_json::to_value(&input).unwrap();
        assert_eq!(
            value,
            json!({"type": "response_body", "op": 1, "chunk": written})
        );
        let back: Input = serde_json::from_value(value).unwrap();
        assert_eq!(back, input);
    }
}

/// Each reply names the callback it answers, as the request it answers does.
#[test]
fn each_reply_names_the_callback_it_answers() {
    let replies = [
        HostReply::Task(Ok(MessageContent::text("x"))),
        HostReply::SelfTask(Ok(TaskResult::success(vec![]))),
        HostReply::Route(Ok(RouteDecision::deny(None))),
        HostReply::Negotiation(Ok(NegotiationReply::Stop {
            code: "c".into(),
            reason: "r".into(),
        })),
        HostReply::InputRequired(Ok(InputDecision::Decline)),
    ];
    let names = [
        "on_task",
        "on_self_task",
        "on_route",
        "on_negotiation",
        "on_input_required",
    ];
    for ((reply, request), name) in replies.iter().zip(every_request()).zip(names) {
        assert_eq!(reply.callback_name(), name);
        assert_eq!(request.callback_name(), name);
    }
}

// ----- step outputs -----

fn result_of(
    step: &str,
    index: u32,
    agent: &str,
    description: &str,
    status: TaskStatus,
    output: &str,
) -> TaskExecutionResult {
    TaskExecutionResult {
        step_name: step.into(),
        subtask_index: index,
        agent_name: agent.into(),
        skill: "".into(),
        task_id: format!("{step}-{index}").into(),
        task_description: description.into(),
        status,
        outputs: vec![json!(output)],
        received_messages: vec![],
        error: None,
        error_code: None,
        error_details: None,
        remote_task_id: None,
        context_id: None,
    }
}

fn report(name: &str, status: StepStatus) -> StepReport {
    StepReport {
        name: name.into(),
        status,
    }
}

/// Keys and outputs of one step, owned.
fn keys(result: &ExecutionResult, step: &str) -> Vec<(String, Vec<Value>)> {
    result.step_outputs()[step]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

/// A description used once in its step is the key as it is; used twice or three times, every
/// use gets `"<description> [<agent>#<index>]"`, so no output hides another. Cancelled
/// subtasks are left out but still count as a repeat.
#[test]
fn repeated_descriptions_in_a_step_get_distinct_keys() {
    let ok = TaskStatus::Success;
    let result = ExecutionResult {
        execution_id: "e".into(),
        success: true,
        error: None,
        history: vec![
            result_of("s", 0, "a", "same", ok, "s0"),
            result_of("s", 1, "b", "same", ok, "s1"),
            result_of("s", 2, "c", "alone", ok, "s2"),
            result_of("s", 3, "a", "same", ok, "s3"),
            result_of("t", 0, "a", "twice", ok, "t0"),
            result_of("t", 1, "b", "twice", TaskStatus::Cancelled, "t1"),
            result_of("t", 2, "b", "once", TaskStatus::Failed, "t2"),
        ],
        steps: vec![
            report("s", StepStatus::Succeeded),
            report("t", StepStatus::Failed),
        ],
    };
    assert_eq!(
        keys(&result, "s"),
        vec![
            ("alone".to_owned(), vec![json!("s2")]),
            ("same [a#0]".to_owned(), vec![json!("s0")]),
            ("same [a#3]".to_owned(), vec![json!("s3")]),
            ("same [b#1]".to_owned(), vec![json!("s1")]),
        ]
    );
    assert_eq!(
        keys(&result, "t"),
        vec![
            ("once".to_owned(), vec![json!("t2")]),
            ("twice [a#0]".to_owned(), vec![json!("t0")]),
        ]
    );
}

proptest! {
    /// Whatever descriptions a step's subtasks share, every subtask that was not cancelled has
    /// its own key: its bare description when no other subtask of the step has it, else the
    /// description with its agent and index.
    #[test]
    fn every_kept_subtask_of_a_step_has_its_own_key(
        subtasks in proptest::collection::vec(
            (prop::sample::select(vec!["x", "y", "z"]), any::<bool>()), 1..8),
    ) {
        let history: Vec<TaskExecutionResult> = subtasks
            .iter()
            .enumerate()
            .map(|(i, (description, cancelled))| {
                let status = if *cancelled { TaskStatus::Cancelled } else { TaskStatus::Success };
                result_of("s", i as u32, "ag", description, status, &i.to_string())
            })
            .collect();
        let result = ExecutionResult {
            execution_id: "e".into(),
            success: true,
            error: None,
            history,
            steps: vec![report("s", StepStatus::Succeeded)],
        };
        let mut want: Vec<(String, Vec<Value>)> = subtasks
            .iter()
            .enumerate()
            .filter(|(_, (_, cancelled))| !cancelled)
            .map(|(i, (description, _))| {
                let uses = subtasks.iter().filter(|(d, _)| d == description).count();
                let key = if uses == 1 {
                    (*description).to_owned()
                } else {
                    format!("{description} [ag#{i}]")
                };
                (key, vec![json!(i.to_string())])
            })
            .collect();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        prop_assert_eq!(keys(&result, "s"), want);
    }
}

/// Only steps that ran to their end (succeeded or failed) have outputs; a step that ran
/// without any result has an empty map, and the others are absent.
#[test]
fn only_steps_that_ran_to_their_end_have_outputs() {
    let result = ExecutionResult {
        execution_id: "e".into(),
        success: false,
        error: None,
        history: vec![
            result_of("done", 0, "a", "d", TaskStatus::Success, "x"),
            result_of("stopped", 0, "a", "d", TaskStatus::Cancelled, "y"),
        ],
        steps: vec![
            report("done", StepStatus::Succeeded),
            report("empty", StepStatus::Failed),
            report("stopped", StepStatus::Cancelled),
            report("never", StepStatus::NotRun),
            report("dead", StepStatus::Skipped),
        ],
    };
    let outputs = result.step_outputs();
    assert_eq!(
        outputs.keys().copied().collect::<Vec<_>>(),
        ["done", "empty"]
    );
    assert_eq!(
        keys(&result, "done"),
        vec![("d".to_owned(), vec![json!("x")])]
    );
    assert!(outputs["empty"].is_empty());
}

/// A result is written with `step_outputs` between the history and the steps, and `error`
/// only when there is one; reading it back ignores `step_outputs` and gives the same result.
#[test]
fn a_result_is_written_with_its_step_outputs_and_reads_back() {
    let mut result = ExecutionResult {
        execution_id: "e".into(),
        success: true,
        error: None,
        history: vec![result_of("s", 0, "a", "d", TaskStatus::Success, "x")],
        steps: vec![report("s", StepStatus::Succeeded)],
    };
    let text = serde_json::to_string(&result).unwrap();
    let history = serde_json::to_string(&result.history).unwrap();
    assert_eq!(
        text,
        format!(
            r#"{{"execution_id":"e","success":true,"history":{history},"step_outputs":{{"s":{{"d":["x"]}}}},"steps":[{{"name":"s","status":"succeeded"}}]}}"#
        )
    );
    let back: ExecutionResult = serde_json::from_str(&text).unwrap();
    assert_eq!(back, result);

    result.success = false;
    result.error = Some(RunError {
        code: "workflow.step_failed".into(),
        message: "m".into(),
    });
    let value = serde_json::to_value(&result).unwrap();
    let names: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut sorted = vec![
        "error",
        "execution_id",
        "history",
        "step_outputs",
        "steps",
        "success",
    ];
    sorted.sort_unstable();
    let mut got = names.clone();
    got.sort_unstable();
    assert_eq!(got, sorted);
    assert_eq!(
        value["error"],
        json!({"code": "workflow.step_failed", "message": "m"})
    );
    let back: ExecutionResult = serde_json::from_value(value).unwrap();
    assert_eq!(back, result);
}

// ----- one exchange with an agent -----

/// What the scripted agent does with one request: answer with a status and a JSON body, or
/// fail the transport.
type Agent<'a> = dyn FnMut(&HttpRequest) -> Option<(u16, Value)> + 'a;

/// Runs a one-step workflow against the REST agent `alpha`, whose answers `agent` scripts;
/// returns every request sent and the result.
fn remote_run(agent: &mut Agent<'_>) -> (Vec<HttpRequest>, Arc<ExecutionResult>) {
    let card = AgentCard::from_json_value(&json!({
        "name": "alpha",
        "supportedInterfaces": [{"url": "http://alpha.test/rest",
            "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": false},
    }))
    .expect("a valid card");
    let workflow = a2at_core::workflow::parse_and_validate(
        r#"{"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "d"}]}]}"#,
    )
    .expect("a valid workflow");
    let config = RunConfig {
        retry: a2at_core::RetryPolicy::FAIL_FAST,
        ..RunConfig::default()
    };
    let mut run = a2at_core::Run::new(
        Arc::new(workflow),
        Arc::new(AgentDirectory::new(vec![card], None).expect("a valid directory")),
        config,
        a2at_core::RunStart::default(),
    );
    let mut now = Timestamp::ZERO;
    let mut sent = Vec::new();
    let feed = |run: &mut a2at_core::Run, input: Input, now: Timestamp| match run.handle(input, now)
    {
        Ok(()) | Err(a2at_core::ApiMisuse::Finished) => {}
        Err(e) => panic!("{e}"),
    };
    loop {
        match run.poll_output() {
            Some(a2at_core::Output::CallHost { call, request }) => {
                assert!(matches!(request, HostRequest::Task(_)), "{request:?}");
                let reply = HostReply::Task(Ok(MessageContent::text("hello")));
                feed(&mut run, Input::HostReply { call, reply }, now);
            }
            Some(a2at_core::Output::Transmit(request)) => {
                let op = request.op;
                match agent(&request) {
                    Some((status, body)) => {
                        let headers = vec![("content-type".into(), "application/a2a+json".into())];
                        feed(
                            &mut run,
                            Input::ResponseHead {
                                op,
                                status,
                                headers,
                            },
                            now,
                        );
                        let bytes = body.to_string().into_bytes();
                        let (a, b) = bytes.split_at(bytes.len() / 2);
                        for chunk in [a, b] {
                            let chunk = chunk.to_vec();
                            feed(&mut run, Input::ResponseBody { op, chunk }, now);
                        }
                        feed(&mut run, Input::ResponseEnd { op }, now);
                    }
                    None => {
                        let error = a2at_core::io::TransportError {
                            kind: a2at_core::io::TransportErrorKind::Connect,
                            message: "refused".into(),
                        };
                        feed(&mut run, Input::TransportFailed { op, error }, now);
                    }
                }
                sent.push(request);
            }
            Some(a2at_core::Output::Finished(result)) => return (sent, result),
            Some(_) => {}
            None => {
                let at = run.poll_timeout().expect("a waiting run has a deadline");
                now = now.max(at);
                run.handle_timeout(now).expect("a running run");
            }
        }
    }
}

/// A task as the agent writes it.
fn task(id: &str, context_id: &str, state: &str) -> Value {
    json!({"id": id, "contextId": context_id, "status": {"state": state},
           "artifacts": [{"artifactId": "a", "parts": [{"text": format!("{state} of {id}")}]}]})
}

/// The code and message of the only subtask's failure, or `None` when it succeeded.
fn outcome(result: &ExecutionResult) -> Option<(String, String)> {
    let entry = &result.history[0];
    match entry.status {
        TaskStatus::Success => None,
        _ => Some((
            entry.error_code.clone().unwrap_or_default(),
            entry.error.clone().unwrap_or_default(),
        )),
    }
}

/// An answer in the exchange's own context, or with an empty context id (no context), is
/// accepted; one naming another context is an identity change.
#[test]
fn an_answer_must_be_in_the_exchanges_own_context_or_none() {
    let ours = |req: &HttpRequest| req.correlation.context_id.clone();
    let (_, result) = remote_run(&mut |req| {
        Some((
            200,
            json!({"task": task("t1", &ours(req), "TASK_STATE_COMPLETED")}),
        ))
    });
    assert_eq!(outcome(&result), None, "{:?}", result.history);
    assert_eq!(
        result.history[0].outputs,
        vec![json!("TASK_STATE_COMPLETED of t1")]
    );
    assert_eq!(result.history[0].remote_task_id.as_deref(), Some("t1"));

    let (_, result) =
        remote_run(&mut |_| Some((200, json!({"task": task("t1", "", "TASK_STATE_COMPLETED")}))));
    assert_eq!(outcome(&result), None, "{:?}", result.history);

    let mut context = String::new();
    let (_, result) = remote_run(&mut |req| {
        context = ours(req);
        Some((
            200,
            json!({"task": task("t1", "elsewhere", "TASK_STATE_COMPLETED")}),
        ))
    });
    let (code, message) = outcome(&result).expect("a failure");
    assert_eq!(code, codes::REMOTE_IDENTITY_CHANGED);
    assert!(
        message.ends_with(&format!(
            "context elsewhere differs from this exchange's context {context}"
        )),
        "{message}"
    );
}

/// A blank task id is refused: later polls, cancels and replies would address no task.
#[test]
fn a_blank_remote_task_id_is_refused() {
    let (_, result) = remote_run(&mut |req| {
        let ctx = req.correlation.context_id.clone();
        Some((
            200,
            json!({"task": task(" ", &ctx, "TASK_STATE_COMPLETED")}),
        ))
    });
    let (code, message) = outcome(&result).expect("a failure");
    assert_eq!(code, codes::REMOTE_IDENTITY_CHANGED);
    assert!(message.ends_with("remote task id is blank"), "{message}");
}

/// The task id learnt from the first answer must stay the same: a poll answering the same
/// task completes the subtask, a poll answering another task is an identity change.
#[test]
fn the_remote_task_id_learnt_first_must_never_change() {
    for (polled, want) in [
        ("t1", None),
        ("t2", Some("remote task id changed from t1 to t2")),
    ] {
        let mut sent = 0;
        let (requests, result) = remote_run(&mut |req| {
            let ctx = req.correlation.context_id.clone();
            sent += 1;
            match (sent, req.purpose) {
                (1, OpPurpose::Send) => {
                    Some((200, json!({"task": task("t1", &ctx, "TASK_STATE_WORKING")})))
                }
                (2, OpPurpose::Poll) => Some((200, task(polled, &ctx, "TASK_STATE_COMPLETED"))),
                _ => None,
            }
        });
        assert_eq!(
            requests[1].url,
            "http://alpha.test/rest/tasks/t1?historyLength=0"
        );
        match want {
            None => {
                assert_eq!(outcome(&result), None, "{:?}", result.history);
                assert_eq!(
                    result.history[0].outputs,
                    vec![json!("TASK_STATE_COMPLETED of t1")]
                );
            }
            Some(detail) => {
                let (code, message) = outcome(&result).expect("a failure");
                assert_eq!(code, codes::REMOTE_IDENTITY_CHANGED);
                assert!(message.ends_with(detail), "{message}");
            }
        }
    }
}

/// The HTTP status decides before the body: an answer with an error status fails the subtask
/// with that status even when its body reads as a completed task, whose outputs are not taken.
#[test]
fn an_error_status_fails_the_subtask_whatever_its_body_says() {
    for status in [404, 500] {
        let (_, result) = remote_run(&mut |req| {
            let ctx = req.correlation.context_id.clone();
            Some((
                status,
                json!({"task": task("t1", &ctx, "TASK_STATE_COMPLETED")}),
            ))
        });
        let (code, _) = outcome(&result).expect("a failure");
        assert_eq!(code, format!("a2a.http.{status}"));
        assert!(result.history[0].outputs.is_empty(), "{:?}", result.history);
    }
}
