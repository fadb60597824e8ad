//! `a2at report` pages opened in a real headless browser (Chromium): the DAG and the timeline
//! render with one element per step, edge, subtask and exchange, and the page's script raises
//! no error.
//!
//! Chromium comes from the system (`.ci/run` installs Debian's package). Without it these tests
//! print why they did not run, unless `A2AT_REQUIRE_CHROMIUM=1` makes a missing browser a
//! failure, as CI does.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var_os("A2AT_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            ["chromium", "chromium-browser", "google-chrome"]
                .iter()
                .map(PathBuf::from),
        );
    for c in candidates {
        let found = Command::new(&c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return Some(c);
        }
    }
    if std::env::var("A2AT_REQUIRE_CHROMIUM").as_deref() == Ok("1") {
        panic!("A2AT_REQUIRE_CHROMIUM=1 but no Chromium was found (set A2AT_CHROMIUM to its path)");
    }
    eprintln!("SKIPPED: no Chromium on this machine (apt-get install chromium)");
    None
}

fn report(input: &Path, output: &Path, extra: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .arg("report")
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(extra)
        .output()
        .expect("the a2at binary runs");
    assert!(
        out.status.success(),
        "a2at report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The page's DOM after its scripts ran, as the browser serialises it.
fn rendered_dom(browser: &Path, page: &Path, profile: &Path) -> String {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Elements whose class attribute starts with `class_prefix` (e.g. `"step "`), counted in the
/// serialised DOM.
fn count(dom: &str, class_prefix: &str) -> usize {
    dom.matches(&format!("class=\"{class_prefix}")).count()
}

/// The `<body …>` start tag, where the page records how drawing went.
fn body_tag(dom: &str) -> &str {
    dom.find("<body")
        .map(|at| &dom[at..at + dom[at..].find('>').unwrap_or(0)])
        .unwrap_or_else(|| panic!("no body in:\n{dom}"))
}

/// The page marks its `<body>` when it has drawn everything, and when its script failed.
fn assert_rendered(dom: &str) {
    let body = body_tag(dom);
    let shown = || {
        dom.split("<body")
            .nth(1)
            .unwrap_or("")
            .chars()
            .take(3000)
            .collect::<String>()
    };
    assert!(
        !body.contains("data-script-errors"),
        "the page's script raised an error: {body}\n{}",
        shown()
    );
    assert!(
        body.contains("data-rendered=\"yes\""),
        "the page did not finish drawing: {body}\n{}",
        shown()
    );
}

fn out_lines<'a>(trace: &'a str, kind: &str) -> impl Iterator<Item = Value> + 'a {
    let needle = format!("{{\"out\":{{\"type\":\"{kind}\"");
    trace
        .lines()
        .filter(move |l| l.starts_with(&needle))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
}

#[test]
fn trace_reports_draw_every_step_edge_subtask_and_exchange_in_a_browser() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "fan_out_join_routing",
        "negotiation_two_rounds",
        "faults_reattach_and_resend",
        "any_success_cancel",
    ] {
        let trace_path = repo().join(format!("tests/fixtures/traces/{name}.jsonl"));
        let trace = std::fs::read_to_string(&trace_path).unwrap();
        let page = dir.path().join(format!("{name}.html"));
        report(&trace_path, &page, &[]);
        let dom = rendered_dom(&browser, &page, &dir.path().join(format!("profile-{name}")));
        assert_rendered(&dom);

        // What the page must show, counted from the trace itself.
        let header: Value = serde_json::from_str(trace.lines().next().unwrap()).unwrap();
        let steps = header["workflow"]["steps"].as_array().unwrap();
        let edges: usize = steps
            .iter()
            .map(|s| s["next"].as_array().unwrap().len())
            .sum();
        let mut subtasks: Vec<(String, u64)> = out_lines(&trace, "event")
            .filter(|e| e["out"]["event"]["type"] == "task_request")
            .map(|e| {
                let d = &e["out"]["event"]["data"];
                (
                    d["step"].as_str().unwrap().to_owned(),
                    d["subtask_index"].as_u64().unwrap(),
                )
            })
            .collect();
        subtasks.sort();
        subtasks.dedup();
        let exchanges =
            out_lines(&trace, "transmit").count() + out_lines(&trace, "call_host").count();

        assert_eq!(count(&dom, "step "), steps.len(), "{name}: steps");
        assert_eq!(count(&dom, "edge"), edges, "{name}: edges");
        assert_eq!(
            count(&dom, "subtask "),
            subtasks.len(),
            "{name}: subtask bars"
        );
        assert_eq!(count(&dom, "exchange "), exchanges, "{name}: exchange bars");
    }
}

