//! Renders a workflow as a Mermaid flowchart or a Graphviz DOT digraph: steps with their types,
//! conditional edge labels and terminal markers, optionally coloured by the step statuses of a
//! finished run.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::model::StepStatus;
use super::{EdgeTarget, StepType, TerminalMarker, ValidatedWorkflow};

/// Output format of [`render`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    /// A Mermaid `flowchart TD`.
    Mermaid,
    /// A Graphviz `digraph`.
    Dot,
}

/// Renders `workflow`; `statuses` (step name → status) colours the steps of a finished run.
pub fn render(
    workflow: &ValidatedWorkflow,
    format: GraphFormat,
    statuses: Option<&BTreeMap<String, StepStatus>>,
) -> String {
    match format {
        GraphFormat::Mermaid => mermaid(workflow, statuses),
        GraphFormat::Dot => dot(workflow, statuses),
    }
}

fn type_label(t: StepType) -> &'static str {
    match t {
        StepType::AllSuccess => "ALL_SUCCESS",
        StepType::AnySuccess => "ANY_SUCCESS",
        StepType::SelfLoop => "SELF_LOOP",
    }
}

fn status_label(s: StepStatus) -> &'static str {
    match s {
        StepStatus::NotRun => "not run",
        StepStatus::Skipped => "skipped",
        StepStatus::Succeeded => "succeeded",
        StepStatus::Failed => "failed",
        StepStatus::Cancelled => "cancelled",
    }
}

fn status_colour(s: StepStatus) -> &'static str {
    match s {
        StepStatus::NotRun => "#e5e7eb",
        StepStatus::Skipped => "#f3f4f6",
        StepStatus::Succeeded => "#bbf7d0",
        StepStatus::Failed => "#fecaca",
        StepStatus::Cancelled => "#fde68a",
    }
}

/// Text safe inside a quoted Mermaid label.
fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;").replace('\n', " ")
}

/// Text safe inside a quoted DOT string.
fn dot_text(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn marker_id(m: TerminalMarker, source: usize, edge: usize) -> String {
    format!("t_{}_{source}_{edge}", m.as_str())
}

fn mermaid(wf: &ValidatedWorkflow, statuses: Option<&BTreeMap<String, StepStatus>>) -> String {
    let mut out = String::from("flowchart TD\n");
    for id in wf.step_ids() {
        let step = wf.step(id);
        let mut label = format!(
            "{}<br/>{} · {} subtask(s)",
            mermaid_text(&step.name),
            type_label(step.step_type),
            step.subtasks.len()
        );
        let status = statuses.and_then(|s| s.get(step.name.as_str())).copied();
        if let Some(st) = status {
            let _ = write!(label, "<br/>[{}]", status_label(st));
        }
        let _ = writeln!(out, "    s{}[\"{}\"]", id.0, label);
        if let Some(st) = status {
            let _ = writeln!(out, "    style s{} fill:{}", id.0, status_colour(st));
        }
    }
    for id in wf.step_ids() {
        for (i, edge) in wf.edges(id).iter().enumerate() {
            let target = match edge.target {
                EdgeTarget::Step(t) => format!("s{}", t.0),
                EdgeTarget::Terminal(m) => {
                    let node = marker_id(m, id.index(), i);
                    let _ = writeln!(out, "    {node}((\"{}\"))", m.as_str());
                    node
                }
            };
            match &edge.condition {
                Some(c) if edge.is_conditional() => {
                    let _ = writeln!(out, "    s{} -- \"{}\" --> {target}", id.0, mermaid_text(c));
                }
                _ => {
                    let _ = writeln!(out, "    s{} --> {target}", id.0);
                }
            }
        }
    }
    out
}

fn dot(wf: &ValidatedWorkflow, statuses: Option<&BTreeMap<String, StepStatus>>) -> String {
    let name = &wf.workflow().name;
    let mut out = format!(
        "digraph \"{}\" {{\n    rankdir=TB;\n    node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\"];\n",
        dot_text(if name.is_empty() { "workflow" } else { name })
    );
    for id in wf.step_ids() {
        let step = wf.step(id);
        let mut label = format!(
            "{}\\n{} · {} subtask(s)",
            dot_text(&step.name),
            type_label(step.step_type),
            step.subtasks.len()
        );
        let status = statuses.and_then(|s| s.get(step.name.as_str())).copied();
        let mut fill = String::new();
        if let Some(st) = status {
            let _ = write!(label, "\\n[{}]", status_label(st));
            fill = format!(", fillcolor=\"{}\"", status_colour(st));
        }
        let _ = writeln!(out, "    s{} [label=\"{}\"{}];", id.0, label, fill);
    }
    for id in wf.step_ids() {
        for (i, edge) in wf.edges(id).iter().enumerate() {
            let target = match edge.target {
                EdgeTarget::Step(t) => format!("s{}", t.0),
                EdgeTarget::Terminal(m) => {
                    let node = marker_id(m, id.index(), i);
                    let _ = writeln!(
                        out,
                        "    {node} [label=\"{}\", shape=doublecircle, fillcolor=\"#f3f4f6\"];",
                        m.as_str()
                    );
                    node
                }
            };
            match &edge.condition {
                Some(c) if edge.is_conditional() => {
                    let _ = writeln!(
                        out,
                        "    s{} -> {target} [label=\"{}\", style=dashed];",
                        id.0,
                        dot_text(c)
                    );
                }
                _ => {
                    let _ = writeln!(out, "    s{} -> {target};", id.0);
                }
            }
        }
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::parse_and_validate;

    fn sample() -> ValidatedWorkflow {
        parse_and_validate(
            r#"{"name": "demo", "steps": [
                {"name": "a", "type": "SelfLoop", "subtasks": [{"agent": "x"}],
                 "next": [{"step": "b", "condition": "needs \"fix\""}, {"step": "c"}, {"step": "end", "condition": "done"}]},
                {"name": "b", "step_type": "ANY_SUCCESS"},
                {"name": "c"}
            ]}"#,
        )
        .unwrap()
    }

    #[test]
    fn mermaid_shows_types_conditions_and_terminal_markers() {
        let text = render(&sample(), GraphFormat::Mermaid, None);
        assert!(text.starts_with("flowchart TD\n"));
        assert!(
            text.contains("s0[\"a<br/>SELF_LOOP · 1 subtask(s)\"]"),
            "{text}"
        );
        assert!(
            text.contains("s0 -- \"needs #quot;fix#quot;\" --> s1"),
            "{text}"
        );
        assert!(text.contains("s0 --> s2"), "{text}");
        assert!(text.contains("t_end_0_2((\"end\"))"), "{text}");
        assert!(text.contains("s0 -- \"done\" --> t_end_0_2"), "{text}");
    }

    #[test]
    fn dot_escapes_labels_and_overlays_statuses() {
        let mut statuses = BTreeMap::new();
        statuses.insert("a".to_owned(), StepStatus::Succeeded);
        statuses.insert("b".to_owned(), StepStatus::Skipped);
        let text = render(&sample(), GraphFormat::Dot, Some(&statuses));
        assert!(text.starts_with("digraph \"demo\" {"));
        assert!(
            text.contains("s0 -> s1 [label=\"needs \\\"fix\\\"\", style=dashed];"),
            "{text}"
        );
        assert!(text.contains("[succeeded]"), "{text}");
        assert!(text.contains("fillcolor=\"#bbf7d0\""), "{text}");
        assert!(text.contains("[skipped]"));
        assert!(text.trim_end().ends_with('}'));
    }
}
