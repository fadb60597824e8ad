//! Rules of the task-management machine that the walk-through in tasks.rs leaves open: the
//! edges of its argument checks, the budget it sends over gRPC, the clock, inputs that are not
//! its own, and how a subscription that carried events ends.

use std::time::Duration;

mod common;

use a2at_core::a2a::ListTasksParams;
use a2at_core::a2a::grpc::call::grpc_timeout;
use a2at_core::agents::AgentDirectory;
use a2at_core::io::{ApiMisuse, Input, TransportError, TransportErrorKind};
use a2at_core::tasks::{
    MAX_PAGE_SIZE, TaskAnswer, TaskCommand, TaskError, TaskOperation, TaskOperationConfig,
    TaskOutput, codes as task_codes,
};
use a2at_core::{HttpRequest, OpId, Timestamp};
use proptest::prelude::*;

const BUDGET: Duration = Duration::from_secs(5);

fn directory() -> AgentDirectory {
    common::directory_of(&[
        ("rpc", "http://a/rpc", "JSONRPC"),
        ("rest", "http://a/rest", "HTTP+JSON"),
        ("grpc", "a:50051", "GRPC"),
    ])
}

fn new(agent: &str, command: TaskCommand) -> Result<TaskOperation, TaskError> {
    let config = TaskOperationConfig {
        budget: BUDGET,
        ..TaskOperationConfig::default()
    };
    TaskOperation::new(&directory(), agent, command, config)
}

fn start(agent: &str, command: TaskCommand) -> (TaskOperation, HttpRequest) {
    let mut op = new(agent, command).expect("valid");
    match op.poll_output() {
        Some(TaskOutput::Transmit(r)) => (op, r),
        other => panic!("expected a transmit, got {other:?}"),
    }
}

fn get(id: &str) -> TaskCommand {
    TaskCommand::Get {
        task_id: id.into(),
        history_length: None,
    }
}

fn list(page_size: Option<u32>, history_length: Option<u32>) -> TaskCommand {
    TaskCommand::List(ListTasksParams {
        page_size,
        history_length,
        ..ListTasksParams::default()
    })
}

fn drain(op: &mut TaskOperation) -> Vec<TaskOutput> {
    std::iter::from_fn(|| op.poll_output()).collect()
}

fn head(op: OpId, content_type: &str) -> Input {
    Input::ResponseHead {
        op,
        status: 200,
        headers: vec![("content-type".into(), content_type.to_owned().into())],
    }
}

fn body(op: OpId, text: &str) -> Input {
    Input::ResponseBody {
        op,
        chunk: text.as_bytes().to_vec(),
    }
}

/// Each command is named by its protocol call in every message about it, so a log or an
/// error reads as the operation the caller asked for.
#[test]
fn each_command_is_named_by_its_protocol_call() {
    let subscribe = TaskCommand::Subscribe {
        task_id: "t".into(),
    };
    let cancel = TaskCommand::Cancel {
        task_id: "t".into(),
    };
    for (command, name) in [
        (get("t"), "get_task"),
        (list(None, None), "list_tasks"),
        (cancel, "cancel_task"),
        (subscribe, "subscribe_to_task"),
    ] {
        assert_eq!(command.name(), name);
        let (mut op, _) = start("rpc", command.clone());
        assert_eq!(op.command(), &command);
        op.handle(Input::Cancel, Timestamp::ZERO).unwrap();
        if let Some(TaskOutput::Finished(Err(e))) = drain(&mut op).pop() {
            assert_eq!(e.message, format!("{name} was cancelled"));
        }
    }
    let (mut op, _) = start("rest", get("t"));
    op.handle_timeout(Timestamp::ZERO.saturating_add(BUDGET))
        .unwrap();
    let Some(TaskOutput::Finished(Err(e))) = drain(&mut op).pop() else {
        panic!("a timeout")
    };
    assert_eq!(e.message, "get_task on agent rest got no answer in time");
}

/// A page size is accepted from 1 up to and including the protocol's largest page, and a
/// list's history length is held to the wire's `int32` like a get's.
#[test]
fn page_sizes_up_to_the_largest_page_and_int32_history_lengths_are_accepted() {
    for n in [1, 2, MAX_PAGE_SIZE - 1, MAX_PAGE_SIZE] {
        assert!(new("rest", list(Some(n), None)).is_ok(), "page size {n}");
    }
    for h in [0, i32::MAX as u32] {
        assert!(new("rest", list(None, Some(h))).is_ok(), "history {h}");
    }
    for h in [i32::MAX as u32 + 1, u32::MAX] {
        let e = new("rest", list(None, Some(h))).unwrap_err();
        assert_eq!(e.code, task_codes::INVALID_REQUEST);
        assert_eq!(e.details.unwrap()["field"], "history_length");
    }
}

/// Over gRPC a unary call tells the agent its budget as `grpc-timeout`; a subscription has
/// no deadline and sends none, so the agent never cuts a long stream.
#[test]
fn over_grpc_a_unary_call_sends_its_budget_and_a_subscription_none() {
    let timeout = |req: &HttpRequest| {
        req.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("grpc-timeout"))
            .map(|(_, v)| v.to_string())
    };
    for command in [
        get("t"),
        list(None, None),
        TaskCommand::Cancel {
            task_id: "t".into(),
        },
    ] {
        let (_, req) = start("grpc", command);
        assert_eq!(timeout(&req), Some(grpc_timeout(BUDGET)));
    }
    let (_, req) = start(
        "grpc",
        TaskCommand::Subscribe {
            task_id: "t".into(),
        },
    );
    assert_eq!(timeout(&req), None);
}

