//! Observability of a run on loopback: its `tracing` spans (run → step → subtask → exchange,
//! with the documented attributes), the W3C `traceparent` the agents receive (the same ids as
//! the spans), a host parent joining the run to the host's trace, and no planted secret in any
//! span or event.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::ScriptedAgent;
use crate::capture::{CapturedSpans, capture_spans};
use crate::loopback::LoopbackServer;
use a2at_core::a2a::AgentCard;
use a2at_core::auth::CredentialsConfig;
use a2at_core::host::MessageContent;
use a2at_core::tracectx::TraceParent;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::ControlPointBuilder;
use a2at_driver::telemetry::{EXCHANGE_SPAN, RUN_SPAN, STEP_SPAN, SUBTASK_SPAN};
use serde_json::json;

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

const HOST_PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Step `a` on `alpha` (JSON-RPC, unary), then step `b` on `beta` (HTTP+JSON, streaming).
fn two_steps() -> ValidatedWorkflow {
    parse_and_validate(&json!({"steps": [
        {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
        {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}]}
    ]}).to_string())
    .unwrap()
}

fn agents() -> Vec<ScriptedAgent> {
    vec![
        ScriptedAgent::new("alpha"),
        ScriptedAgent::new("beta").rest().streaming(),
    ]
}

/// Runs the two-step workflow on loopback (with `parent` as the host's traceparent when given)
/// and returns the spans, the run's success and the `traceparent` each agent received.
fn run_two_steps<T: TestRuntime>(parent: Option<&str>) -> (CapturedSpans, Vec<String>) {
    let (received, spans) = capture_spans(|| {
        T::block_on(async {
            let server = LoopbackServer::start(agents()).await;
            let engine = Engine::<T>::builder(server.cards()).build().unwrap();
            let host = ControlPointBuilder::new()
                .on_task(|r| async move { Ok(MessageContent::text(&r.instruction)) })
                .build();
            let mut run = engine.run(two_steps(), Arc::new(host)).seed(42);
            if let Some(p) = parent {
                run = run.traceparent(p);
            }
            let result = run.execute().await;
            assert!(result.success, "{:?}", result.error);
            ["alpha", "beta"]
                .iter()
                .flat_map(|a| server.requests(a))
                .map(|r| r.header("traceparent").expect("a traceparent").to_owned())
                .collect::<Vec<_>>()
        })
    });
    (spans, received)
}

fn field<'a>(span: &'a crate::capture::CapturedSpan, name: &str) -> &'a str {
    span.fields
        .get(name)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("{} has no {name}: {:?}", span.name, span.fields))
}

pub fn a_two_step_run_gives_a_span_tree_down_to_each_exchange<T: TestRuntime>() {
    let (captured, received) = run_two_steps::<T>(None);
    let runs: Vec<_> = captured.named(RUN_SPAN).collect();
    assert_eq!(runs.len(), 1, "{captured:#?}");
    let (run_index, run) = runs[0];
    let trace_id = field(run, "trace_id").to_owned();
    assert_eq!(trace_id.len(), 32);
    assert_eq!(field(run, "a2a.run.outcome"), "success");

    let steps: Vec<_> = captured.named(STEP_SPAN).collect();
    let step_names: Vec<&str> = steps.iter().map(|(_, s)| field(s, "a2a.step")).collect();
    assert_eq!(step_names, ["a", "b"]);
    assert!(steps.iter().all(|(_, s)| s.parent == Some(run_index)));

    let mut exchange_ids = BTreeSet::new();
    for (step_index, step) in &steps {
        let subtasks: Vec<_> = captured
            .named(SUBTASK_SPAN)
            .filter(|(_, s)| s.parent == Some(*step_index))
            .collect();
        assert_eq!(subtasks.len(), 1, "one subtask in step {:?}", step.fields);
        let (sub_index, sub) = subtasks[0];
        assert_eq!(field(sub, "a2a.task.state"), "success");
        assert!(!field(sub, "a2a.task.id").is_empty());
        assert!(!field(sub, "a2a.context.id").is_empty());
        let exchanges: Vec<_> = captured
            .named(EXCHANGE_SPAN)
            .filter(|(_, s)| s.parent == Some(sub_index))
            .collect();
        assert_eq!(exchanges.len(), 1, "one send per subtask: {exchanges:#?}");
        let (_, ex) = exchanges[0];
        let (agent, binding, method) = match field(step, "a2a.step") {
            "a" => ("alpha", "JSONRPC", "SendMessage"),
            _ => ("beta", "HTTP+JSON", "SendStreamingMessage"),
        };
        assert_eq!(field(ex, "a2a.agent"), agent);
        assert_eq!(field(ex, "a2a.binding"), binding);
        assert_eq!(field(ex, "a2a.method"), method);
        assert_eq!(field(ex, "a2a.purpose"), "send");
        assert_eq!(field(ex, "http.request.method"), "POST");
        assert_eq!(field(ex, "http.response.status_code"), "200");
        assert_eq!(field(ex, "server.address"), "127.0.0.1");
        assert!(field(ex, "url.full").starts_with("http://127.0.0.1:"));
        assert_eq!(field(ex, "trace_id"), trace_id);
        assert!(!ex.fields.contains_key("error.type"));
        // The span's ids are those the agent received.
        let sent = format!("00-{trace_id}-{}-01", field(ex, "span_id"));
        assert!(received.contains(&sent), "{sent} not in {received:?}");
        exchange_ids.insert(field(ex, "span_id").to_owned());
    }
    assert_eq!(exchange_ids.len(), 2, "distinct span ids");
    assert_eq!(received.len(), 2);
}

