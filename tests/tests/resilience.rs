//! Fault handling rules in the deterministic simulator: what is resent and with which message
//! id, `Retry-After`, the budget bound, the retry events, and agents that misbehave on the wire.

use std::time::Duration;

use a2at_core::RetryPolicy;
use a2at_core::host::{TaskStatus, codes};
use a2at_core::io::OpPurpose;
use a2at_core::run::{RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_tests::agent::AgentFault;
use a2at_tests::{Plan, ScriptedAgent, ScriptedHost, Sim, SimOutcome, directory, simulate};
use serde_json::{Value, json};

fn run(agent: ScriptedAgent, config: RunConfig) -> SimOutcome {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]});
    simulate(&wf, vec![agent], ScriptedHost::default(), config)
}

fn message_id(out: &SimOutcome, method: &str, n: usize) -> String {
    out.requests_to("a", method)[n]
        .message()
        .and_then(|m| m.get("messageId"))
        .and_then(Value::as_str)
        .unwrap()
        .to_owned()
}

#[test]
fn a_send_that_never_reached_the_agent_goes_again_with_the_same_message_id() {
    let agent = ScriptedAgent::new("a").fault_on(
        "SendMessage",
        1,
        AgentFault::Unavailable { retry_after: None },
    );
    let out = run(agent, RunConfig::default());
    assert!(out.result().success);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 2);
    assert_eq!(
        message_id(&out, "SendMessage", 0),
        message_id(&out, "SendMessage", 1)
    );
}

#[test]
fn a_negotiation_reply_refused_by_an_overloaded_agent_is_resent_unchanged() {
    use a2at_core::a2at::{NEGOTIATION_T_URI, Performative};
    use a2at_core::host::{MessageContent, NegotiationReply};
    use a2at_tests::agent::Negotiation;
    use a2at_tests::host::now;
    let agent = ScriptedAgent::new("a")
        .by_default(Plan::Negotiate(Negotiation::rounds(1, 3)))
        .fault_on(
            "SendMessage",
            2,
            AgentFault::Unavailable { retry_after: None },
        );
    let host = ScriptedHost::default()
        .on_task(|r| {
            now(Ok(
                MessageContent::text(r.instruction.clone()).with_extension(NEGOTIATION_T_URI)
            ))
        })
        .on_negotiation(|r| {
            now(Ok(NegotiationReply::Send {
                content: r.reply(Performative::Accept, "Accept").unwrap(),
            }))
        });
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]});
    let out = simulate(&wf, vec![agent], host, RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history);
    let sends = out.requests_to("a", "SendMessage");
    assert_eq!(sends.len(), 3, "first send, refused reply, resent reply");
    assert_eq!(
        message_id(&out, "SendMessage", 1),
        message_id(&out, "SendMessage", 2)
    );
    assert_ne!(
        message_id(&out, "SendMessage", 0),
        message_id(&out, "SendMessage", 1)
    );
    // One exchange with the host: resending is not asking again.
    assert_eq!(out.events("negotiation_request").len(), 1);
}

#[test]
fn retry_after_is_honoured_when_longer_than_the_backoff() {
    let agent = ScriptedAgent::new("a").fault_on(
        "SendMessage",
        1,
        AgentFault::Unavailable {
            retry_after: Some(3),
        },
    );
    let out = run(agent, RunConfig::default());
    assert!(out.result().success);
    let retries = out.events("agent_retry");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0]["delay_ms"], 3000);
    assert_eq!(retries[0]["action"], "resend");
    assert_eq!(retries[0]["attempt"], 1);
    assert_eq!(retries[0]["reason"], "a2a.http.503");
}

#[test]
fn a_retry_that_cannot_start_inside_the_budget_gives_up_at_once() {
    let agent = ScriptedAgent::new("a").fault_on(
        "SendMessage",
        1,
        AgentFault::Unavailable {
            retry_after: Some(60),
        },
    );
    let config = RunConfig {
        task_budget: Duration::from_secs(10),
        ..RunConfig::default()
    };
    let out = run(agent, config);
    let t = &out.result().history[0];
    // The agent's own answer is the error, not a budget timeout ten seconds later.
    assert_eq!(t.error_code.as_deref(), Some("a2a.http.503"), "{t:?}");
    let attempts = t.error_details.as_ref().unwrap()["attempts"]
        .as_array()
        .unwrap();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["next"], "give_up");
    assert_eq!(attempts[0]["fault"], "a2a.http.503");
    assert_eq!(attempts[0]["httpStatus"], 503);
    assert!(
        attempts[0]["why"].as_str().unwrap().contains("budget"),
        "{attempts:?}"
    );
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    assert!(out.events("agent_retry").is_empty());
}

