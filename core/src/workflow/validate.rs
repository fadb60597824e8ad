//! Graph validation into the index-based [`ValidatedWorkflow`].
//!
//! [`ValidatedWorkflow::new`] checks every rule and reports **every** problem it finds:
//!
//! * step names are non-blank, unique and not a terminal marker (`end`, `retry`, `endNode`);
//! * each edge target is non-blank and names a step or a terminal marker, and no source lists
//!   the same target twice (whatever the conditions);
//! * the graph has no cycle, self-edges included. Cycles are found by an iterative white/grey/black
//!   DFS (no recursion, so very long chains cannot overflow the stack); each back edge is reported
//!   once, naming the steps on the cycle it closes;
//! * `context_from`: `"*"` is not combined with names, and every named source exists and is an
//!   ancestor (transitive predecessor) of the step.
//!
//! A workflow with **zero steps is valid**: it has nothing to run and completes successfully at
//! once.
//!
//! # Cost
//!
//! Name lookups use a `BTreeMap`, so every per-step and per-edge check is O(log V) and the whole
//! structural pass (names, edges, cycle search, topological order) is O((V + E) log V). Cycle
//! messages list at most [`CYCLE_NAMES_SHOWN`] steps, so reporting stays bounded too.
//!
//! The ancestor check for named `context_from` sources walks backwards from the step that names
//! them, and stops as soon as every named source has been reached. In the worst case this is
//! O(V + E) per step that names sources, i.e. O(k·(V + E)) for k such steps; steps with an absent,
//! empty or `"*"` `context_from` cost nothing. The walk marks visited steps, so it is safe (and
//! still run) on a graph with cycles.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use super::model::{ContextFrom, Step, Subtask, Workflow, is_terminal_marker};
use super::parse::WorkflowParseError;
use crate::ids::StepId;

/// Cycle messages name at most this many steps (the first and last halves of a longer cycle).
pub const CYCLE_NAMES_SHOWN: usize = 16;

/// A terminal marker used as an edge target: it activates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TerminalMarker {
    /// `end`
    End,
    /// `retry` (no retry semantics)
    Retry,
    /// `endNode`
    EndNode,
}

impl TerminalMarker {
    /// The marker as written in the workflow: `"end"`, `"retry"` or `"endNode"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TerminalMarker::End => "end",
            TerminalMarker::Retry => "retry",
            TerminalMarker::EndNode => "endNode",
        }
    }

    /// The marker spelled exactly `name`, if any.
    pub fn from_name(name: &str) -> Option<TerminalMarker> {
        match name {
            "end" => Some(TerminalMarker::End),
            "retry" => Some(TerminalMarker::Retry),
            "endNode" => Some(TerminalMarker::EndNode),
            _ => None,
        }
    }
}

impl core::fmt::Display for TerminalMarker {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a resolved edge leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeTarget {
    /// Another step.
    Step(StepId),
    /// A terminal marker: the branch ends.
    Terminal(TerminalMarker),
}

/// An edge of a validated workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEdge {
    /// The target.
    pub target: EdgeTarget,
    /// The condition text exactly as written when it is non-blank; `None` when it is blank
    /// (missing, `null`, empty or whitespace-only), i.e. the edge is unconditional.
    pub condition: Option<String>,
}

impl ResolvedEdge {
    /// Whether activating this edge needs an `onRoute` decision.
    pub fn is_conditional(&self) -> bool {
        self.condition.is_some()
    }

    /// The target's name: the step name or the marker text.
    pub fn target_name<'a>(&self, wf: &'a ValidatedWorkflow) -> &'a str {
        match self.target {
            EdgeTarget::Step(id) => &wf.step(id).name,
            EdgeTarget::Terminal(m) => m.as_str(),
        }
    }
}

/// Which upstream results a step sees, resolved from its `context_from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContextSources {
    /// `context_from` absent, `null` or blank: the direct predecessors that have results.
    DirectPredecessors,
    /// `context_from: []`: no upstream results (the runtime intent is still passed).
    Nothing,
    /// `context_from: ["*"]`: every ancestor that has results.
    AllAncestors,
    /// The named steps that have results, in the order of the list (repeats removed).
    Named(Vec<StepId>),
}

/// The kind of a [`ValidationProblem`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A step name is empty or whitespace-only.
    BlankStepName,
    /// Two steps share a name.
    DuplicateStepName,
    /// A step is named after a terminal marker (`end`, `retry`, `endNode`).
    ReservedStepName,
    /// An edge target is empty or whitespace-only.
    BlankEdgeTarget,
    /// An edge target is neither a step nor a terminal marker.
    UnknownEdgeTarget,
    /// A step lists the same target more than once.
    DuplicateEdgeTarget,
    /// The edges form a cycle (a self-edge included).
    Cycle,
    /// `context_from` combines `"*"` with step names.
    ContextFromMixesWildcard,
    /// `context_from` names a step that does not exist (or a blank name).
    ContextFromUnknownStep,
    /// `context_from` names a step that is not an ancestor of this step.
    ContextFromNotAncestor,
    /// More steps than a [`StepId`] can index (over `u32::MAX`).
    TooManySteps,
}

/// One rule violation found by [`ValidatedWorkflow::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationProblem {
    /// What kind of violation.
    pub kind: ProblemKind,
    /// The step concerned, when there is one (the name as written).
    pub step: Option<String>,
    /// The edge concerned as `(source, target)`, when there is one.
    pub edge: Option<(String, String)>,
    /// A message naming the step and the edge.
    pub message: String,
}

impl core::fmt::Display for ValidationProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The workflow breaks graph rules; lists every problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowValidationError {
    /// All problems: names first, then edges, cycles and `context_from`. Never empty.
    pub problems: Vec<ValidationProblem>,
}

impl WorkflowValidationError {
    /// Whether some problem is of `kind`.
    pub fn has(&self, kind: ProblemKind) -> bool {
        self.problems.iter().any(|p| p.kind == kind)
    }
}

impl core::fmt::Display for WorkflowValidationError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "invalid workflow ({} problem{}):",
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for WorkflowValidationError {}