pub fn a_host_traceparent_joins_the_run_to_the_host_trace<T: TestRuntime>() {
    let parent = TraceParent::parse(HOST_PARENT).unwrap();
    let (captured, received) = run_two_steps::<T>(Some(HOST_PARENT));
    let host_trace = format!("{:032x}", parent.trace_id());
    for header in &received {
        let p = TraceParent::parse(header).expect("well-formed");
        assert_eq!(p.trace_id(), parent.trace_id(), "{header}");
        assert_ne!(p.parent_id(), parent.parent_id());
    }
    let (_, run) = captured.named(RUN_SPAN).next().expect("a run span");
    assert_eq!(field(run, "trace_id"), host_trace);
}

pub fn a_malformed_host_traceparent_refuses_the_run_naming_it<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(agents()).await;
        let engine = Engine::<T>::builder(server.cards()).build().unwrap();
        let host = ControlPointBuilder::new().build();
        let result = engine
            .run(two_steps(), Arc::new(host))
            .traceparent("00-not-a-trace-SECRET-01")
            .execute()
            .await;
        let error = result.error.expect("refused");
        assert_eq!(error.code, a2at_core::run::INVALID_CONFIG);
        assert!(error.message.contains("traceparent"), "{}", error.message);
        assert!(!error.message.contains("SECRET"), "the value is not echoed");
        assert_eq!(server.total_requests(), 0);
    })
}

pub fn a_failed_attempt_is_its_own_exchange_span_marked_as_an_error<T: TestRuntime>() {
    let (_, captured) = capture_spans(|| {
        T::block_on(async {
            let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha").fault_on(
                "SendMessage",
                1,
                crate::agent::AgentFault::Unavailable { retry_after: None },
            )])
            .await;
            let engine = Engine::<T>::builder(server.cards())
                .retry(a2at_core::RetryPolicy {
                    attempts: 3,
                    base_delay: std::time::Duration::from_millis(1),
                    max_delay: std::time::Duration::from_millis(1),
                })
                .build()
                .unwrap();
            let host = ControlPointBuilder::new()
                .on_task(|r| async move { Ok(MessageContent::text(&r.instruction)) })
                .build();
            let wf = parse_and_validate(
                &json!({"steps": [{"name": "a", "subtasks": [{"agent": "alpha", "description": "x"}]}]})
                    .to_string(),
            )
            .unwrap();
            let result = engine.run(wf, Arc::new(host)).execute().await;
            assert!(result.success, "{:?}", result.history);
        })
    });
    let (sub_index, _) = captured.named(SUBTASK_SPAN).next().expect("a subtask span");
    let attempts: Vec<_> = captured
        .named(EXCHANGE_SPAN)
        .filter(|(_, s)| s.parent == Some(sub_index))
        .map(|(_, s)| s)
        .collect();
    assert_eq!(attempts.len(), 2, "{attempts:#?}");
    assert_eq!(field(attempts[0], "http.response.status_code"), "503");
    assert_eq!(field(attempts[0], "error.type"), "503");
    assert_eq!(field(attempts[0], "otel.status_code"), "ERROR");
    assert_eq!(field(attempts[1], "http.response.status_code"), "200");
    assert!(!attempts[1].fields.contains_key("error.type"));
    assert_eq!(
        field(attempts[0], "trace_id"),
        field(attempts[1], "trace_id")
    );
    assert_ne!(field(attempts[0], "span_id"), field(attempts[1], "span_id"));
}