#[test]
fn attempts_count_again_from_zero_after_a_successful_observation() {
    // Three cuts in a row would exhaust a policy of two attempts; a successful resubscription
    // in between resets the count.
    let agent = ScriptedAgent::new("a")
        .streaming()
        .by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]))
        .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2))
        .fault_on(
            "SubscribeToTask",
            1,
            AgentFault::Unavailable { retry_after: None },
        )
        // The second resubscription delivers its snapshot and one more event, then breaks.
        .fault_on("SubscribeToTask", 2, AgentFault::CutAfter(2))
        .fault_on(
            "SubscribeToTask",
            3,
            AgentFault::Unavailable { retry_after: None },
        );
    let config = RunConfig {
        retry: RetryPolicy {
            attempts: 2,
            ..RetryPolicy::default()
        },
        ..RunConfig::default()
    };
    let out = run(agent, config);
    assert!(out.result().success, "{:?}", out.result().history);
    let attempts: Vec<u64> = out
        .events("agent_retry")
        .iter()
        .map(|e| e["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 1, 2]);
}

#[test]
fn retry_events_follow_the_run_event_selection() {
    let agent = ScriptedAgent::new("a").fault_on(
        "SendMessage",
        1,
        AgentFault::Unavailable { retry_after: None },
    );
    let config = RunConfig {
        events: a2at_core::EventSelection::None,
        ..RunConfig::default()
    };
    let out = run(agent, config);
    assert!(out.result().success);
    assert!(out.events("agent_retry").is_empty());
}

fn events_agent(events: Vec<Value>) -> ScriptedAgent {
    ScriptedAgent::new("a")
        .streaming()
        .by_default(Plan::Events(events))
}

fn task(state: &str) -> Value {
    json!({"task": {"id": "$TASK", "contextId": "$CTX", "status": {"state": state}}})
}

fn status(state: &str) -> Value {
    json!({"statusUpdate": {"taskId": "$TASK", "contextId": "$CTX", "status": {"state": state}}})
}

fn artifact(text: &str, append: bool) -> Value {
    json!({"artifactUpdate": {"taskId": "$TASK", "contextId": "$CTX", "append": append,
        "artifact": {"artifactId": "r", "parts": [{"text": text}]}}})
}

#[test]
fn duplicate_final_events_and_late_chunks_are_not_counted() {
    let out = run(
        events_agent(vec![
            task("TASK_STATE_SUBMITTED"),
            artifact("answer", false),
            status("TASK_STATE_COMPLETED"),
            status("TASK_STATE_COMPLETED"),
            artifact(" late", true),
            status("TASK_STATE_FAILED"),
        ]),
        RunConfig::default(),
    );
    let r = out.result();
    assert!(r.success);
    assert_eq!(r.history.len(), 1);
    assert_eq!(r.history[0].outputs, vec![json!("answer")]);
    assert_eq!(out.events("task_response").len(), 1);
    assert!(out.requests_to("a", "CancelTask").is_empty());
}

#[test]
fn the_first_final_state_decides() {
    let out = run(
        events_agent(vec![
            task("TASK_STATE_WORKING"),
            status("TASK_STATE_FAILED"),
            status("TASK_STATE_COMPLETED"),
        ]),
        RunConfig::default(),
    );
    let t = &out.result().history[0];
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(t.error_code.as_deref(), Some(codes::REMOTE_TASK_FAILED));
}

#[test]
fn a_task_id_that_changes_mid_stream_is_a_protocol_error_and_the_known_task_is_cancelled() {
    let out = run(
        events_agent(vec![
            task("TASK_STATE_WORKING"),
            json!({"statusUpdate": {"taskId": "someone-else", "contextId": "$CTX",
                "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ]),
        RunConfig::default(),
    );
    let t = &out.result().history[0];
    assert_eq!(
        t.error_code.as_deref(),
        Some(codes::REMOTE_IDENTITY_CHANGED)
    );
    assert!(t.error.as_ref().unwrap().contains("someone-else"));
    let cancels = out.requests_to("a", "CancelTask");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0].params["id"], "a-t1");
}

#[test]
fn events_for_another_context_are_a_protocol_error() {
    let out = run(
        events_agent(vec![
            json!({"task": {"id": "$TASK", "contextId": "not-ours",
            "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ]),
        RunConfig::default(),
    );
    let t = &out.result().history[0];
    assert_eq!(
        t.error_code.as_deref(),
        Some(codes::REMOTE_IDENTITY_CHANGED)
    );
    assert!(t.outputs.is_empty());
}

#[test]
fn the_snapshot_read_after_a_break_replaces_half_received_chunks() {
    // The broken stream delivered half an artifact; the task finished meanwhile, and the
    // snapshot read after the break holds its real artifacts. The half must not survive.
    let out = run(
        events_agent(vec![
            task("TASK_STATE_SUBMITTED"),
            artifact("half ", false),
            artifact("rest", true),
            status("TASK_STATE_COMPLETED"),
        ])
        .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2)),
        RunConfig::default(),
    );
    let t = &out.result().history[0];
    assert_eq!(t.status, TaskStatus::Success, "{t:?}");
    assert_eq!(t.outputs, vec![json!("done: x")]);
    // Refused for a final task, the resubscription falls back to one GetTask.
    assert_eq!(out.requests_to("a", "SubscribeToTask").len(), 1);
    assert_eq!(out.requests_to("a", "GetTask").len(), 1);
    assert_eq!(out.requests_to("a", "SendStreamingMessage").len(), 1);
}

#[test]
fn a_refused_connection_is_resent_until_the_attempts_are_used_up() {
    let agent = ScriptedAgent::new("a").by_default(Plan::Unreachable);
    let config = RunConfig {
        retry: RetryPolicy {
            attempts: 3,
            ..RetryPolicy::default()
        },
        ..RunConfig::default()
    };
    let out = run(agent, config);
    let t = &out.result().history[0];
    assert_eq!(t.error_code.as_deref(), Some(codes::REMOTE_NO_RESPONSE));
    assert_eq!(t.error_details.as_ref().unwrap()["transport"], "connect");
    let retries = out.events("agent_retry");
    let seen: Vec<(u64, &str, &str)> = retries
        .iter()
        .map(|e| {
            (
                e["attempt"].as_u64().unwrap(),
                e["reason"].as_str().unwrap(),
                e["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, "transport.connect", "resend"),
            (2, "transport.connect", "resend"),
            (3, "transport.connect", "resend")
        ]
    );
    // Nothing reached the agent, so the same message was tried four times, nothing was looked
    // up and nothing cancelled.
    assert_eq!(out.requests_to("a", "SendMessage").len(), 4);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 0);
    assert_eq!(out.requests_to("a", "CancelTask").len(), 0);
    assert_eq!(
        message_id(&out, "SendMessage", 0),
        message_id(&out, "SendMessage", 3)
    );
    let attempts = t.error_details.as_ref().unwrap()["attempts"]
        .as_array()
        .unwrap();
    assert_eq!(attempts.len(), 4);
    assert_eq!(attempts[3]["next"], "give_up");
    assert!(
        attempts[3]["why"]
            .as_str()
            .unwrap()
            .contains("3 consecutive")
    );
}

#[test]
fn a_refused_observation_observes_again_and_never_resends_the_message() {
    // Connection refused proves that GetTask never reached the agent, but it is not a send:
    // the answer is to observe again, not to send the message a second time.
    let agent = ScriptedAgent::new("a")
        .by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]))
        .fault_on("GetTask", 1, AgentFault::Refused);
    let out = run(agent, RunConfig::default());
    assert!(out.result().success);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    assert_eq!(out.requests_to("a", "GetTask").len(), 2);
    let retries = out.events("agent_retry");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0]["action"], "get_task");
    assert_eq!(retries[0]["reason"], "transport.connect");
}

#[test]
fn a_lost_answer_is_found_by_its_context_in_the_simulator_too() {
    let agent = ScriptedAgent::new("a").fault_on("SendMessage", 1, AgentFault::Reset);
    let out = run(agent, RunConfig::default());
    assert!(out.result().success);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    let retries = out.events("agent_retry");
    assert_eq!(retries[0]["action"], "list_tasks");
    assert_eq!(retries[0]["reason"], "transport.io");
}

#[test]
fn a_successful_poll_resets_the_attempt_count() {
    // With one attempt allowed, two 503s on GetTask survive only because a successful GetTask
    // lies between them.
    let agent = ScriptedAgent::new("a")
        .by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]))
        .fault_on("GetTask", 1, AgentFault::Unavailable { retry_after: None })
        .fault_on("GetTask", 3, AgentFault::Unavailable { retry_after: None });
    let config = RunConfig {
        retry: RetryPolicy {
            attempts: 1,
            ..RetryPolicy::default()
        },
        ..RunConfig::default()
    };
    let out = run(agent, config);
    assert!(out.result().success, "{:?}", out.result().history);
    let attempts: Vec<u64> = out
        .events("agent_retry")
        .iter()
        .map(|e| e["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 1]);
}

#[test]
fn once_resubscription_was_refused_retries_announce_get_task() {
    let agent = ScriptedAgent::new("a")
        .streaming()
        .without_resubscribe()
        .by_default(Plan::States(vec![
            "TASK_STATE_WORKING",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
        ]))
        .fault_on("SendStreamingMessage", 1, AgentFault::CutAfter(2))
        .fault_on("GetTask", 1, AgentFault::Unavailable { retry_after: None });
    let out = run(agent, RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history);
    let actions: Vec<&str> = out
        .events("agent_retry")
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["resubscribe", "get_task"]);
    assert_eq!(out.requests_to("a", "SubscribeToTask").len(), 1);
}

#[test]
fn attempts_record_when_each_fault_happened() {
    // The simulator answers after a millisecond: each fault is recorded about its delay after
    // the previous one, in milliseconds of run time.
    let agent = ScriptedAgent::new("a").by_default(Plan::Unreachable);
    let config = RunConfig {
        retry: RetryPolicy {
            attempts: 3,
            base_delay: Duration::from_millis(1500),
            max_delay: Duration::from_secs(10),
        },
        ..RunConfig::default()
    };
    let out = run(agent, config);
    let t = &out.result().history[0];
    let attempts = t.error_details.as_ref().unwrap()["attempts"]
        .as_array()
        .unwrap();
    assert!(attempts[0]["atMs"].as_u64().unwrap() <= 5, "{attempts:?}");
    for pair in attempts.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let expected = a["atMs"].as_u64().unwrap() + a["delayMs"].as_u64().unwrap();
        let at = b["atMs"].as_u64().unwrap();
        assert!((expected..=expected + 5).contains(&at), "{attempts:?}");
    }
    assert!(attempts[1]["atMs"].as_u64().unwrap() >= 750);
}

