//! Engine-wide behaviour over real HTTP: concurrency limits, many concurrent runs, `send_task`,
//! transport failures and card validation.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::capture::SharedBuffer;
use crate::loopback::LoopbackServer;
use crate::{Plan, ScriptedAgent};
use a2at_core::a2at::{NEGOTIATION_T_URI, Performative, context_of};
use a2at_core::host::{MessageContent, NegotiationReply, TaskStatus, codes};
use a2at_core::run::RunStart;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::{BuiltControlPoint, ControlPointBuilder, EngineError};
use serde_json::{Value, json};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

fn workflow(v: Value) -> ValidatedWorkflow {
    parse_and_validate(&v.to_string()).expect("valid workflow")
}

fn echo_host() -> Arc<BuiltControlPoint> {
    Arc::new(
        ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .build(),
    )
}

/// One step with `n` subtasks for each of the agents.
fn wide(agents: &[&str], n: usize) -> Arc<ValidatedWorkflow> {
    let subtasks: Vec<Value> = agents
        .iter()
        .flat_map(|a| (0..n).map(move |i| json!({"agent": a, "description": format!("{a} {i}")})))
        .collect();
    Arc::new(workflow(
        json!({"name": "wide", "steps": [{"name": "w", "subtasks": subtasks}]}),
    ))
}

fn slow(agent: ScriptedAgent) -> ScriptedAgent {
    agent.by_default(Plan::Delayed(
        Duration::from_millis(15),
        Box::new(Plan::States(vec!["TASK_STATE_COMPLETED"])),
    ))
}

pub fn in_flight_exchanges_never_exceed_the_limits_across_runs<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            slow(ScriptedAgent::new("alpha")),
            slow(ScriptedAgent::new("beta")),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .max_in_flight_per_agent(2)
            .max_in_flight(3)
            .build()
            .expect("engine");
        let wf = wide(&["alpha", "beta"], 6);
        let runs: Vec<_> = (0..3)
            .map(|_| {
                let engine = engine.clone();
                let wf = wf.clone();
                T::spawn(async move { engine.execute(wf, RunStart::default(), echo_host()).await })
            })
            .collect();
        for run in runs {
            let result = run.await;
            assert!(result.success, "{:?}", result.error);
        }
        assert_eq!(server.total_requests(), 36);
        assert_eq!(server.max_in_flight("alpha"), 2);
        assert_eq!(server.max_in_flight("beta"), 2);
        assert_eq!(server.max_in_flight_total(), 3);
    })
}

pub fn an_agent_added_to_a_live_engine_gets_the_same_per_agent_limit<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            slow(ScriptedAgent::new("alpha")),
            slow(ScriptedAgent::new("beta")),
        ])
        .await;
        let cards = server.cards();
        let (alpha, beta): (Vec<_>, Vec<_>) = cards.into_iter().partition(|c| c.name == "alpha");
        let engine = Engine::<T>::builder(alpha)
            .max_in_flight_per_agent(2)
            .build()
            .expect("engine");
        engine
            .add_card(beta.into_iter().next().expect("beta's card"))
            .expect("beta added");
        let result = engine
            .execute(wide(&["beta"], 8), RunStart::default(), echo_host())
            .await;
        assert!(result.success, "{:?}", result.error);
        assert_eq!(server.total_requests(), 8);
        assert_eq!(
            server.max_in_flight("beta"),
            2,
            "bounded like the agents the engine was built with"
        );
    })
}

pub fn two_hundred_concurrent_runs_share_one_engine<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("beta").rest().streaming(),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        let wf = Arc::new(workflow(json!({"name": "chain", "steps": [
            {"name": "a", "subtasks": [{"agent": "alpha", "description": "first"}], "next": [{"step": "b"}]},
            {"name": "b", "subtasks": [{"agent": "beta", "description": "second"}, {"agent": "alpha", "description": "third"}]}
        ]})));
        let started = Instant::now();
        let runs: Vec<_> = (0..200)
            .map(|_| {
                let engine = engine.clone();
                let wf = wf.clone();
                T::spawn(async move { engine.execute(wf, RunStart::default(), echo_host()).await })
            })
            .collect();
        let mut ids = std::collections::BTreeSet::new();
        for run in runs {
            let result = run.await;
            assert!(result.success, "{:?}", result.error);
            assert_eq!(result.history.len(), 3);
            ids.insert(result.execution_id);
        }
        let elapsed = started.elapsed();
        assert_eq!(ids.len(), 200, "OS seeds give distinct execution ids");
        assert_eq!(server.total_requests(), 600);
        assert!(server.max_in_flight("alpha") <= 16);
        eprintln!("200 runs x 3 tasks over loopback HTTP: {elapsed:?}");
    })
}

