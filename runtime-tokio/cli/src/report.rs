//! `a2at report`: one self-contained HTML page showing a finished run: the DAG coloured by step
//! status and a timeline of every subtask and exchange on one time axis.
//!
//! The page is built from a trace (JSON lines, as `a2at run --trace` writes them) or from an
//! `ExecutionResult` JSON file. Only a trace has times, so a result file gives the DAG and the
//! outputs without a timeline. The data goes into the page as JSON and a small inline script
//! draws it: no network, no CDN, nothing to install to open it.
//!
//! What the page may show is chosen here, not in the script: URLs lose their credentials and
//! secret query parameters, and request headers and bodies are left out entirely, so a page
//! made from an unredacted trace still shows no secret the trace's protocol bodies carried in
//! headers.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use a2at_core::redact::redact_url;
use a2at_core::result::ExecutionResult;
use a2at_core::trace::{RecordedInput, Trace, TraceLine, output_from_value, output_to_value};
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_core::{Output, Timestamp};
use serde_json::{Map, Value, json};

const TEMPLATE: &str = include_str!("report_template.html");
const DATA_MARK: &str = "/*A2AT_RUN_DATA*/null";

/// `a2at report INPUT -o OUTPUT [--workflow W]`.
pub fn run(input: &Path, output: &Path, workflow: Option<&Path>) -> ExitCode {
    let text = match std::fs::read_to_string(input) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("a2at: cannot read {}: {e}", input.display());
            return ExitCode::from(2);
        }
    };
    let workflow = match workflow {
        None => None,
        Some(p) => match std::fs::read_to_string(p).map(|t| parse_and_validate(&t)) {
            Ok(Ok(wf)) => Some(wf),
            Ok(Err(e)) => {
                eprintln!("a2at: {} is not a valid workflow:\n{e}", p.display());
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("a2at: cannot read {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
    };
    let model = match model_of(&text, workflow.as_ref()) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("a2at: cannot draw {}: {e}", input.display());
            return ExitCode::from(2);
        }
    };
    let page = render(&model);
    if let Err(e) = std::fs::write(output, page) {
        eprintln!("a2at: cannot write {}: {e}", output.display());
        return ExitCode::from(2);
    }
    let counts = |k: &str| model[k].as_array().map_or(0, Vec::len);
    println!(
        "wrote {}: {} steps, {} subtasks, {} exchanges{}",
        output.display(),
        counts("steps"),
        counts("subtasks"),
        counts("exchanges"),
        if model["timed"] == json!(true) {
            ""
        } else {
            " (no timeline: a result file has no times; pass a trace for one)"
        }
    );
    ExitCode::SUCCESS
}

/// The page: the template with the run's data in place of its mark. The data is JSON inside a
/// `<script>` element, so every `<`, `>` and `&` is escaped: a string in the run (an agent's
/// output, say) can never close the element or start markup.
pub fn render(model: &Value) -> String {
    let mut data = String::with_capacity(4096);
    for c in model.to_string().chars() {
        match c {
            '<' => data.push_str("\\u003c"),
            '>' => data.push_str("\\u003e"),
            '&' => data.push_str("\\u0026"),
            '\u{2028}' => data.push_str("\\u2028"),
            '\u{2029}' => data.push_str("\\u2029"),
            c => data.push(c),
        }
    }
    TEMPLATE.replacen(DATA_MARK, &data, 1)
}

/// The page's data from a trace or an `ExecutionResult` file's text.
pub fn model_of(text: &str, workflow: Option<&ValidatedWorkflow>) -> Result<Value, String> {
    if let Ok(result) = serde_json::from_str::<ExecutionResult>(text) {
        let b = Builder {
            result: Some(result),
            ..Builder::default()
        };
        return Ok(b.finish(workflow, false));
    }
    let trace = a2at_core::trace::parse_trace(text).map_err(|e| {
        format!("neither an ExecutionResult JSON file nor an a2at trace (as a trace: {e})")
    })?;
    let mut b = Builder::default();
    for (t, item) in timed_items(&trace)? {
        b.take(t, &item);
    }
    let workflow = workflow.unwrap_or(trace.workflow());
    Ok(b.finish(Some(workflow), true))
}

