//! Rules of the protocol log (features.md PL-3..PL-8) stated against the entries it produces:
//! no secret reaches an entry, an entry keeps what identifies the exchange, and the limits
//! label what they leave out.

mod auth_support;
mod common;

use a2at_core::HttpRequest;
use a2at_core::auth::LoginRequest;
use a2at_core::protolog::*;
use proptest::prelude::*;
use serde_json::{Value, json};

fn request(headers: &[(&str, &str)], body: &str) -> HttpRequest {
    auth_support::logged_request(1, headers, body)
}

fn ctx() -> LogContext {
    LogContext::of(&request(&[], ""), Channel::Task)
}

fn lookup(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
    move |name: &str| {
        pairs
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    }
}

/// The smallest body cap: 256 characters, so raw collectors keep 1024 bytes.
fn small() -> LogConfig {
    LogConfig {
        max_body_chars: MIN_BODY_CHARS,
        ..LogConfig::default()
    }
}

const CAP_BYTES: usize = MIN_BODY_CHARS * 4;

// ------------------------------------------------------------------------------------------
// Knobs (PL-4)
// ------------------------------------------------------------------------------------------

#[test]
fn every_documented_spelling_of_a_boolean_knob_is_read() {
    for (spelling, expected) in [
        ("true", true),
        ("1", true),
        ("yes", true),
        (" ON ", true),
        ("false", false),
        ("0", false),
        ("No", false),
        ("off", false),
    ] {
        for var in [ENV_INCLUDE_BODY, ENV_PRETTY] {
            let cfg = LogConfig::from_lookup(lookup(vec![(var, spelling.to_owned())]))
                .unwrap_or_else(|e| panic!("{var}={spelling:?}: {e}"));
            let got = if var == ENV_PRETTY {
                cfg.pretty
            } else {
                cfg.include_body
            };
            assert_eq!(got, expected, "{var}={spelling:?}");
        }
    }
}

// ------------------------------------------------------------------------------------------
// Bodies (PL-5, PL-8)
// ------------------------------------------------------------------------------------------

#[test]
fn a_binary_media_type_is_omitted_even_when_its_bytes_are_text() {
    for ct in [
        "application/octet-stream",
        "image/svg+xml",
        "audio/ogg",
        "video/mp4",
        "font/woff2",
        "Application/PDF; x=1",
    ] {
        assert_eq!(
            render_body(Some(ct), b"hello", &LogConfig::default()),
            "binary body omitted (5 bytes)",
            "{ct}"
        );
    }
}

#[test]
fn a_text_body_holding_a_nul_byte_is_omitted_as_binary() {
    assert_eq!(
        render_body(Some("text/plain"), b"ab\0cd", &LogConfig::default()),
        "binary body omitted (5 bytes)"
    );
}

