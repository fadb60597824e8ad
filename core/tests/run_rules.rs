//! Rules of the run machine (`a2at_core::run`) that no other test pinned down, each stated
//! against what a host sees: its requests, the events, the progress snapshot and the result.
//! Every one of them was a surviving mutant of `core/src/run.rs`.

use std::collections::VecDeque;
use std::sync::Arc;

mod common;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest, RouteDecision, RouteRequest, TaskResult, codes};
use a2at_core::result::StepStatus;
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_core::{CallId, ExecutionResult, Input, Output, Timestamp};
use serde_json::{Value, json};

/// A host that sees every output; host calls wait in `pending` and exchanges in `transmits`
/// until the test answers them.
#[derive(Default)]
struct Host {
    pending: VecDeque<(CallId, HostRequest)>,
    events: Vec<(String, Value)>,
    abandoned: Vec<CallId>,
    transmits: Vec<a2at_core::HttpRequest>,
    finished: Option<Arc<ExecutionResult>>,
}

impl Host {
    /// Reads every queued output of `run`.
    fn drain(&mut self, run: &mut Run) {
        while let Some(out) = run.poll_output() {
            match out {
                Output::CallHost { call, request } => self.pending.push_back((call, request)),
                Output::AbandonHostCall { call } => self.abandoned.push(call),
                Output::Event(e) => self
                    .events
                    .push((e.kind.as_str().to_owned(), e.data.value().clone())),
                Output::Finished(result) => self.finished = Some(result),
                Output::Transmit(request) => self.transmits.push(request),
                Output::AbortTransmit { .. } => {}
                other => panic!("an output this host does not know: {other:?}"),
            }
        }
    }

    /// Takes the pending request for a self-task of `step`.
    fn take_task(&mut self, step: &str) -> CallId {
        let at = self
            .pending
            .iter()
            .position(|(_, r)| matches!(r, HostRequest::SelfTask(t) if t.step_name == step))
            .unwrap_or_else(|| panic!("no pending task of {step}: {:?}", self.pending));
        self.pending.remove(at).expect("found above").0
    }

    /// Answers `call` and reads what follows.
    fn reply(&mut self, run: &mut Run, call: CallId, reply: HostReply) {
        run.handle(Input::HostReply { call, reply }, Timestamp::ZERO)
            .expect("a fitting reply");
        self.drain(run);
    }

    /// Answers the pending self-task of `step` with one output.
    fn succeed(&mut self, run: &mut Run, step: &str) {
        let call = self.take_task(step);
        let out = TaskResult::success(vec![format!("out of {step}").into()]);
        self.reply(run, call, HostReply::SelfTask(Ok(out)));
    }

    /// Answers the pending self-task of `step` with a failure.
    fn fail(&mut self, run: &mut Run, step: &str) {
        let call = self.take_task(step);
        let out = TaskResult::Failure {
            code: "boom".into(),
            message: format!("{step} failed"),
        };
        self.reply(run, call, HostReply::SelfTask(Ok(out)));
    }

    /// Answers every pending route request with `decide(next step)`, until none is left.
    fn route(&mut self, run: &mut Run, decide: impl Fn(&str) -> bool) {
        while let Some(at) = self
            .pending
            .iter()
            .position(|(_, r)| matches!(r, HostRequest::Route(_)))
        {
            let (call, request) = self.pending.remove(at).expect("found above");
            let HostRequest::Route(route) = request else {
                unreachable!()
            };
            let decision = if decide(&route.next_step) {
                RouteDecision::allow(None)
            } else {
                RouteDecision::deny(None)
            };
            self.reply(run, call, HostReply::Route(Ok(decision)));
        }
    }

