//! A host embedding the engine: one scripted agent on loopback, a two-step workflow, the event
//! stream printed as it happens. Run with `cargo run -p a2at-tokio --example embed`.

use std::sync::Arc;

use a2at_tests::{ScriptedAgent, loopback::LoopbackServer};
use a2at_tokio::{ControlPointBuilder, Engine, MessageContent, RouteDecision, parse_and_validate};

#[tokio::main]
async fn main() {
    let agent = LoopbackServer::start(vec![ScriptedAgent::new("alpha").streaming()]).await;
    let engine = Engine::builder(agent.cards()).build().expect("valid cards");
    let host = ControlPointBuilder::new()
        .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
        .on_route(|_| async { Ok(RouteDecision::allow(Some("looks fine".into()))) })
        .build();
    let workflow = parse_and_validate(
        r#"{"name": "demo", "steps": [
            {"name": "draft", "subtasks": [{"agent": "alpha", "description": "draft a plan"}],
             "next": [{"step": "review", "condition": "the draft is usable"}]},
            {"name": "review", "subtasks": [{"agent": "alpha", "description": "review it"}]}]}"#,
    )
    .expect("valid workflow");
    let mut run = engine.run(workflow, Arc::new(host)).spawn();
    while let Some(event) = run.next_event().await {
        println!("{:>10.3} {}", event.timestamp % 1000.0, event.type_str());
    }
    let result = run.result().await;
    println!(
        "success: {}, outputs: {:?}",
        result.success,
        result.step_outputs()
    );
}