/// Either stage of [`parse_and_validate`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkflowError {
    /// The JSON is malformed or has wrongly typed fields.
    #[error(transparent)]
    Parse(#[from] WorkflowParseError),
    /// The workflow parsed but breaks graph rules.
    #[error(transparent)]
    Invalid(#[from] WorkflowValidationError),
}

/// Parses workflow JSON text and validates it.
pub fn parse_and_validate(json: &str) -> Result<ValidatedWorkflow, WorkflowError> {
    let wf = Workflow::from_json_str(json)?;
    Ok(ValidatedWorkflow::new(wf)?)
}

/// Compressed adjacency lists: the neighbours of `i` are `items[offsets[i]..offsets[i + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Adjacency {
    offsets: Vec<usize>,
    items: Vec<StepId>,
}

impl Adjacency {
    fn of(&self, i: usize) -> &[StepId] {
        &self.items[self.offsets[i]..self.offsets[i + 1]]
    }
}

/// A workflow that passed every graph rule, with steps addressed by [`StepId`] and all lookups
/// precomputed.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidatedWorkflow {
    workflow: Workflow,
    /// Step ids sorted by name, for binary-search lookup.
    by_name: Vec<StepId>,
    edges: Vec<Vec<ResolvedEdge>>,
    successors: Adjacency,
    predecessors: Adjacency,
    start_steps: Vec<StepId>,
    topological_order: Vec<StepId>,
    context: Vec<ContextSources>,
}

fn sid(i: usize) -> StepId {
    // Callers only pass indices below the step count, which `new` checked fits in a u32.
    StepId(i as u32)
}

/// `step "name"`, or `step #i (blank name)` when there is no usable name.
fn label(i: usize, name: &str) -> String {
    if name.trim().is_empty() {
        format!("step #{i} (blank name)")
    } else {
        format!("step {name:?}")
    }
}

struct Problems(Vec<ValidationProblem>);

impl Problems {
    fn push(&mut self, kind: ProblemKind, step: &str, edge: Option<(&str, &str)>, message: String) {
        self.0.push(ValidationProblem {
            kind,
            step: Some(step.to_owned()),
            edge: edge.map(|(a, b)| (a.to_owned(), b.to_owned())),
            message,
        });
    }
}

/// Maps each non-blank step name to the first step that has it, reporting blank, reserved and
/// repeated names.
fn index_step_names<'w>(steps: &'w [Step], problems: &mut Problems) -> BTreeMap<&'w str, StepId> {
    let mut by_name: BTreeMap<&str, StepId> = BTreeMap::new();
    for (i, s) in steps.iter().enumerate() {
        if s.name.trim().is_empty() {
            problems.push(
                ProblemKind::BlankStepName,
                &s.name,
                None,
                format!("step #{i} has a blank name"),
            );
            continue;
        }
        if is_terminal_marker(&s.name) {
            problems.push(
                ProblemKind::ReservedStepName,
                &s.name,
                None,
                format!(
                    "step {:?} (#{i}) uses a reserved terminal marker as its name \
                     (end, retry and endNode are reserved)",
                    s.name
                ),
            );
        }
        match by_name.get(s.name.as_str()) {
            Some(first) => problems.push(
                ProblemKind::DuplicateStepName,
                &s.name,
                None,
                format!(
                    "step {:?} (#{i}) has the same name as step #{}",
                    s.name, first.0
                ),
            ),
            None => {
                by_name.insert(&s.name, sid(i));
            }
        }
    }
    by_name
}

/// Resolves every step's edges to steps or terminal markers; an edge with a blank, repeated or
/// unknown target is reported and left out.
fn resolve_edges(
    steps: &[Step],
    by_name: &BTreeMap<&str, StepId>,
    problems: &mut Problems,
) -> Vec<Vec<ResolvedEdge>> {
    let mut edges: Vec<Vec<ResolvedEdge>> = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let mut resolved = Vec::with_capacity(s.next.len());
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        for (j, e) in s.next.iter().enumerate() {
            let edge = Some((s.name.as_str(), e.step.as_str()));
            if e.step.trim().is_empty() {
                problems.push(
                    ProblemKind::BlankEdgeTarget,
                    &s.name,
                    edge,
                    format!(
                        "{} has an edge (next[{j}]) with a blank target",
                        label(i, &s.name)
                    ),
                );
                continue;
            }
            if !seen.insert(&e.step) {
                problems.push(
                    ProblemKind::DuplicateEdgeTarget,
                    &s.name,
                    edge,
                    format!(
                        "{} lists the target {:?} more than once (edge {:?} -> {:?}, next[{j}])",
                        label(i, &s.name),
                        e.step,
                        s.name,
                        e.step
                    ),
                );
                continue;
            }
            let target = if let Some(m) = TerminalMarker::from_name(&e.step) {
                EdgeTarget::Terminal(m)
            } else if let Some(&id) = by_name.get(e.step.as_str()) {
                EdgeTarget::Step(id)
            } else {
                problems.push(
                    ProblemKind::UnknownEdgeTarget,
                    &s.name,
                    edge,
                    format!(
                        "edge {:?} -> {:?} of {} targets neither a step nor a terminal marker",
                        s.name,
                        e.step,
                        label(i, &s.name)
                    ),
                );
                continue;
            };
            resolved.push(ResolvedEdge {
                target,
                condition: if e.is_conditional() {
                    e.condition.clone()
                } else {
                    None
                },
            });
        }
        edges.push(resolved);
    }
    edges
}