    /// Takes every pending route request, unanswered.
    fn take_routes(&mut self) -> Vec<(CallId, RouteRequest)> {
        let (routes, rest): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|(_, r)| matches!(r, HostRequest::Route(_)));
        self.pending = rest;
        routes
            .into_iter()
            .map(|(call, r)| match r {
                HostRequest::Route(route) => (call, *route),
                _ => unreachable!("partitioned above"),
            })
            .collect()
    }

    /// Lets the clock reach the run's next deadline, as a driver does.
    fn tick(&mut self, run: &mut Run) {
        let at = run.poll_timeout().expect("the run waits for a deadline");
        run.handle_timeout(at).expect("a timeout of a running run");
        self.drain(run);
    }

    /// The `errorCode`s of the `error` events so far, in order.
    fn error_codes(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter(|(k, _)| k == "error")
            .map(|(_, v)| v["errorCode"].as_str().unwrap_or("?"))
            .collect()
    }

    fn event_kinds(&self) -> Vec<&str> {
        self.events.iter().map(|(k, _)| k.as_str()).collect()
    }

    fn result(&self) -> &ExecutionResult {
        self.finished.as_deref().expect("the run finished")
    }

    /// Cancels `run` and reads it to its end, which must be the cancellation.
    fn cancel(&mut self, run: &mut Run) -> &ExecutionResult {
        run.handle(Input::Cancel, Timestamp::ZERO)
            .expect("a running run accepts a cancel");
        self.drain(run);
        let result = self.result();
        assert_eq!(
            result.error.as_ref().map(|e| e.code.as_str()),
            Some(codes::CANCELLED)
        );
        result
    }
}

fn started(workflow: Value) -> (Run, Host) {
    started_with(workflow, RunConfig::default())
}

fn started_with(workflow: Value, config: RunConfig) -> (Run, Host) {
    let mut run = Run::new(
        Arc::new(parse_and_validate(&workflow.to_string()).expect("valid workflow")),
        Arc::new(AgentDirectory::default()),
        config,
        RunStart::default(),
    );
    let mut host = Host::default();
    host.drain(&mut run);
    (run, host)
}

fn statuses(result: &ExecutionResult) -> Vec<(&str, StepStatus)> {
    result
        .steps
        .iter()
        .map(|s| (s.name.as_str(), s.status))
        .collect()
}

fn self_step(name: &str, next: Value) -> Value {
    json!({"name": name, "step_type": "SELF_LOOP",
           "subtasks": [{"agent": "me", "description": format!("do {name}")}], "next": next})
}

#[test]
fn a_single_local_step_succeeds() {
    let (mut run, mut host) = started(json!({"steps": [self_step("a", json!([]))]}));
    host.succeed(&mut run, "a");
    assert!(host.result().success);
    assert_eq!(host.event_kinds().first(), Some(&"start"));
}

/// `a` feeds `b` on a plain edge and `c` on a conditional one.
fn a_feeds_b_and_maybe_c() -> Value {
    json!({"steps": [
        self_step("a", json!([{"step": "b"}, {"step": "c", "condition": "when it fits"}])),
        self_step("b", json!([])),
        self_step("c", json!([])),
    ]})
}

#[test]
fn progress_counts_steps_by_state_and_only_finished_ones_as_done() {
    use a2at_core::run::StepProgressState as S;
    let (mut run, mut host) = started(a_feeds_b_and_maybe_c());
    let p = run.progress();
    assert_eq!(
        (p.count(S::Running), p.count(S::Pending), p.done()),
        (1, 2, 0)
    );

    host.succeed(&mut run, "a");
    host.route(&mut run, |next| next != "c");
    let p = run.progress();
    let states: Vec<S> = p.steps.iter().map(|s| s.state).collect();
    assert_eq!(states, [S::Succeeded, S::Running, S::Skipped]);
    // A skipped step never ran: it is not done.
    assert_eq!(
        (
            p.count(S::Succeeded),
            p.count(S::Running),
            p.count(S::Skipped),
            p.done()
        ),
        (1, 1, 1, 1)
    );

    host.fail(&mut run, "b");
    let p = run.progress();
    assert!(p.finished);
    assert_eq!(
        (
            p.count(S::Succeeded),
            p.count(S::Failed),
            p.count(S::Pending),
            p.done()
        ),
        (1, 1, 0, 2)
    );
}

