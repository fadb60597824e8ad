//! Rules of the trace format (`a2at_core::trace`): what a recorded run's lines say, what the
//! reader accepts and refuses, and what replay and blessing report, stated against a run of one
//! remote subtask recorded through the public writer.

use std::sync::Arc;

mod common;

use a2at_core::agents::AgentDirectory;
use a2at_core::host::{HostReply, HostRequest, MessageContent};
use a2at_core::run::{Run, RunConfig, RunStart};
use a2at_core::trace::*;
use a2at_core::workflow::{ValidatedWorkflow, parse_and_validate};
use a2at_core::{ApiMisuse, Input, OpId, Output, Timestamp};
use serde_json::{Value, json};

fn alpha() -> AgentDirectory {
    common::alpha_rest()
}

fn one_remote_step() -> ValidatedWorkflow {
    let workflow =
        json!({"steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "x"}]}]});
    parse_and_validate(&workflow.to_string()).expect("a valid workflow")
}

fn config() -> RunConfig {
    RunConfig {
        seed: 21,
        ..RunConfig::default()
    }
}

fn at(micros: u64) -> Timestamp {
    Timestamp::from_micros(micros)
}

/// A run being recorded line by line, as a driver does.
struct Recorder {
    run: Run,
    writer: TraceWriter,
    lines: Vec<String>,
    outputs: Vec<Output>,
}

impl Recorder {
    fn start(redaction: Redaction) -> Recorder {
        let (workflow, agents) = (one_remote_step(), alpha());
        let header = TraceHeader::new(&workflow, &agents, &config(), &RunStart::default())
            .expect("a directory that rebuilds");
        let writer = TraceWriter::with_redaction(redaction);
        let run = Run::new(
            Arc::new(workflow),
            Arc::new(agents),
            config(),
            RunStart::default(),
        );
        let mut r = Recorder {
            run,
            writer,
            lines: vec![writer.header(&header)],
            outputs: Vec::new(),
        };
        r.drain();
        r
    }

    fn drain(&mut self) -> Vec<Output> {
        let mut drained = Vec::new();
        while let Some(out) = self.run.poll_output() {
            self.lines.push(self.writer.output(&out));
            drained.push(out);
        }
        self.outputs.extend(drained.clone());
        drained
    }

    fn input(&mut self, input: Input, now: u64) -> Vec<Output> {
        self.lines.push(self.writer.input(at(now), &input));
        self.run
            .handle(input, at(now))
            .expect("an input the run takes");
        self.drain()
    }

    fn text(&self) -> String {
        self.lines.join("\n")
    }
}

fn completed_task(context_id: &str) -> Vec<u8> {
    json!({"task": {"id": "alpha-t1", "contextId": context_id,
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a1", "name": "result", "parts": [{"text": "done"}]}]}})
    .to_string()
    .into_bytes()
}

/// Records the whole run: the host's content, a timeout with nothing due, the agent's answer,
/// and a timeout after the end, which the finished run refuses. Returns the recorder and the
/// request body sent.
fn recorded(redaction: Redaction) -> (Recorder, Vec<u8>) {
    let mut r = Recorder::start(redaction);
    let call = r
        .outputs
        .iter()
        .find_map(|o| match o {
            Output::CallHost {
                call,
                request: HostRequest::Task(_),
            } => Some(*call),
            _ => None,
        })
        .expect("the host is asked for content");
    let sent = r.input(
        Input::HostReply {
            call,
            reply: HostReply::Task(Ok(MessageContent::text("x"))),
        },
        0,
    );
    let send = sent
        .iter()
        .find_map(|o| match o {
            Output::Transmit(request) => Some(request.clone()),
            _ => None,
        })
        .expect("the send goes out");
    r.lines.push(r.writer.timeout(at(500)));
    r.run.handle_timeout(at(500)).expect("a timeout in time");
    r.drain();
    let message: Value = serde_json::from_slice(&send.body).expect("a JSON request");
    let context = message["message"]["contextId"]
        .as_str()
        .expect("a context id");
    r.input(
        Input::ResponseHead {
            op: send.op,
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
        },
        1000,
    );
    r.input(
        Input::ResponseBody {
            op: send.op,
            chunk: completed_task(context),
        },
        1000,
    );
    r.input(Input::ResponseEnd { op: send.op }, 1000);
    assert!(r.run.is_finished(), "the run ends with the answer");
    r.lines.push(r.writer.timeout(at(2000)));
    assert_eq!(r.run.handle_timeout(at(2000)), Err(ApiMisuse::Finished));
    r.drain();
    (r, send.body)
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn header_of(text: &str) -> Value {
    lines(text).remove(0)
}

/// Replaces line `n` (1-based) of `text` by `line`.
fn with_line(text: &str, n: usize, line: &str) -> String {
    let mut all: Vec<&str> = text.lines().collect();
    all[n - 1] = line;
    all.join("\n")
}

/// A recorded run replays exactly, and the report counts what was fed: every input and timeout
/// line, every output (all compared), the lines the run refused with why, and the result.
#[test]
fn a_recorded_remote_run_replays_exactly_and_reports_what_it_fed() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    let trace = parse_trace(&text).expect("a trace the writer wrote");
    let report = replay(&trace).expect("an exact replay");
    assert_eq!(report.inputs, 4);
    assert_eq!(report.timeouts, 2);
    assert_eq!(report.outputs, r.outputs.len());
    assert_eq!(report.compared, r.outputs.len());
    assert_eq!(
        report.rejected,
        [(text.lines().count(), ApiMisuse::Finished)]
    );
    let result = report.result.expect("the run finished");
    assert!(result.success);
    assert_eq!(Some(&result), r.run.result());
}

/// The reader gives back each line as written: inputs with their time, timeouts with theirs,
/// outputs as their JSON, all numbered from 1 with the header as line 1; and the run rebuilt
/// from the header has the same workflow, agents and first outputs.
#[test]
fn the_reader_gives_back_every_line_as_written_and_the_run_it_came_from() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    let trace = parse_trace(&text).expect("a trace the writer wrote");
    assert_eq!(trace.lines.len(), text.lines().count() - 1);
    for (i, (n, line)) in trace.lines.iter().enumerate() {
        assert_eq!(*n, i + 2);
        let written: Value = serde_json::from_str(&r.lines[i + 1]).expect("JSON");
        match line {
            TraceLine::Input { t, input } => {
                assert_eq!(t.as_micros(), written["t"].as_u64().expect("a time"));
                let RecordedInput::Input(input) = input else {
                    panic!("an input in clear on line {n}");
                };
                assert_eq!(serde_json::to_value(input).expect("JSON"), written["in"]);
            }
            TraceLine::Timeout { t } => {
                assert_eq!(written, json!({"t": t.as_micros(), "timeout": true}));
            }
            TraceLine::Output(v) => assert_eq!(v, &written["out"]),
        }
    }
    let timeouts: Vec<u64> = trace
        .lines
        .iter()
        .filter_map(|(_, l)| match l {
            TraceLine::Timeout { t } => Some(t.as_micros()),
            _ => None,
        })
        .collect();
    assert_eq!(timeouts, [500, 2000]);
    assert_eq!(**trace.agents(), alpha());
    assert_eq!(
        trace.workflow().workflow().to_json(),
        one_remote_step().workflow().to_json()
    );
    let mut fresh = trace.new_run();
    let first: Vec<Output> = std::iter::from_fn(|| fresh.poll_output()).collect();
    let mut again = Recorder::start(Redaction::None);
    assert_eq!(first, std::mem::take(&mut again.outputs));
    assert_eq!(fresh.trace_id(), again.run.trace_id());
}

/// A timeout line is exactly `{"t":<micros>,"timeout":true}`.
#[test]
fn a_timeout_line_holds_its_time_in_microseconds() {
    let line: Value =
        serde_json::from_str(&TraceWriter::new().timeout(at(1_234_567))).expect("JSON");
    assert_eq!(line, json!({"t": 1_234_567, "timeout": true}));
}

/// The header records the run's seed, its config mirror (budgets in microseconds) and start,
/// and says the outputs are complete and nothing is redacted, so replay is exact.
#[test]
fn the_header_records_the_seed_and_the_config_and_says_replay_is_exact() {
    let (r, _) = recorded(Redaction::None);
    let header = header_of(&r.text());
    assert_eq!(header["kind"], "header");
    assert_eq!(header["format"], FORMAT);
    assert_eq!(header["version"], VERSION);
    assert_eq!(header["seed"], 21);
    assert_eq!(
        header["config"]["task_budget_us"],
        u64::try_from(RunConfig::default().task_budget.as_micros()).expect("fits")
    );
    assert_eq!(header["outputs"], true);
    assert_eq!(header["redaction"], "none");
    assert_eq!(header["replayable"], true);
    let trace = parse_trace(&r.text()).expect("a trace");
    assert!(trace.header.replayable());
    assert_eq!(trace.header.config.to_run_config(21), config());
}

/// Without redaction every body travels in clear: the request body as sent, the response body
/// as received.
#[test]
fn without_redaction_bodies_are_written_as_they_are() {
    let (r, sent) = recorded(Redaction::None);
    let text = r.text();
    assert!(!text.contains("\"redacted\""), "{text}");
    let body = lines(&text)
        .into_iter()
        .find_map(|l| (l["out"]["type"] == "transmit").then(|| l["out"]["body"].clone()))
        .expect("a transmit line");
    assert_eq!(
        body,
        Value::String(String::from_utf8(sent).expect("UTF-8 JSON"))
    );
}

/// Redacting request bodies replaces each sent body by the digest of its bytes, keeps
/// everything else in clear (response bodies too), and replay still checks them exactly.
#[test]
fn redacted_request_bodies_are_digests_and_replay_stays_exact() {
    let (r, sent) = recorded(Redaction::RequestBodies);
    let text = r.text();
    let header = header_of(&text);
    assert_eq!(header["redaction"], "request_bodies");
    assert_eq!(header["replayable"], true);
    let all = lines(&text);
    let transmit = all
        .iter()
        .find(|l| l["out"]["type"] == "transmit")
        .expect("a transmit line");
    assert_eq!(transmit["out"]["body"], json!({"redacted": digest(&sent)}));
    let chunk = all
        .iter()
        .find(|l| l["in"]["type"] == "response_body")
        .expect("a response body line");
    assert!(chunk["in"]["chunk"].is_string(), "{chunk}");
    let trace = parse_trace(&text).expect("a trace");
    assert!(trace.header.replayable());
    let report = replay(&trace).expect("an exact replay");
    assert_eq!(report.compared, r.outputs.len());
    assert_eq!(
        rerecord(&trace).expect("a replayable trace"),
        format!("{text}\n")
    );
}

/// Redacting all bodies also replaces response chunks by digests: the trace is an audit
/// record, says so in its header, reads back with the redacted inputs as written, and replay
/// stops at the first of them.
#[test]
fn redacted_response_bodies_make_an_audit_record_replayed_up_to_the_first_one() {
    let (r, _) = recorded(Redaction::AllBodies);
    let text = r.text();
    let header = header_of(&text);
    assert_eq!(header["redaction"], "all_bodies");
    assert_eq!(header["replayable"], false);
    let all = lines(&text);
    let at_chunk = all
        .iter()
        .position(|l| l["in"]["type"] == "response_body")
        .expect("a response body line");
    let chunk = &all[at_chunk]["in"]["chunk"];
    assert!(
        chunk["redacted"]
            .as_str()
            .is_some_and(|d| d.starts_with("fnv64:")),
        "{chunk}"
    );
    let trace = parse_trace(&text).expect("an audit trace reads");
    assert!(!trace.header.replayable());
    let redacted = trace
        .lines
        .iter()
        .find_map(|(n, l)| match l {
            TraceLine::Input {
                input: RecordedInput::Redacted(v),
                ..
            } => Some((*n, v.clone())),
            _ => None,
        })
        .expect("a redacted input");
    assert_eq!(redacted, (at_chunk + 1, all[at_chunk]["in"].clone()));
    assert_eq!(
        replay(&trace).map(|_| ()),
        Err(ReplayError::NotReplayable { line: at_chunk + 1 })
    );
    assert!(matches!(
        rerecord(&trace),
        Err(ReplayError::NotReplayable { .. })
    ));
}

/// A response chunk that is not UTF-8 is redacted by the digest of its bytes, not of their
/// base64 text; without redaction it is written as base64.
#[test]
fn a_binary_response_chunk_is_redacted_by_the_digest_of_its_bytes() {
    let bytes = vec![0xff, 0xfe, 0x00, 0x41];
    let input = Input::ResponseBody {
        op: OpId(3),
        chunk: bytes.clone(),
    };
    let line: Value = serde_json::from_str(
        &TraceWriter::with_redaction(Redaction::AllBodies).input(at(7), &input),
    )
    .expect("JSON");
    assert_eq!(line["t"], 7);
    assert_eq!(line["in"]["chunk"], json!({"redacted": digest(&bytes)}));
    let clear: Value =
        serde_json::from_str(&TraceWriter::new().input(at(7), &input)).expect("JSON");
    assert_eq!(clear["in"]["chunk"], json!({"base64": "//4AQQ=="}));
    let requests_only: Value = serde_json::from_str(
        &TraceWriter::with_redaction(Redaction::RequestBodies).input(at(7), &input),
    )
    .expect("JSON");
    assert_eq!(requests_only["in"]["chunk"], json!({"base64": "//4AQQ=="}));
}

/// Only a response body's chunk is redacted: other inputs are written as they are, even under
/// full redaction.
#[test]
fn full_redaction_leaves_inputs_other_than_response_bodies_alone() {
    let w = TraceWriter::with_redaction(Redaction::AllBodies);
    let head = Input::ResponseHead {
        op: OpId(2),
        status: 200,
        headers: vec![("a".into(), "b".into())],
    };
    let line: Value = serde_json::from_str(&w.input(at(1), &head)).expect("JSON");
    assert_eq!(line["in"], serde_json::to_value(&head).expect("JSON"));
}

/// A redacted body is accepted only where the header announces that redaction: a digest in
/// place of a response chunk or a request body is otherwise a bad line, never a silent gap.
#[test]
fn a_redacted_body_the_header_does_not_announce_is_refused() {
    let (r, _) = recorded(Redaction::AllBodies);
    let text = r.text();
    let all = lines(&text);
    let chunk_line = all
        .iter()
        .position(|l| l["in"]["type"] == "response_body")
        .expect("a response body line")
        + 1;
    let transmit_line = all
        .iter()
        .position(|l| l["out"]["type"] == "transmit")
        .expect("a transmit line")
        + 1;
    let lying = text.replacen(
        "\"redaction\":\"all_bodies\",\"replayable\":false",
        "\"redaction\":\"none\",\"replayable\":true",
        1,
    );
    let e = parse_trace(&lying).expect_err("a redacted request body the header hides");
    assert_eq!(e.line, transmit_line);
    assert!(matches!(e.kind, TraceErrorKind::BadOutput(_)), "{e}");
    // With request bodies announced, the response chunk is the first bad line.
    let lying = text.replacen(
        "\"redaction\":\"all_bodies\",\"replayable\":false",
        "\"redaction\":\"request_bodies\",\"replayable\":true",
        1,
    );
    let e = parse_trace(&lying).expect_err("a redacted chunk the header hides");
    assert_eq!(e.line, chunk_line);
    assert!(matches!(e.kind, TraceErrorKind::BadInput(_)), "{e}");
}

/// Under full redaction the reader accepts a digest only as the chunk of a response body: an
/// input of another kind carrying one is still a bad input.
#[test]
fn a_digest_is_accepted_only_as_the_chunk_of_a_response_body() {
    let (r, _) = recorded(Redaction::AllBodies);
    let text = r.text();
    let bad_kind = json!({"t": 3000, "in": {"type": "response_head", "op": 1,
        "chunk": {"redacted": "fnv64:0000000000000000"}}});
    let e = parse_trace(&format!("{text}\n{bad_kind}")).expect_err("not a redacted body");
    assert_eq!(e.line, text.lines().count() + 1);
    assert!(matches!(e.kind, TraceErrorKind::BadInput(_)), "{e}");
}

/// A header must name the trace format; another format is refused as such.
#[test]
fn a_header_of_another_format_is_refused_naming_it() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    let e = parse_trace(&text.replacen("\"format\":\"a2at-trace\"", "\"format\":\"other\"", 1))
        .expect_err("another format");
    assert_eq!(
        (e.line, e.kind),
        (1, TraceErrorKind::WrongFormat("other".into()))
    );
}

/// A header whose `replayable` contradicts its redaction, or that names an unknown binding, is
/// a bad header: replay must not trust either.
#[test]
fn a_header_contradicting_itself_or_naming_an_unknown_binding_is_refused() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    for bad in [
        text.replacen("\"replayable\":true", "\"replayable\":false", 1),
        text.replacen(
            "\"preferred_binding\":null",
            "\"preferred_binding\":\"SMOKE\"",
            1,
        ),
    ] {
        let e = parse_trace(&bad).expect_err("a bad header");
        assert_eq!(e.line, 1);
        assert!(matches!(e.kind, TraceErrorKind::BadHeader(_)), "{e}");
    }
    // Without `replayable` the header's redaction decides.
    let trace = parse_trace(&text.replacen(",\"replayable\":true", "", 1)).expect("optional");
    assert!(trace.header.replayable());
}

/// The header is line 1: a trace starting with a blank line has no header, even if one follows.
#[test]
fn a_trace_whose_first_line_is_blank_has_no_header() {
    let (r, _) = recorded(Redaction::None);
    let e = parse_trace(&format!("\n{}", r.text())).expect_err("no header on line 1");
    assert_eq!((e.line, e.kind), (1, TraceErrorKind::MissingHeader));
}

/// Blank lines (and CRLF endings) are skipped but still counted, so errors name the line an
/// editor shows.
#[test]
fn blank_lines_are_skipped_but_counted() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text().replace('\n', "\r\n\r\n");
    let trace = parse_trace(&text).expect("blank lines are fine");
    let numbers: Vec<usize> = trace.lines.iter().map(|(n, _)| *n).collect();
    let want: Vec<usize> = (1..r.lines.len()).map(|i| 2 * i + 1).collect();
    assert_eq!(numbers, want);
    replay(&trace).expect("the same run");
}

/// A time must be a non-negative integer and a timeout line must say `true`; anything else is
/// an unknown line.
#[test]
fn a_line_with_a_bad_time_or_a_false_timeout_is_an_unknown_line() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    for line in [
        r#"{"t":-1,"timeout":true}"#,
        r#"{"t":"5","timeout":true}"#,
        r#"{"t":5,"timeout":false}"#,
        r#"{"t":1.5,"in":{"type":"cancel"}}"#,
    ] {
        let e = parse_trace(&format!("{text}\n{line}")).expect_err("a bad line");
        assert_eq!(e.line, text.lines().count() + 1, "{line}");
        assert!(
            matches!(e.kind, TraceErrorKind::UnknownLine(_)),
            "{line}: {e}"
        );
    }
}

