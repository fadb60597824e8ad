//! Durable runs: a run's journal, the store that keeps it, and resuming a run from it.
//!
//! A run is a pure function of how it was built and of the timed inputs fed to it (see
//! `a2at_core::trace`), so a journal of those inputs *is* the run: rebuilding it is replay.
//!
//! * **What is journaled**: the trace header (seed, configuration, workflow, cards, with
//!   `"outputs":false`) when the run starts, then one trace line per input and per timeout, in
//!   the order the core consumed them. Outputs are not journaled: replay produces them again.
//! * **Write-ahead**: the lines of the inputs fed since the last commit (and the timeouts they
//!   made due) are appended in one transaction *before* the outputs they caused are carried out
//!   (requests sent, host callbacks called, events delivered).
//! * **Group commit**: a commit happens only when there is something to carry out, and inputs
//!   already waiting when the run loop wakes join the same turn. The head and body of a
//!   response, or a poll that only sets a timer, ride with the next commit instead of paying
//!   one each; a crash before it loses only inputs nothing was done with, which the resumed
//!   run gets again by asking the agent. A failed append stops the run
//!   at once, without carrying anything out, with the result `run.journal_failed`: the journal
//!   then holds a run that [`Engine::resume`](crate::Engine::resume) can continue.
//! * **Blocking**: [`JournalStore`] is a small blocking trait; the run loop calls it through
//!   [`Runtime::run_blocking`], since a durable commit waits for the disk (an `fsync`) and
//!   must not stall the executor thread every other run and exchange shares.
//! * **Ownership**: a store several processes share (`PostgresJournal`) gives each run one owner
//!   at a time; resuming first takes the run over ([`JournalStore::acquire`]), which a live
//!   owner's lease refuses, and an append by a store that lost the run is refused
//!   ([`JournalError::Fenced`]), which stops its run like any failed append.
//! * **Resume**: the journal is replayed into a fresh core without carrying out any output;
//!   then every exchange still open (sent, with no end or failure journaled) is failed with
//!   `TransportFailed` of kind `Restarted`, so the core's retry rules find the task again
//!   (`SubscribeToTask`/`GetTask` when its id is known, `ListTasks` by context id for a send
//!   whose answer was lost, and the same message with the same `messageId` again when the
//!   lookup finds no task), and every host callback asked but not answered is asked again.
//!   This needs a retry policy with attempts (the default): with `RetryPolicy::FAIL_FAST` an
//!   exchange open at the restart fails its subtask. Events of the replayed part are not
//!   delivered again; the resumed handle's events start with what happens after the restart. The clock goes on from the run's wall-clock
//!   start, so time spent down counts against the budgets.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use a2at_core::agents::AgentDirectory;
use a2at_core::host::ControlPoint;
use a2at_core::host::HostRequest;
use a2at_core::io::{Input, Output, TransportError, TransportErrorKind};
use a2at_core::result::{ExecutionResult, RunError};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::trace::{RecordedInput, TraceHeader, TraceLine, TraceWriter, parse_trace};
use a2at_core::workflow::ValidatedWorkflow;
use a2at_core::{CallId, OpId, Timestamp};
use futures::channel::oneshot;
use tracing::Instrument;

use crate::completions;
use crate::engine::Engine;
use crate::events::RunHandle;
use crate::run_loop::{Cancel, Driver};
use crate::runtime::Runtime;

/// The result code of a run stopped because its journal could not be written.
pub const JOURNAL_FAILED: &str = "run.journal_failed";