/// The clock may stand still but not go back: an earlier time is the caller's mistake and is
/// refused, by `handle` and by `handle_timeout` alike.
#[test]
fn time_may_stand_still_but_not_go_back() {
    let (mut op, _) = start("rpc", get("t"));
    let t = Timestamp::from_micros(10);
    op.handle(head(OpId(9), "application/json"), t).unwrap();
    op.handle(head(OpId(9), "application/json"), t).unwrap();
    let earlier = Timestamp::from_micros(9);
    assert_eq!(
        op.handle(Input::Cancel, earlier),
        Err(ApiMisuse::TimeWentBackwards {
            last: t,
            now: earlier
        })
    );
    assert!(op.handle_timeout(earlier).is_err());
    assert!(!op.is_done());
    assert!(drain(&mut op).is_empty());
}

/// A timeout call before the deadline changes nothing, and one after the end adds nothing:
/// a driver that wakes early or late cannot fail or end a call twice.
#[test]
fn a_timeout_before_the_deadline_or_after_the_end_changes_nothing() {
    let (mut op, _) = start("rpc", get("t"));
    let deadline = op.poll_timeout().unwrap();
    op.handle_timeout(Timestamp::from_micros(deadline.as_micros() - 1))
        .unwrap();
    assert!(!op.is_done());
    assert!(drain(&mut op).is_empty());
    assert_eq!(op.poll_timeout(), Some(deadline));
    op.handle(Input::Cancel, deadline).unwrap();
    assert_eq!(drain(&mut op).len(), 2);
    assert!(op.is_done());
    assert_eq!(op.poll_timeout(), None);
    op.handle_timeout(deadline.saturating_add(BUDGET)).unwrap();
    assert!(drain(&mut op).is_empty());
}

/// Response bytes and transport failures of another exchange are not this call's: they
/// neither feed its decoder nor end it, and its own answer still arrives whole.
#[test]
fn inputs_of_another_exchange_are_ignored() {
    let (mut op, req) = start("rest", get("t1"));
    let other = OpId(req.op.0 + 1);
    let at = Timestamp::from_micros(1);
    let task = r#"{"id":"t1","status":{"state":"TASK_STATE_COMPLETED"}}"#;
    for input in [
        head(other, "text/plain"),
        body(other, "not json"),
        Input::ResponseTrailers {
            op: other,
            trailers: vec![],
        },
        Input::ResponseEnd { op: other },
        Input::TransportFailed {
            op: other,
            error: TransportError {
                kind: TransportErrorKind::Connect,
                message: "refused".into(),
            },
        },
    ] {
        op.handle(input, at).unwrap();
        assert!(!op.is_done());
        assert!(drain(&mut op).is_empty());
    }
    for input in [
        head(req.op, "application/json"),
        body(req.op, task),
        Input::ResponseEnd { op: req.op },
    ] {
        op.handle(input, at).unwrap();
    }
    let Some(TaskOutput::Finished(Ok(TaskAnswer::Task(t)))) = drain(&mut op).pop() else {
        panic!("the task")
    };
    assert_eq!(t.id, "t1");
}

/// A subscription that carried events and is then ended by the agent ends as
/// `StreamEnded`, its events handed on in order before it; only a stream with no event at all
/// is an error.
#[test]
fn a_subscription_that_carried_events_ends_as_stream_ended() {
    let (mut op, req) = start(
        "rest",
        TaskCommand::Subscribe {
            task_id: "t1".into(),
        },
    );
    let at = Timestamp::from_micros(1);
    let event = |state: &str| {
        format!(
            "data: {{\"statusUpdate\": {{\"taskId\": \"t1\", \"status\": {{\"state\": \"{state}\"}}}}}}\n\n"
        )
    };
    op.handle(head(req.op, "text/event-stream"), at).unwrap();
    op.handle(body(req.op, &event("TASK_STATE_WORKING")), at)
        .unwrap();
    op.handle(body(req.op, &event("TASK_STATE_COMPLETED")), at)
        .unwrap();
    op.handle(Input::ResponseEnd { op: req.op }, at).unwrap();
    let outputs = drain(&mut op);
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    let states: Vec<String> = outputs[..2]
        .iter()
        .map(|o| match o {
            TaskOutput::Event(e) => {
                serde_json::to_value(e).unwrap()["statusUpdate"]["status"]["state"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            }
            other => panic!("an event, got {other:?}"),
        })
        .collect();
    assert_eq!(states, ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
    assert_eq!(
        outputs[2],
        TaskOutput::Finished(Ok(TaskAnswer::StreamEnded))
    );
    assert!(op.is_done());
}

proptest! {
    // Rule: a page size is valid exactly from 1 to the largest page; anything else is refused
    // before a request exists, naming the field.
    #[test]
    fn a_page_size_is_valid_exactly_from_one_to_the_largest_page(n in prop_oneof![0u32..=120, any::<u32>()]) {
        let result = new("rpc", list(Some(n), None));
        if (1..=MAX_PAGE_SIZE).contains(&n) {
            prop_assert!(result.is_ok());
        } else {
            let e = result.unwrap_err();
            prop_assert_eq!(e.code.as_str(), task_codes::INVALID_REQUEST);
            prop_assert_eq!(&e.details.unwrap()["field"], "page_size");
        }
    }
}
