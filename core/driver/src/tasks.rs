//! Task passthroughs on the [`Engine`]: `get_task`, `list_tasks`, `cancel_task` and
//! `subscribe_to_task` on the tasks an agent holds.
//!
//! Every rule (checks, request, decoding, errors) is the core's
//! [`TaskOperation`]; this module carries its exchange out on the engine's own transport (the
//! same HTTP client, TLS policy, credentials, authentication hook and concurrency limits as the
//! workflow subtasks) and hands the answer to the caller.

use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};

use a2at_core::a2a::{ListTasksParams, StreamResponse, Task, TaskPage};
use a2at_core::io::{ApiMisuse, Input};
use a2at_core::tasks::{
    TaskAnswer, TaskCommand, TaskError, TaskOperation, TaskOperationConfig, TaskOutput,
};
use a2at_core::{Timestamp, host};
use futures::Stream;
use futures::channel::{mpsc, oneshot};

use crate::engine::Engine;
use crate::extension::{Machine, MachineStep, drive};
use crate::run_loop::Cancel;
use crate::runtime::Runtime;

/// What a task call tells its caller.
enum Told {
    Event(StreamResponse),
    Finished(Result<TaskAnswer, TaskError>),
}

struct TaskMachine(TaskOperation);

impl Machine for TaskMachine {
    type Told = Told;
    fn handle(&mut self, input: Input, now: Timestamp) -> Result<(), ApiMisuse> {
        self.0.handle(input, now)
    }
    fn handle_timeout(&mut self, now: Timestamp) -> Result<(), ApiMisuse> {
        self.0.handle_timeout(now)
    }
    fn poll_timeout(&self) -> Option<Timestamp> {
        self.0.poll_timeout()
    }
    fn poll_output(&mut self) -> Option<MachineStep<Told>> {
        Some(match self.0.poll_output()? {
            TaskOutput::Transmit(r) => MachineStep::Transmit(r),
            TaskOutput::AbortTransmit { op } => MachineStep::Abort(op),
            TaskOutput::Event(e) => MachineStep::Tell(Told::Event(e)),
            TaskOutput::Finished(end) => MachineStep::Tell(Told::Finished(end)),
            other => {
                tracing::warn!(?other, "output not understood by this runtime");
                MachineStep::Skip
            }
        })
    }
    fn is_done(&self) -> bool {
        self.0.is_done()
    }
}

fn closed() -> TaskError {
    TaskError::new(
        crate::lifecycle::ENGINE_CLOSED,
        "the engine is closed: no new task call starts",
    )
}

fn stopped() -> TaskError {
    TaskError::new(
        host::codes::EXECUTION_FAILED,
        "the runtime stopped before the task call ended",
    )
}

impl<R: Runtime> Engine<R> {
    fn task_operation(
        &self,
        agent: &str,
        command: TaskCommand,
    ) -> Result<TaskOperation, TaskError> {
        if self.is_closed() {
            return Err(closed());
        }
        let config = TaskOperationConfig {
            seed: self.next_seed(),
            budget: self.config().run.task_budget,
            decode_limits: self.config().run.decode_limits,
        };
        // The cards now; a change during the call does not reach it.
        let cards = self.cards();
        if let Some(e) = cards.broken.get(agent) {
            return Err(TaskError::new(crate::CARD_UNUSABLE, e.to_string()));
        }
        TaskOperation::new(&cards.directory, agent, command, config)
    }

    /// Runs one unary task call to its answer.
    async fn unary_task_call(
        &self,
        agent: &str,
        command: TaskCommand,
    ) -> Result<TaskAnswer, TaskError> {
        let machine = self.task_operation(agent, command)?;
        // Dropping `_close` (this future) cancels the call and drops its connection.
        let (_close, close_rx) = oneshot::channel::<()>();
        let (result_tx, result_rx) = oneshot::channel();
        let mut result_tx = Some(result_tx);
        crate::runtime::spawn::<R>(drive(
            TaskMachine(machine),
            self.transport(),
            close_rx,
            move |told| {
                if let Told::Finished(end) = told {
                    if let Some(tx) = result_tx.take() {
                        let _ = tx.send(end);
                    }
                }
            },
        ));
        result_rx.await.unwrap_or_else(|_| Err(stopped()))
    }

    /// `GetTask`: the task `task_id` as `agent` holds it now, with the agent's default history.
    /// Uses the agent's card, binding, authentication and TLS exactly like a workflow subtask;
    /// one request, bounded by the task budget ([`RunConfig::task_budget`]). Errors are the
    /// typed codes of [`TaskError`] (`a2a.task_not_found`, `remote.no_response`, …).
    ///
    /// [`RunConfig::task_budget`]: a2at_core::RunConfig::task_budget
    pub async fn get_task(&self, agent: &str, task_id: &str) -> Result<Task, TaskError> {
        self.get_task_with_history(agent, task_id, None).await
    }