/// Why a journal could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// No run with this id in the store.
    #[error("journal: no run {run_id:?}")]
    UnknownRun {
        /// The run.
        run_id: String,
    },
    /// A run with this id already exists (journaled runs need unique execution ids).
    #[error("journal: run {run_id:?} already exists")]
    AlreadyExists {
        /// The run.
        run_id: String,
    },
    /// An append that does not continue the journal (a duplicate or a gap).
    #[error("journal: run {run_id:?}: append at line {got}, the next line is {expected}")]
    OutOfOrder {
        /// The run.
        run_id: String,
        /// The next line the journal expects.
        expected: u64,
        /// The line the append started at.
        got: u64,
    },
    /// The run finished; there is nothing to resume.
    #[error("journal: run {run_id:?} has finished")]
    Finished {
        /// The run.
        run_id: String,
    },
    /// A journal line (0 is the header) that is truncated, garbled or does not rebuild the run.
    #[error("journal: run {run_id:?}, line {line}: {message}")]
    Corrupt {
        /// The run.
        run_id: String,
        /// The line: 0 for the header, then 1, 2, … in append order.
        line: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The store itself failed (I/O, database error, a panic in the store).
    #[error("journal store: {0}")]
    Store(String),
    /// This store lost its lease on the run: another owner took the run over (or it never held
    /// one), so nothing it appends can be part of the run any more.
    #[error(
        "journal: run {run_id:?} is fenced off: its lease belongs to {} (token {token})",
        holder.as_deref().map_or_else(|| "nobody".to_owned(), |h| format!("{h:?}"))
    )]
    Fenced {
        /// The run.
        run_id: String,
        /// The owner holding the run now, if any.
        holder: Option<String>,
        /// The fencing token of the current lease (it grows with every takeover).
        token: u64,
    },
    /// Another owner's lease on the run is still live: the run cannot be taken over yet.
    #[error("journal: run {run_id:?} is leased to {owner:?} until {until_ms} ms after the epoch")]
    Leased {
        /// The run.
        run_id: String,
        /// The owner holding the lease.
        owner: String,
        /// When the lease expires by the store's clock, in milliseconds since the Unix epoch.
        until_ms: u64,
    },
}

/// One run as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    /// The run's id (its execution id).
    pub run_id: String,
    /// The trace header line.
    pub header: String,
    /// Wall-clock start of the run, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// The journal lines after the header, line 1 first.
    pub lines: Vec<String>,
    /// Whether the run finished.
    pub finished: bool,
}

/// A run in a store's listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The run's id (its execution id).
    pub run_id: String,
    /// Wall-clock start of the run, in milliseconds since the Unix epoch.
    pub started_at_ms: u64,
    /// Journal lines after the header.
    pub lines: u64,
    /// Whether the run finished.
    pub finished: bool,
    /// The owner of the run's lease, in a store with leases (none when free or finished).
    pub lease_owner: Option<String>,
    /// When that lease expires by the store's clock, in milliseconds since the Unix epoch.
    pub lease_until_ms: Option<u64>,
}

/// Where journals live. Blocking and small: the run loop calls it on the runtime's blocking
/// pool, one call per turn of the loop at most. Implementations must make [`JournalStore::append`]
/// atomic (all lines or none) and durable before returning `Ok`.
///
/// A store several processes share gives each run one owner at a time: [`JournalStore::create_run`]
/// makes the calling store the owner, [`JournalStore::acquire`] takes a run over, and an append
/// by a store that is no longer the owner is refused with [`JournalError::Fenced`].
pub trait JournalStore: Send + Sync + 'static {
    /// Creates run `run_id` with its header line; refused with
    /// [`JournalError::AlreadyExists`] when the id is taken.
    fn create_run(
        &self,
        run_id: &str,
        header: &str,
        started_at_ms: u64,
    ) -> Result<(), JournalError>;

    /// Appends `lines` as lines `first`, `first + 1`, … (line 1 is the first after the header),
    /// all or none. An append that is not the next line is refused with
    /// [`JournalError::OutOfOrder`].
    fn append(&self, run_id: &str, first: u64, lines: &[String]) -> Result<(), JournalError>;

    /// Makes this store the owner of run `run_id` before it is resumed. A store of one process
    /// has nothing to take over (the default accepts); a shared store refuses a run whose
    /// owner's lease is live with [`JournalError::Leased`].
    fn acquire(&self, run_id: &str) -> Result<(), JournalError> {
        let _ = run_id;
        Ok(())
    }

    /// The whole journal of a run (reading takes no ownership).
    fn load(&self, run_id: &str) -> Result<StoredRun, JournalError>;

    /// Every run in the store, by id.
    fn list(&self) -> Result<Vec<RunSummary>, JournalError>;

    /// Marks a run finished (a resume then refuses it).
    fn mark_finished(&self, run_id: &str) -> Result<(), JournalError>;
}