#[test]
fn a_failed_lookup_reports_the_sends_own_fault() {
    // The agent has no ListTasks: the subtask fails with what the lost answer gave (a reset),
    // not with the lookup's METHOD_NOT_FOUND.
    let agent =
        ScriptedAgent::new("a")
            .without_list_tasks()
            .fault_on("SendMessage", 1, AgentFault::Reset);
    let out = run(agent, RunConfig::default());
    let t = &out.result().history[0];
    assert_eq!(t.error_code.as_deref(), Some(codes::REMOTE_NO_RESPONSE));
    assert_eq!(t.error_details.as_ref().unwrap()["transport"], "io");
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
}

#[test]
fn too_many_requests_is_resent_after_its_retry_after() {
    let agent = ScriptedAgent::new("a").fault_on(
        "SendMessage",
        1,
        AgentFault::TooManyRequests {
            retry_after: Some(2),
        },
    );
    let out = run(agent, RunConfig::default());
    assert!(out.result().success);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 2);
    let retries = out.events("agent_retry");
    assert_eq!(retries[0]["reason"], "a2a.http.429");
    assert_eq!(retries[0]["action"], "resend");
    assert_eq!(retries[0]["delay_ms"], 2000);
}

#[test]
fn a_retry_due_exactly_at_the_deadline_is_not_made() {
    // The refusal arrives after the simulator's one millisecond; a retry two seconds later would
    // start exactly when the budget ends, which is too late: the agent's answer is the error.
    let agent = ScriptedAgent::new("a").fault_on(
        "SendMessage",
        1,
        AgentFault::Unavailable {
            retry_after: Some(2),
        },
    );
    let config = RunConfig {
        task_budget: Duration::from_millis(2001),
        ..RunConfig::default()
    };
    let out = run(agent, config);
    let t = &out.result().history[0];
    assert_eq!(t.error_code.as_deref(), Some("a2a.http.503"), "{t:?}");
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    // One millisecond more and the retry fits.
    let agent = ScriptedAgent::new("a").fault_on(
        "SendMessage",
        1,
        AgentFault::Unavailable {
            retry_after: Some(2),
        },
    );
    let config = RunConfig {
        task_budget: Duration::from_millis(2002),
        ..RunConfig::default()
    };
    let out = run(agent, config);
    assert!(out.result().success, "{:?}", out.result().history);
}

