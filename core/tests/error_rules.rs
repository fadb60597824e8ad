//! Rules of A2A error projection (`core/src/a2a/error.rs`) that the mutation run of that file
//! showed were not yet pinned down, each stated against what a caller sees: the typed
//! [`ProtocolError`] a response decodes to (its code, reason, JSON-RPC code, HTTP status,
//! message) and the text the redactor leaves. Tests without a `mutant:` line state a general
//! rule the others are instances of.

mod common;

use a2at_core::a2a::error::{
    ProtocolError, error_info_reason, http_status_for_rpc_code, reason_code, reason_for_rpc_code,
    redact_str,
};
use a2at_core::a2a::{Binding, CallKind, ResponseItem, redact_json};
use common::decode_with;
use proptest::prelude::*;
use serde_json::{Value, json};

/// What one unary response decodes to: the rejection, or `None` when it was no error answer.
fn answer(
    binding: Binding,
    status: u16,
    content_type: &str,
    body: &Value,
) -> Option<ProtocolError> {
    let head = [("Content-Type".to_owned(), content_type.to_owned())];
    let body = body.to_string();
    let items = decode_with(
        binding,
        CallKind::GetTask,
        "1",
        status,
        &head,
        body.as_bytes(),
        1000,
    );
    match items.into_iter().next() {
        Some(ResponseItem::Rejected(e)) => Some(e),
        _ => None,
    }
}

fn rejected(binding: Binding, status: u16, body: &Value) -> ProtocolError {
    answer(binding, status, "application/json", body)
        .unwrap_or_else(|| panic!("{body} at {status} is no rejection"))
}