/// The successor and predecessor lists of the resolved edges, and each step's in-degree.
fn adjacency_of(edges: &[Vec<ResolvedEdge>]) -> (Adjacency, Adjacency, Vec<usize>) {
    let n = edges.len();
    // Targets of one source are distinct (`resolve_edges` drops repeats), so the lists need no
    // further deduplication. Self-edges stay in `successors` for the cycle
    // search but are kept out of `predecessors` (DG-1).
    let mut successors = Adjacency {
        offsets: Vec::with_capacity(n + 1),
        items: Vec::new(),
    };
    let mut in_degree = vec![0usize; n];
    successors.offsets.push(0);
    for (i, out) in edges.iter().enumerate() {
        for e in out {
            if let EdgeTarget::Step(t) = e.target {
                successors.items.push(t);
                if t.index() != i {
                    in_degree[t.index()] += 1;
                }
            }
        }
        successors.offsets.push(successors.items.len());
    }
    let mut predecessors = Adjacency {
        offsets: Vec::with_capacity(n + 1),
        items: vec![StepId(0); in_degree.iter().sum()],
    };
    predecessors.offsets.push(0);
    for d in &in_degree {
        let last = predecessors.offsets[predecessors.offsets.len() - 1];
        predecessors.offsets.push(last + d);
    }
    let mut fill: Vec<usize> = predecessors.offsets[..n].to_vec();
    for i in 0..n {
        for &t in successors.of(i) {
            if t.index() != i {
                predecessors.items[fill[t.index()]] = sid(i);
                fill[t.index()] += 1;
            }
        }
    }
    (successors, predecessors, in_degree)
}

impl ValidatedWorkflow {
    /// A workflow of one `ALL_SUCCESS` step named `step` with one subtask for `agent`: what a
    /// single task sent outside any designed workflow runs as. Fails only for names the rules
    /// refuse (blank, or a terminal marker).
    pub fn single_task(
        step: &str,
        agent: &str,
        description: &str,
    ) -> Result<ValidatedWorkflow, WorkflowValidationError> {
        ValidatedWorkflow::new(Workflow {
            id: String::new(),
            name: step.to_owned(),
            description: String::new(),
            steps: vec![Step {
                name: step.into(),
                subtasks: vec![Subtask {
                    agent: agent.into(),
                    description: description.into(),
                    ..Subtask::default()
                }],
                ..Step::default()
            }],
        })
    }

    /// Validates `wf`, reporting every problem found.
    pub fn new(wf: Workflow) -> Result<ValidatedWorkflow, WorkflowValidationError> {
        Self::build(wf)
    }

    // Outside `new`, which cargo-mutants does not mutate.
    fn build(wf: Workflow) -> Result<ValidatedWorkflow, WorkflowValidationError> {
        let steps = &wf.steps;
        let n = steps.len();
        if u32::try_from(n).is_err() {
            return Err(WorkflowValidationError {
                problems: vec![ValidationProblem {
                    kind: ProblemKind::TooManySteps,
                    step: None,
                    edge: None,
                    message: format!(
                        "the workflow has {n} steps; at most {} are supported",
                        u32::MAX
                    ),
                }],
            });
        }
        let mut problems = Problems(Vec::new());
        let by_name = index_step_names(steps, &mut problems);
        let edges = resolve_edges(steps, &by_name, &mut problems);
        let (successors, predecessors, in_degree) = adjacency_of(&edges);

        // Cycles (WM-11).
        find_cycles(steps, &successors, &mut problems);

        // context_from (WM-12).
        let mut context = Vec::with_capacity(n);
        let mut walk = BackwardWalk::new(n);
        for i in 0..n {
            context.push(resolve_context(
                steps,
                i,
                &by_name,
                &predecessors,
                &mut walk,
                &mut problems,
            ));
        }

        if !problems.0.is_empty() {
            return Err(WorkflowValidationError {
                problems: problems.0,
            });
        }

        let start_steps: Vec<StepId> = (0..n)
            .filter(|&i| predecessors.of(i).is_empty())
            .map(sid)
            .collect();
        let topological_order = kahn(n, &successors, in_degree);
        // The map's values come in name order, the order `step_id` searches in.
        let by_name: Vec<StepId> = by_name.into_values().collect();

        Ok(ValidatedWorkflow {
            workflow: wf,
            by_name,
            edges,
            successors,
            predecessors,
            start_steps,
            topological_order,
            context,
        })
    }

    /// The underlying workflow.
    pub fn workflow(&self) -> &Workflow {
        &self.workflow
    }

    /// Consumes the validated form and returns the workflow.
    pub fn into_workflow(self) -> Workflow {
        self.workflow
    }

    /// The number of steps.
    pub fn len(&self) -> usize {
        self.workflow.steps.len()
    }

    /// Whether the workflow has no steps (it then completes successfully at once).
    pub fn is_empty(&self) -> bool {
        self.workflow.steps.is_empty()
    }

    /// The step with id `id`. Panics if `id` is not a step of this workflow.
    pub fn step(&self, id: StepId) -> &Step {
        &self.workflow.steps[id.index()]
    }

    /// The step's name (shorthand for `step(id).name`).
    pub fn step_name(&self, id: StepId) -> &str {
        &self.step(id).name
    }

    /// Every step id, in declaration order.
    pub fn step_ids(&self) -> impl Iterator<Item = StepId> + use<> {
        (0..self.len()).map(sid)
    }

    /// The id of the step named exactly `name` (O(log V)).
    pub fn step_id(&self, name: &str) -> Option<StepId> {
        let steps = &self.workflow.steps;
        self.by_name
            .binary_search_by(|id| steps[id.index()].name.as_str().cmp(name))
            .ok()
            .map(|k| self.by_name[k])
    }

    /// The outgoing edges of `id`, in declaration order.
    pub fn edges(&self, id: StepId) -> &[ResolvedEdge] {
        &self.edges[id.index()]
    }

    /// The distinct steps with an edge (conditional or not) to `id`, in declaration order of
    /// the source.
    pub fn predecessors(&self, id: StepId) -> &[StepId] {
        self.predecessors.of(id.index())
    }

    /// The distinct steps that `id` has an edge to (terminal markers excluded), in edge order.
    pub fn successors(&self, id: StepId) -> &[StepId] {
        self.successors.of(id.index())
    }

    /// The steps with no predecessors, in declaration order. `layer` plays no part.
    pub fn start_steps(&self) -> &[StepId] {
        &self.start_steps
    }

    /// All steps in a topological order: Kahn's algorithm that always takes the ready step
    /// declared first, so the order is deterministic.
    pub fn topological_order(&self) -> &[StepId] {
        &self.topological_order
    }

    /// The resolved `context_from` of `id`.
    pub fn context_sources(&self, id: StepId) -> &ContextSources {
        &self.context[id.index()]
    }

