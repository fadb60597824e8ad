//! A scripted host: answers each callback with a function of the request, after a delay.

use std::time::Duration;

use a2at_core::host::{
    HostError, HostReply, HostRequest, InputDecision, InputRequest, MessageContent,
    NegotiationReply, NegotiationRequest, RouteDecision, RouteRequest, TaskRequest, TaskResult,
};
use serde_json::Value;

type Answer<T> = (Duration, Option<Result<T, HostError>>);
type Script<Q, T> = Box<dyn FnMut(&Q) -> Answer<T> + Send>;

/// Answers host callbacks from scripts. `None` as an answer means the host never answers.
pub struct ScriptedHost {
    on_task: Script<TaskRequest, MessageContent>,
    on_self_task: Script<TaskRequest, TaskResult>,
    on_route: Script<RouteRequest, RouteDecision>,
    on_negotiation: Script<NegotiationRequest, NegotiationReply>,
    on_input_required: Script<InputRequest, InputDecision>,
}

impl Default for ScriptedHost {
    fn default() -> Self {
        ScriptedHost {
            on_task: Box::new(|r| {
                (
                    Duration::ZERO,
                    Some(Ok(MessageContent::text(r.instruction.clone()))),
                )
            }),
            on_self_task: Box::new(|r| {
                (
                    Duration::ZERO,
                    Some(Ok(TaskResult::success(vec![Value::String(format!(
                        "local: {}",
                        r.instruction
                    ))]))),
                )
            }),
            on_route: Box::new(|_| (Duration::ZERO, Some(Ok(RouteDecision::allow(None))))),
            on_negotiation: Box::new(|_| {
                (
                    Duration::ZERO,
                    Some(Err(HostError::missing_handler("on_negotiation"))),
                )
            }),
            // Declines plain INPUT_REQUIRED, as the default host does.
            on_input_required: Box::new(|_| (Duration::ZERO, Some(Ok(InputDecision::Decline)))),
        }
    }
}

impl ScriptedHost {
    /// Content for remote subtasks.
    pub fn on_task(
        mut self,
        f: impl FnMut(&TaskRequest) -> Answer<MessageContent> + Send + 'static,
    ) -> Self {
        self.on_task = Box::new(f);
        self
    }

    /// Local results for SELF_LOOP subtasks.
    pub fn on_self_task(
        mut self,
        f: impl FnMut(&TaskRequest) -> Answer<TaskResult> + Send + 'static,
    ) -> Self {
        self.on_self_task = Box::new(f);
        self
    }

    /// Route decisions.
    pub fn on_route(
        mut self,
        f: impl FnMut(&RouteRequest) -> Answer<RouteDecision> + Send + 'static,
    ) -> Self {
        self.on_route = Box::new(f);
        self
    }

    /// Negotiation replies.
    pub fn on_negotiation(
        mut self,
        f: impl FnMut(&NegotiationRequest) -> Answer<NegotiationReply> + Send + 'static,
    ) -> Self {
        self.on_negotiation = Box::new(f);
        self
    }

    /// Decisions on a plain `INPUT_REQUIRED` (default: decline).
    pub fn on_input_required(
        mut self,
        f: impl FnMut(&InputRequest) -> Answer<InputDecision> + Send + 'static,
    ) -> Self {
        self.on_input_required = Box::new(f);
        self
    }

    /// The delayed answer to one request.
    pub fn answer(&mut self, request: &HostRequest) -> (Duration, Option<HostReply>) {
        match request {
            HostRequest::Task(r) => {
                let (d, a) = (self.on_task)(r);
                (d, a.map(HostReply::Task))
            }
            HostRequest::SelfTask(r) => {
                let (d, a) = (self.on_self_task)(r);
                (d, a.map(HostReply::SelfTask))
            }
            HostRequest::Route(r) => {
                let (d, a) = (self.on_route)(r);
                (d, a.map(HostReply::Route))
            }
            HostRequest::Negotiation(r) => {
                let (d, a) = (self.on_negotiation)(r);
                (d, a.map(HostReply::Negotiation))
            }
            HostRequest::InputRequired(r) => {
                let (d, a) = (self.on_input_required)(r);
                (d, a.map(HostReply::InputRequired))
            }
        }
    }
}

/// Shorthand for an immediate answer.
pub fn now<T>(value: Result<T, HostError>) -> Answer<T> {
    (Duration::ZERO, Some(value))
}
