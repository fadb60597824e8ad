//! A run whose agent offers only gRPC: the transmit carries the gRPC request (HTTP/2, service
//! path, metadata, `grpc-timeout` from the task budget), the response goes through the gRPC
//! decoder with its trailers, and results and errors are the ones a JSON-RPC agent gives.

use std::sync::Arc;

use a2at_core::a2a::grpc::{GrpcMessage, SendMessageResponse, encode_frame};
use a2at_core::a2a::protojson::encode_base64;
use a2at_core::a2a::{AgentCard, Binding, RemoteTaskStatus, Task, TaskState};
use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest, MessageContent, TaskExecutionResult};
use a2at_core::io::{HttpRequest, Input, Output};
use a2at_core::result::ExecutionResult;
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_core::{OpId, Timestamp};
use serde_json::json;

fn card(binding: &str, url: &str) -> AgentCard {
    AgentCard::from_json_value(&json!({
        "name": "g", "capabilities": {"streaming": false},
        "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}]
    }))
    .unwrap()
}

/// What the scripted agent answers to the first request.
enum Answer {
    /// HTTP status, headers, body, trailers.
    Raw(
        u16,
        Vec<(String, String)>,
        Vec<u8>,
        Option<Vec<(String, String)>>,
    ),
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Runs a one-step workflow against agent `g` and returns the first transmit and the result.
/// Requests after the first (cleanup) get a transport failure.
fn run(card: AgentCard, answer: Answer) -> (HttpRequest, std::sync::Arc<ExecutionResult>) {
    let wf = parse_and_validate(
        r#"{"steps": [{"name": "s", "subtasks": [{"agent": "g", "description": "d"}]}]}"#,
    )
    .unwrap();
    let agents = AgentDirectory::new(vec![card], None).unwrap();
    let config = RunConfig {
        seed: 7,
        ..RunConfig::default()
    };
    let mut run = Run::new(Arc::new(wf), Arc::new(agents), config, RunStart::default());
    let mut now = Timestamp::ZERO.saturating_add(core::time::Duration::from_millis(3));
    let mut first: Option<HttpRequest> = None;
    let mut answer = Some(answer);
    loop {
        match run.poll_output() {
            Some(Output::CallHost {
                call,
                request: HostRequest::Task(_),
            }) => {
                let reply = HostReply::Task(Ok(MessageContent::text("hello")));
                run.handle(Input::HostReply { call, reply }, now).unwrap();
            }
            Some(Output::Transmit(req)) => {
                let op: OpId = req.op;
                // Inputs after the run finished (cleanup answers) are refused; that is fine here.
                let feed = |run: &mut Run, input: Input| match run.handle(input, now) {
                    Ok(()) | Err(a2at_core::io::ApiMisuse::Finished) => {}
                    Err(e) => panic!("{e}"),
                };
                if first.is_none() {
                    first = Some(req);
                }
                match answer.take() {
                    Some(Answer::Raw(status, headers, body, trailers)) => {
                        feed(
                            &mut run,
                            Input::ResponseHead {
                                op,
                                status,
                                headers: fields(headers),
                            },
                        );
                        // Split the body to show nothing depends on chunk boundaries.
                        let (a, b) = body.split_at(body.len() / 2);
                        for chunk in [a, b] {
                            let chunk = chunk.to_vec();
                            feed(&mut run, Input::ResponseBody { op, chunk });
                        }
                        if let Some(trailers) = trailers {
                            feed(
                                &mut run,
                                Input::ResponseTrailers {
                                    op,
                                    trailers: fields(trailers),
                                },
                            );
                        }
                        feed(&mut run, Input::ResponseEnd { op });
                    }
                    None => {
                        let error = a2at_core::io::TransportError {
                            kind: a2at_core::io::TransportErrorKind::Connect,
                            message: "refused".into(),
                        };
                        feed(&mut run, Input::TransportFailed { op, error });
                    }
                }
            }
            Some(Output::Finished(result)) => return (first.unwrap(), result),
            Some(_) => {}
            None => {
                let at = run.poll_timeout().expect("a run that waits has a deadline");
                now = now.max(at);
                run.handle_timeout(now).unwrap();
            }
        }
    }
}

fn completed_task() -> Task {
    Task {
        id: "t-1".into(),
        context_id: None,
        status: RemoteTaskStatus {
            state: TaskState::Completed,
            message: None,
            timestamp: None,
        },
        artifacts: vec![a2at_core::a2a::Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![a2at_core::a2a::Part::text("done")],
            metadata: None,
            extensions: Vec::new(),
        }],
        history: Vec::new(),
        metadata: None,
    }
}

fn grpc_head() -> Vec<(String, String)> {
    pairs(&[("content-type", "application/grpc")])
}

/// Per task: its error code and outputs.
type TaskOutcomes = Vec<(Option<String>, Vec<serde_json::Value>)>;

fn outcome(r: &ExecutionResult) -> (bool, TaskOutcomes) {
    let tasks: Vec<&TaskExecutionResult> = r.history.iter().collect();
    (
        r.success,
        tasks
            .iter()
            .map(|t| (t.error_code.clone(), t.outputs.clone()))
            .collect(),
    )
}

