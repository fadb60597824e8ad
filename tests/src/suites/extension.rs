//! ExtensionSender over real HTTP with scripted agents: Notification-T subscriptions (ACK,
//! delivery, close, agent end, terminal states, ACK timeout, reattach) and Authorization-T
//! (success, failure, rejection, polling, timeout), concurrency and independence from workflows.
//! Compiled once per runtime: the including test file binds `rt` (the runtime crate),
//! `block_on` and `sleep`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::loopback::LoopbackServer;
use crate::{NotifyEvent as E, NotifyScript, Plan, ScriptedAgent, StreamEnding};
use a2at_core::RetryPolicy;
use a2at_core::a2a::{ReceivedMessage, TaskState};
use a2at_core::a2at::{AUTHORIZATION_T_URI, NOTIFICATION_T_URI};
use a2at_core::host::MessageContent;
use a2at_core::run::RunStart;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use futures::future::Either;
use serde_json::json;

use a2at_driver::{
    BuiltControlPoint, ControlPointBuilder, ExtensionError, Reattachment, SubscriptionCompletion,
};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;
type ExtensionSender<T> = a2at_driver::ExtensionSender<<T as TestRuntime>::Rt>;
type NotificationSubscription<T> = a2at_driver::NotificationSubscription<<T as TestRuntime>::Rt>;

const WORKING: &str = "TASK_STATE_WORKING";
const COMPLETED: &str = "TASK_STATE_COMPLETED";

fn notify_content() -> MessageContent {
    MessageContent::text("subscribe to alarms")
        .with_extension(NOTIFICATION_T_URI)
        .with_metadata(NOTIFICATION_T_URI, json!("## Subscription\nalarms"))
        .with_metadata("templateUri", json!("Notification-T/alarm-subscription/v1"))
}

fn auth_content() -> MessageContent {
    MessageContent::text("grant energy saving")
        .with_extension(AUTHORIZATION_T_URI)
        .with_metadata(AUTHORIZATION_T_URI, json!("## Policy\nallow"))
        .with_metadata(
            "templateUri",
            json!("Authorization-T/authorization-policy-management/v1"),
        )
}

/// A streaming agent declaring both extensions.
fn ext_agent(name: &str) -> ScriptedAgent {
    ScriptedAgent::new(name)
        .streaming()
        .with_extension(AUTHORIZATION_T_URI)
        .with_extension(NOTIFICATION_T_URI)
}

fn sender<T: TestRuntime>(server: &LoopbackServer) -> ExtensionSender<T> {
    ExtensionSender::<T>::builder(server.cards())
        .ack_timeout(Duration::from_secs(5))
        .poll_interval(Duration::from_millis(5))
        .send_budget(Duration::from_secs(5))
        .reattach(RetryPolicy {
            attempts: 3,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(10),
        })
        .build()
        .expect("sender")
}

type Seen = Arc<Mutex<Vec<ReceivedMessage>>>;

fn recorder<T: TestRuntime>() -> (
    Seen,
    impl Fn(&NotificationSubscription<T>, ReceivedMessage) + Send + Sync + 'static,
) {
    let seen: Seen = Arc::default();
    let s = seen.clone();
    (seen, move |_: &NotificationSubscription<T>, m| {
        s.lock().unwrap().push(m)
    })
}

fn texts(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .filter_map(|m| m.message.as_ref())
        .filter_map(|m| m.parts.first().and_then(|p| p.as_text()).map(str::to_owned))
        .collect()
}

