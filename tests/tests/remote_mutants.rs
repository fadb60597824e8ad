//! Rules of one remote subtask's lifecycle (`core/src/remote.rs`) that need simulated agents and
//! that no other scenario pinned down; each was a surviving mutant of that file.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2at_core::a2at::Performative;
use a2at_core::host::{NegotiationReply, TaskExecutionResult, codes};
use a2at_core::io::{Input, OpPurpose, Output};
use a2at_core::run::RunConfig;
use a2at_core::{OpId, RetryPolicy, Timestamp};
use a2at_tests::agent::{AgentFault, NEGOTIATION_T, Negotiation, Propose};
use a2at_tests::host::now;
use a2at_tests::workloads::accepting_host;
use a2at_tests::{Observed, Plan, ScriptedAgent, ScriptedHost, SimOutcome, simulate};
use serde_json::json;

/// One step with one subtask for agent `a`.
fn run(agent: ScriptedAgent, host: ScriptedHost, config: RunConfig) -> SimOutcome {
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]});
    simulate(&wf, vec![agent], host, config)
}

fn subtask(out: &SimOutcome) -> &TaskExecutionResult {
    &out.result().history[0]
}

fn budget(secs: u64) -> RunConfig {
    RunConfig {
        task_budget: Duration::from_secs(secs),
        ..RunConfig::default()
    }
}

/// A budget that expires is a negotiation failure once the subtask negotiated, even while it
/// only waits for the agent after a reply; a subtask that never negotiated reports no
/// negotiation failure.
#[test]
fn a_timeout_is_a_negotiation_failure_exactly_when_the_subtask_negotiated() {
    // The agent repeats the answered Propose forever: the subtask waits (polling) after one
    // exchange until the budget ends.
    let repeating = Negotiation {
        repeat_same: true,
        ..Negotiation::rounds(1, 3)
    };
    let agent = ScriptedAgent::new("a").by_default(Plan::Negotiate(repeating));
    let out = run(agent, accepting_host(), budget(3));
    assert_eq!(subtask(&out).error_code.as_deref(), Some(codes::TIMEOUT));
    let failed = out.events("negotiation_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["errorType"], codes::TIMEOUT);
    assert_eq!(failed[0]["exchange"], 1);

    let agent = ScriptedAgent::new("a").by_default(Plan::Hang);
    let out = run(agent, ScriptedHost::default(), budget(3));
    assert_eq!(subtask(&out).error_code.as_deref(), Some(codes::TIMEOUT));
    assert!(out.events("negotiation_failed").is_empty());
}

/// The lookup of a send whose answer was lost is itself an exchange that can break: it is
/// looked up again, and the task it then finds is followed without sending the message again.
#[test]
fn a_lookup_that_breaks_is_made_again() {
    let agent = ScriptedAgent::new("a")
        .fault_on("SendMessage", 1, AgentFault::Reset)
        .fault_on("ListTasks", 1, AgentFault::Reset);
    let out = run(agent, ScriptedHost::default(), RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 1);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 2);
    let actions: Vec<_> = out
        .events("agent_retry")
        .iter()
        .map(|e| e["action"].clone())
        .collect();
    assert_eq!(actions, ["list_tasks", "list_tasks"]);
}