    /// Every transitive predecessor of `id`, in topological order. Computed on demand in
    /// O(V + E).
    pub fn ancestors(&self, id: StepId) -> Vec<StepId> {
        let mut seen = vec![false; self.len()];
        let mut stack: Vec<StepId> = self.predecessors(id).to_vec();
        for p in &stack {
            seen[p.index()] = true;
        }
        while let Some(v) = stack.pop() {
            for &p in self.predecessors(v) {
                if !seen[p.index()] {
                    seen[p.index()] = true;
                    stack.push(p);
                }
            }
        }
        self.topological_order
            .iter()
            .copied()
            .filter(|s| seen[s.index()])
            .collect()
    }
}

/// Iterative white/grey/black DFS. Each back edge closes one cycle, which is reported once.
fn find_cycles(steps: &[Step], successors: &Adjacency, problems: &mut Problems) {
    const WHITE: u8 = 0;
    const GREY: u8 = 1;
    const BLACK: u8 = 2;
    let n = steps.len();
    let mut color = vec![WHITE; n];
    // Position of a grey step on the DFS stack.
    let mut position = vec![0usize; n];
    // (step, index of the next successor to look at)
    let mut stack: Vec<(usize, usize)> = Vec::new();
    let name = |i: usize| steps[i].name.as_str();
    for root in 0..n {
        if color[root] != WHITE {
            continue;
        }
        color[root] = GREY;
        position[root] = 0;
        stack.push((root, 0));
        while let Some(top) = stack.last_mut() {
            let (v, k) = *top;
            let out = successors.of(v);
            if k == out.len() {
                color[v] = BLACK;
                stack.pop();
                continue;
            }
            top.1 += 1;
            let w = out[k].index();
            match color[w] {
                WHITE => {
                    color[w] = GREY;
                    position[w] = stack.len();
                    stack.push((w, 0));
                }
                GREY => {
                    let edge = Some((name(v), name(w)));
                    let message = if v == w {
                        format!(
                            "{} has an edge to itself (edge {:?} -> {:?}), which is a cycle",
                            label(w, name(w)),
                            name(v),
                            name(w)
                        )
                    } else {
                        let on_cycle = &stack[position[w]..];
                        format!(
                            "cycle through {}: {} (closed by edge {:?} -> {:?})",
                            label(w, name(w)),
                            describe_cycle(on_cycle.iter().map(|&(s, _)| name(s)), on_cycle.len()),
                            name(v),
                            name(w)
                        )
                    };
                    problems.push(ProblemKind::Cycle, name(w), edge, message);
                }
                _ => {}
            }
        }
    }
}

/// `"a" -> "b" -> "c" -> "a"`, eliding the middle of cycles longer than [`CYCLE_NAMES_SHOWN`].
fn describe_cycle<'a>(
    names: impl DoubleEndedIterator<Item = &'a str> + Clone,
    len: usize,
) -> String {
    let quoted = |s: &str| format!("{s:?}");
    let first = names.clone().next().map(quoted).unwrap_or_default();
    let mut parts: Vec<String> = Vec::new();
    if len <= CYCLE_NAMES_SHOWN {
        parts.extend(names.map(quoted));
    } else {
        let half = CYCLE_NAMES_SHOWN / 2;
        parts.extend(names.clone().take(half).map(quoted));
        parts.push(format!("... ({} more steps) ...", len - 2 * half));
        let mut tail: Vec<String> = names.rev().take(half).map(quoted).collect();
        tail.reverse();
        parts.extend(tail);
    }
    parts.push(first);
    parts.join(" -> ")
}

/// Reusable scratch space for backward walks: marks are stamped with a walk number so that the
/// arrays never need clearing.
struct BackwardWalk {
    epoch: u32,
    visited: Vec<u32>,
    wanted: Vec<u32>,
    queue: Vec<usize>,
}

impl BackwardWalk {
    fn new(n: usize) -> Self {
        BackwardWalk {
            epoch: 0,
            visited: vec![0; n],
            wanted: vec![0; n],
            queue: Vec::new(),
        }
    }

    /// Which of `sources` are ancestors of `from`. Stops once all of them were reached.
    fn reached(&mut self, from: usize, sources: &[StepId], predecessors: &Adjacency) -> Vec<bool> {
        self.epoch += 1;
        let epoch = self.epoch;
        let mut remaining = 0usize;
        for s in sources {
            if self.wanted[s.index()] != epoch {
                self.wanted[s.index()] = epoch;
                remaining += 1;
            }
        }
        self.queue.clear();
        self.queue.push(from);
        let mut head = 0;
        'walk: while head < self.queue.len() {
            let v = self.queue[head];
            head += 1;
            for p in predecessors.of(v) {
                let p = p.index();
                if self.visited[p] == epoch {
                    continue;
                }
                self.visited[p] = epoch;
                self.queue.push(p);
                if self.wanted[p] == epoch {
                    remaining -= 1;
                    if remaining == 0 {
                        break 'walk;
                    }
                }
            }
        }
        sources
            .iter()
            .map(|s| self.visited[s.index()] == epoch)
            .collect()
    }
}

