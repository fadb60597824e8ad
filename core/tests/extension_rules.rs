//! Rules of the Notification-T and Authorization-T machines (`a2at_core::extension`) that a
//! driver or host sees through their public API: the bytes they send, what they deliver and
//! how a subscription ends. Driven by hand, one input at a time, on the machines' own clock.

use std::time::Duration;

use a2at_core::a2a::{AgentCard, ReceivedMessage};
use a2at_core::a2at::NOTIFICATION_T_URI;
use a2at_core::agents::AgentDirectory;
use a2at_core::extension::{
    ExtensionConfig, Notification, NotificationOutput, SubscriptionEnd, codes,
};
use a2at_core::host::MessageContent;
use a2at_core::{HttpRequest, Input, Timestamp};
use proptest::prelude::*;
use serde_json::{Value, json};

/// A card distinct enough that a name or id made up by the machine cannot match it by chance.
const AGENT: &str = "alarm-centre";

fn directory(streaming: bool) -> AgentDirectory {
    let card = json!({
        "name": AGENT,
        "description": "raises alarms",
        "version": "1.0.0",
        "supportedInterfaces": [{"url": "http://alarms.test/rpc", "protocolBinding": "JSONRPC",
                                 "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming, "extensions": [{"uri": NOTIFICATION_T_URI}]},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "s", "name": "s", "description": "s", "tags": []}]
    });
    let card = AgentCard::from_json_value(&card).expect("a valid card");
    AgentDirectory::new(vec![card], None).expect("a valid directory")
}

fn subscription_content() -> MessageContent {
    MessageContent::text("subscribe to alarms")
        .with_extension(NOTIFICATION_T_URI)
        .with_metadata(NOTIFICATION_T_URI, json!("## Subscription\nalarms"))
        .with_metadata("templateUri", json!("Notification-T/alarm-subscription/v1"))
}

fn config() -> ExtensionConfig {
    ExtensionConfig {
        seed: 11,
        ack_timeout: Duration::from_secs(5),
        ..ExtensionConfig::default()
    }
}

fn ms(n: u64) -> Timestamp {
    Timestamp::from_millis(n)
}

fn body(req: &HttpRequest) -> Value {
    serde_json::from_slice(&req.body).expect("a JSON request body")
}

fn drain(n: &mut Notification) -> Vec<NotificationOutput> {
    std::iter::from_fn(|| n.poll_output()).collect()
}

/// A streaming subscription, its `SendStreamingMessage` and its context id.
fn subscribed() -> (Notification, HttpRequest, String) {
    let mut n = Notification::new(&directory(true), AGENT, &subscription_content(), config())
        .expect("the preconditions hold");
    let mut outs = drain(&mut n);
    assert_eq!(outs.len(), 1, "{outs:?}");
    let NotificationOutput::Transmit(req) = outs.remove(0) else {
        panic!("the send goes out first: {outs:?}");
    };
    let ctx = n.context_id().to_owned();
    (n, req, ctx)
}

fn sse_head(req: &HttpRequest) -> Input {
    Input::ResponseHead {
        op: req.op,
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
    }
}

fn sse(req: &HttpRequest, event: Value) -> Input {
    let payload = json!({"jsonrpc": "2.0", "id": body(req)["id"], "result": event});
    Input::ResponseBody {
        op: req.op,
        chunk: format!("data: {payload}\n\n").into_bytes(),
    }
}

fn feed(n: &mut Notification, inputs: Vec<Input>, now: Timestamp) {
    for input in inputs {
        n.handle(input, now)
            .expect("time never goes backwards here");
    }
}

fn working(task: &str, ctx: &str) -> Value {
    json!({"task": {"id": task, "contextId": ctx, "status": {"state": "TASK_STATE_WORKING"}}})
}

fn bare_message(id: &str, task: Option<&str>, ctx: &str) -> Value {
    let mut message = json!({"messageId": id, "contextId": ctx, "role": "ROLE_AGENT",
                             "parts": [{"text": "alarm"}]});
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({ "message": message })
}

fn delivered(outs: &[NotificationOutput]) -> Vec<ReceivedMessage> {
    outs.iter()
        .filter_map(|o| match o {
            NotificationOutput::Delivered(m) => Some((**m).clone()),
            _ => None,
        })
        .collect()
}

/// The agent activates an extension only when the URI is in `extensions` *and* a metadata key:
/// a subscription that dropped the content's metadata would activate nothing.
#[test]
fn the_subscription_send_carries_the_contents_metadata_unchanged() {
    let (_, req, _) = subscribed();
    let message = &body(&req)["params"]["message"];
    assert_eq!(message["extensions"], json!([NOTIFICATION_T_URI]));
    assert_eq!(
        message["metadata"],
        json!({
            NOTIFICATION_T_URI: "## Subscription\nalarms",
            "templateUri": "Notification-T/alarm-subscription/v1"
        })
    );
}

/// The driver labels a subscription by its agent and, once the agent named it, its task.
#[test]
fn a_subscription_names_its_agent_and_the_task_the_agent_named() {
    let (mut n, req, ctx) = subscribed();
    assert_eq!(n.agent_name(), AGENT);
    assert_eq!(n.task_id(), None, "no event named a task yet");
    feed(
        &mut n,
        vec![sse_head(&req), sse(&req, working("task-42", &ctx))],
        ms(1),
    );
    assert_eq!(n.task_id(), Some("task-42"));
    assert_eq!(n.agent_name(), AGENT);
}

/// A bare message is delivered as itself: the task and context it names are the message's own,
/// not the subscription's assembled view.
#[test]
fn a_bare_message_is_delivered_with_its_own_task_and_context() {
    let (mut n, req, ctx) = subscribed();
    feed(
        &mut n,
        vec![
            sse_head(&req),
            sse(&req, working("task-42", &ctx)),
            sse(&req, bare_message("note-1", Some("task-42"), &ctx)),
        ],
        ms(1),
    );
    let got = delivered(&drain(&mut n));
    assert_eq!(got.len(), 2, "{got:?}");
    let bare = &got[1];
    assert_eq!(
        bare.message.as_ref().map(|m| m.message_id.as_str()),
        Some("note-1")
    );
    assert_eq!(bare.task_id.as_deref(), Some("task-42"));
    assert_eq!(bare.context_id.as_deref(), Some(ctx.as_str()));
    assert_eq!(bare.task_state, None, "a bare message carries no state");
}

/// A first stream that carried events, none with a task state, ends unacknowledged: that is
/// "no acknowledgement", not an empty stream (which is only a stream without any event).
#[test]
fn a_first_stream_of_bare_messages_ends_without_acknowledgement_not_empty() {
    let (mut n, req, ctx) = subscribed();
    feed(
        &mut n,
        vec![
            sse_head(&req),
            sse(&req, bare_message("note-1", None, &ctx)),
            Input::ResponseEnd { op: req.op },
        ],
        ms(1),
    );
    let outs = drain(&mut n);
    assert_eq!(delivered(&outs).len(), 1, "{outs:?}");
    let failures: Vec<&str> = outs
        .iter()
        .filter_map(|o| match o {
            NotificationOutput::AcknowledgementFailed(f) => Some(f.code.as_str()),
            NotificationOutput::Ended(SubscriptionEnd::Failed(f)) => Some(f.code.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        failures,
        [codes::NO_ACKNOWLEDGEMENT, codes::NO_ACKNOWLEDGEMENT],
        "{outs:?}"
    );
    assert!(n.is_done());
}

/// What the agent or the host does next to a streaming subscription.
#[derive(Debug, Clone)]
enum Step {
    /// The current stream carries a task snapshot in this state.
    Snapshot(&'static str),
    /// The current stream carries a status update in this state.
    Status(&'static str),
    /// The current stream carries an artifact update of the task.
    Artifact,
    /// The current stream carries a bare message naming no task.
    Bare,
    /// The agent ends the current stream.
    End,
    /// The current stream breaks.
    Drop,
    /// The clock reaches the machine's next deadline.
    Wait,
    /// The host closes the subscription.
    Close,
}

const STATES: [&str; 7] = [
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_INPUT_REQUIRED",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
    "TASK_STATE_CANCELED",
    "TASK_STATE_REJECTED",
];

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => proptest::sample::select(&STATES[..]).prop_map(Step::Snapshot),
        3 => proptest::sample::select(&STATES[..]).prop_map(Step::Status),
        2 => Just(Step::Artifact),
        2 => Just(Step::Bare),
        2 => Just(Step::End),
        2 => Just(Step::Drop),
        3 => Just(Step::Wait),
        1 => Just(Step::Close),
    ]
}

fn is_failure_state(state: &str) -> bool {
    matches!(
        state,
        "TASK_STATE_FAILED" | "TASK_STATE_CANCELED" | "TASK_STATE_REJECTED"
    )
}

/// Drives a streaming subscription through `steps` and then closes it; returns every output
/// in order, the first state-carrying event seen while it was open, and how many events were
/// fed to an open subscription.
fn drive(steps: &[Step]) -> (Vec<NotificationOutput>, Option<&'static str>, usize) {
    let (mut n, req, ctx) = subscribed();
    let mut all = vec![NotificationOutput::Transmit(req.clone())];
    let mut current = Some(req);
    let mut now = ms(0);
    let mut first_state = None;
    let mut fed = 0;
    if let Some(r) = &current {
        n.handle(sse_head(r), now).expect("time moves on");
    }
    for step in steps.iter().chain([&Step::Close]) {
        now = now.saturating_add(Duration::from_millis(1));
        let event = match step {
            Step::Snapshot(s) => Some((
                json!({"task": {"id": "t1", "contextId": ctx,
                                                        "status": {"state": s}}}),
                Some(*s),
            )),
            Step::Status(s) => Some((
                json!({"statusUpdate": {"taskId": "t1", "contextId": ctx,
                                                             "status": {"state": s}}}),
                Some(*s),
            )),
            Step::Artifact => Some((
                json!({"artifactUpdate": {"taskId": "t1", "contextId": ctx,
                "artifact": {"artifactId": "a1", "parts": [{"text": "x"}]}}}),
                None,
            )),
            Step::Bare => Some((bare_message("b", None, &ctx), None)),
            _ => None,
        };
        match (step, event) {
            (_, Some((event, state))) => {
                if let Some(r) = &current {
                    if !n.is_done() {
                        fed += 1;
                        first_state = first_state.or(state);
                    }
                    n.handle(sse(r, event), now).expect("time moves on");
                }
            }
            (Step::End, _) => {
                if let Some(r) = current.take() {
                    n.handle(Input::ResponseEnd { op: r.op }, now)
                        .expect("time moves on");
                }
            }
            (Step::Drop, _) => {
                if let Some(r) = current.take() {
                    let error = a2at_core::io::TransportError {
                        kind: a2at_core::io::TransportErrorKind::Io,
                        message: "reset".into(),
                    };
                    n.handle(Input::TransportFailed { op: r.op, error }, now)
                        .expect("time moves on");
                }
            }
            (Step::Wait, _) => {
                if let Some(at) = n.poll_timeout() {
                    now = now.max(at);
                    n.handle_timeout(now).expect("time moves on");
                }
            }
            _ => n.close(now).expect("time moves on"),
        }
        for out in drain(&mut n) {
            if let NotificationOutput::Transmit(r) = &out {
                n.handle(sse_head(r), now).expect("time moves on");
                current = Some(r.clone());
            }
            all.push(out);
        }
    }
    assert!(n.is_done(), "a close always ends the subscription");
    assert_eq!(n.poll_timeout(), None, "nothing is left to wait for");
    (all, first_state, fed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The order promised to a driver: `Ended` once and last, exactly one acknowledgement
    /// outcome before it, `Acknowledged` just before the `Delivered` of its event, one
    /// `Delivered` per event of an open subscription; and the first event carrying a task
    /// state decides the acknowledgement (a failure state fails it, any other confirms it).
    #[test]
    fn every_subscription_keeps_the_promised_order_and_the_first_state_decides_the_ack(
        steps in proptest::collection::vec(step(), 0..24)
    ) {
        let (all, first_state, fed) = drive(&steps);
        let ended: Vec<usize> = all
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(o, NotificationOutput::Ended(_)))
            .map(|(i, _)| i)
            .collect();
        prop_assert_eq!(ended, vec![all.len() - 1], "{:?}", all);
        let acks: Vec<usize> = all
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(
                o,
                NotificationOutput::Acknowledged | NotificationOutput::AcknowledgementFailed(_)
            ))
            .map(|(i, _)| i)
            .collect();
        prop_assert_eq!(acks.len(), 1, "{:?}", all);
        if all[acks[0]] == NotificationOutput::Acknowledged {
            prop_assert!(
                matches!(all[acks[0] + 1], NotificationOutput::Delivered(_)),
                "{:?}", all
            );
        }
        prop_assert_eq!(delivered(&all).len(), fed, "{:?}", all);
        // A driver drops only connections it opened, each once.
        let mut aborted = Vec::new();
        for (i, out) in all.iter().enumerate() {
            if let NotificationOutput::AbortTransmit { op } = out {
                prop_assert!(
                    all[..i].iter().any(|o| matches!(o, NotificationOutput::Transmit(r) if r.op == *op)),
                    "{:?}", all
                );
                prop_assert!(!aborted.contains(op), "{:?}", all);
                aborted.push(*op);
            }
            // The notice of a reattachment comes with the event that proved it.
            if let NotificationOutput::Reattached { attempt, .. } = out {
                prop_assert!(*attempt >= 1);
                let next = all[i + 1..]
                    .iter()
                    .find(|o| !matches!(o, NotificationOutput::Acknowledged | NotificationOutput::AcknowledgementFailed(_)));
                prop_assert!(matches!(next, Some(NotificationOutput::Delivered(_))), "{:?}", all);
            }
        }
        match (first_state, &all[acks[0]]) {
            (Some(s), NotificationOutput::Acknowledged) => prop_assert!(!is_failure_state(s)),
            (Some(s), NotificationOutput::AcknowledgementFailed(f)) => {
                prop_assert!(is_failure_state(s), "{:?}", all);
                prop_assert!(f.code.starts_with("remote.task_"), "{:?}", f);
            }
            (None, outcome) => prop_assert!(
                matches!(outcome, NotificationOutput::AcknowledgementFailed(_)),
                "no state, no acknowledgement: {:?}", all
            ),
            _ => unreachable!(),
        }
    }
}