/// Runs one store call on the runtime's blocking pool; a panic in the store is an error.
async fn blocking<R: Runtime, T: Send + 'static>(
    call: impl FnOnce() -> Result<T, JournalError> + Send + 'static,
) -> Result<T, JournalError> {
    let (tx, rx) = oneshot::channel();
    R::run_blocking(move || {
        let result = std::panic::catch_unwind(AssertUnwindSafe(call))
            .unwrap_or_else(|_| Err(JournalError::Store("the journal store panicked".into())));
        let _ = tx.send(result);
    })
    .await;
    rx.await
        .unwrap_or_else(|_| Err(JournalError::Store("the journal call was dropped".into())))
}

/// Wall-clock milliseconds since the Unix epoch.
fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// One run's journaling inside the run loop: the lines of the current turn, appended at once.
pub(crate) struct Journaling {
    store: Arc<dyn JournalStore>,
    run_id: String,
    /// The header line, until the run is created in the store (or why it cannot be).
    header: Option<Result<String, String>>,
    started_at_ms: u64,
    next: u64,
    batch: Vec<String>,
    lines: TraceWriter,
}

impl Journaling {
    /// Journaling of a new run built from these parts; the run id is set once the run exists.
    pub(crate) fn new_run(
        store: Arc<dyn JournalStore>,
        workflow: &ValidatedWorkflow,
        agents: &AgentDirectory,
        config: &RunConfig,
        start: &RunStart,
    ) -> Journaling {
        let lines = TraceWriter::new();
        let header = TraceHeader::new(workflow, agents, config, start)
            .map(|mut h| {
                // The journal holds inputs only: replay makes the outputs again.
                h.outputs = false;
                lines.header(&h)
            })
            .map_err(|e| format!("this run cannot be journaled: {e}"));
        Journaling {
            store,
            run_id: String::new(),
            header: Some(header),
            started_at_ms: wall_ms(),
            next: 1,
            batch: Vec::new(),
            lines,
        }
    }

    /// Names the run (its execution id).
    pub(crate) fn set_run_id(&mut self, run_id: &str) {
        run_id.clone_into(&mut self.run_id);
    }

    /// Queues the line of a [`Run::handle`] call.
    pub(crate) fn input(&mut self, now: Timestamp, input: &Input) {
        self.batch.push(self.lines.input(now, input));
    }

    /// Queues the line of a [`Run::handle_timeout`] call.
    pub(crate) fn timeout(&mut self, now: Timestamp) {
        self.batch.push(self.lines.timeout(now));
    }

    /// Creates the run in the store (first call only) and appends the queued lines in one
    /// transaction. Nothing caused by these lines may be carried out before this returned `Ok`.
    pub(crate) async fn commit<R: Runtime>(&mut self) -> Result<(), JournalError> {
        if let Some(header) = self.header.take() {
            let header = header.map_err(JournalError::Store)?;
            let (store, id, at) = (self.store.clone(), self.run_id.clone(), self.started_at_ms);
            blocking::<R, _>(move || store.create_run(&id, &header, at)).await?;
        }
        if self.batch.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut self.batch);
        let count = batch.len() as u64;
        let (store, id, first) = (self.store.clone(), self.run_id.clone(), self.next);
        blocking::<R, _>(move || store.append(&id, first, &batch)).await?;
        self.next += count;
        Ok(())
    }

    /// Marks the run finished; a failure is only logged (a resume replays to the same end).
    pub(crate) async fn finish<R: Runtime>(&mut self) {
        let (store, id) = (self.store.clone(), self.run_id.clone());
        if let Err(error) = blocking::<R, _>(move || store.mark_finished(&id)).await {
            tracing::warn!(%error, "cannot mark the journaled run finished");
        }
    }

    /// The result of a run stopped by a journal failure (resumable from its journal).
    pub(crate) fn failed(execution_id: &str, error: &JournalError) -> ExecutionResult {
        ExecutionResult {
            execution_id: execution_id.to_owned(),
            success: false,
            error: Some(RunError {
                code: JOURNAL_FAILED.to_owned(),
                message: format!("the run stopped: its journal cannot be written ({error})"),
            }),
            history: Vec::new(),
            steps: Vec::new(),
        }
    }
}