#[test]
fn after_a_restart_a_send_the_agent_never_saw_goes_again_with_the_same_message_id() {
    // The lookup finds no task in the message's context: the message never became a task, so
    // it is sent again, and the agent can tell it is the same one.
    let agent = ScriptedAgent::new("a").fault_on("SendMessage", 1, AgentFault::RestartBefore);
    let out = run(agent, RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().error);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 2);
    assert_eq!(
        message_id(&out, "SendMessage", 0),
        message_id(&out, "SendMessage", 1)
    );
}

#[test]
fn after_a_restart_a_send_the_agent_processed_is_found_and_never_sent_again() {
    let agent = ScriptedAgent::new("a").fault_on("SendMessage", 1, AgentFault::RestartAfter);
    let out = run(agent, RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().error);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
}

#[test]
fn a_lost_answer_without_a_restart_still_fails_when_the_lookup_finds_nothing() {
    // Outside a restart nothing changes: an unknown outcome is never resent.
    let plain = ScriptedAgent::new("a")
        .by_default(Plan::BareMessage("hi"))
        .fault_on("SendMessage", 1, AgentFault::Reset);
    let out = run(plain, RunConfig::default());
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    assert!(!out.result().success);
}

/// The one-subtask workflow of [`run`] with `latency` on every answer, the host cancelling the
/// run at `cancel_at`.
fn run_cancelled_at(
    agent: ScriptedAgent,
    config: RunConfig,
    latency: Duration,
    cancel_at: Duration,
) -> SimOutcome {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]});
    let wf = parse_and_validate(&wf.to_string()).expect("valid workflow");
    let dir = directory(std::slice::from_ref(&agent));
    Sim::new(
        wf,
        dir,
        vec![agent],
        ScriptedHost::default(),
        config,
        RunStart::default(),
    )
    .with_latency(latency)
    .cancel_at(cancel_at)
    .drive_bounded(100_000)
}