/// What happened, in order, with the run's clock (µs) at each: the recorded inputs (as JSON)
/// and the outputs, recorded or, when the trace kept none, made again by replaying the inputs.
enum Item {
    Input(Value),
    Output(Value),
}

fn timed_items(trace: &Trace) -> Result<Vec<(u64, Item)>, String> {
    let mut items = Vec::new();
    if trace.header.outputs {
        let mut now = 0;
        for (_, line) in &trace.lines {
            match line {
                TraceLine::Input { t, input } => {
                    now = t.as_micros();
                    items.push((now, Item::Input(recorded_value(input))));
                }
                TraceLine::Timeout { t } => now = t.as_micros(),
                TraceLine::Output(v) => items.push((now, Item::Output(v.clone()))),
            }
        }
        return Ok(items);
    }
    if !trace.header.replayable() {
        return Err(
            "the trace recorded no outputs and its redacted inputs cannot be replayed \
                    to make them again"
                .into(),
        );
    }
    let mut run = trace.new_run();
    let drain = |run: &mut a2at_core::run::Run, now: u64, items: &mut Vec<(u64, Item)>| {
        while let Some(out) = run.poll_output() {
            items.push((now, Item::Output(output_to_value(&out))));
        }
    };
    drain(&mut run, 0, &mut items);
    for (line, entry) in &trace.lines {
        let (t, fed) = match entry {
            TraceLine::Output(_) => continue,
            TraceLine::Timeout { t } => (*t, run.handle_timeout(*t)),
            TraceLine::Input { t, input } => match input {
                RecordedInput::Input(i) => {
                    items.push((t.as_micros(), Item::Input(recorded_value(input))));
                    (*t, run.handle(i.clone(), *t))
                }
                RecordedInput::Redacted(_) => {
                    return Err(format!("line {line}: a redacted input cannot be replayed"));
                }
            },
        };
        fed.map_err(|misuse| format!("line {line}: the run refused the input: {misuse}"))?;
        drain(&mut run, Timestamp::as_micros(t), &mut items);
    }
    Ok(items)
}