async fn eventually<T: TestRuntime>(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..600 {
        if cond() {
            return;
        }
        T::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// `f`'s output, or `None` when `limit` passed first (on the runtime's timer).
async fn timeout<T: TestRuntime, O>(
    limit: Duration,
    f: impl std::future::Future<Output = O>,
) -> Option<O> {
    let f = std::pin::pin!(f);
    let timer = std::pin::pin!(T::sleep(limit));
    match futures::future::select(f, timer).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}

async fn within<T: TestRuntime, O>(what: &str, f: impl std::future::Future<Output = O>) -> O {
    timeout::<T, O>(Duration::from_secs(5), f)
        .await
        .unwrap_or_else(|| panic!("timed out: {what}"))
}

fn solo() -> ValidatedWorkflow {
    parse_and_validate(
        &json!({"name": "solo", "steps": [{"name": "ask",
            "subtasks": [{"agent": "worker", "description": "hello"}]}]})
        .to_string(),
    )
    .expect("valid workflow")
}

fn echo_host() -> Arc<BuiltControlPoint> {
    Arc::new(
        ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .build(),
    )
}

// ----- Notification-T -----

pub fn ack_then_notifications_then_host_close<T: TestRuntime>() {
    T::block_on(async {
        for agent in [ext_agent("noc"), ext_agent("noc").grpc()] {
            let script = NotifyScript::new(
                vec![
                    E::Task(WORKING),
                    E::Status(WORKING, "alarm 1"),
                    E::Status(WORKING, "alarm 2"),
                    E::Artifact("report-1", false),
                    E::Artifact("+report-2", true),
                ],
                StreamEnding::StayOpen,
            );
            let server = LoopbackServer::start(vec![agent.then(Plan::Notify(script))]).await;
            let sender = sender::<T>(&server);
            let (seen, listener) = recorder::<T>();
            let sub = sender
                .open_notification("noc", notify_content(), listener)
                .expect("preconditions hold");
            assert_eq!(sub.agent_name(), "noc");
            assert!(!sub.context_id().is_empty());
            within::<T, _>("ack", sub.acknowledgement())
                .await
                .expect("acknowledged");
            eventually::<T>("5 notifications", || seen.lock().unwrap().len() == 5).await;
            let hb = sub.heartbeat();
            assert_eq!(hb.event_count, 5);
            assert!(hb.active && hb.last_event_at.is_some());
            assert!(sub.is_healthy(Duration::from_secs(60)));
            {
                let seen = seen.lock().unwrap();
                assert_eq!(seen[0].task_state, Some(TaskState::Working));
                let m = seen[1].message.as_ref().expect("status message");
                assert_eq!(m.metadata.as_ref().unwrap()["notification"], "alarm 1");
                // TR-8: the appended delta is assembled into one artifact.
                let parts: Vec<_> = seen[4].artifacts[0]
                    .parts
                    .iter()
                    .filter_map(|p| p.as_text())
                    .collect();
                assert_eq!(parts, ["report-1", "+report-2"]);
                assert!(
                    seen.iter()
                        .all(|m| m.context_id.as_deref() == Some(sub.context_id()))
                );
            }
            sub.close();
            sub.close();
            assert_eq!(
                within::<T, _>("completion", sub.completion())
                    .await
                    .unwrap(),
                SubscriptionCompletion::Closed
            );
            assert!(!sub.heartbeat().active);
            sub.close();
            let reqs = server.requests("noc");
            assert_eq!(reqs.len(), 1);
            assert_eq!(reqs[0].method, "SendStreamingMessage");
            assert_eq!(reqs[0].header("A2A-Extensions"), Some(NOTIFICATION_T_URI));
            let msg = reqs[0].message().unwrap();
            assert_eq!(msg["contextId"], sub.context_id());
            assert_eq!(
                msg["metadata"]["templateUri"],
                "Notification-T/alarm-subscription/v1"
            );
        }
    });
}

pub fn the_agent_ending_the_stream_completes_the_subscription<T: TestRuntime>() {
    T::block_on(async {
        let script = NotifyScript::new(
            vec![E::Task(WORKING), E::Status(COMPLETED, "final")],
            StreamEnding::End,
        );
        let server = LoopbackServer::start(vec![ext_agent("noc").then(Plan::Notify(script))]).await;
        let (seen, listener) = recorder::<T>();
        let sub = sender::<T>(&server)
            .open_notification("noc", notify_content(), listener)
            .unwrap();
        assert_eq!(
            within::<T, _>("completion", sub.completion())
                .await
                .unwrap(),
            SubscriptionCompletion::EndedByAgent
        );
        // completion() waits until the listener had every event.
        assert_eq!(texts(&seen), ["final"]);
        assert_eq!(seen.lock().unwrap().len(), 2);
        assert!(sub.acknowledgement().await.is_ok());
        assert!(server.requests_to("noc", "SubscribeToTask").is_empty());
    });
}

pub fn a_terminal_state_mid_subscription_keeps_it_open<T: TestRuntime>() {
    T::block_on(async {
        let script = NotifyScript::new(
            vec![
                E::Task(WORKING),
                E::Status(COMPLETED, "done"),
                E::Message("still listening"),
            ],
            StreamEnding::StayOpen,
        );
        let server = LoopbackServer::start(vec![ext_agent("noc").then(Plan::Notify(script))]).await;
        let (seen, listener) = recorder::<T>();
        let sub = sender::<T>(&server)
            .open_notification("noc", notify_content(), listener)
            .unwrap();
        eventually::<T>("3 events", || seen.lock().unwrap().len() == 3).await;
        let open = timeout::<T, _>(Duration::from_millis(150), sub.completion()).await;
        assert!(
            open.is_none(),
            "a COMPLETED task does not end the subscription"
        );
        assert!(sub.is_active());
        sub.close();
        assert_eq!(
            within::<T, _>("completion", sub.completion())
                .await
                .unwrap(),
            SubscriptionCompletion::Closed
        );
    });
}

pub fn ack_timeout_fails_the_acknowledgement_and_closes_the_stream<T: TestRuntime>() {
    T::block_on(async {
        // An artifact alone is not an ACK; the agent then stays silent.
        let script = NotifyScript::new(vec![E::Artifact("early", false)], StreamEnding::StayOpen);
        let server = LoopbackServer::start(vec![ext_agent("noc").then(Plan::Notify(script))]).await;
        let sender = ExtensionSender::<T>::builder(server.cards())
            .ack_timeout(Duration::from_millis(200))
            .build()
            .unwrap();
        let (seen, listener) = recorder::<T>();
        let sub = sender
            .open_notification("noc", notify_content(), listener)
            .unwrap();
        let ack = within::<T, _>("ack", sub.acknowledgement())
            .await
            .unwrap_err();
        assert_eq!(ack.code(), "extension.ack_timeout");
        let end = within::<T, _>("completion", sub.completion())
            .await
            .unwrap_err();
        assert_eq!(end.code(), "extension.ack_timeout");
        assert_eq!(seen.lock().unwrap().len(), 1);
        assert!(!sub.is_active());
    });
}

pub fn closing_before_the_ack_fails_it_and_the_listener_may_close_at_once<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ext_agent("quiet").by_default(Plan::Hang),
            ext_agent("noc").by_default(Plan::Notify(NotifyScript::new(
                vec![
                    E::Task(WORKING),
                    E::Status(WORKING, "1"),
                    E::Status(WORKING, "2"),
                ],
                StreamEnding::StayOpen,
            ))),
        ])
        .await;
        let sender = sender::<T>(&server);
        let sub = sender
            .open_notification("quiet", notify_content(), |_, _| {})
            .unwrap();
        sub.close();
        let ack = within::<T, _>("ack", sub.acknowledgement())
            .await
            .unwrap_err();
        assert!(ack.is_closed_before_acknowledgement(), "{ack}");
        assert_eq!(
            within::<T, _>("completion", sub.completion())
                .await
                .unwrap(),
            SubscriptionCompletion::Closed
        );

        // XS-3: the handle exists before any I/O, so the first callback can close it.
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let sub = sender
            .open_notification("noc", notify_content(), move |h, _| {
                c.fetch_add(1, Ordering::SeqCst);
                h.close();
            })
            .unwrap();
        assert_eq!(
            within::<T, _>("completion", sub.completion())
                .await
                .unwrap(),
            SubscriptionCompletion::Closed
        );
        assert!(calls.load(Ordering::SeqCst) >= 1);
    });
}