/// `alpha` with an API key in the query (from credentials) and a URL with userinfo and a
/// secret-looking query parameter of its own (also the OTLP suite's).
pub fn secret_cards(server: &LoopbackServer) -> Vec<AgentCard> {
    server
        .cards()
        .into_iter()
        .map(|card| {
            if card.name != "alpha" {
                return card;
            }
            let mut v = card.to_json();
            v["securitySchemes"] =
                json!({"key": {"apiKeySecurityScheme": {"location": "query", "name": "api_key"}}});
            v["securityRequirements"] = json!([{"schemes": {"key": {}}}]);
            for iface in v["supportedInterfaces"]
                .as_array_mut()
                .into_iter()
                .flatten()
            {
                let url = iface["url"].as_str().unwrap_or_default().to_owned();
                let url = url.replacen("http://", "http://user:PLANTED-USERINFO-3e1d@", 1);
                iface["url"] = json!(format!("{url}?access_token=PLANTED-URLTOKEN-77aa"));
            }
            AgentCard::from_json_value(&v).unwrap()
        })
        .collect()
}

/// An engine builder for [`secret_cards`] with secrets planted in every credential path: a
/// bearer token and an API key header (auth hook) for `beta`, a query API key (credentials)
/// for `alpha` (also the OTLP suite's).
pub fn secret_engine<T: TestRuntime>(
    server: &LoopbackServer,
) -> a2at_driver::EngineBuilder<<T as TestRuntime>::Rt> {
    let hook: a2at_driver::AuthHook = Arc::new(|req| {
        Ok(if req.agent == "beta" {
            vec![
                (
                    "Authorization".to_owned(),
                    "Bearer PLANTED-BEARER-7f3a".to_owned(),
                ),
                ("X-Api-Key".to_owned(), "PLANTED-APIKEY-91c2".to_owned()),
            ]
        } else {
            Vec::new()
        })
    });
    let creds = CredentialsConfig::from_json_value(
        &json!({"alpha": {"key": {"api_key": "PLANTED-QUERYKEY-5b5b"}}}),
        None,
    )
    .unwrap();
    Engine::<T>::builder(secret_cards(server))
        .auth_headers(hook)
        .credentials(creds)
}

pub fn planted_secrets_never_reach_spans_or_events<T: TestRuntime>() {
    let ((), captured) = capture_spans(|| {
        T::block_on(async {
            let server = LoopbackServer::start(agents()).await;
            let engine = secret_engine::<T>(&server).build().unwrap();
            let host = ControlPointBuilder::new()
                .on_task(|r| async move {
                    Ok(MessageContent::text(&r.instruction)
                        .with_metadata("credentials", json!({"password": "PLANTED-PASSWORD-55d0"})))
                })
                .build();
            let result = engine.run(two_steps(), Arc::new(host)).execute().await;
            assert!(result.success, "{:?}", result.error);
            let sent = server.requests_to("alpha", "SendMessage");
            assert!(
                sent[0].url.contains("PLANTED-QUERYKEY-5b5b"),
                "the key did travel in the query: {}",
                sent[0].url
            );
        })
    });
    let exchanges: Vec<_> = captured.named(EXCHANGE_SPAN).collect();
    assert_eq!(exchanges.len(), 2, "both exchanges were captured");
    let alpha_url = exchanges
        .iter()
        .map(|(_, s)| field(s, "url.full"))
        .find(|u| u.contains("access_token"))
        .expect("alpha's URL is recorded");
    assert!(alpha_url.contains("access_token=***"), "{alpha_url}");
    let text = captured.all_text();
    for secret in [
        "PLANTED-BEARER-7f3a",
        "PLANTED-APIKEY-91c2",
        "PLANTED-QUERYKEY-5b5b",
        "PLANTED-URLTOKEN-77aa",
        "PLANTED-USERINFO-3e1d",
        "PLANTED-PASSWORD-55d0",
    ] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
}
