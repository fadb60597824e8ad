//! A Notification-T subscription and an Authorization-T send beside a running workflow: scripted
//! agents on loopback, the subscription's events printed by its listener while the workflow
//! runs, then an explicit close. Run with `cargo run -p a2at-tokio --example notification`.

use std::sync::Arc;
use std::time::Duration;

use a2at_tests::loopback::LoopbackServer;
use a2at_tests::{NotifyEvent, NotifyScript, Plan, ScriptedAgent, StreamEnding};
use a2at_tokio::a2at_core::a2at::{AUTHORIZATION_T_URI, NOTIFICATION_T_URI};
use a2at_tokio::a2at_core::host::MessageContent;
use a2at_tokio::a2at_core::{run::RunStart, workflow::parse_and_validate};
use a2at_tokio::{ControlPointBuilder, Engine};
use serde_json::json;

#[tokio::main]
async fn main() {
    // An agent that grants the authorization, then acknowledges the subscription, reports alarms (the task completes on the way, which
    // does not end the subscription) and keeps the stream open; and a workflow agent.
    let alarms = NotifyScript {
        gap: Duration::from_millis(100),
        ..NotifyScript::new(
            vec![
                NotifyEvent::Task("TASK_STATE_WORKING"),
                NotifyEvent::Status("TASK_STATE_WORKING", "cell 17: high load"),
                NotifyEvent::Artifact("energy report, part 1", false),
                NotifyEvent::Status("TASK_STATE_COMPLETED", "cell 17: back to normal"),
            ],
            StreamEnding::StayOpen,
        )
    };
    let server = LoopbackServer::start(vec![
        ScriptedAgent::new("noc")
            .streaming()
            .with_extension(NOTIFICATION_T_URI)
            .with_extension(AUTHORIZATION_T_URI)
            .then(Plan::States(vec!["TASK_STATE_COMPLETED"])) // the authorization
            .then(Plan::Notify(alarms)), // the subscription
        ScriptedAgent::new("planner").streaming(),
    ])
    .await;
    let engine = Engine::builder(server.cards())
        .build()
        .expect("valid cards");
    // Same cards, auth hook and budgets as the engine; its own transport.
    let sender = engine.extension_sender().expect("extension sender");

    let policy = MessageContent::text("allow energy saving on cell 17")
        .with_extension(AUTHORIZATION_T_URI)
        .with_metadata(AUTHORIZATION_T_URI, json!("## Policy\nallow energy saving"))
        .with_metadata(
            "templateUri",
            json!("Authorization-T/authorization-policy-management/v1"),
        );
    let authorization = sender
        .send_authorization("noc", policy)
        .await
        .expect("preconditions hold");
    println!(
        "authorization: success={} state={:?} code={:?}",
        authorization.success, authorization.task_state, authorization.failure_code
    );

    let subscription = MessageContent::text("notify me of load alarms")
        .with_extension(NOTIFICATION_T_URI)
        .with_metadata(NOTIFICATION_T_URI, json!("## Subscription\nload alarms"))
        .with_metadata("templateUri", json!("Notification-T/alarm-subscription/v1"));
    let sub = sender
        .open_notification("noc", subscription, |handle, received| {
            let text = received
                .message
                .as_ref()
                .and_then(|m| m.parts.first())
                .and_then(|p| p.as_text())
                .unwrap_or("");
            println!(
                "[{} {}] state={:?} message={text:?} artifacts={}",
                handle.agent_name(),
                &handle.context_id()[..8],
                received.task_state,
                received.artifacts.len()
            );
        })
        .expect("preconditions hold");
    println!("subscription registered (context {})", sub.context_id());

    let host = ControlPointBuilder::new()
        .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
        .build();
    let workflow = parse_and_validate(
        r#"{"name": "beside", "steps": [
            {"name": "plan", "subtasks": [{"agent": "planner", "description": "plan the night shift"}]}]}"#,
    )
    .expect("valid workflow");
    let result = engine
        .execute(workflow, RunStart::default(), Arc::new(host))
        .await;
    println!(
        "workflow: success={} outputs={:?}",
        result.success,
        result.step_outputs()
    );

    match sub.acknowledgement().await {
        Ok(()) => println!("subscription acknowledged"),
        Err(e) => println!("subscription not acknowledged: {e}"),
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let hb = sub.heartbeat();
    println!(
        "heartbeat: events={} active={} healthy={}",
        hb.event_count,
        hb.active,
        hb.is_healthy(Duration::from_secs(5))
    );
    sub.close();
    println!("completion: {:?}", sub.completion().await);
}