/// A trace that says its outputs are not recorded must hold no `out` line; without the flag,
/// the presence of `out` lines decides.
#[test]
fn an_out_line_in_a_trace_without_outputs_is_refused() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    let first_out = text
        .lines()
        .position(|l| l.starts_with("{\"out\""))
        .expect("an out line")
        + 1;
    let e = parse_trace(&text.replacen("\"outputs\":true", "\"outputs\":false", 1))
        .expect_err("out lines where none are recorded");
    assert_eq!(
        (e.line, e.kind),
        (first_out, TraceErrorKind::UnexpectedOutput)
    );
    let unflagged = text.replacen(",\"outputs\":true", "", 1);
    assert!(parse_trace(&unflagged).expect("optional").header.outputs);
    let inputs_only: Vec<&str> = unflagged
        .lines()
        .filter(|l| !l.starts_with("{\"out\""))
        .collect();
    let trace = parse_trace(&inputs_only.join("\n")).expect("a reproducer");
    assert!(!trace.header.outputs);
    let report = replay(&trace).expect("nothing to compare");
    assert_eq!(report.compared, 0);
    assert_eq!(report.outputs, r.outputs.len());
}

/// Blessing an inputs-only trace writes every drain after the line that caused it, as the
/// recorder did, and says the outputs are now complete.
#[test]
fn blessing_an_inputs_only_trace_writes_the_recorded_run_back() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    let inputs_only: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("{\"out\""))
        .collect();
    let reproducer = inputs_only
        .join("\n")
        .replacen("\"outputs\":true", "\"outputs\":false", 1);
    let trace = parse_trace(&reproducer).expect("a reproducer");
    assert_eq!(rerecord(&trace).expect("replayable"), format!("{text}\n"));
    let drains = replay_outputs(&trace).expect("replayable");
    let outputs: Vec<Output> = drains.iter().flat_map(|(_, o)| o.clone()).collect();
    assert_eq!(outputs, r.outputs);
    let causes: Vec<usize> = drains.iter().map(|(line, _)| *line).collect();
    assert_eq!(causes, [1, 2, 3, 4, 5, 6, 7]);
}