/// The A2A error table (a2a-wire §4.1): JSON-RPC code, reason, spec HTTP status.
const A2A_TABLE: [(i64, &str, u16); 14] = [
    (-32001, "TASK_NOT_FOUND", 404),
    (-32002, "TASK_NOT_CANCELABLE", 400),
    (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", 400),
    (-32004, "UNSUPPORTED_OPERATION", 400),
    (-32005, "CONTENT_TYPE_NOT_SUPPORTED", 400),
    (-32006, "INVALID_AGENT_RESPONSE", 500),
    (-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400),
    (-32008, "EXTENSION_SUPPORT_REQUIRED", 400),
    (-32009, "VERSION_NOT_SUPPORTED", 400),
    (-32700, "JSON_PARSE", 400),
    (-32600, "INVALID_REQUEST", 400),
    (-32601, "METHOD_NOT_FOUND", 404),
    (-32602, "INVALID_PARAMS", 400),
    (-32603, "INTERNAL_ERROR", 500),
];

// ---------------------------------------------------------------- the JSON-RPC code table

// Rule: every code of the A2A table has its reason and its spec status, and a JSON-RPC error
// in a 2xx body carrying only that code is reported with both (the status is what tells a
// permanent 400 from a retryable 500).
// mutants: delete match arm -32003, -32005, -32006, -32007, -32008, -32600 in
// reason_for_rpc_code; every arm of http_status_for_rpc_code and its None/Some(0)/Some(1).
#[test]
fn every_code_of_the_a2a_table_has_its_reason_and_spec_status() {
    for (code, reason, status) in A2A_TABLE {
        assert_eq!(reason_for_rpc_code(code), Some(reason), "{code}");
        assert_eq!(http_status_for_rpc_code(code), Some(status), "{code}");
        let e = rejected(
            Binding::JsonRpc,
            200,
            &json!({"jsonrpc":"2.0","id":"1","error":{"code":code,"message":"m"}}),
        );
        assert_eq!(e.code, reason_code(reason), "{code}");
        assert_eq!(e.reason.as_deref(), Some(reason), "{code}");
        assert_eq!((e.rpc_code, e.http_status), (Some(code), Some(status)));
    }
}

proptest! {
    // Rule: a code outside the table has neither reason nor status; its error is named by the
    // code itself.
    #[test]
    fn a_code_outside_the_table_is_named_by_itself(code in any::<i32>()) {
        let code = i64::from(code);
        prop_assume!(A2A_TABLE.iter().all(|(c, _, _)| *c != code));
        prop_assert_eq!(reason_for_rpc_code(code), None);
        prop_assert_eq!(http_status_for_rpc_code(code), None);
        let e = rejected(
            Binding::JsonRpc,
            200,
            &json!({"jsonrpc":"2.0","id":"1","error":{"code":code,"message":"m"}}),
        );
        prop_assert_eq!(e.code, format!("a2a.jsonrpc.{code}"));
        prop_assert_eq!((e.rpc_code, e.http_status, e.reason), (Some(code), None, None));
    }

    // Rule: a code is `a2a.` and the reason's alphanumeric words, lowercased and joined by one
    // `_`, whatever separators stood between them.
    #[test]
    fn a_code_joins_the_reason_words_by_one_underscore(
        words in proptest::collection::vec("[A-Za-z0-9]{1,6}", 1..5),
        seps in proptest::collection::vec("[ _.:/-]{1,3}", 5),
    ) {
        let mut reason = seps[4].clone();
        for (w, s) in words.iter().zip(&seps) {
            reason.push_str(w);
            reason.push_str(s);
        }
        let mut want = format!("a2a.{}", words.join("_").to_ascii_lowercase());
        if want == "a2a.internal" {
            want.push_str("_error");
        }
        prop_assert_eq!(reason_code(&reason), want);
    }
}

// ---------------------------------------------------------------- JSON-RPC error codes

// Rule: a JSON-RPC code written as a float with no fraction (`-32001.0`, as some JavaScript
// servers print it) is that integer code; a fractional one, or one too large to be an exact
// integer (from 1e15 up), is no code at all, so the error is only an invalid agent response.
// mutants: replace && with || / == with != / < with ==, >, <= in from_jsonrpc_error
#[test]
fn a_float_code_counts_only_when_it_is_a_small_integer() {
    let with_code = |code: Value| {
        rejected(
            Binding::JsonRpc,
            200,
            &json!({"jsonrpc":"2.0","id":"1","error":{"code":code,"message":"m"}}),
        )
    };
    let e = with_code(json!(-32001.0));
    assert_eq!(
        (e.code.as_str(), e.rpc_code),
        ("a2a.task_not_found", Some(-32001))
    );
    let e = with_code(json!(999_999_999_999_999.0));
    assert_eq!(
        (e.code.as_str(), e.rpc_code),
        ("a2a.jsonrpc.999999999999999", Some(999_999_999_999_999))
    );
    for not_a_code in [json!(-32001.5), json!(1e15), json!(-1e15), json!(1e300)] {
        let e = with_code(not_a_code.clone());
        assert_eq!(
            (e.code.as_str(), e.rpc_code),
            ("a2a.invalid_agent_response", None),
            "{not_a_code}"
        );
    }
}

// Rule: a blank ErrorInfo reason is no reason: the JSON-RPC code's reason stands.
#[test]
fn a_blank_error_info_reason_leaves_the_code_reason() {
    let blank = json!([{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":" \t"}]);
    assert_eq!(error_info_reason(&blank), None);
    let e = rejected(
        Binding::JsonRpc,
        200,
        &json!({"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"m","data":blank}}),
    );
    assert_eq!(e.code, "a2a.task_not_found");
    assert_eq!(e.reason.as_deref(), Some("TASK_NOT_FOUND"));
    let named = json!([{"reason":"FIRST"},
        {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"SECOND"}]);
    assert_eq!(error_info_reason(&named).as_deref(), Some("SECOND"));
}

// ---------------------------------------------------------------- JSON-RPC or REST envelope

// Rule: a negative code alone marks a JSON-RPC error, even without `jsonrpc` or `data` (a
// REST status code is never negative).
// mutants: replace < with ==, > in find_error; replace || with && in find_error (code || data)
#[test]
fn a_negative_code_alone_marks_a_jsonrpc_error() {
    let e = rejected(
        Binding::HttpJson,
        200,
        &json!({"error":{"code":-32001,"message":"gone"}}),
    );
    assert_eq!(
        (e.code.as_str(), e.rpc_code),
        ("a2a.task_not_found", Some(-32001))
    );
    assert_eq!(e.http_status, Some(404));
}

// Rule: the `jsonrpc` member alone, or `data` alone, marks a JSON-RPC error whatever its code.
// mutants: replace || with && in find_error (jsonrpc || negative code, negative code || data)
#[test]
fn jsonrpc_or_data_alone_marks_a_jsonrpc_error() {
    let e = rejected(
        Binding::JsonRpc,
        200,
        &json!({"jsonrpc":"2.0","id":"1","error":{"code":7,"message":"m"}}),
    );
    assert_eq!((e.code.as_str(), e.rpc_code), ("a2a.jsonrpc.7", Some(7)));
    let e = rejected(
        Binding::HttpJson,
        200,
        &json!({"error":{"code":7,"message":"m","data":{"why":"x"}}}),
    );
    assert_eq!((e.code.as_str(), e.rpc_code), ("a2a.jsonrpc.7", Some(7)));
    assert_eq!(e.details, json!({"why":"x"}));
}

// Rule: a code of zero is not negative: without other JSON-RPC markers the envelope is REST,
// and zero is no HTTP status, so the error is only an invalid agent response.
// mutant: replace < with <= in find_error
#[test]
fn a_zero_code_alone_is_no_jsonrpc_error() {
    let e = rejected(
        Binding::HttpJson,
        200,
        &json!({"error":{"code":0,"message":"m"}}),
    );
    assert_eq!(
        (e.code.as_str(), e.rpc_code, e.http_status),
        ("a2a.invalid_agent_response", None, None)
    );
}

// Rule: `status` or `details` make a REST envelope (google.rpc.Status), even beside JSON-RPC
// markers: its code is an HTTP status, not a JSON-RPC code.
// mutant: replace || with && in find_error (details || status)
#[test]
fn status_or_details_make_a_rest_envelope_even_beside_jsonrpc_markers() {
    for error in [
        json!({"code":404,"status":"NOT_FOUND","message":"gone"}),
        json!({"code":404,"message":"gone","details":[]}),
    ] {
        let e = rejected(
            Binding::JsonRpc,
            200,
            &json!({"jsonrpc":"2.0","id":"1","error":error}),
        );
        assert_eq!(
            (e.code.as_str(), e.rpc_code, e.http_status),
            ("a2a.http.404", None, Some(404)),
            "{error}"
        );
    }
}

// Rule: an envelope with neither JSON-RPC nor REST markers is REST: a positive code is its
// HTTP status, not a JSON-RPC code.
// mutant: replace && with || in find_error (is_rpc && !is_rest)
#[test]
fn an_unmarked_envelope_is_rest() {
    let e = rejected(
        Binding::HttpJson,
        200,
        &json!({"error":{"code":404,"message":"gone"}}),
    );
    assert_eq!(
        (e.code.as_str(), e.rpc_code, e.http_status),
        ("a2a.http.404", None, Some(404))
    );
    assert_eq!(e.message, "gone");
}

// ---------------------------------------------------------------- legacy Java class errors

// Rule: a legacy Java error class names its reason: the simple class name without `Error`,
// its words upper-cased and joined by one `_` (no leading `_`).
// mutants: replace > with >= in legacy_class_reason (before the acronym fix); after it, the
// comparisons and index arithmetic of the word-start test
#[test]
fn a_legacy_class_names_its_reason() {
    for (class, reason) in [
        (
            "org.a2aproject.sdk.spec.TaskNotFoundError",
            "TASK_NOT_FOUND",
        ),
        ("InvalidParamsError", "INVALID_PARAMS"),
        ("io.a2a.TaskNotCancelable", "TASK_NOT_CANCELABLE"),
        // An acronym is one word: the reason -32700 has on JSON-RPC, not `J_S_O_N_PARSE`.
        ("io.a2a.spec.JSONParseError", "JSON_PARSE"),
        ("io.a2a.spec.JSONRPCError", "JSONRPC"),
        ("io.a2a.spec.A2AError", "A2A"),
        ("io.a2a.spec.A2AClientJSONError", "A2A_CLIENT_JSON"),
    ] {
        let e = rejected(
            Binding::HttpJson,
            404,
            &json!({"error":class,"message":"m"}),
        );
        assert_eq!(e.reason.as_deref(), Some(reason), "{class}");
        assert_eq!(e.code, reason_code(reason));
        assert_eq!((e.http_status, e.message.as_str()), (Some(404), "m"));
    }
}

// Rule: a class whose simple name is empty once `Error` is cut, or is not a plain identifier,
// names no reason: the error is named by its HTTP status.
// mutant: replace || with && in legacy_class_reason
#[test]
fn a_class_that_is_no_plain_name_names_no_reason() {
    for class in [
        "org.a2aproject.Error",
        "org.a2aproject.",
        "Task$NotFound",
        "bad name",
    ] {
        let e = rejected(Binding::HttpJson, 409, &json!({"error":class}));
        assert_eq!(
            (e.code.as_str(), e.reason.as_deref()),
            ("a2a.http.409", None),
            "{class}"
        );
    }
}

// ---------------------------------------------------------------- problem documents

// Rule: at a non-2xx status a body is an RFC 9457 problem by its media type alone, or by its
// shape alone (`title` with `type` or `status`); `title` alone is no such shape.
// mutants: replace || with && / && with || in find_error (problem media type / shape)
#[test]
fn a_problem_is_known_by_its_media_type_or_its_shape() {
    let by_type = answer(
        Binding::HttpJson,
        400,
        "application/problem+json",
        &json!({"detail":"bad input"}),
    )
    .unwrap();
    assert_eq!(
        (by_type.code.as_str(), by_type.message.as_str()),
        ("remote.problem.400", "bad input")
    );
    // The media type is compared without its parameters and in any case.
    for (content_type, code) in [
        (
            "Application/Problem+JSON; charset=utf-8",
            "remote.problem.400",
        ),
        ("application/problem+jsonx", "a2a.http.400"),
    ] {
        let e = answer(
            Binding::HttpJson,
            400,
            content_type,
            &json!({"detail":"bad input"}),
        )
        .unwrap();
        assert_eq!(e.code, code, "{content_type}");
    }
    for shape in [
        json!({"title":"Busy","status":503}),
        json!({"title":"Busy","type":"about:blank"}),
    ] {
        let e = rejected(Binding::HttpJson, 503, &shape);
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("remote.problem.503", "Busy"),
            "{shape}"
        );
        assert_eq!(e.details, shape);
    }
    for not_a_problem in [json!({"title":"Busy"}), json!({"type":"x","status":503})] {
        let e = rejected(Binding::HttpJson, 503, &not_a_problem);
        assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            ("a2a.http.503", not_a_problem.to_string().as_str())
        );
        assert_eq!(e.details, Value::Null);
    }
}

// Rule: behind a 2xx status an `error` member that is neither an object nor a class name is
// no error, even in a problem-shaped body (a problem needs a non-2xx status or its media type).
// mutant: replace && with || in find_error (problem shape && non-2xx)
#[test]
fn a_2xx_problem_shape_is_no_error() {
    let body = json!({"error":null,"title":"t","type":"about:blank"});
    assert_eq!(
        answer(Binding::HttpJson, 200, "application/json", &body),
        None
    );
}

// ---------------------------------------------------------------- redaction

// Rule: the credential after `Bearer `/`Basic ` is hidden however many spaces precede it (they
// fold into the one after the scheme), and it ends at whitespace, a quote or a comma: what
// follows is kept.
// mutants: replace < with ==, > / += with -=, *= / || with && (twice) in redact_str (the
// space skip and the end of the credential)
#[test]
fn a_credential_ends_at_whitespace_a_quote_or_a_comma() {
    for (text, shown) in [
        ("use Bearer abc def", "use Bearer [REDACTED] def"),
        ("use Bearer   abc def", "use Bearer [REDACTED] def"),
        ("use Basic abc\tdef", "use Basic [REDACTED]\tdef"),
        ("use Bearer abc\"def", "use Bearer [REDACTED]\"def"),
        ("use Bearer abc'def", "use Bearer [REDACTED]'def"),
        ("use Basic abc,def", "use Basic [REDACTED],def"),
        ("use BASIC abc", "use BASIC [REDACTED]"),
        ("(Bearer abc)", "(Bearer [REDACTED]"),
        ("é Bearer abc é", "é Bearer [REDACTED] é"),
    ] {
        assert_eq!(redact_str(text), shown, "{text}");
    }
}

// Rule: any white space separates a scheme from its credential, not only a space: a tab or a
// line break after `Bearer`, raw or escaped in JSON text, must not leave the token in the clear.
#[test]
fn a_credential_after_a_tab_or_a_line_break_is_hidden_too() {
    for (text, shown) in [
        ("use Bearer\tS3CRET now", "use Bearer\t[REDACTED] now"),
        ("use Basic\nS3CRET", "use Basic\n[REDACTED]"),
        ("use bearer \t S3CRET", "use bearer [REDACTED]"),
        ("use Bearer\r\nS3CRET", "use Bearer\r[REDACTED]"),
        // The same escaped in JSON text, which the protocol log masks as sent.
        (
            r#"{"a": "Bearer\tS3CRET"}"#,
            r#"{"a": "Bearer\t[REDACTED]"}"#,
        ),
        (
            r#"{"a": "Basic\r\nS3CRET"}"#,
            r#"{"a": "Basic\r[REDACTED]"}"#,
        ),
    ] {
        assert_eq!(redact_str(text), shown, "{text:?}");
    }
    // A word that only starts like a scheme is not one.
    assert_eq!(redact_str("Bearerx\tkept"), "Bearerx\tkept");
}

// Rule: a scheme word with nothing after it hides nothing and adds nothing: the text is kept.
// mutants: replace > with >= in redact_str, replace < with <= in redact_str (space skip)
#[test]
fn a_scheme_without_a_credential_is_kept() {
    for text in [
        "Bearer ",
        "auth: Bearer ",
        "Basic ,next",
        "Bearer \"x\"",
        "",
    ] {
        assert_eq!(redact_str(text), text, "{text:?}");
    }
}

// Rule: credentials are hidden in every string of a JSON tree, array items included, and a
// value under a secret-looking key is hidden whole.
#[test]
fn redaction_reaches_every_string_of_a_tree() {
    let mut v = json!(["Bearer abc", {"list":["x Basic def", 3, null]}, {"Cookie":["a"]}]);
    redact_json(&mut v);
    assert_eq!(
        v,
        json!(["Bearer [REDACTED]", {"list":["x Basic [REDACTED]", 3, null]},
            {"Cookie":"[REDACTED]"}])
    );
}

fn plain_word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .:;é-]{0,12}".prop_filter("no scheme word", |w| {
        let l = w.to_ascii_lowercase();
        !l.contains("bearer") && !l.contains("basic")
    })
}

proptest! {
    // Rule: text without a scheme word is kept byte for byte.
    #[test]
    fn text_without_a_scheme_is_kept(text in plain_word()) {
        prop_assert_eq!(redact_str(&text), text);
    }

    // Rule: whatever surrounds it, a credential never survives, and the surrounding text does.
    #[test]
    fn a_credential_never_survives(
        before in plain_word(),
        after in plain_word(),
        scheme in prop::sample::select(vec!["Bearer", "basic", "BEARER"]),
        credential in "[A-Za-z0-9._~+/=-]{1,24}",
    ) {
        let text = format!("{before} {scheme} {credential} {after}");
        prop_assert_eq!(
            redact_str(&text),
            format!("{before} {scheme} [REDACTED] {after}")
        );
    }
}