pub fn send_task_runs_one_task_without_a_workflow<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").streaming(),
            ScriptedAgent::new("beta")
                .then(Plan::Negotiate(crate::agent::Negotiation::rounds(1, 3))),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .poll_interval(Duration::from_millis(5))
            .build()
            .expect("engine");

        let done = engine
            .send_task("alpha", MessageContent::text("hello"))
            .await;
        assert_eq!(done.status, TaskStatus::Success, "{:?}", done.error);
        assert_eq!(done.outputs, vec![json!("done: hello")]);
        let sent = server.requests_to("alpha", "SendStreamingMessage");
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].message().unwrap()["parts"][0]["text"], "hello");

        let unknown = engine.send_task("nobody", MessageContent::text("x")).await;
        assert_eq!(unknown.error_code.as_deref(), Some(codes::AGENT_NOT_FOUND));

        // A Propose without a strategy fails explicitly; with one it is answered.
        let ask = MessageContent::text("sites?").with_extension(NEGOTIATION_T_URI);
        let refused = engine.send_task("beta", ask.clone()).await;
        assert_eq!(
            refused.error_code.as_deref(),
            Some(codes::HOST_HANDLER_MISSING)
        );
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("beta")
                .then(Plan::Negotiate(crate::agent::Negotiation::rounds(1, 3))),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        let strategy = ControlPointBuilder::new()
            .on_negotiation(|req| async move {
                let ctx = context_of(&req.received)
                    .expect("valid context")
                    .expect("a Propose carries one")
                    .with_performative(Performative::Accept);
                Ok(NegotiationReply::Send {
                    content: MessageContent::text("accepted")
                        .with_extension(NEGOTIATION_T_URI)
                        .with_metadata(NEGOTIATION_T_URI, json!("accepted"))
                        .with_metadata("negotiationContext", ctx.to_json()),
                })
            })
            .build();
        let agreed = engine
            .send_task_negotiating("beta", ask, Arc::new(strategy))
            .await;
        assert_eq!(agreed.status, TaskStatus::Success, "{:?}", agreed.error);
    })
}

pub fn transport_failures_become_no_response<T: TestRuntime>() {
    T::block_on(async {
        // A port that nobody listens on: bind, read the port, close.
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let ghost = a2at_core::a2a::AgentCard::from_json_value(
            &ScriptedAgent::new("ghost").card_at(&format!("http://127.0.0.1:{closed}/ghost")),
        )
        .unwrap();
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha").by_default(Plan::Unreachable),
        ])
        .await;
        let mut cards = server.cards();
        cards.push(ghost);
        let engine = Engine::<T>::builder(cards).build().expect("engine");
        for agent in ["ghost", "alpha"] {
            let r = engine.send_task(agent, MessageContent::text("x")).await;
            assert_eq!(
                r.error_code.as_deref(),
                Some(codes::REMOTE_NO_RESPONSE),
                "{agent}: {r:?}"
            );
        }
    })
}

pub fn invalid_cards_and_settings_are_typed_errors<T: TestRuntime>() {
    let card = |name: &str| {
        a2at_core::a2a::AgentCard::from_json_value(&ScriptedAgent::new(name).card()).unwrap()
    };
    let dup = Engine::<T>::builder(vec![card("a"), card("a")]).build();
    assert!(matches!(dup, Err(EngineError::Cards(_))), "{dup:?}");
    let zero = Engine::<T>::builder(vec![card("a")])
        .max_in_flight(0)
        .build();
    assert!(matches!(zero, Err(EngineError::Config(_))));
}