/// An agent that processes the first send, creating a task that keeps working, and loses its
/// answer.
fn losing_the_first_answer() -> ScriptedAgent {
    ScriptedAgent::new("a")
        .by_default(Plan::States(vec!["TASK_STATE_WORKING"]))
        .fault_on("SendMessage", 1, AgentFault::Reset)
}

fn retrying_after(delay: Duration) -> RunConfig {
    RunConfig {
        retry: RetryPolicy {
            attempts: 3,
            base_delay: delay,
            max_delay: delay,
        },
        ..RunConfig::default()
    }
}

/// The task the lost send created was found by the one lookup and cancelled: nothing is left
/// running on the agent (TO-3).
fn assert_found_once_and_cancelled(out: &SimOutcome) {
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    assert_eq!(out.requests_to("a", "CancelTask").len(), 1);
    assert_nothing_left_running(out);
}

fn assert_nothing_left_running(out: &SimOutcome) {
    let open = out.agents["a"].open_tasks();
    assert!(open.is_empty(), "{open:?}");
}

#[test]
fn a_run_cancelled_while_waiting_to_look_up_a_lost_send_still_cancels_its_task() {
    // The lookup would start half a second to a second after the reset; the run is cancelled
    // before that, so the lookup is made as cleanup.
    // Over gRPC both cleanup calls tell the agent the cleanup budget, not the task's.
    for grpc in [false, true] {
        let agent = losing_the_first_answer();
        let agent = if grpc { agent.grpc() } else { agent };
        let config = RunConfig {
            task_budget: Duration::from_secs(60),
            cancel_budget: Duration::from_secs(5),
            ..retrying_after(Duration::from_secs(1))
        };
        let out = run_cancelled_at(
            agent,
            config,
            Duration::from_millis(1),
            Duration::from_millis(100),
        );
        assert_eq!(out.result().history[0].status, TaskStatus::Cancelled);
        assert_found_once_and_cancelled(&out);
        let lookup = &out.requests_to("a", "ListTasks")[0];
        let cancel = &out.requests_to("a", "CancelTask")[0];
        assert_eq!(lookup.purpose, OpPurpose::Lookup);
        assert_eq!(cancel.purpose, OpPurpose::Cancel);
        let budget = grpc.then_some("5000000u");
        assert_eq!(lookup.header("grpc-timeout"), budget, "{grpc}");
        assert_eq!(cancel.header("grpc-timeout"), budget, "{grpc}");
    }
}

