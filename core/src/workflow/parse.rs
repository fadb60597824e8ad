//! Strict parsing of the orchestration-center workflow JSON (§2.1).
//!
//! The parser walks a [`serde_json::Value`] by hand so that it can report **every** problem in
//! one pass, each with the JSON path of the offending field (`steps[2].next[0].condition`).
//!
//! Rules, beyond the defaults of §2.1:
//! * The envelope `{"data": {...}}` is unwrapped when the top level has an object `data` member
//!   and no `steps` member. Paths then start with `data.`.
//! * `context_from`/`contextFrom` and `step_type`/`stepType` are both accepted. If both spellings
//!   are present with different values, that is a problem naming both. `type` is an alias used
//!   only when neither `step_type` nor `stepType` has a non-blank value (as in PY, where a falsy
//!   `step_type` falls through to `type`).
//! * A blank (`null`, empty or whitespace-only) step type means ALL_SUCCESS; any other unknown
//!   value is a problem naming the field and the value.
//! * `null` for a string field gives `""`, for a list field gives `[]`, for `layer` gives 0.
//! * `layer` must be an integer; a float with an integral value (`1.0`) is accepted.
//! * A blank `context_from` string means absent (direct predecessors).
//! * A subtask `input` that is a non-blank string becomes text, any other non-null value becomes
//!   data, a blank string is a problem.
//! * Unknown keys are ignored.

use serde_json::{Map, Value};

use super::model::{BusinessInput, ContextFrom, Edge, Step, StepType, Subtask, Workflow};

/// One thing wrong with a workflow document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseProblem {
    /// JSON path of the offending value, e.g. `steps[2].next[0].condition`; empty for the
    /// document itself.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl core::fmt::Display for ParseProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// The workflow document could not be parsed; lists every problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowParseError {
    /// All problems, in document order. Never empty.
    pub problems: Vec<ParseProblem>,
}

impl core::fmt::Display for WorkflowParseError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "invalid workflow JSON ({} problem{}):",
            self.problems.len(),
            if self.problems.len() == 1 { "" } else { "s" }
        )?;
        for p in &self.problems {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for WorkflowParseError {}

impl Workflow {
    /// Parses a workflow from JSON text. Malformed JSON gives one problem carrying serde_json's
    /// line and column.
    pub fn from_json_str(json: &str) -> Result<Workflow, WorkflowParseError> {
        match serde_json::from_str::<Value>(json) {
            Ok(v) => Workflow::from_json_value(&v),
            Err(e) => Err(WorkflowParseError {
                problems: vec![ParseProblem {
                    path: String::new(),
                    message: format!(
                        "malformed JSON at line {} column {}: {}",
                        e.line(),
                        e.column(),
                        e
                    ),
                }],
            }),
        }
    }

    /// Parses a workflow from an already-decoded JSON value.
    pub fn from_json_value(value: &Value) -> Result<Workflow, WorkflowParseError> {
        let mut p = Parser::default();
        let wf = match value.as_object() {
            None => {
                p.problem(
                    String::new(),
                    format!("expected a JSON object, found {}", kind(value)),
                );
                Workflow::default()
            }
            Some(obj) => match obj.get("data") {
                Some(Value::Object(inner)) if !obj.contains_key("steps") => {
                    p.workflow(inner, "data.")
                }
                _ => p.workflow(obj, ""),
            },
        };
        if p.problems.is_empty() {
            Ok(wf)
        } else {
            Err(WorkflowParseError {
                problems: p.problems,
            })
        }
    }
}

/// A short name of a JSON value's type, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `null`, or a string that is empty or whitespace-only.
fn is_blank(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        _ => false,
    }
}

fn join(prefix: &str, key: &str) -> String {
    format!("{prefix}{key}")
}

#[derive(Default)]
struct Parser {
    problems: Vec<ParseProblem>,
}

impl Parser {
    fn problem(&mut self, path: String, message: String) {
        self.problems.push(ParseProblem { path, message });
    }