    /// [`Engine::get_task`] with `historyLength` (`Some(0)`: no history).
    pub async fn get_task_with_history(
        &self,
        agent: &str,
        task_id: &str,
        history_length: Option<u32>,
    ) -> Result<Task, TaskError> {
        let command = TaskCommand::Get {
            task_id: task_id.to_owned(),
            history_length,
        };
        match self.unary_task_call(agent, command).await? {
            TaskAnswer::Task(task) => Ok(task),
            _ => Err(stopped()),
        }
    }

    /// `ListTasks`: one page of the tasks `agent` lets the caller see, filtered by `params`.
    /// The next page is `params` with `page_token` set to the answer's `next_page_token`,
    /// which is `None` on the last page. A page size outside 1..=100 is refused before
    /// anything is sent (`task.invalid_request`).
    pub async fn list_tasks(
        &self,
        agent: &str,
        params: ListTasksParams,
    ) -> Result<TaskPage, TaskError> {
        match self
            .unary_task_call(agent, TaskCommand::List(params))
            .await?
        {
            TaskAnswer::Page(page) => Ok(page),
            _ => Err(stopped()),
        }
    }

    /// `CancelTask`: asks `agent` to cancel `task_id` and returns the task as the agent
    /// answered (normally `TASK_STATE_CANCELED`). A task that is already final is the agent's
    /// `a2a.task_not_cancelable`.
    pub async fn cancel_task(&self, agent: &str, task_id: &str) -> Result<Task, TaskError> {
        let command = TaskCommand::Cancel {
            task_id: task_id.to_owned(),
        };
        match self.unary_task_call(agent, command).await? {
            TaskAnswer::Task(task) => Ok(task),
            _ => Err(stopped()),
        }
    }

    /// `SubscribeToTask`: follows `task_id` on `agent` as a [`TaskSubscription`], a stream of
    /// the task's typed events. `Err` only when nothing may be sent (unknown agent, blank id);
    /// a remote failure is the stream's last item. Must be called where the runtime can spawn
    /// tasks (with `a2at-tokio`, inside a tokio runtime).
    pub fn subscribe_to_task(
        &self,
        agent: &str,
        task_id: &str,
    ) -> Result<TaskSubscription, TaskError> {
        let command = TaskCommand::Subscribe {
            task_id: task_id.to_owned(),
        };
        let machine = self.task_operation(agent, command)?;
        let (close_tx, close_rx) = oneshot::channel::<()>();
        // Engine::close ends the subscription too.
        let (engine_close_tx, engine_close_rx) = oneshot::channel::<()>();
        let ticket = self
            .registry()
            .open_subscription(move || {
                let _ = engine_close_tx.send(());
            })
            .ok_or_else(closed)?;
        let (events_tx, events_rx) = mpsc::unbounded();
        let transport = self.transport();
        crate::runtime::spawn::<R>(async move {
            drive(
                TaskMachine(machine),
                transport,
                Cancel::either(close_rx, Some(engine_close_rx)),
                move |told| {
                    let item = match told {
                        Told::Event(e) => Some(Ok(e)),
                        Told::Finished(Err(e)) => Some(Err(e)),
                        Told::Finished(Ok(_)) => None,
                    };
                    if let Some(item) = item {
                        let _ = events_tx.unbounded_send(item);
                    }
                },
            )
            .await;
            drop(ticket);
        });
        Ok(TaskSubscription {
            agent: agent.to_owned(),
            task_id: task_id.to_owned(),
            events: events_rx,
            close: Mutex::new(Some(close_tx)),
        })
    }
}

/// A `SubscribeToTask` stream from [`Engine::subscribe_to_task`]: each item is one event of
/// the task (snapshot, status update, artifact update or message) in the agent's order, or,
/// as the last item, the error that ended it. The stream ends (`None`) when the agent ends it
/// or after [`TaskSubscription::close`] or [`Engine::close`]. Dropping it closes it: the
/// connection is dropped, and nothing is sent to the agent (the protocol has no unsubscribe
/// call). Events received and not yet read wait in memory, so read them or close the
/// subscription.
#[derive(Debug)]
pub struct TaskSubscription {
    agent: String,
    task_id: String,
    events: mpsc::UnboundedReceiver<Result<StreamResponse, TaskError>>,
    close: Mutex<Option<oneshot::Sender<()>>>,
}

impl TaskSubscription {
    /// The agent followed.
    pub fn agent_name(&self) -> &str {
        &self.agent
    }

    /// The task followed.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// Stops following the task: the connection is dropped and the stream ends after the
    /// events already received. Idempotent.
    pub fn close(&self) {
        let close = self.close.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(close) = close {
            let _ = close.send(());
        }
    }

    /// The next item, or `None` at the end.
    pub async fn next_event(&mut self) -> Option<Result<StreamResponse, TaskError>> {
        futures::StreamExt::next(&mut self.events).await
    }
}

impl Stream for TaskSubscription {
    type Item = Result<StreamResponse, TaskError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.events).poll_next(cx)
    }
}