#[test]
fn only_succeeded_failed_and_cancelled_steps_are_done() {
    use a2at_core::run::StepProgressState as S;
    let done: Vec<S> = [
        S::Pending,
        S::Running,
        S::Succeeded,
        S::Failed,
        S::Cancelled,
        S::Skipped,
    ]
    .into_iter()
    .filter(|s| s.is_done())
    .collect();
    assert_eq!(done, [S::Succeeded, S::Failed, S::Cancelled]);
}

#[test]
fn progress_lists_outputs_only_of_steps_that_have_some_and_counts_subtasks_in_flight() {
    let (mut run, mut host) = started(a_feeds_b_and_maybe_c());
    let p = run.progress();
    assert!(p.step_outputs.is_empty(), "{:?}", p.step_outputs);
    assert_eq!(p.in_flight.get("me"), Some(&1));

    host.succeed(&mut run, "a");
    host.route(&mut run, |_| true);
    let p = run.progress();
    let with_outputs: Vec<&str> = p.step_outputs.keys().map(String::as_str).collect();
    assert_eq!(
        with_outputs,
        ["a"],
        "b and c are running: they have no outputs yet"
    );
    assert_eq!(p.step_outputs["a"]["do a"], vec![json!("out of a")]);
    assert_eq!(p.in_flight.get("me"), Some(&2), "b and c run side by side");

    host.succeed(&mut run, "b");
    host.succeed(&mut run, "c");
    let p = run.progress();
    assert!(p.finished);
    assert!(p.in_flight.is_empty(), "{:?}", p.in_flight);
    let with_outputs: Vec<&str> = p.step_outputs.keys().map(String::as_str).collect();
    assert_eq!(
        with_outputs,
        ["a", "b", "c"],
        "a finished run shows its result's"
    );
    assert_eq!(p.step_outputs["c"]["do c"], vec![json!("out of c")]);
}

#[test]
fn a_failed_step_is_reported_by_its_first_failed_subtask() {
    let (mut run, mut host) = started(json!({"steps": [{"name": "s", "step_type": "SELF_LOOP",
        "subtasks": [{"agent": "me", "description": "fine"}, {"agent": "me", "description": "broken"}]}]}));
    let first = host.take_task("s");
    let second = host.take_task("s");
    let fine = TaskResult::success(vec![json!("ok")]);
    host.reply(&mut run, first, HostReply::SelfTask(Ok(fine)));
    let broken = TaskResult::Failure {
        code: "boom".into(),
        message: "it broke".into(),
    };
    host.reply(&mut run, second, HostReply::SelfTask(Ok(broken)));
    let error = host.result().error.clone().expect("the step failed");
    assert_eq!(error.code, codes::STEP_FAILED);
    assert_eq!(
        error.message,
        "Step execution failed: step s: subtask 1 (me) failed with boom: it broke"
    );
}

#[test]
fn a_step_running_when_the_run_is_cancelled_ends_cancelled_not_failed() {
    let (mut run, mut host) = started(json!({"steps": [
        self_step("a", json!([{"step": "b"}])),
        self_step("b", json!([])),
    ]}));
    let result = host.cancel(&mut run);
    assert_eq!(
        statuses(result),
        [("a", StepStatus::Cancelled), ("b", StepStatus::NotRun)]
    );
    // Only the run's last event reports an error: a cancelled step is no failed step.
    assert_eq!(host.error_codes(), [codes::CANCELLED]);
}

/// A reply to a call the run no longer holds (answered already, or abandoned: the run forgets
/// a call before it says so) changes nothing, so a driver may feed an answer it already had in
/// hand when the call was abandoned.
#[test]
fn a_reply_to_a_call_the_run_no_longer_holds_is_ignored() {
    let (mut run, mut host) = started(json!({"steps": [
        self_step("a", json!([])),
        self_step("b", json!([])),
    ]}));
    let a = host.take_task("a");
    let out = |text: &str| HostReply::SelfTask(Ok(TaskResult::success(vec![text.into()])));
    host.reply(&mut run, a, out("first"));
    let events_before = host.events.len();
    run.handle(
        Input::HostReply {
            call: a,
            reply: out("second"),
        },
        Timestamp::ZERO,
    )
    .expect("a reply to a forgotten call is no misuse");
    host.drain(&mut run);
    assert_eq!(
        host.events.len(),
        events_before,
        "{:?}",
        &host.events[events_before..]
    );
    assert!(
        host.pending
            .iter()
            .any(|(_, r)| matches!(r, HostRequest::SelfTask(t) if t.step_name == "b"))
    );
    host.succeed(&mut run, "b");
    let result = host.result();
    assert!(result.success);
    assert_eq!(result.step_outputs()["a"]["do a"], vec![json!("first")]);
}