pub fn a_dropped_connection_reattaches_with_subscribe_to_task<T: TestRuntime>() {
    T::block_on(async {
        for agent in [
            ext_agent("noc"),
            ext_agent("noc").rest(),
            ext_agent("noc").grpc(),
        ] {
            let script = NotifyScript::new(
                vec![E::Task(WORKING), E::Status(WORKING, "before")],
                StreamEnding::Drop,
            )
            .then_resubscribe(
                vec![E::Task(WORKING), E::Status(WORKING, "after")],
                StreamEnding::StayOpen,
            );
            let server = LoopbackServer::start(vec![agent.then(Plan::Notify(script))]).await;
            let (seen, listener) = recorder::<T>();
            let reattached: Arc<Mutex<Vec<Reattachment>>> = Arc::default();
            let r = reattached.clone();
            let sub = sender::<T>(&server)
                .open_notification_with_reattach("noc", notify_content(), listener, move |_, re| {
                    r.lock().unwrap().push(re)
                })
                .unwrap();
            eventually::<T>("events after the reattachment", || {
                texts(&seen) == ["before", "after"]
            })
            .await;
            let re = reattached.lock().unwrap().clone();
            assert_eq!(re.len(), 1);
            assert_eq!(re[0].attempt, 1);
            assert_eq!(sub.reattachments(), 1);
            let subs = server.requests_to("noc", "SubscribeToTask");
            assert_eq!(subs.len(), 1);
            assert_eq!(subs[0].params["id"], re[0].task_id.as_str());
            sub.close();
            assert_eq!(
                within::<T, _>("completion", sub.completion())
                    .await
                    .unwrap(),
                SubscriptionCompletion::Closed
            );
        }
    });
}

