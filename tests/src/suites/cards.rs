//! Cards that change while the engine runs: adding, replacing and removing cards on a live
//! engine, runs keeping the cards they started with, and unusable cards reported per card,
//! refusing only the runs and task calls that need that agent.

use std::sync::Arc;

use crate::ScriptedAgent;
use crate::loopback::LoopbackServer;
use a2at_core::a2a::AgentCard;
use a2at_core::host::{MessageContent, TaskStatus, codes};
use a2at_core::result::ExecutionResult;
use a2at_core::run::RunStart;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_driver::{
    BuiltControlPoint, CARD_UNUSABLE, CardErrorKind, ControlPointBuilder, card_from_json,
};
use futures::StreamExt;
use futures::channel::mpsc;
use serde_json::{Value, json};

use crate::runtime::TestRuntime;

type Engine<T> = a2at_driver::Engine<<T as TestRuntime>::Rt>;

/// One step sending one task to each of `agents`.
fn to(agents: &[&str]) -> Arc<ValidatedWorkflow> {
    let subtasks: Vec<Value> = agents
        .iter()
        .map(|a| json!({"agent": a, "description": format!("for {a}")}))
        .collect();
    let wf = json!({"name": "cards", "steps": [{"name": "s", "subtasks": subtasks}]});
    Arc::new(parse_and_validate(&wf.to_string()).expect("valid workflow"))
}

fn echo_host() -> Arc<BuiltControlPoint> {
    Arc::new(
        ControlPointBuilder::new()
            .on_task(|req| async move { Ok(MessageContent::text(&req.instruction)) })
            .build(),
    )
}

/// A host whose `on_task` says it was called on `entered`, then waits until `gate` is
/// released: a run held between its start and its first send.
fn gated_host(
    entered: mpsc::UnboundedSender<()>,
    gate: Arc<futures::lock::Mutex<()>>,
) -> Arc<BuiltControlPoint> {
    Arc::new(
        ControlPointBuilder::new()
            .on_task(move |req| {
                let entered = entered.clone();
                let gate = gate.clone();
                async move {
                    let _ = entered.unbounded_send(());
                    let _open = gate.lock().await;
                    Ok(MessageContent::text(&req.instruction))
                }
            })
            .build(),
    )
}

async fn run_on<T: TestRuntime>(engine: &Engine<T>, agents: &[&str]) -> ExecutionResult {
    engine
        .execute(to(agents), RunStart::default(), echo_host())
        .await
}

/// The card `server` serves for `name`.
fn card_of(server: &LoopbackServer, name: &str) -> AgentCard {
    server
        .cards()
        .into_iter()
        .find(|c| c.name == name)
        .expect("served card")
}

/// `name`'s card with its interface on a binding no engine speaks.
fn unreachable_card(name: &str) -> AgentCard {
    let mut v = ScriptedAgent::new(name).card();
    v["supportedInterfaces"][0]["protocolBinding"] = json!("CARRIER_PIGEON");
    AgentCard::from_json_value(&v).expect("parses")
}

/// `card` requiring a bearer token the engine has no credentials for.
fn locked(card: AgentCard) -> AgentCard {
    let mut v = card.to_json();
    v["securitySchemes"] = json!({"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}});
    v["securityRequirements"] = json!([{"schemes": {"bearer": {}}}]);
    AgentCard::from_json_value(&v).expect("parses")
}

fn sends(server: &LoopbackServer, agent: &str) -> usize {
    server.requests_to(agent, "SendMessage").len()
}

pub fn a_card_added_to_a_live_engine_serves_new_runs<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("beta"),
        ])
        .await;
        let engine = Engine::<T>::builder(vec![card_of(&server, "alpha")])
            .build()
            .expect("engine");
        let before = run_on::<T>(&engine, &["beta"]).await;
        assert!(!before.success);
        assert_eq!(
            before.history[0].error_code.as_deref(),
            Some(codes::AGENT_NOT_FOUND)
        );

        engine.add_card(card_of(&server, "beta")).expect("added");
        assert_eq!(engine.agent_names(), ["alpha", "beta"]);
        assert_eq!(engine.card("beta").map(|c| c.name), Some("beta".to_owned()));
        assert!(engine.directory().get("beta").is_some());
        let after = run_on::<T>(&engine, &["alpha", "beta"]).await;
        assert!(after.success, "{:?}", after.error);
        assert_eq!(sends(&server, "beta"), 1);
        let sent = engine
            .send_task("beta", MessageContent::text("direct"))
            .await;
        assert_eq!(sent.status, TaskStatus::Success, "{:?}", sent.error);

        // Adding a name the engine has is refused and changes nothing.
        let again = engine.add_card(unreachable_card("beta")).unwrap_err();
        assert_eq!(again.kind, CardErrorKind::AlreadyPresent);
        assert_eq!(again.agent, "beta");
        assert!(engine.card_errors().is_empty());
        assert!(run_on::<T>(&engine, &["beta"]).await.success);
    })
}