/// `a` has two conditional edges; the host decides one and never answers the other.
#[test]
fn an_edge_left_undecided_after_its_sibling_was_decided_still_times_out() {
    let config = RunConfig {
        callback_budget: std::time::Duration::from_secs(5),
        ..RunConfig::default()
    };
    let (mut run, mut host) = started_with(
        json!({"steps": [
            self_step("a", json!([{"step": "b", "condition": "b?"}, {"step": "c", "condition": "c?"}])),
            self_step("b", json!([])),
            self_step("c", json!([])),
        ]}),
        config,
    );
    host.succeed(&mut run, "a");
    let mut routes = host.take_routes();
    assert_eq!(routes.len(), 2);
    let (to_b, _) = routes.remove(0);
    host.reply(
        &mut run,
        to_b,
        HostReply::Route(Ok(RouteDecision::allow(None))),
    );
    let (to_c, _) = routes.remove(0);
    host.tick(&mut run);
    let error = host
        .result()
        .error
        .clone()
        .expect("the undecided edge failed the run");
    assert_eq!(error.code, codes::ROUTE_FAILED);
    assert!(error.message.contains("a -> c"), "{}", error.message);
    assert!(host.abandoned.contains(&to_c), "the late call is abandoned");
}

#[test]
fn a_route_request_left_unanswered_fails_the_run_at_the_callback_budget() {
    let config = RunConfig {
        callback_budget: std::time::Duration::from_secs(5),
        ..RunConfig::default()
    };
    let (mut run, mut host) = started_with(
        json!({"steps": [
            self_step("a", json!([{"step": "b", "condition": "b?"}])),
            self_step("b", json!([])),
        ]}),
        config,
    );
    host.succeed(&mut run, "a");
    let routes = host.take_routes();
    host.tick(&mut run);
    let error = host
        .result()
        .error
        .clone()
        .expect("the route failed the run");
    assert_eq!(error.code, codes::ROUTE_FAILED);
    assert!(
        error.message.contains("no decision within 5s"),
        "{}",
        error.message
    );
    assert_eq!(host.abandoned, [routes[0].0]);
}

/// `a` routes to `c` on a condition while its sibling `b` fails: the edge's answer arrives
/// after the failure and makes `c` ready, but a failed run dispatches nothing new.
#[test]
fn a_step_made_ready_after_the_run_failed_is_not_run_and_the_run_still_ends() {
    let (mut run, mut host) = started(json!({"steps": [
        self_step("a", json!([{"step": "c", "condition": "c?"}])),
        self_step("b", json!([])),
        self_step("c", json!([])),
    ]}));
    host.succeed(&mut run, "a");
    host.fail(&mut run, "b");
    assert!(host.finished.is_none(), "a's route is still asked");
    host.route(&mut run, |_| true);
    let result = host.result();
    assert!(!result.success);
    assert_eq!(
        statuses(result),
        [
            ("a", StepStatus::Succeeded),
            ("b", StepStatus::Failed),
            ("c", StepStatus::NotRun)
        ]
    );
    // The step's error and the run's last event, both for the step's failure: a step left
    // pending by a stopped run is no deadlock.
    assert_eq!(host.error_codes(), [codes::STEP_FAILED, codes::STEP_FAILED]);
}