    /// Looks up a field that may be spelled in snake_case or camelCase. Returns the value (if
    /// any, `null` included) and the key actually used. Reports conflicting spellings.
    fn field<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        prefix: &str,
        snake: &'static str,
        camel: &'static str,
    ) -> Option<(&'v Value, &'static str)> {
        match (obj.get(snake), obj.get(camel)) {
            (Some(a), Some(b)) if a != b => {
                self.problem(
                    join(prefix, snake),
                    format!("both `{snake}` and `{camel}` are present with different values"),
                );
                None
            }
            (Some(a), _) => Some((a, snake)),
            (None, Some(b)) => Some((b, camel)),
            (None, None) => None,
        }
    }

    fn string(&mut self, obj: &Map<String, Value>, prefix: &str, key: &str) -> String {
        match obj.get(key) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                self.problem(
                    join(prefix, key),
                    format!("expected a string, found {}", kind(other)),
                );
                String::new()
            }
        }
    }

    /// A list of objects; each object is handed to `item` with its path prefix.
    fn list<T>(
        &mut self,
        obj: &Map<String, Value>,
        prefix: &str,
        key: &str,
        mut item: impl FnMut(&mut Self, &Map<String, Value>, &str) -> T,
    ) -> Vec<T> {
        let path = join(prefix, key);
        match obj.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, v) in items.iter().enumerate() {
                    let item_path = format!("{path}[{i}]");
                    match v {
                        Value::Object(o) => out.push(item(self, o, &format!("{item_path}."))),
                        other => self.problem(
                            item_path,
                            format!("expected an object, found {}", kind(other)),
                        ),
                    }
                }
                out
            }
            Some(other) => {
                self.problem(path, format!("expected an array, found {}", kind(other)));
                Vec::new()
            }
        }
    }

    fn workflow(&mut self, obj: &Map<String, Value>, prefix: &str) -> Workflow {
        Workflow {
            id: self.string(obj, prefix, "id"),
            name: self.string(obj, prefix, "name"),
            description: self.string(obj, prefix, "description"),
            steps: self.list(obj, prefix, "steps", Self::step),
        }
    }

    fn step(&mut self, obj: &Map<String, Value>, prefix: &str) -> Step {
        Step {
            name: self.string(obj, prefix, "name").into(),
            layer: self.layer(obj, prefix),
            step_type: self.step_type(obj, prefix),
            context_from: self.context_from(obj, prefix),
            subtasks: self.list(obj, prefix, "subtasks", Self::subtask),
            next: self.list(obj, prefix, "next", Self::edge),
        }
    }

    fn layer(&mut self, obj: &Map<String, Value>, prefix: &str) -> i64 {
        match obj.get("layer") {
            None | Some(Value::Null) => 0,
            Some(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    return i;
                }
                match n.as_f64() {
                    // The bounds keep the cast exact: every integral f64 in this range is an i64.
                    Some(f) if f.fract() == 0.0 && (-9.2e18..=9.2e18).contains(&f) => f as i64,
                    _ => {
                        self.problem(
                            join(prefix, "layer"),
                            format!("expected an integer, found {n}"),
                        );
                        0
                    }
                }
            }
            Some(other) => {
                self.problem(
                    join(prefix, "layer"),
                    format!("expected an integer, found {}", kind(other)),
                );
                0
            }
        }
    }

    fn step_type(&mut self, obj: &Map<String, Value>, prefix: &str) -> StepType {
        let primary = self.field(obj, prefix, "step_type", "stepType");
        let chosen = match primary {
            Some((v, key)) if !is_blank(v) => Some((v, key)),
            _ => obj.get("type").map(|v| (v, "type")),
        };
        match chosen {
            None | Some((Value::Null, _)) => StepType::AllSuccess,
            Some((Value::String(s), key)) => {
                if s.trim().is_empty() {
                    StepType::AllSuccess
                } else if let Some(t) = StepType::from_name(s.trim()) {
                    t
                } else {
                    self.problem(
                        join(prefix, key),
                        format!(
                            "unknown step type {} (expected ALL_SUCCESS, ANY_SUCCESS or SELF_LOOP)",
                            Value::String(s.clone())
                        ),
                    );
                    StepType::AllSuccess
                }
            }
            Some((other, key)) => {
                self.problem(
                    join(prefix, key),
                    format!("expected a string, found {}", kind(other)),
                );
                StepType::AllSuccess
            }
        }
    }

    fn context_from(&mut self, obj: &Map<String, Value>, prefix: &str) -> ContextFrom {
        let Some((value, key)) = self.field(obj, prefix, "context_from", "contextFrom") else {
            return ContextFrom::Absent;
        };
        let path = join(prefix, key);
        match value {
            Value::Null => ContextFrom::Absent,
            Value::String(s) if s.trim().is_empty() => ContextFrom::Absent,
            Value::String(s) => ContextFrom::List(vec![s.clone()]),
            Value::Array(items) => {
                let mut names = Vec::with_capacity(items.len());
                for (i, v) in items.iter().enumerate() {
                    match v {
                        Value::String(s) => names.push(s.clone()),
                        other => self.problem(
                            format!("{path}[{i}]"),
                            format!("expected a string, found {}", kind(other)),
                        ),
                    }
                }
                ContextFrom::List(names)
            }
            other => {
                self.problem(
                    path,
                    format!(
                        "expected a string, an array of strings or null, found {}",
                        kind(other)
                    ),
                );
                ContextFrom::Absent
            }
        }
    }

    fn subtask(&mut self, obj: &Map<String, Value>, prefix: &str) -> Subtask {
        Subtask {
            agent: self.string(obj, prefix, "agent").into(),
            skill: self.string(obj, prefix, "skill").into(),
            description: self.string(obj, prefix, "description").into(),
            input: match obj.get("input") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.trim().is_empty() => {
                    self.problem(
                        join(prefix, "input"),
                        "a text input must not be blank (omit `input` to use the description)"
                            .to_owned(),
                    );
                    None
                }
                Some(Value::String(s)) => Some(BusinessInput::Text(s.into())),
                Some(other) => Some(BusinessInput::Data(other.clone())),
            },
        }
    }

    fn edge(&mut self, obj: &Map<String, Value>, prefix: &str) -> Edge {
        Edge {
            step: self.string(obj, prefix, "step"),
            condition: match obj.get("condition") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => {
                    self.problem(
                        join(prefix, "condition"),
                        format!("expected a string or null, found {}", kind(other)),
                    );
                    None
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn parse(v: Value) -> Workflow {
        Workflow::from_json_value(&v).expect("parses")
    }

    fn problems(v: Value) -> Vec<ParseProblem> {
        Workflow::from_json_value(&v).expect_err("fails").problems
    }

    fn one_step(step: Value) -> Value {
        json!({ "steps": [step] })
    }

    #[test]
    fn defaults_fill_missing_and_null_fields() {
        let wf = parse(json!({
            "id": null,
            "steps": [
                { "name": "a", "subtasks": null, "next": null, "layer": null, "context_from": null,
                  "step_type": null },
                {}
            ]
        }));
        assert_eq!(wf.id, "");
        assert_eq!(wf.name, "");
        assert_eq!(wf.steps.len(), 2);
        let a = &wf.steps[0];
        assert_eq!(a.layer, 0);
        assert_eq!(a.step_type, StepType::AllSuccess);
        assert_eq!(a.context_from, ContextFrom::Absent);
        assert!(a.subtasks.is_empty() && a.next.is_empty());
        assert_eq!(wf.steps[1], Step::default());
        assert_eq!(parse(json!({})), Workflow::default());
        assert_eq!(parse(json!({ "steps": null })), Workflow::default());
    }

    #[test]
    fn camel_case_and_type_alias() {
        let wf = parse(json!({ "steps": [
            { "name": "a", "stepType": "AnySuccess", "contextFrom": ["x"] },
            { "name": "b", "type": "SelfLoop" },
            { "name": "c", "step_type": "ANY_SUCCESS", "type": "SelfLoop" },
            { "name": "d", "stepType": "all_success", "type": "SelfLoop" },
            { "name": "e", "step_type": null, "type": "selfloop" },
            { "name": "f", "step_type": "any_success", "stepType": "any_success" },
            { "name": "g", "step_type": "  " },
            { "name": "h", "step_type": "", "type": "AnySuccess" },
        ]}));
        let types: Vec<StepType> = wf.steps.iter().map(|s| s.step_type).collect();
        assert_eq!(
            types,
            [
                StepType::AnySuccess,
                StepType::SelfLoop,
                StepType::AnySuccess,
                StepType::AllSuccess,
                StepType::SelfLoop,
                StepType::AnySuccess,
                StepType::AllSuccess,
                StepType::AnySuccess,
            ]
        );
        assert_eq!(
            wf.steps[0].context_from,
            ContextFrom::List(vec!["x".into()])
        );
    }

    #[test]
    fn case_insensitive_step_types() {
        for (s, t) in [
            ("any_success", StepType::AnySuccess),
            ("anysuccess", StepType::AnySuccess),
            ("SELFLOOP", StepType::SelfLoop),
            ("selfloop", StepType::SelfLoop),
            ("AllSuccess", StepType::AllSuccess),
            ("aLl_SuCcEsS", StepType::AllSuccess),
        ] {
            let wf = parse(one_step(json!({ "name": "a", "step_type": s })));
            assert_eq!(wf.steps[0].step_type, t, "{s}");
        }
    }

    #[test]
    fn unknown_step_type_names_field_and_value() {
        let p = problems(json!({ "steps": [{}, {}, { "step_type": "any-success" }] }));
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].path, "steps[2].step_type");
        assert_eq!(
            p[0].to_string(),
            "steps[2].step_type: unknown step type \"any-success\" \
             (expected ALL_SUCCESS, ANY_SUCCESS or SELF_LOOP)"
        );
        let p = problems(one_step(json!({ "type": "parallel" })));
        assert_eq!(p[0].path, "steps[0].type");
        assert!(p[0].message.contains("\"parallel\""));
        let p = problems(one_step(json!({ "stepType": 3 })));
        assert_eq!(p[0].path, "steps[0].stepType");
    }

    #[test]
    fn conflicting_spellings_are_reported() {
        let p = problems(one_step(json!({
            "context_from": ["a"], "contextFrom": ["b"],
            "step_type": "SelfLoop", "stepType": "AnySuccess"
        })));
        let paths: Vec<&str> = p.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(paths, ["steps[0].step_type", "steps[0].context_from"]);
        assert!(p[1].message.contains("contextFrom"));
        // Same value under both spellings is fine.
        let wf = parse(one_step(json!({ "context_from": "a", "contextFrom": "a" })));
        assert_eq!(
            wf.steps[0].context_from,
            ContextFrom::List(vec!["a".into()])
        );
    }

    #[test]
    fn wrong_json_types_name_their_path() {
        let p = problems(json!({
            "id": 7,
            "steps": [
                { "name": 5, "layer": "1" },
                { "name": "b", "next": "c", "context_from": ["a", 3, null] },
                { "name": "c", "subtasks": [{ "agent": ["x"] }, "oops"],
                  "next": [{ "step": "a", "condition": true }, null] },
                { "name": "d", "layer": 1.5, "context_from": { "x": 1 } },
                "not a step"
            ]
        }));
        let got: Vec<(&str, &str)> = p
            .iter()
            .map(|p| (p.path.as_str(), p.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("id", "expected a string, found a number"),
                ("steps[0].name", "expected a string, found a number"),
                ("steps[0].layer", "expected an integer, found a string"),
                (
                    "steps[1].context_from[1]",
                    "expected a string, found a number"
                ),
                ("steps[1].context_from[2]", "expected a string, found null"),
                ("steps[1].next", "expected an array, found a string"),
                (
                    "steps[2].subtasks[0].agent",
                    "expected a string, found an array"
                ),
                ("steps[2].subtasks[1]", "expected an object, found a string"),
                (
                    "steps[2].next[0].condition",
                    "expected a string or null, found a boolean"
                ),
                ("steps[2].next[1]", "expected an object, found null"),
                ("steps[3].layer", "expected an integer, found 1.5"),
                (
                    "steps[3].context_from",
                    "expected a string, an array of strings or null, found an object"
                ),
                ("steps[4]", "expected an object, found a string"),
            ]
        );
        let p = problems(json!({ "steps": {} }));
        assert_eq!(p[0].path, "steps");
    }

    #[test]
    fn integral_float_layer_is_accepted() {
        let wf = parse(json!({ "steps": [{ "layer": 1.0 }, { "layer": -2 }] }));
        assert_eq!(wf.steps[0].layer, 1);
        assert_eq!(wf.steps[1].layer, -2);
        assert!(Workflow::from_json_str(r#"{"steps":[{"layer":1e300}]}"#).is_err());
    }

    #[test]
    fn context_from_forms() {
        let wf = parse(json!({ "steps": [
            { "context_from": "" },
            { "context_from": "  " },
            { "context_from": "a" },
            { "context_from": [] },
            { "context_from": ["*"] },
            { "context_from": ["a", "b"] },
        ]}));
        let cf: Vec<&ContextFrom> = wf.steps.iter().map(|s| &s.context_from).collect();
        assert_eq!(
            cf,
            [
                &ContextFrom::Absent,
                &ContextFrom::Absent,
                &ContextFrom::List(vec!["a".into()]),
                &ContextFrom::List(vec![]),
                &ContextFrom::List(vec!["*".into()]),
                &ContextFrom::List(vec!["a".into(), "b".into()]),
            ]
        );
    }

    #[test]
    fn subtask_input() {
        let wf = parse(one_step(json!({ "subtasks": [
            { "description": "d" },
            { "input": null },
            { "input": "text" },
            { "input": { "k": [1, 2] } },
            { "input": 3 },
        ]})));
        let inputs: Vec<Option<BusinessInput>> = wf.steps[0]
            .subtasks
            .iter()
            .map(|s| s.input.clone())
            .collect();
        assert_eq!(
            inputs,
            [
                None,
                None,
                Some(BusinessInput::Text("text".into())),
                Some(BusinessInput::Data(json!({ "k": [1, 2] }))),
                Some(BusinessInput::Data(json!(3))),
            ]
        );
        let p = problems(one_step(json!({ "subtasks": [{ "input": " " }] })));
        assert_eq!(p[0].path, "steps[0].subtasks[0].input");
    }

    #[test]
    fn conditions_keep_their_text() {
        let wf = parse(one_step(json!({ "next": [
            { "step": "a" }, { "step": "b", "condition": null },
            { "step": "c", "condition": "  " }, { "step": "d", "condition": " x " },
        ]})));
        let next = &wf.steps[0].next;
        assert_eq!(next[0].condition, None);
        assert_eq!(next[1].condition, None);
        assert_eq!(next[2].condition.as_deref(), Some("  "));
        assert!(!next[2].is_conditional());
        assert_eq!(next[3].condition.as_deref(), Some(" x "));
        assert!(next[3].is_conditional());
    }

    #[test]
    fn envelope_is_unwrapped() {
        let wf = parse(json!({ "code": 0, "data": { "id": "w", "steps": [{ "name": "a" }] } }));
        assert_eq!(wf.id, "w");
        assert_eq!(wf.steps[0].name, "a");
        let p = problems(json!({ "data": { "steps": [{ "name": 1 }] } }));
        assert_eq!(p[0].path, "data.steps[0].name");
        // With a `steps` member the top level is the workflow itself.
        let wf = parse(json!({ "data": { "steps": [{ "name": "x" }] }, "steps": [] }));
        assert!(wf.steps.is_empty());
        // A non-object `data` is just an unknown key.
        let wf = parse(json!({ "data": "x", "id": "i" }));
        assert_eq!(wf.id, "i");
    }

    #[test]
    fn top_level_must_be_an_object_and_json_well_formed() {
        let p = problems(json!([1, 2]));
        assert_eq!(p[0].path, "");
        assert!(p[0].message.contains("expected a JSON object"));
        let e = Workflow::from_json_str("{\n  \"steps\": [\n    {\"name\": }\n  ]\n}")
            .expect_err("malformed");
        assert_eq!(e.problems.len(), 1);
        assert!(
            e.problems[0].message.contains("line 3 column"),
            "{}",
            e.problems[0].message
        );
        let shown = e.to_string();
        assert!(
            shown.starts_with("invalid workflow JSON (1 problem):"),
            "{shown}"
        );
    }

    #[test]
    fn display_lists_every_problem() {
        let e = Workflow::from_json_value(&json!({ "name": 1, "steps": [{ "layer": "x" }] }))
            .expect_err("fails");
        let shown = e.to_string();
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 3, "{shown}");
        assert_eq!(lines[1].trim(), "name: expected a string, found a number");
        assert_eq!(
            lines[2].trim(),
            "steps[0].layer: expected an integer, found a string"
        );
    }

    #[test]
    fn canonical_json_round_trips() {
        let wf = parse(json!({ "id": "w", "steps": [
            { "name": "a", "type": "selfloop", "contextFrom": "x", "layer": 3,
              "subtasks": [{ "agent": "g", "input": { "q": 1 } }, { "input": "t" }],
              "next": [{ "step": "b", "condition": "c" }, { "step": "end" }] },
            { "name": "b", "context_from": [] },
        ]}));
        assert_eq!(parse(wf.to_json()), wf);
    }

    fn arb_text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("  ".to_owned()),
            "[a-z*]{1,3}",
            "[ -~]{0,6}",
            "\\PC{0,4}",
        ]
    }

    fn arb_step() -> impl Strategy<Value = Step> {
        let step_type = prop_oneof![
            Just(StepType::AllSuccess),
            Just(StepType::AnySuccess),
            Just(StepType::SelfLoop),
        ];
        let context_from = prop_oneof![
            Just(ContextFrom::Absent),
            proptest::collection::vec(arb_text(), 0..3).prop_map(ContextFrom::List),
        ];
        let input = prop_oneof![
            Just(None),
            "[a-z]{1,5}".prop_map(|s| Some(BusinessInput::Text(s.into()))),
            any::<i32>().prop_map(|n| Some(BusinessInput::Data(json!({ "n": n, "l": [n] })))),
        ];
        let subtask = (arb_text(), arb_text(), arb_text(), input).prop_map(
            |(agent, skill, description, input)| Subtask {
                agent: agent.into(),
                skill: skill.into(),
                description: description.into(),
                input,
            },
        );
        let edge = (arb_text(), proptest::option::of(arb_text()))
            .prop_map(|(step, condition)| Edge { step, condition });
        (
            arb_text(),
            any::<i64>(),
            step_type,
            context_from,
            proptest::collection::vec(subtask, 0..3),
            proptest::collection::vec(edge, 0..3),
        )
            .prop_map(
                |(name, layer, step_type, context_from, subtasks, next)| Step {
                    name: name.into(),
                    layer,
                    step_type,
                    context_from,
                    subtasks,
                    next,
                },
            )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The canonical JSON form parses back to an equal workflow.
        #[test]
        fn to_json_round_trips(
            id in arb_text(),
            name in arb_text(),
            steps in proptest::collection::vec(arb_step(), 0..4),
        ) {
            let wf = Workflow { id, name, description: String::new(), steps };
            let back = Workflow::from_json_str(&wf.to_json().to_string()).expect("parses");
            prop_assert_eq!(back, wf);
        }
    }
}