pub fn a_replaced_card_reaches_new_runs_while_a_started_run_keeps_the_old_one<T: TestRuntime>() {
    T::block_on(async {
        let old = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let new = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let engine = Engine::<T>::builder(old.cards()).build().expect("engine");

        // A run that starts now and is held before its send.
        let (entered_tx, mut entered) = mpsc::unbounded();
        let gate = Arc::new(futures::lock::Mutex::new(()));
        let held = gate.lock().await;
        let started = engine
            .run(to(&["alpha"]), gated_host(entered_tx, gate.clone()))
            .spawn();
        entered
            .next()
            .await
            .expect("the held run asked for its content");

        engine
            .replace_card(card_of(&new, "alpha"))
            .expect("replaced");
        let fresh = run_on::<T>(&engine, &["alpha"]).await;
        assert!(fresh.success, "{:?}", fresh.error);
        assert_eq!(sends(&new, "alpha"), 1, "the new run goes to the new card");
        assert_eq!(sends(&old, "alpha"), 0, "the held run has not sent yet");

        // Released after the replace, the held run still sends with the card it started with.
        drop(held);
        let result = started.result().await;
        assert!(result.success, "{:?}", result.error);
        assert_eq!(sends(&old, "alpha"), 1, "the started run kept the old card");
        assert_eq!(sends(&new, "alpha"), 1);

        // Replacing a name the engine does not have is refused and adds nothing.
        let unknown = engine.replace_card(card_of(&new, "alpha").renamed("gamma"));
        let e = unknown.unwrap_err();
        assert_eq!(
            (e.kind, e.agent.as_str()),
            (CardErrorKind::NotPresent, "gamma")
        );
        assert_eq!(engine.agent_names(), ["alpha"]);
    })
}

/// A card under another name (a test helper: cards are plain data).
trait Renamed {
    fn renamed(self, name: &str) -> AgentCard;
}

impl Renamed for AgentCard {
    fn renamed(mut self, name: &str) -> AgentCard {
        self.name = name.to_owned();
        self
    }
}

pub fn a_removed_card_fails_new_runs_typed_and_leaves_the_others_alone<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("beta"),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");

        let (entered_tx, mut entered) = mpsc::unbounded();
        let gate = Arc::new(futures::lock::Mutex::new(()));
        let held = gate.lock().await;
        let started = engine
            .run(to(&["beta"]), gated_host(entered_tx, gate.clone()))
            .spawn();
        entered
            .next()
            .await
            .expect("the held run asked for its content");

        assert!(engine.remove_card("beta"));
        assert!(!engine.remove_card("beta"), "already gone");
        assert_eq!(engine.agent_names(), ["alpha"]);
        assert!(engine.card("beta").is_none());

        let needs_beta = run_on::<T>(&engine, &["alpha", "beta"]).await;
        assert!(!needs_beta.success);
        let beta = needs_beta
            .history
            .iter()
            .find(|t| t.agent_name == "beta")
            .expect("beta's task");
        assert_eq!(beta.error_code.as_deref(), Some(codes::AGENT_NOT_FOUND));
        let task = engine.get_task("beta", "t").await.unwrap_err();
        assert_eq!(task.code, codes::AGENT_NOT_FOUND);
        let alpha_only = run_on::<T>(&engine, &["alpha"]).await;
        assert!(alpha_only.success, "{:?}", alpha_only.error);

        drop(held);
        let result = started.result().await;
        assert!(
            result.success,
            "the started run kept beta: {:?}",
            result.error
        );
        assert_eq!(
            sends(&server, "beta"),
            1,
            "only the started run reached beta"
        );
    })
}

pub fn an_engine_with_unusable_cards_builds_and_refuses_only_the_runs_that_need_them<
    T: TestRuntime,