/// A changed, missing or extra output is a divergence naming the line: the changed `out`
/// line, the first recorded line with nothing produced for it, or the line whose drain made
/// more than was recorded.
#[test]
fn a_changed_missing_or_extra_output_is_a_divergence_naming_its_line() {
    let (r, _) = recorded(Redaction::None);
    let text = r.text();
    let all: Vec<&str> = text.lines().collect();
    let last_out = all
        .iter()
        .rposition(|l| l.starts_with("{\"out\""))
        .expect("an out line");
    let changed = with_line(
        &text,
        last_out + 1,
        r#"{"out":{"type":"abandon_host_call","call":99}}"#,
    );
    match replay(&parse_trace(&changed).expect("a trace")) {
        Err(ReplayError::Diverged(d)) => {
            assert_eq!(d.line, last_out + 1);
            assert!(d.expected.contains("abandon_host_call"), "{d}");
        }
        other => panic!("{other:?}"),
    }
    let mut extra: Vec<&str> = all.clone();
    extra.insert(last_out + 1, all[last_out]);
    match replay(&parse_trace(&extra.join("\n")).expect("a trace")) {
        Err(ReplayError::Diverged(d)) => {
            assert_eq!((d.line, d.actual.as_str()), (last_out + 2, "(no output)"));
        }
        other => panic!("{other:?}"),
    }
    let mut missing: Vec<&str> = all.clone();
    missing.remove(last_out);
    let cause = all[..last_out]
        .iter()
        .rposition(|l| !l.starts_with("{\"out\""))
        .expect("a cause")
        + 1;
    match replay(&parse_trace(&missing.join("\n")).expect("a trace")) {
        Err(ReplayError::Diverged(d)) => {
            assert_eq!(d.line, cause);
            assert_eq!(d.expected, format!("no further output after line {cause}"));
        }
        other => panic!("{other:?}"),
    }
}