fn recorded_value(input: &RecordedInput) -> Value {
    match input {
        RecordedInput::Input(i) => serde_json::to_value(i).unwrap_or(Value::Null),
        RecordedInput::Redacted(v) => v.clone(),
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

fn index(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// A subtask's key: step name and subtask index.
type SubtaskKey = (String, u64);

#[derive(Default)]
struct Builder {
    result: Option<ExecutionResult>,
    end: u64,
    step_times: BTreeMap<String, (Option<u64>, Option<u64>)>,
    subtasks: Vec<Value>,
    subtask_at: BTreeMap<SubtaskKey, usize>,
    exchanges: Vec<Value>,
    exchange_at: BTreeMap<u64, usize>,
    host_calls: BTreeMap<u64, usize>,
    marks: Vec<Value>,
    routes: Vec<Value>,
}

impl Builder {
    fn take(&mut self, t: u64, item: &Item) {
        self.end = self.end.max(t);
        match item {
            Item::Input(v) => self.input(t, v),
            Item::Output(v) => self.output(t, v),
        }
    }

    fn subtask(&mut self, step: &str, index: u64, agent: &str, t: u64) -> &mut Value {
        let key = (step.to_owned(), index);
        let at = match self.subtask_at.get(&key) {
            Some(at) => *at,
            None => {
                self.subtasks.push(json!({
                    "step": step, "index": index, "agent": agent, "start": t, "end": null,
                }));
                self.subtask_at.insert(key, self.subtasks.len() - 1);
                self.subtasks.len() - 1
            }
        };
        &mut self.subtasks[at]
    }

    fn output(&mut self, t: u64, v: &Value) {
        match v["type"].as_str() {
            Some("event") => self.event(t, &v["event"]),
            Some("transmit") => {
                let c = &v["correlation"];
                let op = index(v, "op");
                self.exchanges.push(json!({
                    "op": op,
                    "step": text(c, "step"),
                    "index": index(c, "subtask_index"),
                    "agent": text(v, "agent"),
                    "purpose": text(v, "purpose"),
                    "method": text(v, "method"),
                    "url": redact_url(&text(v, "url")),
                    "streaming": v["streaming"] == json!(true),
                    "start": t, "end": null, "status": null, "outcome": "open", "error": null,
                }));
                self.exchange_at.insert(op, self.exchanges.len() - 1);
            }
            // The engine closes streams it no longer needs: not a failure of the exchange.
            Some("abort_transmit") => self.end_exchange(index(v, "op"), t, "closed", None),
            Some("call_host") => {
                // Most callbacks name their subtask at the top; a negotiation names it in the
                // task it belongs to.
                let r = match &v["request"] {
                    r if r.get("step_name").is_none() && r["task"].is_object() => &r["task"],
                    r => r,
                };
                self.exchanges.push(json!({
                    "op": null,
                    "step": text(r, "step_name"),
                    "index": index(r, "subtask_index"),
                    "agent": text(r, "agent_name"),
                    "purpose": format!("host {}", text(&v["request"], "callback")),
                    "method": "", "url": "", "streaming": false,
                    "start": t, "end": null, "status": null, "outcome": "open", "error": null,
                }));
                self.host_calls
                    .insert(index(v, "call"), self.exchanges.len() - 1);
            }
            Some("finished") => {
                if let Ok(Output::Finished(result)) = output_from_value(v.clone()) {
                    self.result = Some(std::sync::Arc::unwrap_or_clone(result));
                }
            }
            _ => {}
        }
    }

    fn input(&mut self, t: u64, v: &Value) {
        let op = index(v, "op");
        match v["type"].as_str() {
            Some("response_head") => {
                if let Some(&at) = self.exchange_at.get(&op) {
                    self.exchanges[at]["status"] = v["status"].clone();
                }
            }
            Some("response_end") => self.end_exchange(op, t, "ok", None),
            Some("transport_failed") => {
                let e = &v["error"];
                let why = format!("{}: {}", text(e, "kind"), text(e, "message"));
                self.end_exchange(op, t, "failed", Some(why));
            }
            Some("host_reply") => {
                if let Some(at) = self.host_calls.remove(&index(v, "call")) {
                    let x = &mut self.exchanges[at];
                    x["end"] = json!(t);
                    x["outcome"] = json!(if v["reply"]["result"].get("Err").is_some() {
                        "failed"
                    } else {
                        "ok"
                    });
                }
            }
            _ => {}
        }
    }

    fn end_exchange(&mut self, op: u64, t: u64, outcome: &str, error: Option<String>) {
        let Some(at) = self.exchange_at.remove(&op) else {
            return;
        };
        let x = &mut self.exchanges[at];
        x["end"] = json!(t);
        let http_error = x["status"].as_u64().is_some_and(|s| s >= 400);
        x["outcome"] = json!(if http_error { "failed" } else { outcome });
        if let Some(e) = error {
            x["error"] = json!(e);
        }
    }

    fn mark(&mut self, t: u64, d: &Value, kind: &str, label: String) {
        self.marks.push(json!({
            "t": t, "kind": kind, "step": text(d, "step"), "index": index(d, "subtask_index"),
            "label": label,
        }));
    }

    fn event(&mut self, t: u64, e: &Value) {
        let d = &e["data"];
        match e["type"].as_str() {
            Some("step_start") => self.step_times.entry(text(d, "step")).or_default().0 = Some(t),
            Some("step_complete") | Some("error") => {
                self.step_times.entry(text(d, "step")).or_default().1 = Some(t);
            }
            Some("task_request") => {
                let s = self.subtask(
                    &text(d, "step"),
                    index(d, "subtask_index"),
                    &text(d, "agent"),
                    t,
                );
                s["start"] = json!(t);
            }
            Some("task_response") => {
                let s = self.subtask(
                    &text(d, "step"),
                    index(d, "subtask_index"),
                    &text(d, "agent"),
                    t,
                );
                s["end"] = json!(t);
            }
            Some("agent_retry") => {
                let label = format!(
                    "retry {} ({}), {} after {} ms",
                    index(d, "attempt"),
                    text(d, "reason"),
                    text(d, "action"),
                    index(d, "delay_ms")
                );
                self.mark(t, d, "retry", label);
            }
            Some("negotiation_request") => {
                let label = format!(
                    "negotiation exchange {}: the agent proposes",
                    index(d, "exchange")
                );
                self.mark(t, d, "negotiation", label);
            }
            Some("negotiation_resolved") => {
                let label = format!(
                    "negotiation round {}: {}",
                    index(d, "round"),
                    text(d, "performative")
                );
                self.mark(t, d, "negotiation", label);
            }
            Some("route_decision") => self.routes.push(json!({
                "from": text(d, "step"), "to": text(d, "next"),
                "allowed": d["allowed"] == json!(true), "reason": d["reason"].clone(),
            })),
            _ => {}
        }
    }

    fn finish(mut self, workflow: Option<&ValidatedWorkflow>, timed: bool) -> Value {
        let result = self.result.take();
        let status_of: BTreeMap<String, Value> = result
            .iter()
            .flat_map(|r| &r.steps)
            .map(|s| {
                (
                    s.name.to_string(),
                    serde_json::to_value(s.status).unwrap_or(Value::Null),
                )
            })
            .collect();
        let mut steps = Vec::new();
        match workflow {
            Some(wf) => {
                let mut depth = vec![0u64; wf.len()];
                for &id in wf.topological_order() {
                    for &next in wf.successors(id) {
                        depth[next.index()] = depth[next.index()].max(depth[id.index()] + 1);
                    }
                }
                for id in wf.step_ids() {
                    let step = wf.step(id);
                    let next: Vec<Value> = wf
                        .edges(id)
                        .iter()
                        .map(|e| json!({"to": e.target_name(wf), "condition": e.condition}))
                        .collect();
                    steps.push(self.step_value(
                        &step.name,
                        step.step_type.as_str(),
                        depth[id.index()],
                        step.subtasks.len(),
                        next,
                        &status_of,
                    ));
                }
            }
            None => {
                // A result file alone has no graph: the steps in the order the result lists them.
                for (i, s) in result.iter().flat_map(|r| &r.steps).enumerate() {
                    steps.push(self.step_value(&s.name, "", i as u64, 0, Vec::new(), &status_of));
                }
            }
        }
        let mut by_key: BTreeMap<SubtaskKey, &a2at_core::host::TaskExecutionResult> =
            BTreeMap::new();
        for h in result.iter().flat_map(|r| &r.history) {
            by_key.insert((h.step_name.to_string(), u64::from(h.subtask_index)), h);
        }
        for (key, h) in &by_key {
            if !self.subtask_at.contains_key(key) {
                let s = self.subtask(&key.0, key.1, &h.agent_name, 0);
                s["start"] = Value::Null;
            }
        }
        let end = self.end;
        for s in &mut self.subtasks {
            let key = (text(s, "step"), index(s, "index"));
            if let Some(h) = by_key.get(&key) {
                s["status"] = json!(h.status.as_str());
                s["description"] = json!(h.task_description);
                s["outputs"] = Value::Array(h.outputs.clone());
                s["error"] = json!(h.error);
                s["errorCode"] = json!(h.error_code);
                s["remoteTaskId"] = json!(h.remote_task_id);
            } else {
                s["status"] = json!("unfinished");
            }
            if timed && s["end"].is_null() && !s["start"].is_null() {
                // Ended without a response event (cancelled with its step, or the run stopped):
                // its bar runs to its step's end, else to the end of the trace.
                let step_end = self.step_times.get(&key.0).and_then(|t| t.1);
                s["end"] = json!(step_end.unwrap_or(end));
            }
        }
        for x in &mut self.exchanges {
            if x["end"].is_null() {
                x["end"] = json!(end);
            }
        }
        let mut top = Map::new();
        top.insert("timed".into(), json!(timed));
        top.insert("end".into(), json!(end));
        if let Some(wf) = workflow {
            top.insert("workflow".into(), json!(wf.workflow().name));
        }
        match &result {
            Some(r) => {
                top.insert("executionId".into(), json!(r.execution_id));
                top.insert("success".into(), json!(r.success));
                top.insert(
                    "error".into(),
                    r.error.as_ref().map_or(
                        Value::Null,
                        |e| json!({"code": e.code, "message": e.message}),
                    ),
                );
            }
            None => {
                top.insert("success".into(), Value::Null);
                top.insert("error".into(), json!({"code": "unfinished", "message": "the trace ends before the run finished"}));
            }
        }
        top.insert("steps".into(), Value::Array(steps));
        top.insert("subtasks".into(), Value::Array(self.subtasks));
        top.insert("exchanges".into(), Value::Array(self.exchanges));
        top.insert("marks".into(), Value::Array(self.marks));
        top.insert("routes".into(), Value::Array(self.routes));
        Value::Object(top)
    }

    fn step_value(
        &self,
        name: &str,
        step_type: &str,
        depth: u64,
        subtasks: usize,
        next: Vec<Value>,
        status_of: &BTreeMap<String, Value>,
    ) -> Value {
        let (start, end) = self.step_times.get(name).copied().unwrap_or_default();
        json!({
            "name": name, "type": step_type, "depth": depth, "subtasks": subtasks, "next": next,
            "status": status_of.get(name).cloned().unwrap_or(json!("not_run")),
            "start": start, "end": end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/../../tests/fixtures/traces/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn count_outputs(trace: &str, kind: &str) -> usize {
        let needle = format!("{{\"out\":{{\"type\":\"{kind}\"");
        trace.lines().filter(|l| l.starts_with(&needle)).count()
    }

    fn find<'a>(model: &'a Value, list: &str, step: &str, index: u64) -> &'a Value {
        model[list]
            .as_array()
            .and_then(|l| {
                l.iter()
                    .find(|s| s["step"] == json!(step) && s["index"] == json!(index))
            })
            .unwrap_or_else(|| panic!("no {list} entry for {step} #{index} in {model}"))
    }

    #[test]
    fn every_exchange_and_host_call_of_a_trace_becomes_one_timed_bar() {
        for name in [
            "fan_out_join_routing.jsonl",
            "faults_reattach_and_resend.jsonl",
            "negotiation_two_rounds.jsonl",
            "grpc_stream_poll_and_rejection.jsonl",
        ] {
            let trace = fixture(name);
            let model = model_of(&trace, None).unwrap();
            let exchanges = model["exchanges"].as_array().unwrap();
            assert_eq!(
                exchanges.len(),
                count_outputs(&trace, "transmit") + count_outputs(&trace, "call_host"),
                "{name}"
            );
            assert_eq!(model["timed"], json!(true));
            for x in exchanges {
                let (start, end) = (x["start"].as_u64().unwrap(), x["end"].as_u64().unwrap());
                assert!(start <= end, "{name}: {x}");
                assert!(end <= model["end"].as_u64().unwrap(), "{name}: {x}");
            }
        }
    }

    #[test]
    fn a_trace_gives_the_graph_with_step_statuses_routes_and_subtask_outcomes() {
        let model = model_of(&fixture("fan_out_join_routing.jsonl"), None).unwrap();
        let steps = model["steps"].as_array().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["decide", "left", "right", "skipped", "join"]);
        let step = |n: &str| steps.iter().find(|s| s["name"] == json!(n)).unwrap();
        assert_eq!(step("skipped")["status"], json!("skipped"));
        assert_eq!(step("join")["status"], json!("succeeded"));
        // Depth is the longest path from a start step: join comes after left and right.
        assert_eq!(step("decide")["depth"], json!(0));
        assert_eq!(step("left")["depth"], json!(1));
        assert_eq!(step("join")["depth"], json!(2));
        assert_eq!(step("decide")["next"].as_array().unwrap().len(), 3);
        assert_eq!(step("join")["subtasks"], json!(2));
        let blocked: Vec<&Value> = model["routes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["allowed"] == json!(false))
            .collect();
        assert_eq!(blocked.len(), 1);
        assert_eq!(blocked[0]["to"], json!("skipped"));
        let join1 = find(&model, "subtasks", "join", 1);
        assert_eq!(join1["agent"], json!("beta"));
        assert_eq!(join1["status"], json!("success"));
        assert!(!join1["outputs"].as_array().unwrap().is_empty(), "{join1}");
        assert!(join1["start"].as_u64().unwrap() < join1["end"].as_u64().unwrap());
        assert_eq!(model["success"], json!(true));
    }

    #[test]
    fn retries_negotiation_rounds_and_failed_exchanges_are_marked() {
        let faults = model_of(&fixture("faults_reattach_and_resend.jsonl"), None).unwrap();
        let marks = faults["marks"].as_array().unwrap();
        assert!(
            marks.iter().any(|m| m["kind"] == json!("retry")),
            "{faults}"
        );
        let failed = faults["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["outcome"] == json!("failed"))
            .count();
        assert!(failed > 0, "{faults}");
        let negotiation = model_of(&fixture("negotiation_two_rounds.jsonl"), None).unwrap();
        let rounds = negotiation["marks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kind"] == json!("negotiation"))
            .count();
        assert!(rounds >= 2, "{negotiation}");
        // The host's negotiation decisions sit on the subtask's row, like its other callbacks.
        let decisions: Vec<&Value> = negotiation["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["purpose"] == json!("host negotiation"))
            .collect();
        assert_eq!(decisions.len(), 2, "{negotiation}");
        for d in decisions {
            assert_eq!(
                (&d["step"], &d["index"], &d["agent"]),
                (&json!("s"), &json!(0), &json!("neg"))
            );
        }
        let replies = negotiation["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["purpose"] == json!("reply"))
            .count();
        assert!(replies >= 1, "{negotiation}");
    }

    #[test]
    fn a_trace_without_outputs_is_replayed_to_the_same_picture() {
        let full = fixture("fan_out_join_routing.jsonl");
        let mut lines = full.lines();
        let header = lines
            .next()
            .unwrap()
            .replace("\"outputs\":true", "\"outputs\":false");
        let inputs_only: Vec<&str> = lines.filter(|l| !l.starts_with("{\"out\"")).collect();
        let stripped = format!("{header}\n{}\n", inputs_only.join("\n"));
        assert_eq!(
            model_of(&stripped, None).unwrap(),
            model_of(&full, None).unwrap()
        );
    }

    #[test]
    fn a_result_file_gives_the_steps_and_outputs_without_a_timeline() {
        let trace = a2at_core::trace::parse_trace(&fixture("fan_out_join_routing.jsonl")).unwrap();
        let result = a2at_core::trace::replay(&trace).unwrap().result.unwrap();
        let text = serde_json::to_string(&result).unwrap();
        let alone = model_of(&text, None).unwrap();
        assert_eq!(alone["timed"], json!(false));
        assert_eq!(alone["steps"].as_array().unwrap().len(), 5);
        assert!(alone["exchanges"].as_array().unwrap().is_empty());
        assert!(find(&alone, "subtasks", "join", 1)["start"].is_null());
        let with_graph = model_of(&text, Some(trace.workflow())).unwrap();
        let join = with_graph["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == json!("join"))
            .unwrap();
        assert_eq!(join["depth"], json!(2));
    }

    #[test]
    fn input_that_is_neither_a_trace_nor_a_result_is_refused_with_the_reason() {
        let e = model_of("{\"hello\":1}", None).unwrap_err();
        assert!(e.contains("neither an ExecutionResult"), "{e}");
        let truncated = fixture("chain.jsonl");
        let e = model_of(&truncated[..200], None).unwrap_err();
        assert!(e.contains("as a trace"), "{e}");
    }

    #[test]
    fn strings_from_the_run_cannot_close_the_data_element_or_leak_url_secrets() {
        let trace = fixture("chain.jsonl").replace("http://", "http://user:hunter2@");
        let mut model = model_of(&trace, None).unwrap();
        let page_json = model.to_string();
        assert!(!page_json.contains("hunter2"), "{page_json}");
        model["subtasks"][0]["outputs"] = json!(["</script><script>alert(1)</script>&"]);
        let page = render(&model);
        assert_eq!(
            page.matches("</script>").count(),
            2,
            "only the page's own two"
        );
        assert!(page.contains("\\u003c/script\\u003e"));
        assert!(!page.contains(DATA_MARK));
        // The escaped data is still the same JSON.
        let start = page.find("application/json\">").unwrap() + "application/json\">".len();
        let end = start + page[start..].find("</script>").unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&page[start..end]).unwrap(),
            model
        );
    }
}