pub fn a_tls_policy_that_cannot_be_built_is_an_error_never_a_fallback<T: TestRuntime>() {
    use a2at_driver::TlsConfig;
    type HttpClient<T> = a2at_driver::HttpClient<<T as TestRuntime>::Rt>;
    let bad_ca = TlsConfig {
        extra_ca_pem: Some(
            b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n".to_vec(),
        ),
        ..TlsConfig::default()
    };
    assert!(HttpClient::<T>::with_tls(&bad_ca).is_err());
    let empty_ca = TlsConfig {
        extra_ca_pem: Some(b"no pem here".to_vec()),
        ..TlsConfig::default()
    };
    let err = HttpClient::<T>::with_tls(&empty_ca)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no PEM certificate"), "{err}");
    let bad_identity = TlsConfig {
        client_identity_pem: Some((b"".to_vec(), b"".to_vec())),
        ..TlsConfig::default()
    };
    assert!(HttpClient::<T>::with_tls(&bad_identity).is_err());
    let insecure = TlsConfig {
        insecure_skip_chain_verification: true,
        ..TlsConfig::default()
    };
    assert!(
        HttpClient::<T>::with_tls(&insecure).is_ok(),
        "the development mode builds (and warns)"
    );
    assert!(HttpClient::<T>::with_tls(&TlsConfig::default()).is_ok());
}

/// The header line of a recorded trace.
fn trace_header(trace: &SharedBuffer) -> Value {
    let text = trace.text();
    serde_json::from_str(text.lines().next().expect("a header line")).expect("json header")
}

pub fn events_are_built_only_when_someone_can_see_them<T: TestRuntime>() {
    T::block_on(async {
        use a2at_core::event::{EventSelection, EventType};
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        let wf = wide(&["alpha"], 2);

        // execute() with nobody watching: the run is told to build no events at all.
        let quiet = SharedBuffer::default();
        let result = engine
            .run(wf.clone(), echo_host())
            .record(quiet.clone())
            .execute()
            .await;
        assert!(result.success, "{:?}", result.error);
        assert_eq!(trace_header(&quiet)["config"]["events"], json!([]));

        // With a sink, every event is built and delivered.
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        let watched = SharedBuffer::default();
        let watched_result = engine
            .run(wf.clone(), echo_host())
            .record(watched.clone())
            .event_sink(move |e| sink_seen.lock().expect("events").push(e.kind))
            .execute()
            .await;
        assert_eq!(watched_result.history.len(), result.history.len());
        assert!(trace_header(&watched)["config"].get("events").is_none());
        let kinds = seen.lock().expect("events").clone();
        assert!(kinds.contains(&EventType::StepStart), "{kinds:?}");
        assert!(kinds.contains(&EventType::Complete), "{kinds:?}");

        // An explicit selection wins: only `complete`, plus the runtime's own `close`.
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink_seen = seen.clone();
        engine
            .run(wf, echo_host())
            .events(EventSelection::Only(vec![EventType::Complete]))
            .event_sink(move |e| sink_seen.lock().expect("events").push(e.kind))
            .execute()
            .await;
        assert_eq!(
            *seen.lock().expect("events"),
            vec![EventType::Complete, EventType::Close]
        );
    })
}

pub fn zero_or_negative_settings_are_refused_at_the_door_naming_the_field<T: TestRuntime>() {
    type Builder<T> = a2at_driver::EngineBuilder<<T as TestRuntime>::Rt>;
    type Sender<T> = a2at_driver::ExtensionSender<<T as TestRuntime>::Rt>;
    type SenderBuilder<T> = a2at_driver::ExtensionSenderBuilder<<T as TestRuntime>::Rt>;
    let card =
        || a2at_core::a2a::AgentCard::from_json_value(&ScriptedAgent::new("a").card()).unwrap();
    let zero = Duration::ZERO;
    type Set<B> = fn(B) -> B;
    let engine_cases: Vec<(&str, Set<Builder<T>>)> = vec![
        ("task_budget", |b| b.task_budget(Duration::ZERO)),
        ("callback_budget", |b| b.callback_budget(Duration::ZERO)),
        ("poll_interval", |b| b.poll_interval(Duration::ZERO)),
        ("cancel_budget", |b| b.cancel_budget(Duration::ZERO)),
        ("max_negotiation_exchanges", |b| {
            b.max_negotiation_exchanges(0)
        }),
        ("login_timeout", |b| b.login_timeout(Duration::ZERO)),
        ("max_in_flight", |b| b.max_in_flight(0)),
        ("max_in_flight_per_agent", |b| b.max_in_flight_per_agent(0)),
        ("history_length", |b| {
            let mut c = a2at_driver::EngineConfig::default();
            c.run.history_length = Some(-1);
            b.config(c)
        }),
    ];
    for (field, set) in engine_cases {
        let err = set(Engine::<T>::builder(vec![card()])).build().unwrap_err();
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    let sender_cases: Vec<(&str, Set<SenderBuilder<T>>)> = vec![
        ("send_budget", |b| b.send_budget(Duration::ZERO)),
        ("poll_interval", |b| b.poll_interval(Duration::ZERO)),
        ("cancel_budget", |b| b.cancel_budget(Duration::ZERO)),
        ("ack_timeout", |b| b.ack_timeout(Duration::ZERO)),
        ("login_timeout", |b| b.login_timeout(Duration::ZERO)),
    ];
    for (field, set) in sender_cases {
        let err = set(Sender::<T>::builder(vec![card()])).build().unwrap_err();
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    // Per run: the run is refused before anything is sent, with a typed error naming it.
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        let wf = wide(&["alpha"], 1);
        let runs = [
            (
                "task_budget",
                engine.run(wf.clone(), echo_host()).task_budget(zero),
            ),
            (
                "callback_budget",
                engine.run(wf.clone(), echo_host()).callback_budget(zero),
            ),
            (
                "max_negotiation_exchanges",
                engine
                    .run(wf.clone(), echo_host())
                    .max_negotiation_exchanges(0),
            ),
        ];
        for (field, run) in runs {
            let mut handle = run.spawn();
            assert!(
                handle.next_event().await.is_none(),
                "a refused run has no events"
            );
            let error = handle.result().await.error.expect("refused");
            assert_eq!(error.code, a2at_core::run::INVALID_CONFIG);
            assert!(error.message.contains(field), "{field}: {}", error.message);
        }
        assert_eq!(server.total_requests(), 0);
        let fine = engine
            .run(wf, echo_host())
            .task_budget(Duration::from_secs(30))
            .max_negotiation_exchanges(1)
            .execute()
            .await;
        assert!(fine.success, "{:?}", fine.error);
    });
}

