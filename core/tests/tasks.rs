//! The task-management machine: request encoding on both bindings, answers, typed errors,
//! deadline and cancel, driven by hand with raw response bytes.

use std::time::Duration;

mod common;

use a2at_core::a2a::{ListTasksParams, TaskState};
use a2at_core::agents::AgentDirectory;
use a2at_core::host::codes;
use a2at_core::io::{Input, TransportError, TransportErrorKind};
use a2at_core::tasks::{
    TaskAnswer, TaskCommand, TaskError, TaskOperation, TaskOperationConfig, TaskOutput,
    codes as task_codes,
};
use a2at_core::{HttpRequest, OpId, Timestamp};
use serde_json::{Value, json};

fn directory() -> AgentDirectory {
    common::directory_of(&[
        ("rpc", "http://a/rpc", "JSONRPC"),
        ("rest", "http://a/rest", "HTTP+JSON"),
    ])
}

fn start(agent: &str, command: TaskCommand) -> (TaskOperation, HttpRequest) {
    let config = TaskOperationConfig {
        budget: Duration::from_secs(5),
        ..TaskOperationConfig::default()
    };
    let mut op = TaskOperation::new(&directory(), agent, command, config).expect("valid");
    match op.poll_output() {
        Some(TaskOutput::Transmit(r)) => (op, r),
        other => panic!("expected a transmit, got {other:?}"),
    }
}

fn answer(op: &mut TaskOperation, req: &HttpRequest, status: u16, body: Value) {
    let at = Timestamp::from_micros(10);
    let result = if req.body.is_empty() {
        body
    } else {
        let sent: Value = serde_json::from_slice(&req.body).unwrap();
        match sent.get("id") {
            Some(id) if status == 200 => json!({"jsonrpc": "2.0", "id": id, "result": body}),
            _ => body,
        }
    };
    let headers = vec![("content-type".into(), "application/json".into())];
    for input in [
        Input::ResponseHead {
            op: req.op,
            status,
            headers,
        },
        Input::ResponseBody {
            op: req.op,
            chunk: result.to_string().into_bytes(),
        },
        Input::ResponseEnd { op: req.op },
    ] {
        op.handle(input, at).unwrap();
    }
}

fn finished(op: &mut TaskOperation) -> Result<TaskAnswer, TaskError> {
    let mut end = None;
    while let Some(out) = op.poll_output() {
        if let TaskOutput::Finished(e) = out {
            end = Some(e);
        }
    }
    assert!(op.is_done());
    end.expect("finished")
}

#[test]
fn list_params_are_encoded_on_both_bindings() {
    let params = ListTasksParams {
        context_id: Some("c 1".into()),
        status: Some(TaskState::Working),
        page_size: Some(10),
        page_token: Some("p/2".into()),
        history_length: Some(0),
        status_timestamp_after: Some("2026-01-01T00:00:00Z".into()),
        include_artifacts: Some(false),
    };
    let (_, rest) = start("rest", TaskCommand::List(params.clone()));
    assert_eq!(
        rest.url,
        "http://a/rest/tasks?contextId=c%201&status=TASK_STATE_WORKING&pageSize=10\
         &pageToken=p%2F2&historyLength=0&statusTimestampAfter=2026-01-01T00%3A00%3A00Z\
         &includeArtifacts=false"
    );
    assert!(rest.body.is_empty());
    let (_, rpc) = start("rpc", TaskCommand::List(params));
    let body: Value = serde_json::from_slice(&rpc.body).unwrap();
    assert_eq!(body["method"], "ListTasks");
    assert_eq!(
        body["params"],
        json!({"contextId": "c 1", "status": "TASK_STATE_WORKING", "pageSize": 10,
               "pageToken": "p/2", "historyLength": 0,
               "statusTimestampAfter": "2026-01-01T00:00:00Z", "includeArtifacts": false})
    );
    let (_, bare) = start("rest", TaskCommand::List(ListTasksParams::default()));
    assert_eq!(bare.url, "http://a/rest/tasks");
}

#[test]
fn a_page_keeps_its_token_and_an_empty_token_is_the_last_page() {
    for agent in ["rpc", "rest"] {
        let (mut op, req) = start(agent, TaskCommand::List(ListTasksParams::default()));
        let task = json!({"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"},
                          "artifacts": [], "history": []});
        answer(
            &mut op,
            &req,
            200,
            json!({"tasks": [task], "nextPageToken": "n2", "pageSize": 1, "totalSize": 3}),
        );
        let Ok(TaskAnswer::Page(page)) = finished(&mut op) else {
            panic!("a page")
        };
        assert_eq!(page.tasks.len(), 1);
        assert_eq!(page.next_page_token.as_deref(), Some("n2"));
        assert_eq!(page.total_size, Some(3));
        let (mut op, req) = start(agent, TaskCommand::List(ListTasksParams::default()));
        answer(
            &mut op,
            &req,
            200,
            json!({"tasks": [], "nextPageToken": ""}),
        );
        let Ok(TaskAnswer::Page(page)) = finished(&mut op) else {
            panic!("a page")
        };
        assert!(page.tasks.is_empty());
        assert_eq!(page.next_page_token, None);
    }
}