>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("vault"),
        ])
        .await;
        let cards = vec![
            card_of(&server, "alpha"),
            locked(card_of(&server, "vault")),
            unreachable_card("pigeon"),
        ];
        let engine = Engine::<T>::builder(cards)
            .build()
            .expect("one bad card does not fail the build");
        assert_eq!(engine.agent_names(), ["alpha", "pigeon", "vault"]);
        let errors = engine.card_errors();
        let kinds: Vec<_> = errors.iter().map(|e| (e.agent.as_str(), e.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("pigeon", CardErrorKind::NoUsableInterface),
                ("vault", CardErrorKind::Auth)
            ]
        );
        assert!(errors[1].to_string().contains("vault"), "{}", errors[1]);
        assert!(errors[1].problem.contains("bearer"), "{}", errors[1]);
        assert!(
            engine.card("vault").is_none(),
            "an unusable card is not served"
        );

        let fine = run_on::<T>(&engine, &["alpha"]).await;
        assert!(fine.success, "{:?}", fine.error);
        for agent in ["vault", "pigeon"] {
            let refused = run_on::<T>(&engine, &["alpha", agent]).await;
            assert!(!refused.success);
            let error = refused.error.expect("a run error");
            assert_eq!(error.code, CARD_UNUSABLE, "{agent}");
            assert!(error.message.contains(agent), "{}", error.message);
            assert!(refused.history.is_empty(), "refused before any task");
            let direct = engine.send_task(agent, MessageContent::text("x")).await;
            assert_eq!(direct.error_code.as_deref(), Some(CARD_UNUSABLE), "{agent}");
            let task = engine.get_task(agent, "t").await.unwrap_err();
            assert_eq!(task.code, CARD_UNUSABLE, "{agent}");
            assert!(task.message.contains(agent), "{}", task.message);
        }
        assert_eq!(sends(&server, "vault"), 0, "never sent unauthenticated");
        assert_eq!(sends(&server, "alpha"), 1, "refused runs sent nothing");

        // A SELF_LOOP step naming the agent sends nothing to it: the run is not refused.
        let local = parse_and_validate(
            &json!({"steps": [{"name": "l", "step_type": "SELF_LOOP",
                "subtasks": [{"agent": "vault", "description": "local"}]}]})
            .to_string(),
        )
        .expect("valid");
        let host = ControlPointBuilder::new()
            .on_self_task(|_| async {
                Ok(a2at_core::host::TaskResult::success(vec![json!("done")]))
            })
            .build();
        let result = engine
            .execute(local, RunStart::default(), Arc::new(host))
            .await;
        assert!(result.success, "{:?}", result.error);

        // Fixing the card makes the agent usable for new runs.
        engine
            .replace_card(card_of(&server, "vault"))
            .expect("fixed");
        assert_eq!(engine.card_errors().len(), 1);
        assert!(engine.card_error("vault").is_none());
        let fixed = run_on::<T>(&engine, &["vault"]).await;
        assert!(fixed.success, "{:?}", fixed.error);

        // Breaking it again makes it unusable again, with the reason.
        let e = engine.replace_card(unreachable_card("vault")).unwrap_err();
        assert_eq!(e.kind, CardErrorKind::NoUsableInterface);
        assert_eq!(engine.card_error("vault"), Some(e));
        let refused = run_on::<T>(&engine, &["vault"]).await;
        assert_eq!(
            refused.error.map(|e| e.code).as_deref(),
            Some(CARD_UNUSABLE)
        );

        // A closed engine says so first, whatever the cards.
        engine
            .close(a2at_driver::CloseMode::Cancel, std::time::Duration::ZERO)
            .await;
        let closed = run_on::<T>(&engine, &["vault"]).await;
        assert_eq!(
            closed.error.map(|e| e.code).as_deref(),
            Some(a2at_driver::ENGINE_CLOSED)
        );
        let task = engine.get_task("vault", "t").await.unwrap_err();
        assert_eq!(task.code, a2at_driver::ENGINE_CLOSED);
    })
}