#[test]
fn every_subtask_of_a_step_receives_the_upstream_window() {
    let (mut run, mut host) = started(json!({"steps": [
        self_step("a", json!([{"step": "b"}])),
        {"name": "b", "step_type": "SELF_LOOP", "subtasks": [
            {"agent": "me", "description": "one"},
            {"agent": "me", "description": "two"},
            {"agent": "me", "description": "three"}]},
    ]}));
    host.succeed(&mut run, "a");
    let windows: Vec<Vec<String>> = host
        .pending
        .iter()
        .map(|(_, r)| match r {
            HostRequest::SelfTask(t) => t
                .workflow_input
                .upstream_results
                .iter()
                .map(|u| u.step_name.to_string())
                .collect(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(windows, [["a"], ["a"], ["a"]]);
}

/// The window goes out with the step's requests; once the last of them is sent (and no route
/// request will read it), the run keeps no copy of its own: the host's requests and the run's
/// result table are the only holders of an upstream result.
#[test]
fn the_last_request_of_a_step_takes_the_window_instead_of_copying_it() {
    let (mut run, mut host) = started(json!({"steps": [
        self_step("a", json!([{"step": "b"}])),
        self_step("b", json!([])),
    ]}));
    host.succeed(&mut run, "a");
    let (_, request) = host.pending.front().expect("b's request");
    let HostRequest::SelfTask(task) = request else {
        panic!("unexpected {request:?}")
    };
    let upstream = &task.workflow_input.upstream_results[0].task_results[0];
    assert_eq!(upstream.outputs, vec![json!("out of a")]);
    assert_eq!(
        Arc::strong_count(upstream),
        2,
        "the run kept a copy of b's window"
    );
}

/// A run of one remote subtask addressed to `alpha`, and the host in front of it.
fn remote_run() -> (Run, Host) {
    let agents = common::alpha_rest();
    let workflow =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]});
    let mut run = Run::new(
        Arc::new(parse_and_validate(&workflow.to_string()).expect("valid workflow")),
        Arc::new(agents),
        RunConfig::default(),
        RunStart::default(),
    );
    let mut host = Host::default();
    host.drain(&mut run);
    (run, host)
}

/// [`remote_run`] once the host gave the subtask's content: the run and its send.
fn remote_run_sending() -> (Run, Host, a2at_core::HttpRequest) {
    let (mut run, mut host) = remote_run();
    let (call, _) = host
        .pending
        .pop_front()
        .expect("the host is asked for content");
    host.reply(
        &mut run,
        call,
        HostReply::Task(Ok(a2at_core::host::MessageContent::text("x"))),
    );
    let send = host.transmits.pop().expect("the send goes out");
    (run, host, send)
}

#[test]
fn a_run_addresses_the_agents_it_was_started_with() {
    let (run, _) = remote_run();
    let names: Vec<&str> = run.agents().names().collect();
    assert_eq!(names, ["alpha"]);
    assert!(run.agents().get("alpha").is_some());
}

#[test]
fn a_send_that_could_not_connect_is_listed_as_a_scheduled_resend() {
    let (mut run, mut host, send) = remote_run_sending();
    assert!(run.retries().is_empty(), "{:?}", run.retries());
    run.handle(
        Input::TransportFailed {
            op: send.op,
            error: a2at_core::io::TransportError {
                kind: a2at_core::io::TransportErrorKind::Connect,
                message: "refused".into(),
            },
        },
        Timestamp::ZERO,
    )
    .expect("a failure of an open exchange");
    host.drain(&mut run);
    let retries: Vec<(&str, &str)> = run
        .retries()
        .iter()
        .map(|r| (r.agent.as_str(), r.action))
        .collect();
    assert_eq!(retries, [("alpha", "resend")]);
}

#[test]
fn every_request_carries_the_runs_trace_id() {
    let (run, _, send) = remote_run_sending();
    let traceparent = send
        .headers
        .iter()
        .find(|(name, _)| name == "traceparent")
        .map(|(_, value)| value.as_ref())
        .expect("a traceparent header");
    let trace_id = traceparent
        .split('-')
        .nth(1)
        .expect("version-trace-parent-flags");
    assert_eq!(trace_id, format!("{:032x}", run.trace_id()));
}