#[test]
fn get_answers_the_task_and_another_task_is_an_identity_change() {
    let get = |id: &str| TaskCommand::Get {
        task_id: id.into(),
        history_length: None,
    };
    let (mut op, req) = start("rest", get("t1"));
    assert_eq!(req.url, "http://a/rest/tasks/t1");
    answer(
        &mut op,
        &req,
        200,
        json!({"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}),
    );
    let Ok(TaskAnswer::Task(task)) = finished(&mut op) else {
        panic!("a task")
    };
    assert_eq!(task.status.state, TaskState::Working);
    let (mut op, req) = start("rpc", get("t1"));
    answer(
        &mut op,
        &req,
        200,
        json!({"id": "t2", "status": {"state": "TASK_STATE_WORKING"}}),
    );
    let err = finished(&mut op).unwrap_err();
    assert_eq!(err.code, codes::REMOTE_IDENTITY_CHANGED);
}

#[test]
fn rejections_transport_failures_deadline_and_cancel_are_typed() {
    let cancel = || TaskCommand::Cancel {
        task_id: "t1".into(),
    };
    let (mut op, req) = start("rest", cancel());
    answer(
        &mut op,
        &req,
        404,
        json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "Task not found",
            "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}]}}),
    );
    let err = finished(&mut op).unwrap_err();
    assert_eq!(err.code, "a2a.task_not_found");
    assert_eq!(err.details.unwrap()["httpStatus"], 404);

    let (mut op, req) = start("rpc", cancel());
    op.handle(
        Input::TransportFailed {
            op: req.op,
            error: TransportError {
                kind: TransportErrorKind::Connect,
                message: "refused".into(),
            },
        },
        Timestamp::from_micros(1),
    )
    .unwrap();
    assert_eq!(
        finished(&mut op).unwrap_err().code,
        codes::REMOTE_NO_RESPONSE
    );

    let (mut op, _) = start("rpc", cancel());
    let deadline = op.poll_timeout().expect("a unary call has a deadline");
    assert_eq!(
        deadline,
        Timestamp::ZERO.saturating_add(Duration::from_secs(5))
    );
    op.handle_timeout(deadline).unwrap();
    assert!(matches!(
        op.poll_output(),
        Some(TaskOutput::AbortTransmit { op: OpId(1) })
    ));
    assert_eq!(finished(&mut op).unwrap_err().code, codes::TIMEOUT);
    // Late bytes after the end change nothing.
    op.handle(Input::ResponseEnd { op: OpId(1) }, deadline)
        .unwrap();
    assert!(op.poll_output().is_none());

    let (mut op, _) = start("rpc", cancel());
    op.handle(Input::Cancel, Timestamp::from_micros(3)).unwrap();
    assert!(matches!(
        op.poll_output(),
        Some(TaskOutput::AbortTransmit { .. })
    ));
    assert_eq!(finished(&mut op).unwrap_err().code, codes::CANCELLED);
}

#[test]
fn a_subscription_has_no_deadline_streams_items_and_ends_closed_or_empty() {
    let sub = || TaskCommand::Subscribe {
        task_id: "t1".into(),
    };
    let (mut op, req) = start("rest", sub());
    assert_eq!(req.url, "http://a/rest/tasks/t1:subscribe");
    assert!(req.streaming);
    assert_eq!(op.poll_timeout(), None);
    let sse = |body: &str| Input::ResponseBody {
        op: req.op,
        chunk: body.as_bytes().to_vec(),
    };
    let at = Timestamp::from_micros(1);
    op.handle(
        Input::ResponseHead {
            op: req.op,
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
        },
        at,
    )
    .unwrap();
    op.handle(
        sse("data: {\"statusUpdate\": {\"taskId\": \"t1\", \"status\": {\"state\": \"TASK_STATE_WORKING\"}}}\n\n"),
        at,
    )
    .unwrap();
    assert!(matches!(op.poll_output(), Some(TaskOutput::Event(_))));
    op.handle(Input::Cancel, at).unwrap();
    assert!(matches!(
        op.poll_output(),
        Some(TaskOutput::AbortTransmit { .. })
    ));
    assert_eq!(finished(&mut op), Ok(TaskAnswer::Closed));

    let (mut op, req) = start("rpc", sub());
    op.handle(
        Input::ResponseHead {
            op: req.op,
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
        },
        at,
    )
    .unwrap();
    op.handle(Input::ResponseEnd { op: req.op }, at).unwrap();
    assert_eq!(finished(&mut op).unwrap_err().code, codes::EMPTY_STREAM);
}

#[test]
fn bad_arguments_are_refused_before_any_request() {
    let dir = directory();
    let new = |agent: &str, command| {
        TaskOperation::new(&dir, agent, command, TaskOperationConfig::default()).unwrap_err()
    };
    let e = new(
        "nobody",
        TaskCommand::Cancel {
            task_id: "t".into(),
        },
    );
    assert_eq!(e.code, codes::AGENT_NOT_FOUND);
    let e = new(
        "rpc",
        TaskCommand::Subscribe {
            task_id: " ".into(),
        },
    );
    assert_eq!(e.code, task_codes::INVALID_REQUEST);
    assert_eq!(e.details.unwrap()["field"], "task_id");
    let e = new(
        "rpc",
        TaskCommand::Get {
            task_id: "t".into(),
            history_length: Some(u32::MAX),
        },
    );
    assert_eq!(e.details.unwrap()["field"], "history_length");
    for page_size in [0, 101] {
        let e = new(
            "rest",
            TaskCommand::List(ListTasksParams {
                page_size: Some(page_size),
                ..ListTasksParams::default()
            }),
        );
        assert_eq!(e.details.unwrap()["field"], "page_size");
    }
}