/// A pre-task Propose has no task to name it: the host gets it with the invocation's context,
/// the only identity it has (NG-3).
#[test]
fn a_pre_task_propose_reaches_the_host_with_its_context() {
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let record = Arc::clone(&seen);
    let host = accepting_host().on_negotiation(move |r| {
        record.lock().unwrap().push(r.received.context_id.clone());
        now(Ok(NegotiationReply::Send {
            content: r.reply(Performative::Accept, "Accept").unwrap(),
        }))
    });
    let agent = ScriptedAgent::new("a")
        .then(Plan::BarePropose(Propose::round(1, 2)))
        .then(Plan::States(vec!["TASK_STATE_COMPLETED"]));
    let out = run(agent, host, RunConfig::default());
    assert!(out.result().success, "{:?}", out.result().history);
    let context = out.requests_to("a", "SendMessage")[0].message().unwrap()["contextId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(*seen.lock().unwrap(), [Some(context.clone())]);
    let request = out.events("negotiation_request")[0];
    assert_eq!(request["request"]["contextId"], context.as_str());
}

/// Exchanges whose response had ended when the run told the driver to abort them.
fn aborted_after_their_end(out: &SimOutcome) -> Vec<OpId> {
    let mut ended = Vec::new();
    let mut late = Vec::new();
    for (_, seen) in &out.log {
        match seen {
            Observed::Input(Input::ResponseEnd { op }) => ended.push(*op),
            Observed::Output(Output::AbortTransmit { op }) if ended.contains(op) => late.push(*op),
            _ => {}
        }
    }
    late
}

/// An error answer ends its exchange: there is no connection left for the driver to drop.
#[test]
fn an_error_answer_that_ended_its_response_is_not_aborted() {
    let reject = Plan::Reject {
        status: 400,
        code: -32602,
        reason: "INVALID_PARAMS",
    };
    for agent in [ScriptedAgent::new("a"), ScriptedAgent::new("a").rest()] {
        let out = run(
            agent.by_default(reject.clone()),
            ScriptedHost::default(),
            RunConfig::default(),
        );
        assert!(!out.result().success);
        assert_eq!(aborted_after_their_end(&out), []);
    }
}

/// Either half of Negotiation-T metadata makes a bare message a pre-task Propose, to be checked
/// as one: a context without the content key is an invalid Propose, not an ordinary answer.
#[test]
fn a_bare_message_with_half_of_a_propose_is_not_a_completion() {
    let half = Propose {
        with_uri_key: false,
        ..Propose::round(1, 3)
    };
    let agent = ScriptedAgent::new("a").by_default(Plan::BarePropose(half));
    let out = run(agent, accepting_host(), RunConfig::default());
    assert_eq!(
        subtask(&out).error_code.as_deref(),
        Some(codes::NEGOTIATION_INVALID)
    );
    assert!(out.events("negotiation_request").is_empty());
}

/// A round is checked against the latest round of its negotiation, not an earlier one: 1, 3,
/// then 2 regressed (NG-10).
#[test]
fn a_round_below_the_latest_one_is_a_regression_even_above_an_earlier_one() {
    let neg = Negotiation {
        proposes: vec![
            Propose::round(1, 5),
            Propose::round(3, 5),
            Propose::round(2, 5),
        ],
        ..Negotiation::rounds(1, 5)
    };
    let agent = ScriptedAgent::new("a").by_default(Plan::Negotiate(neg));
    let out = run(agent, accepting_host(), RunConfig::default());
    let t = subtask(&out);
    assert_eq!(t.error_code.as_deref(), Some(codes::NEGOTIATION_INVALID));
    assert!(
        t.error.as_deref().unwrap().contains("round 3 -> 2"),
        "{t:?}"
    );
    assert_eq!(out.events("negotiation_request").len(), 2);
}

/// A stream that ends too early fails with what it delivered: nothing at all, or a task that
/// never reached a final or interrupted state.
#[test]
fn an_early_end_of_a_stream_is_reported_by_what_it_delivered() {
    let config = RunConfig {
        retry: RetryPolicy {
            attempts: 1,
            ..RetryPolicy::default()
        },
        ..RunConfig::default()
    };
    let empty = ScriptedAgent::new("a").streaming().by_default(Plan::Empty);
    let out = run(empty, ScriptedHost::default(), config.clone());
    let t = subtask(&out);
    assert_eq!(t.error_code.as_deref(), Some(codes::EMPTY_STREAM), "{t:?}");
    assert_eq!(
        t.error.as_deref(),
        Some("the agent closed the response before any A2A event")
    );

    // Every stream, the send's and each resubscription's, ends while the task works.
    let working = ScriptedAgent::new("a")
        .streaming()
        .by_default(Plan::States(vec!["TASK_STATE_WORKING"]))
        .fault_on("SendStreamingMessage", 1, AgentFault::EndAfter(1))
        .fault_on("SubscribeToTask", 1, AgentFault::EndAfter(1))
        .fault_on("SubscribeToTask", 2, AgentFault::EndAfter(1));
    let out = run(working, ScriptedHost::default(), config);
    let t = subtask(&out);
    assert_eq!(t.error_code.as_deref(), Some(codes::EMPTY_STREAM), "{t:?}");
    assert_eq!(
        t.error.as_deref(),
        Some("the stream ended before a final or interrupted task state")
    );
}

/// When the budget ends while a reply on a known task is on its way, that exchange is dropped
/// at once (the task is known and gets its CancelTask); only a send that may still reveal a
/// task is kept reading.
#[test]
fn a_reply_open_at_the_deadline_is_dropped_at_once() {
    let agent = ScriptedAgent::new("a").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let wf = json!({"steps": [{"name": "s", "subtasks": [{"agent": "a", "description": "x"}]}]});
    let wf = a2at_core::workflow::parse_and_validate(&wf.to_string()).unwrap();
    let agents = vec![agent];
    let dir = a2at_tests::directory(&agents);
    // Each answer takes two seconds: the Propose arrives at 2 s, the reply's answer would at 4 s.
    let out = a2at_tests::Sim::new(
        wf,
        dir,
        agents,
        accepting_host(),
        budget(3),
        a2at_core::run::RunStart::default(),
    )
    .with_latency(Duration::from_secs(2))
    .drive_bounded(10_000);
    assert_eq!(subtask(&out).error_code.as_deref(), Some(codes::TIMEOUT));
    let reply = out
        .outputs()
        .find_map(|o| match o {
            Output::Transmit(r) if r.purpose == OpPurpose::Reply => Some(r.op),
            _ => None,
        })
        .expect("the reply was sent");
    let deadline = Timestamp::ZERO.saturating_add(Duration::from_secs(3));
    let aborted_at: Vec<Timestamp> = out
        .log
        .iter()
        .filter(
            |(_, o)| matches!(o, Observed::Output(Output::AbortTransmit { op }) if *op == reply),
        )
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(aborted_at, [deadline]);
    assert_eq!(out.requests_to("a", "CancelTask").len(), 1);
}

/// A cleanup `CancelTask` that the agent answers with an error is over: the run does not wait
/// for the cleanup budget, nor is the ended exchange aborted.
#[test]
fn a_refused_cleanup_cancel_ends_the_cleanup_at_once() {
    // Without the host's opt-in the Propose is unsupported, and its task is cancelled.
    let agent = ScriptedAgent::new("a")
        .by_default(Plan::Negotiate(Negotiation::rounds(1, 3)))
        .fault_on(
            "CancelTask",
            1,
            AgentFault::Unavailable { retry_after: None },
        );
    let out = run(agent, ScriptedHost::default(), RunConfig::default());
    assert_eq!(
        subtask(&out).error_code.as_deref(),
        Some(codes::UNSUPPORTED_TASK_STATE)
    );
    assert_eq!(out.requests_to("a", "CancelTask").len(), 1);
    assert_eq!(aborted_after_their_end(&out), []);
    assert!(
        out.end < Timestamp::ZERO.saturating_add(Duration::from_secs(1)),
        "the run waited for the cleanup budget: ended at {:?}",
        out.end
    );
}

/// A lookup follows only a task of its own context: an agent that lists another subtask's task
/// has not shown that this send became a task, so after a restart the message goes again.
#[test]
fn a_lookup_never_follows_a_task_of_another_context() {
    let agent = ScriptedAgent::new("a").listing_every_context().fault_on(
        "SendMessage",
        2,
        AgentFault::RestartBefore,
    );
    let wf = json!({"steps": [{"name": "s", "subtasks": [
        {"agent": "a", "description": "first"}, {"agent": "a", "description": "second"}]}]});
    let out = simulate(
        &wf,
        vec![agent],
        ScriptedHost::default(),
        RunConfig::default(),
    );
    let r = out.result();
    assert!(r.success, "{:?}", r.history);
    assert_eq!(out.requests_to("a", "ListTasks").len(), 1);
    assert_eq!(out.requests_to("a", "SendMessage").len(), 3);
    let ids: Vec<_> = r.history.iter().map(|t| t.remote_task_id.clone()).collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "{:?}", r.history);
    for t in &r.history {
        assert_eq!(t.outputs, [json!(format!("done: {}", t.task_description))]);
    }
}

