//! Rules of the run machine's second half (`a2at_core::run`: dispatching steps, finishing
//! subtasks, completing steps, routing and settling) that no other test pinned down, each
//! stated against what a host sees: its requests, the events and the result. Every one of them
//! was a surviving (or timed-out) mutant of `core/src/run.rs`.

use std::collections::VecDeque;
use std::sync::Arc;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest, TaskResult};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::workflow::parse_and_validate;
use a2at_core::{CallId, ExecutionResult, Input, Output, Timestamp};
use serde_json::{Value, json};

/// A host that sees every output; host calls wait in `pending` until the test answers them.
#[derive(Default)]
struct Host {
    pending: VecDeque<(CallId, HostRequest)>,
    events: Vec<(String, Value)>,
    finished: Option<Arc<ExecutionResult>>,
}

impl Host {
    /// Reads every queued output of `run`.
    fn drain(&mut self, run: &mut Run) {
        while let Some(out) = run.poll_output() {
            match out {
                Output::CallHost { call, request } => self.pending.push_back((call, request)),
                Output::Event(e) => self
                    .events
                    .push((e.kind.as_str().to_owned(), e.data.value().clone())),
                Output::Finished(result) => self.finished = Some(result),
                Output::AbandonHostCall { .. } => {}
                other => panic!("an output this host does not know: {other:?}"),
            }
        }
    }

    /// Takes the pending self-task request of `step`'s subtask `index`.
    fn take_task(&mut self, step: &str, index: u32) -> CallId {
        let at = self
            .pending
            .iter()
            .position(|(_, r)| {
                matches!(r, HostRequest::SelfTask(t)
                    if t.step_name == step && t.subtask_index == index)
            })
            .unwrap_or_else(|| panic!("no pending task {step}#{index}: {:?}", self.pending));
        self.pending.remove(at).expect("found above").0
    }

    /// Answers subtask `index` of `step` with `result`, and reads what follows.
    fn answer(&mut self, run: &mut Run, step: &str, index: u32, result: TaskResult) {
        let call = self.take_task(step, index);
        run.handle(
            Input::HostReply {
                call,
                reply: HostReply::SelfTask(Ok(result)),
            },
            Timestamp::ZERO,
        )
        .expect("a fitting reply");
        self.drain(run);
    }

    /// The payloads of the events of `kind`, in order.
    fn events_of(&self, kind: &str) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, v)| v)
            .collect()
    }

    fn result(&self) -> &ExecutionResult {
        self.finished.as_deref().expect("the run finished")
    }
}

fn started(workflow: Value) -> (Run, Host) {
    let mut run = Run::new(
        Arc::new(parse_and_validate(&workflow.to_string()).expect("valid workflow")),
        Arc::new(AgentDirectory::default()),
        RunConfig::default(),
        RunStart::default(),
    );
    let mut host = Host::default();
    host.drain(&mut run);
    (run, host)
}

/// A join starts only once every predecessor has settled, exactly once, and with the results
/// of all of them in its window: the first predecessor to finish does not start it early.
// mutant: replace && with || in Run::settle (a timeout before: the join started early and
// a conformance run on smol hung)
#[test]
fn a_join_starts_once_after_its_last_predecessor_settled() {
    let step = |name: &str, next: Value| {
        json!({"name": name, "step_type": "SELF_LOOP",
               "subtasks": [{"agent": "me", "description": name}], "next": next})
    };
    let (mut run, mut host) = started(json!({"steps": [
        step("a", json!([{"step": "join"}])),
        step("b", json!([{"step": "join"}])),
        step("join", json!([])),
    ]}));
    let asked = |host: &Host, step: &str| {
        host.pending
            .iter()
            .filter(|(_, r)| matches!(r, HostRequest::SelfTask(t) if t.step_name == step))
            .count()
    };
    host.answer(&mut run, "a", 0, TaskResult::success(vec![json!("from a")]));
    assert_eq!(asked(&host, "join"), 0, "b has not settled yet");
    host.answer(&mut run, "b", 0, TaskResult::success(vec![json!("from b")]));
    assert_eq!(asked(&host, "join"), 1, "{:?}", host.pending);
    let window: Vec<&str> = host
        .pending
        .iter()
        .find_map(|(_, r)| match r {
            HostRequest::SelfTask(t) if t.step_name == "join" => Some(t),
            _ => None,
        })
        .expect("join's request")
        .workflow_input
        .upstream_results
        .iter()
        .map(|u| u.step_name.as_str())
        .collect();
    assert_eq!(window, ["a", "b"]);
    host.answer(&mut run, "join", 0, TaskResult::success(vec![]));
    let result = host.result();
    assert!(result.success, "{:?}", result.error);
    assert_eq!(host.events_of("step_start").len(), 3);
}