/// `on_task` gets the request the engine keeps for the subtask. A host may keep it: the
/// engine then leaves it whole and copies the names its result needs; otherwise the result
/// takes them. Either way each result names its own subtask, and a kept request reads as it
/// was asked.
pub fn a_host_may_keep_its_task_requests_and_every_result_is_named_all_the_same<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        let kept = Arc::new(std::sync::Mutex::new(Vec::new()));
        let host = {
            let kept = kept.clone();
            ControlPointBuilder::new()
                .on_task(move |req| {
                    if req.instruction.starts_with("keep") {
                        kept.lock().unwrap().push(req.clone());
                    }
                    async move { Ok(MessageContent::text(&req.instruction)) }
                })
                .build()
        };
        let wf = workflow(json!({"name": "kept", "steps": [{"name": "s", "subtasks": [
            {"agent": "alpha", "skill": "echo", "description": "keep me"},
            {"agent": "alpha", "skill": "echo", "description": "let me go"},
            {"agent": "alpha", "skill": "echo", "description": "keep me too"}
        ]}]}));
        let result = engine
            .execute(Arc::new(wf), RunStart::default(), Arc::new(host))
            .await;
        assert!(result.success, "{:?}", result.error);
        let mut named: Vec<(String, u32, String, String, String)> = result
            .history
            .iter()
            .map(|h| {
                (
                    h.step_name.to_string(),
                    h.subtask_index,
                    h.agent_name.to_string(),
                    h.skill.to_string(),
                    h.task_description.to_string(),
                )
            })
            .collect();
        named.sort_by_key(|n| n.1);
        let expected = |i: u32, d: &str| {
            (
                "s".to_owned(),
                i,
                "alpha".to_owned(),
                "echo".to_owned(),
                d.to_owned(),
            )
        };
        assert_eq!(
            named,
            [
                expected(0, "keep me"),
                expected(1, "let me go"),
                expected(2, "keep me too")
            ]
        );
        let kept = kept.lock().unwrap();
        assert_eq!(kept.len(), 2);
        for request in kept.iter() {
            let result = result
                .history
                .iter()
                .find(|h| h.subtask_index == request.subtask_index)
                .expect("a result for each kept request");
            assert_eq!(request.task_id, result.task_id);
            assert_eq!(
                (
                    request.step_name.as_str(),
                    request.agent_name.as_str(),
                    request.skill.as_str(),
                    request.instruction.as_str()
                ),
                ("s", "alpha", "echo", result.task_description.as_str())
            );
        }
        let let_go = result
            .history
            .iter()
            .find(|h| h.subtask_index == 1)
            .unwrap();
        assert!(!let_go.task_id.is_empty());
    })
}