/// A Stop must say both why (code) and what (reason): either one blank makes it an invalid
/// answer, not a business failure with a blank code.
#[test]
fn a_stop_missing_its_code_or_its_reason_is_invalid() {
    for (code, reason) in [(" ", "over budget"), ("biz.no_budget", "")] {
        let host = accepting_host().on_negotiation(move |_| {
            now(Ok(NegotiationReply::Stop {
                code: code.into(),
                reason: reason.into(),
            }))
        });
        let agent = ScriptedAgent::new("a").by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
        let out = run(agent, host, RunConfig::default());
        assert_eq!(
            subtask(&out).error_code.as_deref(),
            Some(codes::NEGOTIATION_INVALID),
            "{code:?} {reason:?}"
        );
        let failed = out.events("negotiation_failed");
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0]["errorType"], codes::NEGOTIATION_INVALID);
    }
}

/// The time a gRPC agent is told to spend on a request is the task budget's remainder for the
/// task's own calls, and the cleanup budget for a cleanup `CancelTask` (the task's deadline is
/// gone by then).
#[test]
fn a_cleanup_cancel_tells_a_grpc_agent_the_cleanup_budget() {
    // Without the host's opt-in the Propose is unsupported, and its task is cancelled.
    let agent = ScriptedAgent::new("a")
        .grpc()
        .by_default(Plan::Negotiate(Negotiation::rounds(1, 3)));
    let config = RunConfig {
        cancel_budget: Duration::from_secs(2),
        ..budget(30)
    };
    let out = run(agent, ScriptedHost::default(), config);
    assert_eq!(
        subtask(&out).error_code.as_deref(),
        Some(codes::UNSUPPORTED_TASK_STATE)
    );
    let timeout = |purpose: OpPurpose| {
        out.outputs()
            .find_map(|o| match o {
                Output::Transmit(r) if r.purpose == purpose => Some(r),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {purpose:?} request"))
            .headers
            .iter()
            .find(|(k, _)| k == "grpc-timeout")
            .map(|(_, v)| v.clone())
    };
    assert_eq!(timeout(OpPurpose::Cancel).as_deref(), Some("2000000u"));
    assert_eq!(timeout(OpPurpose::Send).as_deref(), Some("30000000u"));
}

/// A Propose may carry Negotiation-T in any metadata layer of what the agent sent, not only in
/// its message: the task's own metadata, or an artifact's, is enough for the host to be asked.
#[test]
fn a_propose_in_the_task_or_an_artifact_metadata_reaches_the_host() {
    let propose = json!({
        "negotiationContext": {
            "id": "3f6c1e2a-9b7d-4c1e-8a2f-000000000001",
            "round": 1,
            "maxRounds": 3,
            "performative": "PROPOSE"
        },
        NEGOTIATION_T: "## Information negotiation\nPlease provide the site list."
    });
    let question =
        json!({"messageId": "q1", "role": "ROLE_AGENT", "parts": [{"text": "which sites?"}]});
    let in_task = json!({"task": {"id": "$TASK", "contextId": "$CTX", "metadata": propose,
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": question}}});
    let in_artifact = json!({"task": {"id": "$TASK", "contextId": "$CTX",
        "artifacts": [{"artifactId": "a1", "parts": [{"text": "draft"}], "metadata": propose}],
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": question}}});
    for event in [in_task, in_artifact] {
        let agent = ScriptedAgent::new("a")
            .streaming()
            .by_default(Plan::Events(vec![event.clone()]));
        let out = run(agent, accepting_host(), RunConfig::default());
        let asked = out.events("negotiation_request");
        assert_eq!(asked.len(), 1, "{event}: {:?}", subtask(&out));
        assert_eq!(asked[0]["round"], 1);
    }
}

/// An answer that leaves its task working is no fault, so it is followed without a retry: a
/// unary answer whatever the retry policy, and a stream that ends early when retries are off.
#[test]
fn a_working_task_left_by_an_answer_is_followed_without_a_retry() {
    let working_then_done = Plan::States(vec!["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
    let no_retries = RunConfig {
        retry: RetryPolicy {
            attempts: 0,
            ..RetryPolicy::default()
        },
        ..RunConfig::default()
    };
    let cases = [
        (
            ScriptedAgent::new("a").by_default(working_then_done.clone()),
            "SendMessage",
            RunConfig::default(),
        ),
        (
            ScriptedAgent::new("a")
                .streaming()
                .by_default(working_then_done)
                .fault_on("SendStreamingMessage", 1, AgentFault::EndAfter(1)),
            "SendStreamingMessage",
            no_retries,
        ),
    ];
    for (agent, send, config) in cases {
        let out = run(agent, ScriptedHost::default(), config);
        assert!(out.result().success, "{send}: {:?}", out.result().history);
        assert_eq!(out.requests_to("a", send).len(), 1);
        assert_eq!(
            out.events("agent_retry"),
            Vec::<&serde_json::Value>::new(),
            "{send}"
        );
    }
}
