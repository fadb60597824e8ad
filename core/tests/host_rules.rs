//! Rules of the host contract's helpers (`a2at_core::host`) that a host relies on directly,
//! checked against what they return rather than through a run.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake};
use std::time::Duration;

use a2at_core::a2a::{Artifact, Message, ReceivedMessage, Role};
use a2at_core::a2at::{NEGOTIATION_CONTEXT_KEY, Performative, TEMPLATE_URI_KEY};
use a2at_core::driver_support::{ControlPointBuilder, answer_guarded};
use a2at_core::host::{
    HostRequest, InputRequest, MessageContent, NegotiationRequest, RouteRequest, TaskRequest,
    WorkflowInput, codes,
};
use a2at_core::workflow::BusinessInput;
use serde_json::{Map, Value, json};

mod common;
use common::host_failure;

fn propose_context() -> Value {
    json!({"id": "n-1", "round": 1, "maxRounds": 3, "performative": "PROPOSE"})
}

fn meta(pairs: Value) -> Option<Map<String, Value>> {
    match pairs {
        Value::Object(m) => Some(m),
        other => panic!("metadata must be an object, got {other}"),
    }
}

/// A Propose whose context sits on the status message and whose template sits on `layer`
/// (`message`, `task` or `artifact`).
fn propose_with_template(layer: &str, template: &str) -> ReceivedMessage {
    let mut message_meta = json!({ NEGOTIATION_CONTEXT_KEY: propose_context() });
    let mut task_meta = json!({});
    let mut artifact_meta = json!({});
    let target = match layer {
        "message" => &mut message_meta,
        "task" => &mut task_meta,
        "artifact" => &mut artifact_meta,
        other => panic!("unknown layer {other}"),
    };
    target[TEMPLATE_URI_KEY] = Value::String(template.to_owned());
    ReceivedMessage {
        message: Some(Message {
            message_id: "m-1".into(),
            role: Role::Agent,
            metadata: meta(message_meta),
            ..Message::default()
        }),
        task_id: Some("t-1".into()),
        context_id: Some("c-1".into()),
        task_metadata: meta(task_meta),
        artifacts: vec![Artifact {
            artifact_id: "a-1".into(),
            metadata: meta(artifact_meta),
            ..Artifact::default()
        }],
        ..ReceivedMessage::default()
    }
}

fn task_request() -> TaskRequest {
    TaskRequest {
        execution_id: "e".into(),
        task_id: "e-s-0".into(),
        step_name: "s".into(),
        subtask_index: 0,
        agent_name: "neg".into(),
        skill: "".into(),
        instruction: "energy saving".into(),
        input: BusinessInput::Text("energy saving".into()),
        language: "".into(),
        workflow_input: WorkflowInput::default(),
    }
}

fn request(received: ReceivedMessage) -> NegotiationRequest {
    NegotiationRequest {
        task: Arc::new(task_request()),
        original_submission: MessageContent::text("energy saving"),
        received,
        previous_exchanges: Vec::new(),
        remaining_wait: Duration::from_secs(60),
    }
}

fn reply_template(received: ReceivedMessage, performative: Performative) -> Value {
    let content = request(received)
        .reply(performative, "answer")
        .expect("a valid Propose");
    content.metadata[TEMPLATE_URI_KEY].clone()
}

#[test]
fn a_reply_keeps_the_negotiation_type_of_the_propose_template() {
    // The template may sit on any metadata layer of the Propose; Accept and Reject share the
    // type's accept-reject template.
    for layer in ["message", "task", "artifact"] {
        for performative in [Performative::Accept, Performative::Reject] {
            let received =
                propose_with_template(layer, "Negotiation-T/resource-negotiation/propose/v1");
            assert_eq!(
                reply_template(received, performative),
                "Negotiation-T/resource-negotiation/accept-reject/v1",
                "{performative:?} to a template on the {layer} layer"
            );
        }
    }
}

#[test]
fn a_reply_falls_back_to_information_negotiation_when_the_template_names_no_type() {
    // `common` is the shared family (abort), not a negotiation type; a template outside
    // Negotiation-T names none either.
    for template in [
        "Negotiation-T/common/propose/v1",
        "Task-T/resource-negotiation/propose/v1",
        "",
    ] {
        let received = propose_with_template("message", template);
        assert_eq!(
            reply_template(received, Performative::Accept),
            "Negotiation-T/information-negotiation/accept-reject/v1",
            "template {template:?}"
        );
    }
}

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// The guarded answer never waits on anything external here: polling until ready is enough.
fn block_on<F: Future>(f: F) -> F::Output {
    let waker = Arc::new(Noop).into();
    let mut cx = Context::from_waker(&waker);
    let mut f = Box::pin(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn a_panicking_callback_fails_with_a_message_naming_that_callback() {
    let panicking = ControlPointBuilder::new()
        .on_task(|_| async { panic!("secret task") })
        .on_self_task(|_| async { panic!("secret self task") })
        .on_route(|_| async { panic!("secret route") })
        .on_negotiation(|_| async { panic!("secret negotiation") })
        .on_input_required(|_| async { panic!("secret input") })
        .build();
    let propose = propose_with_template("message", "Negotiation-T/x/propose/v1");
    let requests = [
        (HostRequest::Task(Arc::new(task_request())), "on_task"),
        (
            HostRequest::SelfTask(Box::new(task_request())),
            "on_self_task",
        ),
        (
            HostRequest::Route(Box::new(RouteRequest {
                execution_id: "e".into(),
                step_name: "a".into(),
                next_step: "b".into(),
                condition: "c".into(),
                workflow_input: WorkflowInput::default(),
                current_results: Vec::new(),
            })),
            "on_route",
        ),
        (
            HostRequest::Negotiation(Box::new(request(propose.clone()))),
            "on_negotiation",
        ),
        (
            HostRequest::InputRequired(Box::new(InputRequest {
                task: Arc::new(task_request()),
                remote_task_id: "t-1".into(),
                received: propose,
                previous_replies: 0,
                remaining_wait: Duration::from_secs(60),
            })),
            "on_input_required",
        ),
    ];
    for (request, callback) in requests {
        let reply = block_on(answer_guarded(&panicking, request));
        let error = host_failure(reply);
        assert_eq!(error.code, codes::HOST_CALLBACK_PANICKED, "{callback}");
        assert_eq!(
            error.message,
            format!("{callback} callback panicked"),
            "the message names the callback, never the panic's text"
        );
    }
}