fn resolve_context(
    steps: &[Step],
    i: usize,
    by_name: &BTreeMap<&str, StepId>,
    predecessors: &Adjacency,
    walk: &mut BackwardWalk,
    problems: &mut Problems,
) -> ContextSources {
    let s = &steps[i];
    let list = match &s.context_from {
        ContextFrom::Absent => return ContextSources::DirectPredecessors,
        ContextFrom::List(list) if list.is_empty() => return ContextSources::Nothing,
        ContextFrom::List(list) => list,
    };
    if list.iter().any(|x| x == "*") {
        if list.iter().all(|x| x == "*") {
            return ContextSources::AllAncestors;
        }
        problems.push(
            ProblemKind::ContextFromMixesWildcard,
            &s.name,
            None,
            format!(
                "{} combines \"*\" with step names in context_from {:?}",
                label(i, &s.name),
                list
            ),
        );
        return ContextSources::Nothing;
    }
    let mut named: Vec<StepId> = Vec::with_capacity(list.len());
    let mut seen: BTreeSet<StepId> = BTreeSet::new();
    for source in list {
        match by_name.get(source.as_str()) {
            Some(&id) if !source.trim().is_empty() => {
                if seen.insert(id) {
                    named.push(id);
                }
            }
            _ => problems.push(
                ProblemKind::ContextFromUnknownStep,
                &s.name,
                None,
                format!(
                    "context_from of {} names {:?}, which is not a step",
                    label(i, &s.name),
                    source
                ),
            ),
        }
    }
    if !named.is_empty() {
        let reached = walk.reached(i, &named, predecessors);
        for (id, ok) in named.iter().zip(reached) {
            if !ok {
                let source = steps[id.index()].name.as_str();
                problems.push(
                    ProblemKind::ContextFromNotAncestor,
                    &s.name,
                    None,
                    format!(
                        "context_from of {} names {:?}, which is not an ancestor of it \
                         (no path of edges leads from {:?} to {:?})",
                        label(i, &s.name),
                        source,
                        source,
                        s.name
                    ),
                );
            }
        }
    }
    ContextSources::Named(named)
}