#[test]
fn a_json_body_without_a_content_type_is_still_shown_indented() {
    assert_eq!(
        render_body(None, br#"{"a":[1]}"#, &LogConfig::default()),
        "{\n  \"a\": [\n    1\n  ]\n}"
    );
}

#[test]
fn plain_text_that_is_not_an_object_or_array_is_logged_as_sent() {
    // `  42  ` parses as JSON, but a text body is only reindented when it is JSON-shaped.
    assert_eq!(
        render_body(Some("text/plain"), b"  42  ", &LogConfig::default()),
        "  42  "
    );
}

#[test]
fn pretty_display_drops_wire_whitespace_and_keeps_empty_containers_closed() {
    assert_eq!(
        pretty_json("{ \"a\" : [ ] ,\n\t\"b\" : { \r\n } , \"c\" : [ 1 , \"x y\" ] }"),
        "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    \"x y\"\n  ]\n}"
    );
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        "[ -~\\n\\t\u{e9}\u{2028}]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z ]{0,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The text with every whitespace byte outside strings removed: the tokens as sent.
fn tokens(text: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_ascii_whitespace() {
            out.push(c);
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// PL-8: pretty display is presentation only; it keeps every token of the wire text,
    /// however that text was spaced.
    #[test]
    fn pretty_display_keeps_every_token_of_the_wire_text(v in json_value()) {
        for wire in [v.to_string(), serde_json::to_string_pretty(&v).unwrap()] {
            let shown = pretty_json(&wire);
            prop_assert_eq!(tokens(&shown), tokens(&wire), "{}", shown);
            let shown_value: Value = serde_json::from_str(&shown).unwrap();
            let wire_value: Value = serde_json::from_str(&wire).unwrap();
            prop_assert_eq!(shown_value, wire_value);
        }
    }
}

#[test]
fn an_event_stream_body_is_logged_line_by_line_with_secrets_masked() {
    let body = "event: message\nid: 7\ndata: {\"state\":\"K-working\",\"token\":\"S-sse-data\"}\n\
                : Bearer S-sse-comment\n\n";
    let out = render_body(
        Some("text/event-stream"),
        body.as_bytes(),
        &LogConfig::default(),
    );
    assert_eq!(
        out,
        "event: message\nid: 7\ndata: {\"state\":\"K-working\",\"token\":\"***\"}\n\
         : Bearer ***\n\n"
    );
}

// ------------------------------------------------------------------------------------------
// Entries (PL-2, PL-3, PL-7)
// ------------------------------------------------------------------------------------------

const FIELDS: &str = "[agent=agentA channel=task op=1 purpose=send execution=exec-1 step=step-1 \
                      subtask=2 task=ltask-9 context=ctx-3 remote_task=rtask-4]";

#[test]
fn the_request_body_type_comes_from_the_content_type_header_in_any_case() {
    // A `+` is a space in a form body: only the form reading sees the Bearer credential.
    let form = request(
        &[("content-TYPE", "application/x-www-form-urlencoded")],
        "note=Bearer+S-form-bearer&user=K-user",
    );
    let out = format_request(&form, Channel::Task, &LogConfig::default());
    assert!(!out.contains("S-form-bearer"), "{out}");
    assert!(out.ends_with("\nbody: note=***&user=K-user"), "{out}");

    let binary = request(&[("CONTENT-TYPE", "application/octet-stream")], "hello");
    let out = format_request(&binary, Channel::Task, &LogConfig::default());
    assert!(
        out.ends_with("\nbody: binary body omitted (5 bytes)"),
        "{out}"
    );
}

#[test]
fn a_response_head_entry_names_status_correlation_and_masked_headers() {
    let headers = [
        ("Set-Cookie".to_owned(), "sid=S-cookie".to_owned()),
        ("X-Trace".to_owned(), "K-trace".to_owned()),
    ];
    assert_eq!(
        format_response_head(&ctx(), 401, &headers, &LogConfig::default()),
        format!("<<< RESPONSE 401 {FIELDS}\n  Set-Cookie: ***\n  X-Trace: K-trace")
    );
    let raw = LogConfig {
        pretty: false,
        ..LogConfig::default()
    };
    assert_eq!(
        format_response_head(&ctx(), 200, &headers, &raw),
        format!("<<< RESPONSE 200 {FIELDS}\nheaders: Set-Cookie: ***, X-Trace: K-trace")
    );
}

#[test]
fn a_response_body_entry_carries_correlation_and_the_redacted_body() {
    assert_eq!(
        format_response_body(
            &ctx(),
            Some("application/json"),
            br#"{"ok":true,"access_token":"S-body"}"#,
            &LogConfig::default()
        ),
        format!(
            "<<< RESPONSE BODY {FIELDS}\nbody: {{\n  \"ok\": true,\n  \"access_token\": \"***\"\n}}"
        )
    );
}

fn login(content_type: &str, body: &str) -> LoginRequest {
    LoginRequest {
        method: "POST".into(),
        url: "https://login.example/auth?client_secret=S-login-query".into(),
        content_type: content_type.into(),
        headers: vec![("Content-Type".into(), content_type.into())],
        body: body.as_bytes().to_vec(),
    }
}

#[test]
fn a_login_request_entry_masks_every_field_value_but_keeps_the_exchange() {
    let cfg = LogConfig {
        pretty: false,
        ..LogConfig::default()
    };
    let json = login(
        "application/json",
        r#"{"login":"S-login-name","pass":"S-login-pass","n":7}"#,
    );
    assert_eq!(
        format_login_request("agentA", "j", &json, &cfg),
        ">>> LOGIN POST https://login.example/auth?client_secret=*** \
         [agent=agentA channel=login] scheme=j\nheaders: Content-Type: application/json\n\
         body: {\"login\":\"***\",\"pass\":\"***\",\"n\":\"***\"}"
    );
    let form = login(
        "application/x-www-form-urlencoded",
        "user=S-form-user&password=S-form-pass&flag",
    );
    let out = format_login_request("agentA", "f", &form, &cfg);
    assert!(out.ends_with("\nbody: user=***&password=***&***"), "{out}");
    let off = LogConfig {
        include_body: false,
        ..cfg
    };
    let out = format_login_request("agentA", "j", &json, &off);
    assert!(out.ends_with("\nbody: body=disabled"), "{out}");
    let out = format_login_request("agentA", "j", &login("application/json", ""), &cfg);
    assert!(out.ends_with("\nbody: (empty)"), "{out}");
}

#[test]
fn a_login_response_entry_names_status_and_scheme_and_masks_the_token() {
    assert_eq!(
        format_login_response(
            "agentA",
            "j",
            200,
            Some("application/json"),
            br#"{"accessSession":"S-session","user":"K-user"}"#,
            &LogConfig {
                pretty: false,
                ..LogConfig::default()
            },
        ),
        "<<< LOGIN RESPONSE 200 [agent=agentA channel=login] scheme=j\n\
         body: {\"accessSession\":\"***\",\"user\":\"K-user\"}"
    );
}

// ------------------------------------------------------------------------------------------
// Assembled response bodies (PL-5)
// ------------------------------------------------------------------------------------------

fn sse_log() -> ResponseBodyLog {
    ResponseBodyLog::new(ctx(), Some("text/event-stream".into()), small())
}

fn event_of(len: usize) -> String {
    format!("data: {}", "x".repeat(len - "data: ".len()))
}

#[test]
fn an_event_exactly_at_the_byte_cap_is_logged_and_one_byte_more_is_dropped() {
    let at_cap = event_of(CAP_BYTES);
    // Whole in one chunk, and cut before or inside its delimiter.
    for (delimiter, cut) in [
        ("\n\n", 2),
        ("\n\n", 0),
        ("\n\n", 1),
        ("\r\n\r\n", 1),
        ("\r\n\r\n", 2),
        ("\r\n\r\n", 3),
    ] {
        let mut log = sse_log();
        let mut entries = log.push(format!("{at_cap}{}", &delimiter[..cut]).as_bytes());
        entries.extend(log.push(&delimiter.as_bytes()[cut..]));
        assert_eq!(entries.len(), 1, "{delimiter:?} cut at {cut}: {entries:?}");
        assert!(entries[0].starts_with("<<< SSE EVENT"), "{}", entries[0]);
        assert!(entries[0].contains("xxxxxxxx"), "{}", entries[0]);
    }
    let mut log = sse_log();
    let entries = log.push(format!("{}\n\n", event_of(CAP_BYTES + 1)).as_bytes());
    assert_eq!(
        entries,
        [format!(
            "<<< SSE EVENT {FIELDS} body=dropped-capacity ({} bytes)",
            CAP_BYTES + 3
        )]
    );
}

#[test]
fn an_oversized_event_arriving_in_pieces_is_dropped_whole_with_its_byte_count() {
    let mut log = sse_log();
    let mut entries = log.push(event_of(606).as_bytes());
    entries.extend(log.push(&[b'x'; 600]));
    assert!(entries.is_empty(), "{entries:?}");
    entries.extend(log.push(b"xxxxxxxxxx\n\ndata: {\"after\":1}\n\n"));
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(
        entries[0],
        format!("<<< SSE EVENT {FIELDS} body=dropped-capacity (1218 bytes)")
    );
    assert!(entries[1].contains("\"after\": 1"), "{}", entries[1]);
    assert!(log.finish().is_empty());
}

#[test]
fn a_stream_ending_inside_an_oversized_event_reports_every_byte_of_it() {
    let mut log = sse_log();
    assert!(log.push(event_of(1106).as_bytes()).is_empty());
    assert!(log.push(&[b'x'; 50]).is_empty());
    assert_eq!(
        log.finish(),
        [format!(
            "<<< SSE EVENT {FIELDS} body=dropped-capacity (1156 bytes)"
        )]
    );
}

#[test]
fn a_unary_body_is_labelled_truncated_only_when_bytes_were_left_out() {
    let unlabelled = |entry: &str| !entry.contains("kept for the log");
    let mut log = ResponseBodyLog::new(ctx(), Some("text/plain".into()), small());
    assert!(log.push(&[b'y'; CAP_BYTES]).is_empty());
    let entries = log.finish();
    assert_eq!(entries.len(), 1);
    assert!(unlabelled(&entries[0]), "{}", entries[0]);

    let mut log = ResponseBodyLog::new(ctx(), Some("text/plain".into()), small());
    assert!(log.push(&[b'y'; CAP_BYTES + 1]).is_empty());
    let entries = log.finish();
    assert!(
        entries[0].ends_with(&format!(
            "\n[body truncated: {CAP_BYTES} of {} bytes kept for the log]",
            CAP_BYTES + 1
        )),
        "{}",
        entries[0]
    );

    // With bodies off there is no body to call truncated.
    let off = LogConfig {
        include_body: false,
        ..small()
    };
    for len in [10, CAP_BYTES + 1] {
        let mut log = ResponseBodyLog::new(ctx(), Some("text/plain".into()), off);
        assert!(log.push(&vec![b'y'; len]).is_empty());
        assert_eq!(
            log.finish(),
            [format!("<<< RESPONSE BODY {FIELDS}\nbody: body=disabled")]
        );
    }
}

#[test]
fn a_delimiter_split_across_chunks_ends_a_dropped_event_and_spares_the_next() {
    for (delimiter, cut) in [
        ("\n\n", 1),
        ("\r\n\r\n", 1),
        ("\r\n\r\n", 2),
        ("\r\n\r\n", 3),
    ] {
        let event = event_of(1100);
        let mut log = sse_log();
        let mut entries = log.push(format!("{event}{}", &delimiter[..cut]).as_bytes());
        entries
            .extend(log.push(format!("{}data: {{\"after\":1}}\n\n", &delimiter[cut..]).as_bytes()));
        assert_eq!(entries.len(), 2, "{delimiter:?} cut at {cut}: {entries:?}");
        assert_eq!(
            entries[0],
            format!(
                "<<< SSE EVENT {FIELDS} body=dropped-capacity ({} bytes)",
                1100 + delimiter.len()
            )
        );
        assert!(entries[1].contains("\"after\": 1"), "{}", entries[1]);
    }
}

// ------------------------------------------------------------------------------------------
// Properties over arbitrary traffic (PL-3, PL-5)
// ------------------------------------------------------------------------------------------

const SECRET_KEYS: [&str; 8] = [
    "password",
    "access_token",
    "clientSecret",
    "X-API-Key",
    "accessSession",
    "pwd",
    "Set-Cookie",
    "proxyAuthorization",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// PL-3, PL-5: however the network cuts an event stream, no secret value reaches an entry,
    /// and every event gives exactly one entry: logged when it fits, labelled
    /// `body=dropped-capacity` when it does not.
    #[test]
    fn no_secret_escapes_and_no_event_is_lost_however_a_stream_is_cut(
        events in prop::collection::vec((0..SECRET_KEYS.len(), "[A-Za-z0-9]{6,16}", 0..1500usize), 1..6),
        crlf in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let delimiter = if crlf { "\r\n\r\n" } else { "\n\n" };
        let mut body = String::new();
        let mut secrets = Vec::new();
        let mut oversized = Vec::new();
        for (n, (key, value, filler)) in events.iter().enumerate() {
            let secret = format!("Zq{value}");
            let event = format!(
                "event: e{n}\ndata: {{\"n\":{n},\"pad\":\"{}\",\"{}\":\"{secret}\"}}",
                "p".repeat(*filler),
                SECRET_KEYS[*key]
            );
            oversized.push(event.len() > CAP_BYTES);
            body.push_str(&event);
            body.push_str(delimiter);
            secrets.push(secret);
        }
        let mut log = sse_log();
        let mut entries = Vec::new();
        for chunk in common::split_at_cuts(body.as_bytes(), &cuts) {
            entries.extend(log.push(chunk));
        }
        entries.extend(log.finish());
        prop_assert_eq!(entries.len(), events.len(), "{:#?}", entries);
        for (n, entry) in entries.iter().enumerate() {
            for secret in &secrets {
                prop_assert!(!entry.contains(secret.as_str()), "{} leaked: {}", secret, entry);
            }
            if oversized[n] {
                prop_assert!(entry.contains("body=dropped-capacity"), "{}", entry);
            } else {
                let named = format!(" event=e{n}\n");
                prop_assert!(entry.contains(&named), "{}", entry);
            }
        }
    }

    /// PL-3: a secret value planted under any secret name, in a header, a JSON body, a form
    /// body or a query string, never reaches a request entry, whatever the display knobs.
    #[test]
    fn no_planted_secret_reaches_a_request_entry(
        key in 0..SECRET_KEYS.len(),
        value in "[A-Za-z0-9]{6,16}",
        pretty in any::<bool>(),
        form in any::<bool>(),
    ) {
        let secret = format!("Zq{value}");
        let name = SECRET_KEYS[key];
        let (content_type, body) = if form {
            (
                "application/x-www-form-urlencoded",
                format!("user=K&{name}={secret}&note=Bearer+{secret}"),
            )
        } else {
            (
                "application/json",
                format!("{{\"a\":[{{\"{name}\":\"{secret}\"}}],\"note\":\"Bearer {secret}\"}}"),
            )
        };
        let mut r = request(
            &[
                ("Content-Type", content_type),
                (name, secret.as_str()),
                ("X-Other", &format!("Basic {secret}")),
            ],
            &body,
        );
        r.url = format!("https://agent.example/rpc?{name}={secret}&x=1");
        let cfg = LogConfig { pretty, ..LogConfig::default() };
        let entry = format_request(&r, Channel::Task, &cfg);
        prop_assert!(!entry.contains(secret.as_str()), "{}", entry);
        prop_assert!(entry.contains("***"), "{}", entry);
    }
}

/// An event's `data:` lines are one value: a JSON value that continues onto the next line is
/// redacted as a whole, so a secret on the continuation line is masked.
#[test]
fn a_secret_on_a_continued_data_line_of_an_event_stream_is_masked() {
    let body = b"event: status\ndata: {\"token\":\ndata: \"S3cretValue\", \"note\": \"kept\"}\n\ndata: {\"password\": \"Hunter22x\"}\n\n";
    let logged = render_body(Some("text/event-stream"), body, &LogConfig::default());
    assert!(!logged.contains("S3cretValue"), "{logged}");
    assert!(!logged.contains("Hunter22x"), "{logged}");
    assert!(logged.contains("kept"), "{logged}");
}

/// Redacting an event stream keeps its shape: each event's other fields in place, its data block
/// where its first `data:` line was, the events apart, and text without secrets unchanged.
#[test]
fn an_event_stream_without_secrets_is_logged_as_sent() {
    let body =
        "event: status\ndata: {\"a\":\ndata: 1}\n\nid: 7\ndata: {\"b\": [2, 3]}\nretry: 10\n\n";
    let logged = render_body(
        Some("text/event-stream"),
        body.as_bytes(),
        &LogConfig::default(),
    );
    assert_eq!(logged, body);
    let crlf = "data: {\"x\": 1}\r\n\r\n";
    let logged = render_body(
        Some("text/event-stream"),
        crlf.as_bytes(),
        &LogConfig::default(),
    );
    assert_eq!(logged, "data: {\"x\": 1}\n\r\n");
}

/// A form-encoded body the agent did not label as a form still hides a credential given as a
/// value: `Bearer+…` and `Bearer%20…` decode to `Bearer …`, in any letter case.
#[test]
fn an_encoded_credential_in_an_unlabelled_form_body_is_masked() {
    for (content_type, body) in [
        (None, "note=Bearer+Tok3nA&x=1"),
        (Some("text/plain"), "note=bearer%20Tok3nA&x=1"),
        (Some("text/plain"), "a=1&note=Basic+Tok3nA"),
    ] {
        let logged = render_body(content_type, body.as_bytes(), &LogConfig::default());
        assert!(
            !logged.contains("Tok3nA"),
            "{content_type:?} {body}: {logged}"
        );
        assert!(logged.contains("note=***"), "{logged}");
    }
    // A value that is only the word, or joins it without a space, is not a credential. (A
    // value decoding to `Basic plan` is masked: it has a credential's shape.)
    let plain = "note=Bearer&kind=basic-plan";
    let logged = render_body(Some("text/plain"), plain.as_bytes(), &LogConfig::default());
    assert_eq!(logged, plain);
}

/// An empty value has nothing to hide: a secret name with no value is logged as sent, so the log
/// shows that no credential went out.
#[test]
fn a_secret_name_with_an_empty_value_is_logged_empty() {
    let body = "token=&note=x&password=";
    let logged = render_body(Some("text/plain"), body.as_bytes(), &LogConfig::default());
    assert_eq!(logged, body);
    let logged = render_body(
        Some("text/plain"),
        b"token=abc&password=",
        &LogConfig::default(),
    );
    assert_eq!(logged, "token=***&password=");
}

/// A tab or a line break between the scheme and the token separates them as a space does: the
/// token is masked in a logged body, plain text and JSON alike.
#[test]
fn a_credential_after_a_tab_or_a_line_break_is_masked_in_a_logged_body() {
    for (content_type, body) in [
        (Some("text/plain"), "auth Bearer\tTok3nT here"),
        (Some("application/json"), r#"{"note": "Basic\nTok3nT"}"#),
        (
            Some("application/x-www-form-urlencoded"),
            "note=Bearer%09Tok3nT",
        ),
    ] {
        let logged = render_body(content_type, body.as_bytes(), &LogConfig::default());
        assert!(!logged.contains("Tok3nT"), "{body}: {logged}");
    }
}