#[test]
fn a_grpc_agent_gets_a_grpc_request_and_its_answer_completes_the_task() {
    let body = encode_frame(&SendMessageResponse::Task(completed_task()).encode_proto()).unwrap();
    let (req, result) = run(
        card("GRPC", "127.0.0.1:50051"),
        Answer::Raw(200, grpc_head(), body, Some(pairs(&[("grpc-status", "0")]))),
    );
    assert!(req.http2);
    assert_eq!(
        req.url,
        "http://127.0.0.1:50051/lf.a2a.v1.A2AService/SendMessage"
    );
    assert_eq!(req.method.as_str(), "POST");
    let header = |name: &str| {
        req.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("content-type").as_deref(), Some("application/grpc"));
    assert_eq!(header("te").as_deref(), Some("trailers"));
    assert_eq!(header("a2a-version").as_deref(), Some("1.0"));
    // The default task budget is 600 s; the request left 3 ms after the start.
    assert_eq!(header("grpc-timeout").as_deref(), Some("599997m"));
    assert_eq!(&req.body[..1], &[0], "an uncompressed frame");
    assert!(result.success, "{result:?}");
    assert_eq!(outcome(&result).1, vec![(None, vec![json!("done")])]);
}

#[test]
fn a_json_agent_gets_no_http2_and_no_timeout() {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": "x", "result": {}})).unwrap();
    let (req, _) = run(
        card("JSONRPC", "http://127.0.0.1:1/rpc"),
        Answer::Raw(
            200,
            pairs(&[("content-type", "application/json")]),
            body,
            None,
        ),
    );
    assert!(!req.http2);
    assert!(req.headers.iter().all(|(k, _)| k != "grpc-timeout"));
    // An HTTP/1.1 request serialises without the field, as before gRPC existed.
    let v = serde_json::to_value(&req).unwrap();
    assert!(v.get("http2").is_none(), "{v}");
}

#[test]
fn a_grpc_response_without_trailers_fails_the_task_with_a_typed_error() {
    let body = encode_frame(&SendMessageResponse::Task(completed_task()).encode_proto()).unwrap();
    let (_, result) = run(
        card("GRPC", "127.0.0.1:50051"),
        Answer::Raw(200, grpc_head(), body, None),
    );
    assert!(!result.success);
    let (_, tasks) = outcome(&result);
    assert_eq!(
        tasks[0].0.as_deref(),
        Some("a2a.invalid_agent_response"),
        "{result:?}"
    );
}

/// A `google.rpc.Status` (code 5, NOT_FOUND) with an `ErrorInfo` reason `TASK_NOT_FOUND`.
fn not_found_details() -> String {
    let reason = b"TASK_NOT_FOUND";
    let mut info = vec![0x0a, reason.len() as u8];
    info.extend_from_slice(reason);
    let url = b"type.googleapis.com/google.rpc.ErrorInfo";
    let mut any = vec![0x0a, url.len() as u8];
    any.extend_from_slice(url);
    any.push(0x12);
    any.push(info.len() as u8);
    any.extend_from_slice(&info);
    let msg = b"Task not found";
    let mut status = vec![0x08, 5, 0x12, msg.len() as u8];
    status.extend_from_slice(msg);
    status.push(0x1a);
    status.push(any.len() as u8);
    status.extend_from_slice(&any);
    encode_base64(&status).trim_end_matches('=').to_owned()
}

#[test]
fn grpc_and_json_rpc_rejections_give_the_same_result() {
    let details = not_found_details();
    let (_, grpc) = run(
        card("GRPC", "127.0.0.1:50051"),
        Answer::Raw(
            200,
            grpc_head(),
            Vec::new(),
            Some(pairs(&[
                ("grpc-status", "5"),
                ("grpc-message", "Task%20not%20found"),
                ("grpc-status-details-bin", &details),
            ])),
        ),
    );
    let rpc_error = json!({"jsonrpc": "2.0", "id": "x", "error": {"code": -32001,
        "message": "Task not found", "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}});
    let (_, json_rpc) = run(
        card("JSONRPC", "http://127.0.0.1:1/rpc"),
        Answer::Raw(
            200,
            pairs(&[("content-type", "application/json")]),
            serde_json::to_vec(&rpc_error).unwrap(),
            None,
        ),
    );
    assert_eq!(outcome(&grpc).1[0].0.as_deref(), Some("a2a.task_not_found"));
    assert_eq!(outcome(&grpc), outcome(&json_rpc));
    assert_eq!(
        grpc.history[0].error, json_rpc.history[0].error,
        "the host sees the same message"
    );
}

#[test]
fn the_binding_preference_picks_grpc_over_json() {
    let c = AgentCard::from_json_value(&json!({
        "name": "g", "capabilities": {},
        "supportedInterfaces": [
            {"url": "http://h:1/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "h:2", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]
    }))
    .unwrap();
    let d = AgentDirectory::new(vec![c.clone()], Some(Binding::Grpc)).unwrap();
    assert_eq!(d.get("g").unwrap().endpoint.url, "http://h:2");
    let d = AgentDirectory::new(vec![c], None).unwrap();
    assert_eq!(d.get("g").unwrap().endpoint.binding, Binding::JsonRpc);
}

fn fields(pairs: Vec<(String, String)>) -> Vec<a2at_core::HeaderField> {
    pairs
        .into_iter()
        .map(|(name, value)| (name.into(), value.into()))
        .collect()
}