pub fn reattachment_gives_up_after_the_configured_attempts<T: TestRuntime>() {
    T::block_on(async {
        let script = NotifyScript::new(vec![E::Task(WORKING)], StreamEnding::Drop)
            .then_resubscribe(vec![], StreamEnding::Drop);
        let server = LoopbackServer::start(vec![ext_agent("noc").then(Plan::Notify(script))]).await;
        let sender = ExtensionSender::<T>::builder(server.cards())
            .reattach(RetryPolicy {
                attempts: 2,
                base_delay: Duration::from_millis(5),
                max_delay: Duration::from_millis(5),
            })
            .build()
            .unwrap();
        let sub = sender
            .open_notification("noc", notify_content(), |_, _| {})
            .unwrap();
        let err = within::<T, _>("completion", sub.completion())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "extension.reattach_exhausted");
        assert_eq!(server.requests_to("noc", "SubscribeToTask").len(), 2);
        assert!(
            sub.acknowledgement().await.is_ok(),
            "the ACK stays as it was"
        );
    });
}

pub fn a_non_streaming_agent_answers_once_and_that_is_the_whole_stream<T: TestRuntime>() {
    T::block_on(async {
        let agent = ScriptedAgent::new("noc")
            .with_extension(NOTIFICATION_T_URI)
            .then(Plan::Notify(NotifyScript::new(
                vec![E::Task(WORKING), E::Status(WORKING, "ignored")],
                StreamEnding::StayOpen,
            )));
        let server = LoopbackServer::start(vec![agent]).await;
        let (seen, listener) = recorder::<T>();
        let sub = sender::<T>(&server)
            .open_notification("noc", notify_content(), listener)
            .unwrap();
        assert!(within::<T, _>("ack", sub.acknowledgement()).await.is_ok());
        assert_eq!(
            within::<T, _>("completion", sub.completion())
                .await
                .unwrap(),
            SubscriptionCompletion::EndedByAgent
        );
        assert_eq!(seen.lock().unwrap().len(), 1);
        assert_eq!(server.requests("noc")[0].method, "SendMessage");
    });
}

pub fn preconditions_fail_before_any_request<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ext_agent("noc"),
            ScriptedAgent::new("plain").streaming(),
        ])
        .await;
        let sender = sender::<T>(&server);
        let not_activated = MessageContent::text("x").with_extension(NOTIFICATION_T_URI);
        let e = sender
            .open_notification("noc", not_activated, |_, _| {})
            .unwrap_err();
        assert!(matches!(e, ExtensionError::Precondition(_)));
        let e = sender
            .open_notification("plain", notify_content(), |_, _| {})
            .unwrap_err();
        assert_eq!(e.code(), "workflow.invalid_content");
        let e = sender
            .send_authorization("missing", auth_content())
            .await
            .unwrap_err();
        assert_eq!(e.code(), "workflow.agent_not_found");
        let e = sender
            .send_authorization("noc", notify_content())
            .await
            .unwrap_err();
        assert!(matches!(e, ExtensionError::Precondition(_)));
        assert_eq!(server.total_requests(), 0);
    });
}

// ----- Authorization-T -----

