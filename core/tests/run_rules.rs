//! Rules of the run machine (`a2at_core::run`) that no other test pinned down, each stated
//! against what a host sees: its requests, the events, the progress snapshot and the result.
//! Every one of them was a surviving mutant of `core/src/run.rs`.

use std::collections::VecDeque;
use std::sync::Arc;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest, RouteDecision, TaskResult};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_core::{CallId, ExecutionResult, Input, Output, Timestamp};
use serde_json::{Value, json};

/// A run of `workflow` (local steps only: no agent directory is needed).
fn local_run(workflow: Value) -> Run {
    Run::new(
        Arc::new(parse_and_validate(&workflow.to_string()).expect("valid workflow")),
        Arc::new(AgentDirectory::default()),
        RunConfig::default(),
        RunStart::default(),
    )
}

/// A host that sees every output; host calls wait in `pending` until the test answers them.
#[derive(Default)]
struct Host {
    pending: VecDeque<(CallId, HostRequest)>,
    events: Vec<(String, Value)>,
    abandoned: Vec<CallId>,
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
                other => panic!("a local run transmits nothing, got {other:?}"),
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

    fn event_kinds(&self) -> Vec<&str> {
        self.events.iter().map(|(k, _)| k.as_str()).collect()
    }

    fn result(&self) -> &ExecutionResult {
        self.finished.as_deref().expect("the run finished")
    }
}

fn started(workflow: Value) -> (Run, Host) {
    let mut run = local_run(workflow);
    let mut host = Host::default();
    host.drain(&mut run);
    (run, host)
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
}