pub fn set_cards_reports_each_unusable_card_and_refuses_a_repeated_name<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("beta"),
        ])
        .await;
        let engine = Engine::<T>::builder(vec![card_of(&server, "alpha")])
            .build()
            .expect("engine");

        let repeated = engine.set_cards(vec![card_of(&server, "beta"), card_of(&server, "beta")]);
        assert!(
            matches!(repeated, Err(a2at_driver::EngineError::Cards(_))),
            "{repeated:?}"
        );
        assert_eq!(
            engine.agent_names(),
            ["alpha"],
            "a refused set changes nothing"
        );

        let errors = engine
            .set_cards(vec![card_of(&server, "beta"), unreachable_card("pigeon")])
            .expect("set");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].agent, "pigeon");
        assert_eq!(engine.agent_names(), ["beta", "pigeon"]);
        assert!(run_on::<T>(&engine, &["beta"]).await.success);
        let gone = run_on::<T>(&engine, &["alpha"]).await;
        assert_eq!(
            gone.history[0].error_code.as_deref(),
            Some(codes::AGENT_NOT_FOUND)
        );

        // A blank name cannot be added (no agent to blame), and nothing changes.
        let blank = engine
            .upsert_card(card_of(&server, "beta").renamed(" "))
            .unwrap_err();
        assert_eq!(blank.kind, CardErrorKind::Invalid);
        assert_eq!(engine.agent_names(), ["beta", "pigeon"]);
    })
}

pub fn json_cards_are_normalised_and_a_broken_one_names_its_agent<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![ScriptedAgent::new("alpha")]).await;
        let engine = Engine::<T>::builder(Vec::new()).build().expect("engine");
        // A dict card with a flat (OpenAPI-style) security scheme: normalised on parsing.
        let mut v = ScriptedAgent::new("alpha").card_at(&format!("{}/alpha", server.base_url()));
        v["securitySchemes"] = json!({"key": {"type": "apiKey", "in": "header", "name": "X-Key"}});
        let card = card_from_json(&v).expect("normalised and parsed");
        assert!(card.security_schemes.contains_key("key"));
        engine.add_card(card).expect("added");
        assert!(run_on::<T>(&engine, &["alpha"]).await.success);

        let broken = card_from_json(&json!({"name": "beta", "capabilities": 7})).unwrap_err();
        assert_eq!(
            (broken.agent.as_str(), broken.kind),
            ("beta", CardErrorKind::Invalid)
        );
        let nameless = card_from_json(&json!([1])).unwrap_err();
        assert_eq!(nameless.agent, "");
    })
}

pub fn card_changes_racing_run_starts_never_break_a_run<T: TestRuntime>() {
    T::block_on(async {
        let server = LoopbackServer::start(vec![
            ScriptedAgent::new("alpha"),
            ScriptedAgent::new("beta"),
        ])
        .await;
        let engine = Engine::<T>::builder(server.cards())
            .build()
            .expect("engine");
        let alpha = card_of(&server, "alpha");
        let beta = card_of(&server, "beta");
        let churn = {
            let engine = engine.clone();
            T::spawn(async move {
                for i in 0..200 {
                    match i % 4 {
                        0 => assert!(engine.remove_card("beta")),
                        1 => engine.add_card(beta.clone()).expect("added"),
                        2 => {
                            let e = engine.replace_card(unreachable_card("beta")).unwrap_err();
                            assert_eq!(e.kind, CardErrorKind::NoUsableInterface);
                        }
                        _ => {
                            let errors = engine.set_cards(vec![alpha.clone(), beta.clone()]);
                            assert!(errors.expect("set").is_empty());
                        }
                    }
                    if i % 8 == 0 {
                        T::sleep(std::time::Duration::from_millis(1)).await;
                    }
                }
            })
        };
        let runs: Vec<_> = (0..24)
            .map(|i| {
                let engine = engine.clone();
                T::spawn(async move {
                    let agents: &[&str] = if i % 2 == 0 { &["alpha"] } else { &["beta"] };
                    (i, run_on::<T>(&engine, agents).await)
                })
            })
            .collect();
        churn.await;
        for run in runs {
            let (i, result) = run.await;
            if i % 2 == 0 {
                assert!(result.success, "alpha is never touched: {:?}", result.error);
            } else if !result.success {
                // The card set the run took had beta absent (its task fails) or unusable (the
                // run is refused); with beta usable it succeeded.
                let refused = result.error.as_ref().map(|e| e.code.as_str()) == Some(CARD_UNUSABLE);
                let absent = result.history.first().and_then(|t| t.error_code.as_deref())
                    == Some(codes::AGENT_NOT_FOUND);
                assert!(refused || absent, "{result:?}");
            }
        }
        // The last change left both cards usable.
        assert!(engine.card_errors().is_empty());
        assert!(run_on::<T>(&engine, &["alpha", "beta"]).await.success);
    })
}