#[test]
fn a_finished_run_refuses_inputs_and_timeouts() {
    let (mut run, mut host) = started(json!({"steps": [self_step("a", json!([]))]}));
    host.succeed(&mut run, "a");
    assert!(run.is_finished());
    let later = Timestamp::ZERO.saturating_add(std::time::Duration::from_secs(1));
    assert_eq!(
        run.handle(Input::Cancel, later),
        Err(a2at_core::ApiMisuse::Finished)
    );
    assert_eq!(
        run.handle_timeout(later),
        Err(a2at_core::ApiMisuse::Finished)
    );
    assert!(run.poll_output().is_none(), "nothing follows the end");
}

#[test]
fn cancelling_while_routes_are_asked_abandons_them_and_ends_the_run() {
    let (mut run, mut host) = started(json!({"steps": [
        self_step("a", json!([{"step": "b", "condition": "b?"}, {"step": "c", "condition": "c?"}])),
        self_step("b", json!([])),
        self_step("c", json!([])),
    ]}));
    host.succeed(&mut run, "a");
    let mut asked: Vec<CallId> = host
        .take_routes()
        .into_iter()
        .map(|(call, _)| call)
        .collect();
    let result = host.cancel(&mut run);
    // The step had finished its work: only its routing was cut short.
    assert_eq!(
        statuses(result),
        [
            ("a", StepStatus::Succeeded),
            ("b", StepStatus::NotRun),
            ("c", StepStatus::NotRun)
        ]
    );
    host.abandoned.sort();
    asked.sort();
    assert_eq!(host.abandoned, asked);
}

/// A join starts only once every predecessor has settled, exactly once, and with the results
/// of all of them in its window: the first predecessor to finish does not start it early.
// mutant: replace && with || in Run::settle (a timeout before: the join started early and
// a conformance run on smol hung)
#[test]
fn a_join_starts_once_after_its_last_predecessor_settled() {
    let (mut run, mut host) = started(json!({"steps": [
        self_step("a", json!([{"step": "join"}])),
        self_step("b", json!([{"step": "join"}])),
        self_step("join", json!([])),
    ]}));
    let join_requests = |host: &Host| -> Vec<Vec<String>> {
        host.pending
            .iter()
            .filter_map(|(_, r)| match r {
                HostRequest::SelfTask(t) if t.step_name == "join" => Some(
                    t.workflow_input
                        .upstream_results
                        .iter()
                        .map(|u| u.step_name.to_string())
                        .collect(),
                ),
                _ => None,
            })
            .collect()
    };
    host.succeed(&mut run, "a");
    assert!(join_requests(&host).is_empty(), "b has not settled yet");
    host.succeed(&mut run, "b");
    assert_eq!(join_requests(&host), [vec!["a", "b"]], "{:?}", host.pending);
    host.succeed(&mut run, "join");
    assert!(host.result().success, "{:?}", host.result().error);
    let starts = host
        .event_kinds()
        .iter()
        .filter(|k| **k == "step_start")
        .count();
    assert_eq!(starts, 3);
}

/// While the run goes on, its progress keys a repeated description the way its result will:
/// with the agent and the subtask's index, and a unique description by itself.
#[test]
fn progress_keys_a_repeated_description_as_the_result_does() {
    let subtasks = json!([
        {"agent": "me", "description": "same"},
        {"agent": "me", "description": "same"},
        {"agent": "me", "description": "other"}
    ]);
    let (mut run, mut host) = started(json!({"steps": [
        {"name": "a", "step_type": "SELF_LOOP", "subtasks": subtasks, "next": [{"step": "b"}]},
        self_step("b", json!([])),
    ]}));
    for _ in 0..3 {
        host.succeed(&mut run, "a");
    }
    host.route(&mut run, |_| true);
    let p = run.progress();
    assert!(!p.finished, "b is still running");
    let keys: Vec<&str> = p.step_outputs["a"].keys().map(String::as_str).collect();
    assert_eq!(keys, ["other", "same [me#0]", "same [me#1]"]);
}
