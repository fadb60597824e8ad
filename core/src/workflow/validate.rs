//! Graph validation (WM-6..WM-12) into the index-based [`ValidatedWorkflow`].
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

use super::model::{ContextFrom, Step, Workflow, is_terminal_marker};
use super::parse::WorkflowParseError;
use crate::ids::StepId;

/// Cycle messages name at most this many steps (the first and last halves of a longer cycle).
pub const CYCLE_NAMES_SHOWN: usize = 16;

/// A terminal marker used as an edge target (RT-12): it activates nothing.
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
    /// Whether activating this edge needs an `onRoute` decision (RT-2, RT-3).
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

/// Which upstream results a step sees, resolved from its `context_from` (CX-9).
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

impl ValidatedWorkflow {
    /// Validates `wf`, reporting every problem found.
    pub fn new(wf: Workflow) -> Result<ValidatedWorkflow, WorkflowValidationError> {
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

        // 1. Names (WM-7, WM-8). The first step with a name owns it.
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

        // 2. Edges (WM-9, WM-10).
        let mut edges: Vec<Vec<ResolvedEdge>> = Vec::with_capacity(n);
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

        // Adjacency. Targets of one source are distinct (duplicates were dropped above), so the
        // lists need no further deduplication. Self-edges stay in `successors` for the cycle
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

        // 3. Cycles (WM-11).
        find_cycles(steps, &successors, &mut problems);

        // 4. context_from (WM-12).
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
        let mut by_name: Vec<StepId> = by_name.into_values().collect();
        by_name.sort_by(|a, b| steps[a.index()].name.cmp(&steps[b.index()].name));

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

    /// The steps with no predecessors, in declaration order. `layer` plays no part (WM-16).
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