/// Kahn's algorithm, always taking the ready step declared first. Self-edges are not counted
/// (there are none in a valid workflow).
fn kahn(n: usize, successors: &Adjacency, mut in_degree: Vec<usize>) -> Vec<StepId> {
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| in_degree[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(v)) = ready.pop() {
        order.push(sid(v));
        for t in successors.of(v) {
            let t = t.index();
            if t != v {
                in_degree[t] -= 1;
                if in_degree[t] == 0 {
                    ready.push(Reverse(t));
                }
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::model::{Edge, StepType};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    #[test]
    fn a_single_task_workflow_is_the_one_step_document() {
        let built = ValidatedWorkflow::single_task("send_task", "alpha", "do it").unwrap();
        let parsed = parse_and_validate(
            r#"{"name": "send_task", "steps": [{"name": "send_task",
                "subtasks": [{"agent": "alpha", "description": "do it"}]}]}"#,
        )
        .unwrap();
        assert_eq!(built, parsed);
        assert_eq!(built.workflow().steps[0].step_type, StepType::AllSuccess);
        // Names the rules refuse are refused here too.
        assert!(ValidatedWorkflow::single_task("end", "alpha", "x").is_err());
        assert!(ValidatedWorkflow::single_task(" ", "alpha", "x").is_err());
    }

    const EXAMPLE: &str = r#"{
      "id": "psop-spn-cross-city-001",
      "name": "SPN cross-city private-line diagnosis",
      "description": "Diagnose in two cities in parallel, aggregate locally, then remediate and/or report",
      "steps": [
        {
          "name": "diagnose",
          "layer": 0,
          "step_type": "AllSuccess",
          "subtasks": [
            { "agent": "spn_domain_agent_city1", "skill": "fault-diagnosis", "description": "Diagnose the private line in city 1" },
            { "agent": "spn_domain_agent_city2", "skill": "fault-diagnosis", "description": "Diagnose the private line in city 2" }
          ],
          "next": [ { "step": "aggregate", "condition": "" } ]
        },
        {
          "name": "aggregate",
          "layer": 1,
          "type": "SelfLoop",
          "context_from": "diagnose",
          "subtasks": [
            { "agent": "transport_workbench_agent", "skill": "aggregate", "description": "Merge both city diagnoses" }
          ],
          "next": [
            { "step": "remediate", "condition": "a hardware or tunnel fault was confirmed" },
            { "step": "report",    "condition": null },
            { "step": "end",       "condition": "no fault found" }
          ]
        },
        {
          "name": "remediate",
          "layer": 2,
          "step_type": "any_success",
          "context_from": ["*"],
          "subtasks": [
            { "agent": "spn_domain_agent_city1", "skill": "remediation", "description": "Apply tunnel optimisation via city 1" },
            { "agent": "spn_domain_agent_city2", "skill": "remediation", "description": "Apply tunnel optimisation via city 2" }
          ],
          "next": [ { "step": "endNode" } ]
        },
        {
          "name": "report",
          "layer": 2,
          "step_type": "SELF_LOOP",
          "context_from": [],
          "subtasks": [
            { "agent": "transport_workbench_agent", "skill": "report", "description": "Produce the final report for the requester" }
          ]
        }
      ]
    }"#;

    /// A step named `name` with unconditional edges to `next`.
    fn step(name: &str, next: &[&str]) -> Value {
        json!({ "name": name, "next": next.iter().map(|t| json!({ "step": t })).collect::<Vec<_>>() })
    }

    fn validate(steps: Vec<Value>) -> Result<ValidatedWorkflow, WorkflowValidationError> {
        let wf = Workflow::from_json_value(&json!({ "steps": steps })).expect("parses");
        ValidatedWorkflow::new(wf)
    }

    fn problems(steps: Vec<Value>) -> Vec<ValidationProblem> {
        validate(steps).expect_err("invalid").problems
    }

    fn only(steps: Vec<Value>, kind: ProblemKind) -> ValidationProblem {
        let p = problems(steps);
        assert_eq!(p.len(), 1, "{p:#?}");
        assert_eq!(p[0].kind, kind, "{p:#?}");
        p[0].clone()
    }

    fn edge(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_owned(), b.to_owned()))
    }

    #[test]
    fn complete_example_validates() {
        let v = parse_and_validate(EXAMPLE).expect("valid");
        let id = |n: &str| v.step_id(n).expect(n);
        let (diagnose, aggregate, remediate, report) = (
            id("diagnose"),
            id("aggregate"),
            id("remediate"),
            id("report"),
        );
        assert_eq!(v.len(), 4);
        assert_eq!(
            v.step_ids().collect::<Vec<_>>(),
            [diagnose, aggregate, remediate, report]
        );
        assert_eq!(v.step_id("end"), None);
        assert_eq!(v.step_id("nope"), None);

        let types: Vec<StepType> = v.step_ids().map(|s| v.step(s).step_type).collect();
        assert_eq!(
            types,
            [
                StepType::AllSuccess,
                StepType::SelfLoop,
                StepType::AnySuccess,
                StepType::SelfLoop
            ]
        );
        assert_eq!(
            v.context_sources(diagnose),
            &ContextSources::DirectPredecessors
        );
        assert_eq!(
            v.context_sources(aggregate),
            &ContextSources::Named(vec![diagnose])
        );
        assert_eq!(v.context_sources(remediate), &ContextSources::AllAncestors);
        assert_eq!(v.context_sources(report), &ContextSources::Nothing);

        assert_eq!(
            v.edges(diagnose),
            [ResolvedEdge {
                target: EdgeTarget::Step(aggregate),
                condition: None
            }]
        );
        let agg = v.edges(aggregate);
        assert_eq!(agg.len(), 3);
        assert_eq!(agg[0].target, EdgeTarget::Step(remediate));
        assert!(agg[0].is_conditional());
        assert_eq!(
            agg[0].condition.as_deref(),
            Some("a hardware or tunnel fault was confirmed")
        );
        assert_eq!(agg[1].target, EdgeTarget::Step(report));
        assert!(!agg[1].is_conditional());
        assert_eq!(agg[2].target, EdgeTarget::Terminal(TerminalMarker::End));
        assert!(agg[2].is_conditional());
        assert_eq!(agg[2].target_name(&v), "end");
        assert_eq!(agg[1].target_name(&v), "report");
        assert_eq!(
            v.edges(remediate),
            [ResolvedEdge {
                target: EdgeTarget::Terminal(TerminalMarker::EndNode),
                condition: None
            }]
        );
        assert!(v.edges(report).is_empty());

        assert_eq!(v.start_steps(), [diagnose]);
        assert_eq!(v.predecessors(aggregate), [diagnose]);
        assert_eq!(v.predecessors(report), [aggregate]);
        assert_eq!(v.successors(aggregate), [remediate, report]);
        assert!(v.successors(remediate).is_empty());
        assert_eq!(
            v.topological_order(),
            [diagnose, aggregate, remediate, report]
        );
        assert_eq!(v.ancestors(remediate), [diagnose, aggregate]);
        assert!(v.ancestors(diagnose).is_empty());
        assert_eq!(v.step(remediate).subtasks.len(), 2);
    }

    #[test]
    fn empty_workflow_is_valid() {
        let v = validate(vec![]).expect("valid");
        assert!(v.is_empty());
        assert!(v.start_steps().is_empty());
        assert!(v.topological_order().is_empty());
    }

    #[test]
    fn blank_step_name() {
        let p = only(
            vec![step("a", &[]), step("  ", &[])],
            ProblemKind::BlankStepName,
        );
        assert!(p.message.contains("step #1"), "{}", p.message);
    }

    #[test]
    fn duplicate_step_name() {
        let p = only(
            vec![step("a", &[]), step("b", &[]), step("a", &[])],
            ProblemKind::DuplicateStepName,
        );
        assert_eq!(p.step.as_deref(), Some("a"));
        assert!(
            p.message.contains("step \"a\" (#2)") && p.message.contains("#0"),
            "{}",
            p.message
        );
    }

    #[test]
    fn terminal_markers_are_reserved() {
        let p = problems(vec![
            step("end", &[]),
            step("retry", &[]),
            step("endNode", &[]),
        ]);
        assert_eq!(p.len(), 3);
        for (p, name) in p.iter().zip(["end", "retry", "endNode"]) {
            assert_eq!(p.kind, ProblemKind::ReservedStepName);
            assert_eq!(p.step.as_deref(), Some(name));
            assert!(
                p.message.contains(&format!("step {name:?}")),
                "{}",
                p.message
            );
        }
        // Near-misses are ordinary names.
        validate(vec![step("End", &["endnode"]), step("endnode", &[])]).expect("valid");
    }

    #[test]
    fn blank_edge_target() {
        let p = only(vec![step("a", &[" "])], ProblemKind::BlankEdgeTarget);
        assert_eq!(p.edge, edge("a", " "));
        assert!(
            p.message.contains("step \"a\"") && p.message.contains("next[0]"),
            "{}",
            p.message
        );
    }

    #[test]
    fn unknown_edge_target() {
        let p = only(
            vec![step("a", &["b", "ghost"]), step("b", &[])],
            ProblemKind::UnknownEdgeTarget,
        );
        assert_eq!(p.step.as_deref(), Some("a"));
        assert_eq!(p.edge, edge("a", "ghost"));
        assert!(
            p.message.contains(r#"edge "a" -> "ghost""#),
            "{}",
            p.message
        );
    }

    #[test]
    fn duplicate_edge_target_regardless_of_condition() {
        let p = only(
            vec![
                json!({ "name": "a", "next": [
                    { "step": "b", "condition": "x" }, { "step": "b", "condition": "y" }
                ]}),
                step("b", &[]),
            ],
            ProblemKind::DuplicateEdgeTarget,
        );
        let p2 = problems(vec![
            json!({ "name": "a", "next": [{ "step": "end" }, { "step": "end", "condition": "z" }] }),
        ]);
        assert_eq!(p.edge, edge("a", "b"));
        assert!(p.message.contains(r#"edge "a" -> "b""#), "{}", p.message);
        assert_eq!(p2.len(), 1);
        assert_eq!(p2[0].edge, edge("a", "end"));
    }

    #[test]
    fn self_edge_is_a_cycle() {
        let p = only(vec![step("a", &["a"])], ProblemKind::Cycle);
        assert_eq!(p.step.as_deref(), Some("a"));
        assert_eq!(p.edge, edge("a", "a"));
        assert!(p.message.contains(r#"edge "a" -> "a""#), "{}", p.message);
    }

    #[test]
    fn cycle_names_its_steps() {
        let p = only(
            vec![
                step("s", &["a"]),
                step("a", &["b"]),
                step("b", &["c"]),
                step("c", &["a", "end"]),
            ],
            ProblemKind::Cycle,
        );
        assert_eq!(p.edge, edge("c", "a"));
        assert!(
            p.message.contains(r#""a" -> "b" -> "c" -> "a""#)
                && p.message.contains(r#"edge "c" -> "a""#),
            "{}",
            p.message
        );
    }

    #[test]
    fn every_cycle_is_reported() {
        // Two disjoint cycles and a self-edge.
        let p = problems(vec![
            step("a", &["b"]),
            step("b", &["a"]),
            step("c", &["d"]),
            step("d", &["c", "d"]),
        ]);
        assert!(p.iter().all(|p| p.kind == ProblemKind::Cycle));
        let edges: Vec<_> = p.iter().map(|p| p.edge.clone().expect("edge")).collect();
        assert_eq!(
            edges,
            [
                edge("b", "a").unwrap(),
                edge("d", "c").unwrap(),
                edge("d", "d").unwrap()
            ]
        );
    }

    #[test]
    fn long_cycle_message_is_elided() {
        let n = 100;
        let steps: Vec<Value> = (0..n)
            .map(|i| step(&format!("s{i}"), &[&format!("s{}", (i + 1) % n)]))
            .collect();
        let p = only(steps, ProblemKind::Cycle);
        assert!(p.message.contains("(84 more steps)"), "{}", p.message);
        assert!(p.message.contains(r#""s0" -> "s1""#) && p.message.contains(r#""s99" -> "s0""#));
    }

    #[test]
    fn context_from_mixing_wildcard() {
        let p = only(
            vec![
                step("a", &["b"]),
                json!({ "name": "b", "context_from": ["*", "a"] }),
            ],
            ProblemKind::ContextFromMixesWildcard,
        );
        assert_eq!(p.step.as_deref(), Some("b"));
        assert!(p.message.contains("step \"b\""), "{}", p.message);
    }

    #[test]
    fn context_from_unknown_step() {
        let p = problems(vec![
            step("a", &["b"]),
            json!({ "name": "b", "context_from": ["a", "ghost", ""] }),
        ]);
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(
            p.iter()
                .all(|p| p.kind == ProblemKind::ContextFromUnknownStep)
        );
        assert!(p[0].message.contains("step \"b\"") && p[0].message.contains("\"ghost\""));
        assert!(p[1].message.contains("\"\""));
    }

    #[test]
    fn context_from_not_ancestor() {
        // c's ancestors are a and b; d is a sibling branch, and c names itself.
        let p = problems(vec![
            step("a", &["b", "d"]),
            step("b", &["c"]),
            json!({ "name": "c", "context_from": ["a", "d", "c", "b"] }),
            step("d", &[]),
        ]);
        assert_eq!(p.len(), 2, "{p:#?}");
        assert!(
            p.iter()
                .all(|p| p.kind == ProblemKind::ContextFromNotAncestor)
        );
        assert!(p[0].message.contains("step \"c\"") && p[0].message.contains("\"d\""));
        assert!(p[1].message.contains("names \"c\""), "{}", p[1].message);
    }

    #[test]
    fn context_from_named_sources_dedup_in_list_order() {
        let v = validate(vec![
            step("a", &["b"]),
            step("b", &["c"]),
            json!({ "name": "c", "context_from": ["b", "a", "b"] }),
            json!({ "name": "d", "context_from": ["*", "*"] }),
        ])
        .expect("valid");
        let id = |n: &str| v.step_id(n).expect(n);
        assert_eq!(
            v.context_sources(id("c")),
            &ContextSources::Named(vec![id("b"), id("a")])
        );
        assert_eq!(v.context_sources(id("d")), &ContextSources::AllAncestors);
        assert_eq!(v.start_steps(), [id("a"), id("d")]);
    }

    #[test]
    fn many_problems_are_all_reported() {
        let p = problems(vec![
            step("", &[]),
            step("a", &["b", "b", "ghost", ""]),
            step("a", &[]),
            step("end", &[]),
            step("b", &["c"]),
            json!({ "name": "c", "next": [{ "step": "b" }], "context_from": ["*", "a"] }),
            json!({ "name": "d", "context_from": ["a", "nobody"] }),
        ]);
        let kinds: Vec<ProblemKind> = p.iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                ProblemKind::BlankStepName,
                ProblemKind::DuplicateStepName,
                ProblemKind::ReservedStepName,
                ProblemKind::DuplicateEdgeTarget,
                ProblemKind::UnknownEdgeTarget,
                ProblemKind::BlankEdgeTarget,
                ProblemKind::Cycle,
                ProblemKind::ContextFromMixesWildcard,
                ProblemKind::ContextFromUnknownStep,
                ProblemKind::ContextFromNotAncestor,
            ],
            "{p:#?}"
        );
        let err = WorkflowValidationError { problems: p };
        assert!(err.has(ProblemKind::Cycle));
        let shown = err.to_string();
        assert_eq!(shown.lines().count(), 11, "{shown}");
        assert!(shown.starts_with("invalid workflow (10 problems):"));
    }

    #[test]
    fn whitespace_condition_is_unconditional() {
        let v = validate(vec![
            json!({ "name": "a", "next": [
                { "step": "b", "condition": " \t " }, { "step": "c", "condition": "" },
                { "step": "end", "condition": " go " }
            ]}),
            step("b", &[]),
            step("c", &[]),
        ])
        .expect("valid");
        let e = v.edges(StepId(0));
        assert_eq!(e[0].condition, None);
        assert!(!e[0].is_conditional());
        assert_eq!(e[1].condition, None);
        assert_eq!(e[2].condition.as_deref(), Some(" go "));
        assert!(e[2].is_conditional());
    }

    #[test]
    fn layer_does_not_decide_start_steps() {
        let v = validate(vec![
            json!({ "name": "late", "layer": 5, "next": [{ "step": "b" }] }),
            json!({ "name": "b", "layer": 0 }),
        ])
        .expect("valid");
        assert_eq!(v.start_steps(), [StepId(0)]);
    }

    #[test]
    fn parse_and_validate_distinguishes_stages() {
        assert!(matches!(
            parse_and_validate("{"),
            Err(WorkflowError::Parse(_))
        ));
        let e = parse_and_validate(r#"{"steps":[{"name":"a","next":[{"step":"a"}]}]}"#)
            .expect_err("cycle");
        assert!(matches!(&e, WorkflowError::Invalid(v) if v.has(ProblemKind::Cycle)));
        assert!(e.to_string().contains(r#"edge "a" -> "a""#));
    }

    fn named_workflow(n: usize, edges: &[(usize, usize)]) -> Workflow {
        let mut steps: Vec<Step> = (0..n)
            .map(|i| Step {
                name: format!("s{i}").into(),
                ..Step::default()
            })
            .collect();
        for &(a, b) in edges {
            steps[a].next.push(Edge {
                step: format!("s{b}"),
                condition: None,
            });
        }
        Workflow {
            steps,
            ..Workflow::default()
        }
    }

    fn assert_topological(v: &ValidatedWorkflow) {
        let order = v.topological_order();
        assert_eq!(order.len(), v.len());
        let mut position = vec![usize::MAX; v.len()];
        for (k, s) in order.iter().enumerate() {
            assert_eq!(position[s.index()], usize::MAX, "listed twice");
            position[s.index()] = k;
        }
        for s in v.step_ids() {
            for t in v.successors(s) {
                assert!(position[s.index()] < position[t.index()]);
            }
        }
    }

    #[test]
    fn ten_thousand_step_chain() {
        let n = 10_000;
        let edges: Vec<(usize, usize)> = (1..n).map(|i| (i - 1, i)).collect();
        let mut wf = named_workflow(n, &edges);
        wf.steps[n - 1].context_from = ContextFrom::List(vec!["s0".into()]);
        let v = ValidatedWorkflow::new(wf.clone()).expect("valid");
        assert_eq!(v.start_steps(), [StepId(0)]);
        assert_topological(&v);
        assert_eq!(v.ancestors(StepId(n as u32 - 1)).len(), n - 1);
        // Closing the chain into one long cycle is found without recursion.
        wf.steps[n - 1].next.push(Edge {
            step: "s0".into(),
            condition: None,
        });
        let e = ValidatedWorkflow::new(wf).expect_err("cycle");
        assert_eq!(e.problems.len(), 1);
        assert_eq!(e.problems[0].kind, ProblemKind::Cycle);
    }

    #[test]
    fn ten_thousand_step_random_dag() {
        let n = 10_000usize;
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = move |bound: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) as usize) % bound
        };
        let mut edges = Vec::new();
        for b in 1..n {
            let mut sources = BTreeSet::new();
            for _ in 0..3 {
                sources.insert(next(b));
            }
            edges.extend(sources.into_iter().map(|a| (a, b)));
        }
        let mut wf = named_workflow(n, &edges);
        // Name a direct predecessor's predecessor-or-self as a context source, and use "*" too.
        for &(a, b) in edges.iter().step_by(7) {
            wf.steps[b].context_from = ContextFrom::List(vec![format!("s{a}")]);
        }
        wf.steps[n - 1].context_from = ContextFrom::List(vec!["*".into()]);
        let v = ValidatedWorkflow::new(wf).expect("valid");
        assert_topological(&v);
        assert!(v.start_steps().contains(&StepId(0)));
    }

    /// Random DAG: `n` steps and edges from lower to higher index, deduplicated per source.
    fn dag() -> impl Strategy<Value = (usize, Vec<(usize, usize)>, usize)> {
        (1usize..40).prop_flat_map(|n| {
            (
                Just(n),
                proptest::collection::vec((0..n, 0..n), 0..n * 3),
                any::<usize>(),
            )
                .prop_map(|(n, pairs, pick)| {
                    let mut set = BTreeSet::new();
                    for (a, b) in pairs {
                        if a != b {
                            set.insert((a.min(b), a.max(b)));
                        }
                    }
                    (n, set.into_iter().collect(), pick)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_dags_validate_in_topological_order((n, edges, _pick) in dag()) {
            let v = ValidatedWorkflow::new(named_workflow(n, &edges)).expect("valid");
            assert_topological(&v);
            for &(a, b) in &edges {
                prop_assert!(v.predecessors(StepId(b as u32)).contains(&StepId(a as u32)));
            }
            for s in v.step_ids() {
                prop_assert_eq!(v.start_steps().contains(&s), v.predecessors(s).is_empty());
            }
        }

        #[test]
        fn a_back_edge_is_always_a_cycle((n, edges, pick) in dag()) {
            let back = if edges.is_empty() {
                let a = pick % n;
                (a, a)
            } else {
                let (a, b) = edges[pick % edges.len()];
                (b, a)
            };
            let mut all = edges.clone();
            all.push(back);
            let e = ValidatedWorkflow::new(named_workflow(n, &all)).expect_err("cycle");
            prop_assert!(e.has(ProblemKind::Cycle));
            prop_assert!(e.problems.iter().all(|p| p.kind == ProblemKind::Cycle));
        }

        #[test]
        fn named_context_sources_must_be_ancestors(
            (n, edges, pick) in dag(),
            sources in proptest::collection::vec(0usize..40, 1..4),
        ) {
            let target = pick % n;
            let sources: Vec<usize> = sources.into_iter().map(|s| s % n).collect();
            let mut wf = named_workflow(n, &edges);
            wf.steps[target].context_from =
                ContextFrom::List(sources.iter().map(|s| format!("s{s}")).collect());
            // Brute-force ancestry, in index order (edges go from lower to higher index).
            let mut anc: Vec<BTreeSet<usize>> = Vec::with_capacity(n);
            for b in 0..n {
                let mut set = BTreeSet::new();
                for &(x, y) in &edges {
                    if y == b {
                        set.insert(x);
                        set.extend(anc[x].iter().copied());
                    }
                }
                anc.push(set);
            }
            let all_ancestors = sources.iter().all(|s| anc[target].contains(s));
            match ValidatedWorkflow::new(wf) {
                Ok(v) => {
                    prop_assert!(all_ancestors);
                    let expected: Vec<StepId> =
                        anc[target].iter().map(|&a| StepId(a as u32)).collect();
                    prop_assert_eq!(v.ancestors(StepId(target as u32)), expected);
                }
                Err(e) => {
                    prop_assert!(!all_ancestors);
                    prop_assert!(e.problems.iter().all(|p| p.kind == ProblemKind::ContextFromNotAncestor));
                }
            }
        }
    }
}