/// What a run loop needs to go on with a run rebuilt from its journal.
pub(crate) struct Resumed {
    /// The run's time now: the wall-clock time since its start (never before its last line).
    pub(crate) offset: Duration,
    /// Host callbacks asked and not answered before the restart, to ask again.
    pub(crate) reask: Vec<(CallId, HostRequest)>,
    /// Finished tasks whose conversations were already reported before the restart.
    pub(crate) tasks_seen: usize,
}

/// Exchanges and host calls the core considers open, from the outputs and inputs it saw.
#[derive(Default)]
struct Open {
    ops: BTreeSet<OpId>,
    calls: BTreeMap<CallId, HostRequest>,
}

impl Open {
    fn output(&mut self, output: Output) {
        match output {
            Output::Transmit(req) => {
                self.ops.insert(req.op);
            }
            Output::AbortTransmit { op } => {
                self.ops.remove(&op);
            }
            Output::CallHost { call, request } => {
                self.calls.insert(call, request);
            }
            Output::AbandonHostCall { call } => {
                self.calls.remove(&call);
            }
            _ => {}
        }
    }

    fn input(&mut self, input: &Input) {
        match input {
            Input::ResponseEnd { op } | Input::TransportFailed { op, .. } => {
                self.ops.remove(op);
            }
            Input::HostReply { call, .. } => {
                self.calls.remove(call);
            }
            _ => {}
        }
    }

    fn drain(&mut self, run: &mut Run) {
        while let Some(output) = run.poll_output() {
            self.output(output);
        }
    }
}

/// A run rebuilt from its journal, ready to be driven.
pub(crate) struct Rebuilt {
    pub(crate) run: Run,
    pub(crate) journal: Journaling,
    pub(crate) resumed: Resumed,
    pub(crate) seed: u64,
    /// The host's trace the run joined when it started, if any.
    pub(crate) host_parent: Option<a2at_core::tracectx::TraceParent>,
}

/// Loads run `run_id` from `store` and replays it (see the module docs).
pub(crate) async fn rebuild<R: Runtime>(
    store: Arc<dyn JournalStore>,
    run_id: &str,
) -> Result<Rebuilt, JournalError> {
    let stored = {
        let (store, id) = (store.clone(), run_id.to_owned());
        // Owned before it is read: no other process appends to it while it is replayed.
        blocking::<R, _>(move || {
            store.acquire(&id)?;
            store.load(&id)
        })
        .await?
    };
    if stored.finished {
        return Err(JournalError::Finished {
            run_id: run_id.to_owned(),
        });
    }
    let corrupt = |line: u64, message: String| JournalError::Corrupt {
        run_id: run_id.to_owned(),
        line,
        message,
    };
    // A line holding a newline would shift every later line: refuse it by name.
    for (i, line) in std::iter::once(&stored.header)
        .chain(&stored.lines)
        .enumerate()
    {
        if line.contains('\n') || line.trim().is_empty() {
            return Err(corrupt(i as u64, "not a single trace line".into()));
        }
    }
    let mut text = String::with_capacity(
        stored.header.len() + stored.lines.iter().map(|l| l.len() + 1).sum::<usize>() + 1,
    );
    text.push_str(&stored.header);
    for line in &stored.lines {
        text.push('\n');
        text.push_str(line);
    }
    // Trace line n (1-based, the header is 1) is journal line n - 1.
    let trace = parse_trace(&text)
        .map_err(|e| corrupt(e.line.saturating_sub(1) as u64, e.kind.to_string()))?;
    if trace.header.outputs
        || trace
            .lines
            .iter()
            .any(|(_, l)| matches!(l, TraceLine::Output(_)))
    {
        return Err(corrupt(0, "a journal holds no outputs".into()));
    }
    let mut run = trace.new_run();
    let mut open = Open::default();
    open.drain(&mut run);
    let mut last = Timestamp::ZERO;
    for (n, line) in &trace.lines {
        let line_no = n.saturating_sub(1) as u64;
        let result = match line {
            TraceLine::Input { t, input } => {
                let RecordedInput::Input(input) = input else {
                    return Err(corrupt(line_no, "a redacted input".into()));
                };
                last = last.max(*t);
                open.input(input);
                run.handle(input.clone(), *t)
            }
            TraceLine::Timeout { t } => {
                last = last.max(*t);
                run.handle_timeout(*t)
            }
            TraceLine::Output(_) => continue,
        };
        // The live run logged and ignored such a rejection too; replay keeps it identical.
        if let Err(misuse) = result {
            tracing::warn!(%misuse, line = line_no, "journaled input rejected again on replay");
        }
        open.drain(&mut run);
    }
    let since_start = Duration::from_millis(wall_ms().saturating_sub(stored.started_at_ms));
    let offset = since_start.max(Duration::from_micros(last.as_micros()));
    let mut journal = Journaling {
        store,
        run_id: run_id.to_owned(),
        header: None,
        started_at_ms: stored.started_at_ms,
        next: stored.lines.len() as u64 + 1,
        batch: Vec::new(),
        lines: TraceWriter::new(),
    };
    let now = Timestamp::from_micros(u64::try_from(offset.as_micros()).unwrap_or(u64::MAX));
    if !run.is_finished() {
        // Their answers died with the old process: the core's retry rules take over.
        for op in std::mem::take(&mut open.ops) {
            let input = Input::TransportFailed {
                op,
                error: TransportError {
                    kind: TransportErrorKind::Restarted,
                    message: "the engine restarted".into(),
                },
            };
            journal.input(now, &input);
            if let Err(misuse) = run.handle(input, now) {
                tracing::warn!(%misuse, "the core rejected a restart failure");
            }
        }
    }
    let tasks_seen = run.finished_count();
    Ok(Rebuilt {
        seed: trace.header.seed,
        host_parent: trace.header.config.trace_parent,
        run,
        journal,
        resumed: Resumed {
            offset,
            reask: open.calls.into_iter().collect(),
            tasks_seen,
        },
    })
}