#[test]
fn a_run_cancelled_while_a_lookup_is_on_its_way_reads_it_and_cancels_the_task_it_names() {
    // With 300 ms of latency the reset arrives at 300 ms, the lookup leaves 50 to 100 ms later
    // and its answer arrives after the cancel at 500 ms: it is read, not dropped, and no second
    // lookup is made.
    let out = run_cancelled_at(
        losing_the_first_answer(),
        retrying_after(Duration::from_millis(100)),
        Duration::from_millis(300),
        Duration::from_millis(500),
    );
    assert_eq!(out.result().history[0].status, TaskStatus::Cancelled);
    assert_found_once_and_cancelled(&out);
}

#[test]
fn a_lost_send_that_is_not_retried_is_still_looked_up_to_cancel_its_task() {
    // Without retries the subtask fails with the send's own fault at once; the lookup is made
    // as cleanup all the same.
    let config = RunConfig {
        retry: RetryPolicy::FAIL_FAST,
        ..RunConfig::default()
    };
    let out = run(losing_the_first_answer(), config);
    let t = &out.result().history[0];
    assert_eq!(t.error_code.as_deref(), Some(codes::REMOTE_NO_RESPONSE));
    assert!(out.events("agent_retry").is_empty());
    assert_found_once_and_cancelled(&out);
}

#[test]
fn a_cleanup_lookup_leaves_a_task_that_is_already_final_alone() {
    let agent = ScriptedAgent::new("a").fault_on("SendMessage", 1, AgentFault::Reset);
    let config = RunConfig {
        retry: RetryPolicy::FAIL_FAST,
        ..RunConfig::default()
    };
    let out = run(agent, config);
    assert!(!out.result().success);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    assert_eq!(out.requests_to("a", "CancelTask").len(), 0);
}

#[test]
fn a_cleanup_lookup_cancels_the_task_of_its_own_context_only() {
    // Two subtasks on one agent that lists every context's tasks, the other subtask's first:
    // the lost send's cleanup must cancel its own task, not the first one listed.
    let wf = json!({"steps": [{"name": "s", "subtasks": [
        {"agent": "a", "description": "x"}, {"agent": "a", "description": "y"}]}]});
    let agent = ScriptedAgent::new("a")
        .listing_every_context()
        .by_default(Plan::States(vec!["TASK_STATE_WORKING"]))
        .fault_on("SendMessage", 2, AgentFault::Reset);
    let config = RunConfig {
        retry: RetryPolicy::FAIL_FAST,
        task_budget: Duration::from_secs(5),
        ..RunConfig::default()
    };
    let out = simulate(&wf, vec![agent], ScriptedHost::default(), config);
    assert!(!out.result().success);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    assert_nothing_left_running(&out);
}

#[test]
fn a_send_the_agent_answered_with_an_error_is_not_looked_up() {
    // The agent answered: it said the message made no task, so there is nothing to find.
    let agent = ScriptedAgent::new("a").by_default(Plan::Reject {
        status: 400,
        code: -32602,
        reason: "INVALID_PARAMS",
    });
    let out = run(agent, RunConfig::default());
    assert!(!out.result().success);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 0);
}