pub fn authorization_success_failure_rejection_and_polling<T: TestRuntime>() {
    T::block_on(async {
        for agent in [ext_agent("auth"), ext_agent("auth").grpc()] {
            let server = LoopbackServer::start(vec![
                agent
                    .then(Plan::States(vec![COMPLETED]))
                    .then(Plan::States(vec!["TASK_STATE_FAILED"]))
                    .then(Plan::Reject {
                        status: 403,
                        code: -32600,
                        reason: "POLICY_DENIED",
                    })
                    .then(Plan::States(vec![WORKING, WORKING, COMPLETED])),
            ])
            .await;
            let sender = sender::<T>(&server);

            let ok = sender
                .send_authorization("auth", auth_content())
                .await
                .unwrap();
            assert!(ok.success, "{ok:?}");
            assert_eq!(ok.task_state, Some(TaskState::Completed));
            assert_eq!(ok.text, "done: grant energy saving");
            assert_eq!(ok.received_messages.len(), 1);
            let first = &server.requests("auth")[0];
            // Blocking SendMessage even though the agent streams.
            assert_eq!(first.method, "SendMessage");
            assert_eq!(first.header("A2A-Extensions"), Some(AUTHORIZATION_T_URI));
            assert_eq!(
                first.message().unwrap()["contextId"],
                ok.context_id.as_str()
            );

            let failed = sender
                .send_authorization("auth", auth_content())
                .await
                .unwrap();
            assert!(!failed.success);
            assert_eq!(failed.failure_code.as_deref(), Some("remote.task_failed"));
            assert_ne!(
                failed.context_id, ok.context_id,
                "a fresh context per operation"
            );

            let rejected = sender
                .send_authorization("auth", auth_content())
                .await
                .unwrap();
            assert_eq!(rejected.failure_code.as_deref(), Some("a2a.policy_denied"));
            assert_eq!(rejected.task_id, None);

            let polled = sender
                .send_authorization("auth", auth_content())
                .await
                .unwrap();
            assert!(polled.success, "{polled:?}");
            assert!(server.requests_to("auth", "GetTask").len() >= 2);
            assert!(server.requests_to("auth", "CancelTask").is_empty());
        }
    });
}

pub fn an_expired_authorization_cancels_its_remote_task<T: TestRuntime>() {
    T::block_on(async {
        let server =
            LoopbackServer::start(vec![ext_agent("auth").then(Plan::States(vec![WORKING]))]).await;
        let sender = ExtensionSender::<T>::builder(server.cards())
            .send_budget(Duration::from_millis(150))
            .poll_interval(Duration::from_millis(10))
            .build()
            .unwrap();
        let r = sender
            .send_authorization("auth", auth_content())
            .await
            .unwrap();
        assert_eq!(r.failure_code.as_deref(), Some("extension.timeout"));
        eventually::<T>("CancelTask cleanup", || {
            server.requests_to("auth", "CancelTask").len() == 1
        })
        .await;
        assert!(server.agent("auth").open_tasks().is_empty());
    });
}

/// An overloaded agent (503 before it processed anything) gets the same message again after a
/// backoff, on every binding; with retries off, the first 503 is the result.
pub fn an_overloaded_agent_gets_the_authorization_again<T: TestRuntime>() {
    use crate::agent::AgentFault;
    T::block_on(async {
        for agent in [ext_agent("auth"), ext_agent("auth").grpc()] {
            let server = LoopbackServer::start(vec![agent.fault_on(
                "SendMessage",
                1,
                AgentFault::Unavailable { retry_after: None },
            )])
            .await;
            let retried = ExtensionSender::<T>::builder(server.cards())
                .retry(a2at_core::retry::RetryPolicy {
                    attempts: 3,
                    base_delay: Duration::from_millis(10),
                    max_delay: Duration::from_millis(20),
                })
                .build()
                .unwrap();
            let ok = retried
                .send_authorization("auth", auth_content())
                .await
                .unwrap();
            assert!(ok.success, "{ok:?}");
            let sends = server.requests_to("auth", "SendMessage");
            assert_eq!(sends.len(), 2);
            assert_eq!(
                sends[0].message().unwrap()["messageId"],
                sends[1].message().unwrap()["messageId"],
                "the same message goes again"
            );

            let server = LoopbackServer::start(vec![ext_agent("auth").fault_on(
                "SendMessage",
                1,
                AgentFault::Unavailable { retry_after: None },
            )])
            .await;
            let fail_fast = ExtensionSender::<T>::builder(server.cards())
                .retry(a2at_core::retry::RetryPolicy::FAIL_FAST)
                .build()
                .unwrap();
            let failed = fail_fast
                .send_authorization("auth", auth_content())
                .await
                .unwrap();
            assert!(!failed.success);
            assert_eq!(server.requests_to("auth", "SendMessage").len(), 1);
        }
    });
}

// ----- concurrency and independence -----

