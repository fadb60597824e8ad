//! Protocol log redaction (features.md §1.17 PL), including the secret-planting test.

mod auth_support;

use a2at_core::HttpRequest;
use a2at_core::auth::*;
use a2at_core::protolog::*;
use serde_json::json;

fn req(headers: Vec<(&str, &str)>, body: &str) -> HttpRequest {
    auth_support::logged_request(7, &headers, body)
}

#[test]
fn secret_names() {
    for n in [
        "Authorization",
        "Proxy-Authorization",
        "Cookie",
        "Set-Cookie",
        "x-access-token",
        "client_secret",
        "newPassword",
        "pwd",
        "PASSWD",
        "accessSession",
        "X-API-Key",
        "api-key",
        "apikey",
    ] {
        assert!(is_secret_name(n), "{n}");
    }
    for n in [
        "Content-Type",
        "api_key_id_hint_x",
        "name",
        "https://example.com/token/v1",
        "tokenizer://x",
    ] {
        assert!(!is_secret_name(n), "{n}");
    }
    for n in [
        "refresh_token",
        "client_secret",
        "api_key",
        "pwd",
        "accessSession",
    ] {
        assert!(is_secret_form_name(n), "{n}");
    }
}

#[test]
fn json_redaction_keeps_the_wire_text() {
    let text = r#"{"b":1.50,"password" : "p\"w","a":"\u00e9","nested":{"token":{"x":[1,2]},"ok":true},"list":[{"apikey":7}]}"#;
    assert_eq!(
        redact_json_text(text),
        r#"{"b":1.50,"password" : "***","a":"\u00e9","nested":{"token":"***","ok":true},"list":[{"apikey":"***"}]}"#
    );
    // URI keys are exempt, but secret keys below them are still masked.
    let text = r#"{"https://ex.com/token/v1":{"secret":"s","v":"keep"}}"#;
    assert_eq!(
        redact_json_text(text),
        r#"{"https://ex.com/token/v1":{"secret":"***","v":"keep"}}"#
    );
    // Bearer/Basic anywhere.
    assert_eq!(
        redact_json_text(r#"{"note":"use Bearer abc.def now"}"#),
        r#"{"note":"use Bearer *** now"}"#
    );
    // Escaped key names are decoded before the check.
    assert_eq!(
        redact_json_text(r#"{"pass\u0077ord":"x"}"#),
        r#"{"pass\u0077ord":"***"}"#
    );
}

#[test]
fn incomplete_secret_is_masked_to_the_end() {
    assert_eq!(
        redact_json_text(r#"{"a":"b","token":"abcdef"#),
        r#"{"a":"b","token":"***"#
    );
    assert_eq!(redact_json_text(r#"{"pwd":12345"#), r#"{"pwd":"***"#);
    assert_eq!(
        redact_json_text(r#"{"secret":{"inner":"ab"#),
        r#"{"secret":"***"#
    );
    assert_eq!(redact_json_text(r#"{"token": "#), r#"{"token": "#);
}

#[test]
fn form_and_url_redaction() {
    assert_eq!(
        redact_form(
            "user=bob&password=p%40ss&refresh_token=r&client_secret=c&api_key=k&accessSession=s&q=Bearer+xyz&keep=1"
        ),
        "user=bob&password=***&refresh_token=***&client_secret=***&api_key=***&accessSession=***&q=***&keep=1"
    );
    assert_eq!(
        redact_url("https://u:pw@h.example/p?access_token=T&x=1#frag"),
        "https://***@h.example/p?access_token=***&x=1#frag"
    );
    assert_eq!(redact_url("https://h/p"), "https://h/p");
    // A token handed over in the fragment (OAuth implicit flow) is a secret too.
    assert_eq!(
        redact_url("https://h/cb#access_token=T0K&token_type=bearer&state=s"),
        "https://h/cb#access_token=***&token_type=***&state=s"
    );
    assert_eq!(
        redact_url("https://h/p?x=1#id_token=e30&Access_Token=T"),
        "https://h/p?x=1#id_token=***&Access_Token=***"
    );
    assert_eq!(redact_url("https://h/p#"), "https://h/p#");
}

#[test]
fn body_caps_binary_and_disabled() {
    let cfg = LogConfig {
        max_body_chars: 10,
        ..Default::default()
    };
    assert_eq!(cfg.body_cap(), 256);
    let long = "x".repeat(300);
    let out = render_body(Some("text/plain"), long.as_bytes(), &cfg);
    assert!(out.contains("body truncated"));
    assert!(out.starts_with(&"x".repeat(256)));
    assert!(!out.contains(&"x".repeat(257)));
    assert_eq!(
        render_body(Some("image/png"), b"\x89PNG", &LogConfig::default()),
        "binary body omitted (4 bytes)"
    );
    assert_eq!(
        render_body(None, &[0xff, 0xfe, 0], &LogConfig::default()),
        "binary body omitted (3 bytes)"
    );
    let off = LogConfig {
        include_body: false,
        ..Default::default()
    };
    assert_eq!(render_body(None, b"{}", &off), "body=disabled");
    assert_eq!(LogConfig::default().max_body_chars, 100_000);
}

#[test]
fn pretty_is_presentation_only() {
    assert_eq!(
        pretty_json(r#"{"a":[1,{}],"b":"x\ny","c":[]}"#),
        "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": \"x\\ny\",\n  \"c\": []\n}"
    );
    assert_eq!(pretty_json("{not json"), "{not json");
    let raw = LogConfig {
        pretty: false,
        ..Default::default()
    };
    assert_eq!(
        render_body(Some("application/json"), br#"{"a": 1}"#, &raw),
        r#"{"a": 1}"#
    );
}

#[test]
fn request_entry_has_correlation_fields() {
    let r = req(vec![("Content-Type", "application/json")], r#"{"x":1}"#);
    let out = format_request(&r, Channel::Task, &LogConfig::default());
    for f in [
        "POST https://agent.example/rpc",
        "agent=agentA",
        "channel=task",
        "op=7",
        "purpose=send",
        "execution=exec-1",
        "step=step-1",
        "subtask=2",
        "task=ltask-9",
        "context=ctx-3",
        "remote_task=rtask-4",
        "Content-Type: application/json",
        "\"x\": 1",
    ] {
        assert!(out.contains(f), "{f} missing in {out}");
    }
    let sse = format_sse_event(
        &LogContext::of(&r, Channel::Task),
        Some("message"),
        r#"{"result":{"a":"line\nbreak"}}"#,
        &LogConfig::default(),
    );
    assert!(sse.contains("=== SSE data(JSON display; not wire text) ==="));
    assert!(sse.contains(r#""a": "line\nbreak""#));
    let sse = format_sse_event(
        &LogContext::of(&r, Channel::Task),
        None,
        "not json token=1",
        &LogConfig::default(),
    );
    assert!(sse.contains("data: not json token=***"));
    assert!(
        format_sse_dropped(&LogContext::of(&r, Channel::Task), 99)
            .contains("body=dropped-capacity")
    );
    assert!(
        format_stream_interrupted(&LogContext::of(&r, Channel::Task), "reset")
            .contains("stream=interrupted")
    );
    let line = task_failed_line(
        "e",
        "s",
        "t",
        "a",
        "remote.task_failed",
        r#"{"token":"zz"}"#,
    );
    assert!(
        line.starts_with("TASK_FAILED execution=e step=s task=t agent=a code=remote.task_failed")
    );
    assert!(!line.contains("zz"));
    assert!(workflow_stopped_line("e", &["x".into()]).contains("WORKFLOW_STOPPED"));
    assert!(workflow_finished_line("e", true).contains("WORKFLOW_FINISHED"));
    assert!(
        a2a_error_line(
            &LogContext::simple("a", Channel::Task),
            "a2a.x",
            "Bearer q1"
        )
        .contains("A2A_ERROR")
    );
}

/// Plants known secrets everywhere a runtime logs and checks that none comes out while the
/// non-secret fields do.
#[test]
fn secret_planting() {
    const SECRETS: [&str; 22] = [
        "S01-authz-header",
        "S02-cookie-header",
        "S03-apikey-header",
        "S04-custom-token-header",
        "S05-json-password",
        "S06-json-nested-token",
        "S07-json-array-secret",
        "S08-json-under-uri-key",
        "S09-bearer-in-text",
        "S10-form-password",
        "S11-form-refresh-token",
        "S12-form-api-key",
        "S13-login-response-session",
        "S14-login-response-access-token",
        "S15-cred-password",
        "S16-cred-field-pass",
        "S17-query-access-token",
        "S18-truncated-secret-tail",
        "S19-basic-in-header",
        "S20-sse-token",
        "S21-login-form-pass",
        "S22-enc-credential",
    ];
    let keep = [
        "K-message-text",
        "K-uri-ext-value",
        "K-form-user",
        "K-login-user-field",
        "K-header-trace",
        "K-sse-state",
    ];
    let cfg = LogConfig::default();
    let raw_cfg = LogConfig {
        pretty: false,
        ..Default::default()
    };
    let mut outputs = Vec::new();

    // Request headers and a JSON body.
    let body = json!({
        "jsonrpc": "2.0",
        "params": {"message": {"parts": [{"text": "K-message-text"}],
            "metadata": {"https://ex.com/a2a-t/token/v1": {"value": "K-uri-ext-value", "password": "S08-json-under-uri-key"}}},
            "credentials": {"deep": {"accessToken": "S06-json-nested-token"}},
            "items": [{"clientSecret": "S07-json-array-secret"}, "Bearer S09-bearer-in-text"],
            "password": "S05-json-password"}
    })
    .to_string();
    let r = req(
        vec![
            ("Authorization", "Bearer S01-authz-header"),
            ("Cookie", "sid=S02-cookie-header"),
            ("X-API-Key", "S03-apikey-header"),
            ("X-Session-Token", "S04-custom-token-header"),
            ("X-Proxy", "Basic S19-basic-in-header"),
            ("X-Trace", "K-header-trace"),
            ("Content-Type", "application/json"),
        ],
        &body,
    );
    for c in [&cfg, &raw_cfg] {
        outputs.push(format_request(&r, Channel::Task, c));
    }
    // The query string of a URL.
    let mut rq = r.clone();
    rq.url = "https://agent.example/rpc?access_token=S17-query-access-token".into();
    outputs.push(format_request(&rq, Channel::Task, &cfg));
    // A form body.
    let mut rf = req(
        vec![("Content-Type", "application/x-www-form-urlencoded")],
        "user=K-form-user&password=S10-form-password&refresh_token=S11-form-refresh-token&api-key=S12-form-api-key",
    );
    outputs.push(format_request(&rf, Channel::Task, &cfg));
    rf.headers.clear();
    outputs.push(format_request(&rf, Channel::Task, &raw_cfg));
    // A truncated JSON body ending inside a secret.
    let ctx = LogContext::of(&r, Channel::Task);
    outputs.push(format_response_body(
        &ctx,
        Some("application/json"),
        br#"{"status":"ok","token":"S18-truncated-secret-tail"#,
        &cfg,
    ));
    // A response head and an SSE event.
    outputs.push(format_response_head(
        &ctx,
        200,
        &[("Set-Cookie", "sid=S02-cookie-header")],
        &cfg,
    ));
    for c in [&cfg, &raw_cfg] {
        outputs.push(format_sse_event(
            &ctx,
            Some("message"),
            r#"{"result":{"state":"K-sse-state","auth":{"idToken":"S20-sse-token"}}}"#,
            c,
        ));
    }
    outputs.push(format_response_body(
        &ctx,
        Some("text/event-stream"),
        b"event: message\ndata: {\"k\":\"K-sse-state\",\"refreshToken\":\"S20-sse-token\"}\n\n",
        &cfg,
    ));

    // Credentials and login exchanges.
    let key = CredentialKey::from_bytes([3; 32]);
    let enc = encrypt_value("S22-enc-credential", &key, [5; 12]);
    let creds = CredentialsConfig::from_json_value(
        &json!({"agentA": {
            "j": {"login_url": "https://login.example/auth?client_secret=S16-cred-field-pass",
                  "request_fields": {"login": "K-login-user-field", "pass": "S16-cred-field-pass", "key": enc}},
            "f": {"login_url": "https://login.example/form", "content_type": "application/x-www-form-urlencoded",
                  "username": "K-form-user", "password": "S21-login-form-pass"},
            "b": {"username": "K-form-user", "password": "S15-cred-password"}}}),
        Some(&key),
    )
    .unwrap();
    outputs.push(format!("{creds:?}"));
    let card = a2at_core::a2a::card::AgentCard::from_json_value(&json!({"name": "agentA",
        "securitySchemes": {"b": {"type": "http", "scheme": "basic"}},
        "securityRequirements": [{"schemes": ["b"]}]}))
    .unwrap();
    let plan = plan_auth(&card, creds.agent("agentA"), AuthContext::default()).unwrap();
    outputs.push(format!("{plan:?}"));
    let m = plan.material(&Default::default()).unwrap();
    outputs.push(format!("{m:?}"));
    let mut sent = r.clone();
    sent.headers.clear();
    apply(&m, &[], &mut sent).unwrap();
    let basic = sent.headers[0].1.clone();
    assert!(basic.starts_with("Basic "));
    outputs.push(format_request(&sent, Channel::Task, &cfg));
    let b64 = basic.trim_start_matches("Basic ").to_owned();
    for scheme in ["j", "f"] {
        let SchemeCredential::Login(l) = &creds.agents["agentA"].schemes[scheme] else {
            panic!()
        };
        let lr = login_request(l);
        assert!(
            String::from_utf8_lossy(&lr.body).contains("S"),
            "the wire body has the secret"
        );
        outputs.push(format!("{lr:?}"));
        for c in [&cfg, &raw_cfg] {
            outputs.push(format_login_request("agentA", scheme, &lr, c));
        }
    }
    for c in [&cfg, &raw_cfg] {
        outputs.push(format_login_response(
            "agentA",
            "j",
            200,
            Some("application/json"),
            br#"{"data":{"accessSession":"S13-login-response-session","user":"K-login-user-field"},"access_token":"S14-login-response-access-token"}"#,
            c,
        ));
    }
    // Errors never carry secrets either.
    outputs.push(
        parse_login_response(200, br#"{"nope":"S13-login-response-session"}"#, "x")
            .unwrap_err()
            .to_string(),
    );
    outputs.push(
        CredentialsConfig::from_json_value(
            &json!({"a": {"s": {"token": "S15-cred-password", "bad": 1}}}),
            None,
        )
        .unwrap_err()
        .to_string(),
    );

    let all = outputs.join("\n----\n");
    assert!(!all.contains(&b64), "basic credential leaked");
    for s in SECRETS {
        assert!(!all.contains(s), "secret {s} leaked:\n{all}");
    }
    for k in keep {
        assert!(all.contains(k), "non-secret {k} missing:\n{all}");
    }
    assert!(all.contains("***"));
}

#[test]
fn log_knobs_come_from_the_lookup_with_defaults_minimum_and_named_errors() {
    use a2at_core::protolog::{ENV_INCLUDE_BODY, ENV_MAX_BODY_CHARS, ENV_PRETTY, LogConfig};
    let vars = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    assert_eq!(
        LogConfig::from_lookup(vars(&[])).unwrap(),
        LogConfig::default()
    );
    let cfg = LogConfig::from_lookup(vars(&[
        (ENV_INCLUDE_BODY, "false"),
        (ENV_MAX_BODY_CHARS, " 5000 "),
        (ENV_PRETTY, "0"),
    ]))
    .unwrap();
    assert!(!cfg.include_body && !cfg.pretty);
    assert_eq!(cfg.max_body_chars, 5000);
    let tiny =
        LogConfig::from_lookup(vars(&[(ENV_MAX_BODY_CHARS, "10"), (ENV_PRETTY, " ")])).unwrap();
    assert_eq!(tiny.max_body_chars, 256, "the minimum applies");
    assert!(tiny.pretty, "a blank value keeps the default");
    let err = LogConfig::from_lookup(vars(&[(ENV_MAX_BODY_CHARS, "lots")])).unwrap_err();
    assert_eq!(err.name, ENV_MAX_BODY_CHARS);
    assert!(err.to_string().contains("lots"), "{err}");
    let err = LogConfig::from_lookup(vars(&[(ENV_INCLUDE_BODY, "maybe")])).unwrap_err();
    assert_eq!(err.name, ENV_INCLUDE_BODY);
}

#[test]
fn summary_lines_name_failures_skipped_steps_and_the_end_without_secrets() {
    use a2at_core::host::{TaskExecutionResult, TaskStatus};
    use a2at_core::result::{ExecutionResult, RunError, StepReport, StepStatus};
    let failed = TaskExecutionResult {
        step_name: "check".into(),
        subtask_index: 0,
        agent_name: "agentA".into(),
        skill: "".into(),
        task_id: "t-1".into(),
        task_description: "check the site".into(),
        status: TaskStatus::Failed,
        outputs: Vec::new(),
        received_messages: Vec::new(),
        error: Some(r#"rejected: {"access_token": "planted-secret-77"}"#.into()),
        error_code: Some("a2a.task_not_found".into()),
        error_details: None,
        remote_task_id: Some("r-9".into()),
        context_id: Some("c-3".into()),
    };
    let result = ExecutionResult {
        execution_id: "exec-1".into(),
        success: false,
        error: Some(RunError {
            code: "workflow.step_failed".into(),
            message: "Step execution failed".into(),
        }),
        history: vec![failed],
        steps: vec![
            StepReport {
                name: "check".into(),
                status: StepStatus::Failed,
            },
            StepReport {
                name: "fix".into(),
                status: StepStatus::NotRun,
            },
            StepReport {
                name: "branch".into(),
                status: StepStatus::Skipped,
            },
        ],
    };
    let lines = summary_lines(&result);
    let kinds: Vec<&str> = lines
        .iter()
        .map(|l| l.split(' ').next().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        [
            "A2A_ERROR",
            "TASK_FAILED",
            "WORKFLOW_STOPPED",
            "WORKFLOW_FINISHED"
        ]
    );
    assert!(lines[1].contains("code=a2a.task_not_found"), "{}", lines[1]);
    assert!(lines[2].contains("skipped=[fix, branch]"), "{}", lines[2]);
    assert!(lines[3].contains("success=false"), "{}", lines[3]);
    assert!(
        lines.iter().all(|l| !l.contains("planted-secret-77")),
        "{lines:#?}"
    );
}

#[test]
fn a_login_token_is_masked_however_it_is_escaped_and_wherever_it_sits() {
    // `\/` and `\u0041` are valid JSON escapes of `/` and `A`: the raw text never matches.
    let body = br#"{"data":{"jwt":"tok\/en\u0041-1"},"copy":["tok/enA-1"],"other":"kept"}"#;
    let masked = String::from_utf8(mask_login_token(body, "tok/enA-1")).unwrap();
    assert!(!masked.contains("tok"), "{masked}");
    assert!(masked.contains("kept"), "{masked}");
    let text = mask_login_token(b"token=tok/enA-1; ok", "tok/enA-1");
    assert_eq!(
        String::from_utf8(text).unwrap(),
        format!("token={MASK}; ok")
    );
    assert_eq!(mask_login_token(b"{}", ""), b"{}");
}

#[test]
fn response_bodies_are_logged_whole_events_with_secrets_masked_across_chunks() {
    let r = req(vec![], "{}");
    let ctx = || LogContext::of(&r, Channel::Task);
    // SSE: a token split across two network chunks is still masked; one entry per event,
    // comments give none.
    let mut log = ResponseBodyLog::new(
        ctx(),
        Some("text/event-stream; charset=utf-8".into()),
        LogConfig::default(),
    );
    let mut entries = log.push(b": keep-alive\n\ndata: {\"token\":\"abc");
    assert!(entries.is_empty(), "{entries:?}");
    entries.extend(log.push(b"def\"}\n\ndata: {\"n\":2}\r\n\r\ndata: {\"n\":3}"));
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(!entries[0].contains("abcdef"), "{}", entries[0]);
    assert!(entries[0].contains("***"), "{}", entries[0]);
    assert!(entries[1].contains("\"n\": 2"), "{}", entries[1]);
    let rest = log.finish();
    assert_eq!(rest.len(), 1);
    assert!(rest[0].contains("\"n\": 3"));

    // An SSE event beyond the cap is dropped whole, labelled.
    let small = LogConfig {
        max_body_chars: 256,
        ..LogConfig::default()
    };
    let mut log = ResponseBodyLog::new(ctx(), Some("text/event-stream".into()), small);
    let big = format!("data: {}\n\ndata: {{\"after\":1}}\n\n", "x".repeat(2000));
    let entries = log.push(big.as_bytes());
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert!(entries[0].contains("body=dropped-capacity"));
    assert!(entries[1].contains("after"));

    // A unary body is one entry at the end, capped and labelled.
    let mut log = ResponseBodyLog::new(ctx(), Some("application/json".into()), small);
    let body = format!("{{\"text\":\"{}\"}}", "y".repeat(3000));
    assert!(log.push(&body.as_bytes()[..100]).is_empty());
    assert!(log.push(&body.as_bytes()[100..]).is_empty());
    let entries = log.finish();
    assert_eq!(entries.len(), 1);
    assert!(entries[0].contains("body truncated"), "{}", entries[0]);
    // An empty unary body gives no entry; an interrupted stream says so.
    let log = ResponseBodyLog::new(ctx(), Some("application/json".into()), small);
    assert!(log.finish().is_empty());
    let log = ResponseBodyLog::new(ctx(), Some("text/event-stream".into()), small);
    assert!(log.interrupted("reset")[0].contains("stream=interrupted"));
}