#[test]
fn a_result_file_report_draws_the_graph_and_says_why_there_is_no_timeline() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let trace_path = repo().join("tests/fixtures/traces/fan_out_join_routing.jsonl");
    let trace =
        a2at_core::trace::parse_trace(&std::fs::read_to_string(&trace_path).unwrap()).unwrap();
    let mut result = a2at_core::trace::replay(&trace).unwrap().result.unwrap();
    // A hostile output: markup and a script that must stay text.
    result.history[0].outputs = vec![Value::String(
        "</script><script>document.body.setAttribute('data-pwned','1')</script><b>x</b>".into(),
    )];
    let result_path = dir.path().join("result.json");
    std::fs::write(&result_path, serde_json::to_string(&result).unwrap()).unwrap();
    let workflow_path = dir.path().join("workflow.json");
    std::fs::write(&workflow_path, trace.header.workflow.to_string()).unwrap();
    let page = dir.path().join("result.html");
    report(
        &result_path,
        &page,
        &["--workflow", workflow_path.to_str().unwrap()],
    );
    let dom = rendered_dom(&browser, &page, &dir.path().join("profile"));
    assert_rendered(&dom);
    assert_eq!(count(&dom, "step "), 5);
    assert_eq!(count(&dom, "edge"), 6);
    assert_eq!(count(&dom, "subtask "), 0);
    assert!(
        dom.contains("No timeline: a result file has no times"),
        "{dom}"
    );
    assert!(
        !body_tag(&dom).contains("data-pwned"),
        "an output ran as a script"
    );
    // The output is on the page as data, still whole.
    assert!(dom.contains("data-pwned"));
}

#[test]
fn the_demo_draws_its_loopback_run_with_every_exchange_the_page_data_lists() {
    let Some(browser) = chromium() else { return };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("demo.html");
    let out = Command::new(env!("CARGO_BIN_EXE_a2at"))
        .args(["demo", "--report"])
        .arg(&page)
        .output()
        .expect("the a2at binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let start = html.find("application/json\">").unwrap() + "application/json\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data["success"], true);
    let exchanges = data["exchanges"].as_array().unwrap();
    // Four agents over real HTTP: at least one send each, plus the negotiation's replies.
    let sends = exchanges.iter().filter(|x| x["purpose"] == "send").count();
    let replies = exchanges.iter().filter(|x| x["purpose"] == "reply").count();
    assert_eq!((sends, replies), (4, 2), "{data}");
    assert!(exchanges.iter().all(|x| {
        x["url"]
            .as_str()
            .unwrap_or("")
            .starts_with("http://127.0.0.1:")
            || x["purpose"].as_str().unwrap().starts_with("host ")
    }));

    let dom = rendered_dom(&browser, &page, &dir.path().join("profile"));
    assert_rendered(&dom);
    assert_eq!(count(&dom, "step "), 5);
    assert_eq!(
        count(&dom, "subtask "),
        data["subtasks"].as_array().unwrap().len()
    );
    assert_eq!(count(&dom, "exchange "), exchanges.len());
    assert_eq!(
        count(&dom, "mark m-negotiation"),
        data["marks"].as_array().unwrap().len()
    );
}
