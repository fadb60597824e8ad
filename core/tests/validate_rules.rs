//! Workflow validation rules stated against the public parse-and-validate API: rules the
//! whole-file mutation run of core/src/workflow/validate.rs (issue #24) found unstated.

use a2at_core::workflow::{
    EdgeTarget, ProblemKind, TerminalMarker, Workflow, WorkflowError, WorkflowValidationError,
    parse_and_validate,
};

fn invalid(json: &str) -> WorkflowValidationError {
    match parse_and_validate(json) {
        Err(WorkflowError::Invalid(e)) => e,
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn every_terminal_marker_is_an_edge_target_that_ends_the_branch() {
    let wf = parse_and_validate(
        r#"{"steps": [
            {"name": "a", "next": [
                {"step": "b"},
                {"step": "retry", "condition": "try again"},
                {"step": "end", "condition": "done"},
                {"step": "endNode", "condition": "done too"}
            ]},
            {"name": "b"}
        ]}"#,
    )
    .expect("valid");
    let (a, b) = (wf.step_id("a").unwrap(), wf.step_id("b").unwrap());
    let targets: Vec<EdgeTarget> = wf.edges(a).iter().map(|e| e.target).collect();
    assert_eq!(
        targets,
        [
            EdgeTarget::Step(b),
            EdgeTarget::Terminal(TerminalMarker::Retry),
            EdgeTarget::Terminal(TerminalMarker::End),
            EdgeTarget::Terminal(TerminalMarker::EndNode),
        ]
    );
    // A marker activates nothing: `a` leads to `b` only, and `b` waits on `a` only.
    assert_eq!(wf.successors(a), [b]);
    assert_eq!(wf.predecessors(b), [a]);
    // Markers are shown (logs, graphs, messages) exactly as the workflow spells them.
    let names: Vec<&str> = wf.edges(a).iter().map(|e| e.target_name(&wf)).collect();
    assert_eq!(names, ["b", "retry", "end", "endNode"]);
    for m in [
        TerminalMarker::Retry,
        TerminalMarker::End,
        TerminalMarker::EndNode,
    ] {
        assert_eq!(m.to_string(), m.as_str());
        assert_eq!(TerminalMarker::from_name(m.as_str()), Some(m));
    }
    // The spelling is exact: other cases and padding name (missing) steps, not markers.
    for near in ["Retry", "END", "endnode", " end"] {
        assert_eq!(TerminalMarker::from_name(near), None, "{near:?}");
        let e = invalid(&format!(
            r#"{{"steps": [{{"name": "a", "next": [{{"step": {near:?}}}]}}]}}"#
        ));
        assert_eq!(e.problems.len(), 1, "{e}");
        assert_eq!(e.problems[0].kind, ProblemKind::UnknownEdgeTarget, "{e}");
    }
}

#[test]
fn an_error_has_exactly_the_kinds_of_problems_it_lists() {
    let e = invalid(r#"{"steps": [{"name": "a", "next": [{"step": "a"}]}]}"#);
    assert!(e.has(ProblemKind::Cycle), "{e}");
    assert!(!e.has(ProblemKind::DuplicateStepName), "{e}");
    assert!(!e.has(ProblemKind::UnknownEdgeTarget), "{e}");
}

#[test]
fn a_validated_workflow_keeps_the_parsed_document_and_its_step_names() {
    let json = r#"{"id": "w1", "name": "two steps", "steps": [
        {"name": "first", "next": [{"step": "second", "condition": "  "}]},
        {"name": "second", "context_from": ["first"]}
    ]}"#;
    let wf = parse_and_validate(json).expect("valid");
    assert_eq!(wf.len(), 2);
    assert!(!wf.is_empty());
    let names: Vec<&str> = wf.step_ids().map(|id| wf.step_name(id)).collect();
    assert_eq!(names, ["first", "second"]);
    let first = wf.step_id("first").unwrap();
    assert_eq!(wf.edges(first)[0].condition, None);
    assert_eq!(
        wf.workflow().steps[0].next[0].condition.as_deref(),
        Some("  ")
    );
    // Validation only reads the document: what comes back is exactly what was parsed, the
    // blank condition included (only the resolved edge reads it as unconditional).
    assert_eq!(
        wf.into_workflow(),
        Workflow::from_json_str(json).expect("parses")
    );

    let none = parse_and_validate(r#"{"steps": []}"#).expect("zero steps are valid");
    assert!(none.is_empty());
    assert_eq!(none.step_ids().count(), 0);
}

// Every step is found by its exact name whatever order the steps are declared in, including
// names that differ only in case or by a prefix (the lookup is a byte-order search).
#[test]
fn every_step_is_found_by_its_name_in_any_declaration_order() {
    let names = ["zeta", "Alpha", "alpha", "al", "m", "Zeta", "b"];
    let steps: Vec<String> = names
        .iter()
        .map(|n| format!(r#"{{"name": "{n}"}}"#))
        .collect();
    let wf = parse_and_validate(&format!(r#"{{"steps": [{}]}}"#, steps.join(","))).expect("valid");
    for (i, name) in names.iter().enumerate() {
        let id = wf
            .step_id(name)
            .unwrap_or_else(|| panic!("{name} not found"));
        assert_eq!(id.index(), i, "{name}");
        assert_eq!(wf.step_name(id), *name);
    }
    assert_eq!(wf.step_id("ALPHA"), None);
    assert_eq!(wf.step_id("alph"), None);
}