pub fn a_slow_listener_delays_neither_other_subscriptions_nor_a_workflow<T: TestRuntime>() {
    T::block_on(async {
        const SUBS: usize = 8;
        const EVENTS: usize = 5;
        let script = || {
            Plan::Notify(NotifyScript::new(
                vec![
                    E::Task(WORKING),
                    E::Status(WORKING, "1"),
                    E::Status(WORKING, "2"),
                    E::Status(WORKING, "3"),
                    E::Status(WORKING, "4"),
                ],
                StreamEnding::StayOpen,
            ))
        };
        let server = LoopbackServer::start(vec![
            ext_agent("noc").by_default(script()),
            ScriptedAgent::new("worker").streaming(),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(5))
            .build()
            .unwrap();
        let sender = engine.extension_sender().unwrap();
        let slow_count = Arc::new(AtomicUsize::new(0));
        let sc = slow_count.clone();
        let slow = sender
            .open_notification("noc", notify_content(), move |_, _| {
                // A blocking listener: 300 ms per event, 1.5 s in all.
                std::thread::sleep(Duration::from_millis(300));
                sc.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap();
        let fast: Vec<(Arc<AtomicUsize>, NotificationSubscription<T>)> = (1..SUBS)
            .map(|_| {
                let n = Arc::new(AtomicUsize::new(0));
                let c = n.clone();
                let sub = sender
                    .open_notification("noc", notify_content(), move |_, _| {
                        c.fetch_add(1, Ordering::SeqCst);
                    })
                    .unwrap();
                (n, sub)
            })
            .collect();
        let result = within::<T, _>(
            "workflow",
            engine.execute(solo(), RunStart::default(), echo_host()),
        )
        .await;
        assert!(result.success, "{:?}", result.error);
        eventually::<T>("every fast subscription got every event", || {
            fast.iter().all(|(n, _)| n.load(Ordering::SeqCst) == EVENTS)
        })
        .await;
        // The workflow and the fast subscriptions finished while the slow listener was still busy.
        assert!(
            slow_count.load(Ordering::SeqCst) < EVENTS,
            "the slow listener should still be working"
        );
        for (_, sub) in &fast {
            sub.close();
            assert_eq!(
                within::<T, _>("fast completion", sub.completion())
                    .await
                    .unwrap(),
                SubscriptionCompletion::Closed
            );
        }
        slow.close();
        within::<T, _>("slow completion", slow.completion())
            .await
            .unwrap();
        // completion() waited for the slow listener to take every event delivered before close.
        assert_eq!(
            slow_count.load(Ordering::SeqCst),
            slow.heartbeat().event_count as usize
        );
    });
}

pub fn failing_extensions_leave_a_concurrent_workflow_unchanged<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ext_agent("policy").by_default(Plan::Reject {
                status: 400,
                code: -32602,
                reason: "POLICY_DENIED",
            }),
            ext_agent("silent").by_default(Plan::Hang),
            ext_agent("refusing").by_default(Plan::Notify(NotifyScript::new(
                vec![E::Task("TASK_STATE_REJECTED")],
                StreamEnding::StayOpen,
            ))),
            ScriptedAgent::new("worker"),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(5))
            .build()
            .unwrap();
        let baseline = engine
            .execute(solo(), RunStart::default(), echo_host())
            .await;
        assert!(baseline.success);
        let before = engine.http_client().requests_sent();

        let sender = engine.extension_sender().unwrap();
        let run = engine.run(solo(), echo_host()).spawn();
        let auth = sender.send_authorization("policy", auth_content());
        let stuck = sender
            .open_notification("silent", notify_content(), |_, _| {})
            .unwrap();
        let refused = sender
            .open_notification("refusing", notify_content(), |_, _| {})
            .unwrap();
        let (result, auth) = futures::join!(run.result(), auth);
        assert_eq!(
            auth.unwrap().failure_code.as_deref(),
            Some("a2a.policy_denied")
        );
        let ack = within::<T, _>("refused ack", refused.acknowledgement()).await;
        assert_eq!(ack.unwrap_err().code(), "remote.task_rejected");
        assert!(stuck.is_active());

        assert!(result.success);
        assert_eq!(result.step_outputs(), baseline.step_outputs());
        assert_eq!(result.history.len(), baseline.history.len());
        // XS-9: the extension sender has its own transport; the engine's client saw only the run.
        assert_eq!(engine.http_client().requests_sent(), before + 1);
        assert!(sender.http_client().requests_sent() >= 3);
        stuck.close();
        refused.close();
        within::<T, _>("stuck completion", stuck.completion())
            .await
            .unwrap();
        within::<T, _>("refused completion", refused.completion())
            .await
            .unwrap();
    });
}