/// [`Engine::resume`](crate::Engine::resume): rebuilds the run and drives it on.
pub(crate) async fn resume<R: Runtime, C: ControlPoint + 'static>(
    engine: &Engine<R>,
    store: Arc<dyn JournalStore>,
    run_id: &str,
    control_point: Arc<C>,
) -> Result<RunHandle, JournalError> {
    let Rebuilt {
        run,
        mut journal,
        resumed,
        seed,
        host_parent,
    } = rebuild::<R>(store, run_id).await?;
    let execution_id = run.execution_id().to_owned();
    let trace_id = run.trace_id();
    let (events_tx, events_rx) = completions::channel(engine.config().event_queue);
    let (progress_tx, progress_rx) = completions::channel(usize::MAX);
    let (cancel_tx, cancel_rx) = oneshot::channel();
    let (result_tx, result_rx) = oneshot::channel();
    let handle = RunHandle {
        execution_id: execution_id.clone(),
        seed,
        events: Some(events_rx),
        result: result_rx,
        cancel: std::sync::Mutex::new(Some(cancel_tx)),
        progress: progress_tx,
    };
    if let Some(result) = run.result() {
        // It finished before the crash, only the mark was lost.
        journal.finish::<R>().await;
        let _ = result_tx.send(result.clone());
        return Ok(handle);
    }
    let Some((ticket, close_rx)) = engine.registry().open_run() else {
        return Err(JournalError::Store(
            "the engine is closed: no run resumes".into(),
        ));
    };
    let driver = Driver::<R, C> {
        transport: engine.transport(),
        control_point,
        on_finish: None,
        sink: None,
        events_tx,
        events_open: true,
        map_events: None,
        progress_rx: Some(progress_rx),
        recorder: None,
        ticket: Some(ticket),
        on_conversation_closed: engine.conversation_hook(),
        journal: Some(Box::new(journal)),
    };
    tracing::info!(%execution_id, seed, "run resumed from its journal");
    let span = crate::telemetry::run_span(&execution_id, seed, trace_id, host_parent, true);
    crate::runtime::spawn::<R>(async move {
        let result = driver
            .drive_from(run, Cancel::either(cancel_rx, Some(close_rx)), resumed)
            .instrument(span.clone())
            .await;
        crate::telemetry::record_outcome(&span, &result);
        // Closed before the result is out, as for a run started here.
        drop(span);
        let _ = result_tx.send(result);
    });
    Ok(handle)
}
