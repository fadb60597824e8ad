//! Unary decoding and error projection (a2a-wire §2.1, §3.2, §4.2; features.md ER-2..ER-5).

mod common;

use a2at_core::a2a::error::{reason_code, redact_str};
use a2at_core::a2a::{
    Binding, CallKind, DecodeLimits, ResponseDecoder, ResponseItem, StreamResponse, redact_json,
};
use common::{decode_with, describe};
use serde_json::json;

fn head(ct: &str) -> Vec<(String, String)> {
    vec![("Content-Type".to_owned(), ct.to_owned())]
}

fn rejected(items: &[ResponseItem]) -> &a2at_core::a2a::ProtocolError {
    match &items[0] {
        ResponseItem::Rejected(e) => e,
        other => panic!("not rejected: {other:?}"),
    }
}

#[test]
fn reason_normalisation() {
    assert_eq!(reason_code("INVALID_PARAMS"), "a2a.invalid_params");
    assert_eq!(reason_code("INTERNAL"), "a2a.internal_error");
    assert_eq!(reason_code("INTERNAL_ERROR"), "a2a.internal_error");
    assert_eq!(reason_code("__Weird -- Reason!!__"), "a2a.weird_reason");
    assert_eq!(
        reason_code("AUTHORIZATION_DENIED"),
        "a2a.authorization_denied"
    );
}

#[test]
fn jsonrpc_error_without_error_info_uses_the_code_table() {
    for (code, want) in [
        (-32001, "a2a.task_not_found"),
        (-32002, "a2a.task_not_cancelable"),
        (-32004, "a2a.unsupported_operation"),
        (-32009, "a2a.version_not_supported"),
        (-32601, "a2a.method_not_found"),
        (-32602, "a2a.invalid_params"),
        (-32603, "a2a.internal_error"),
        (-32700, "a2a.json_parse"),
        (-32050, "a2a.jsonrpc.-32050"),
    ] {
        let body =
            json!({"jsonrpc":"2.0","id":"1","error":{"code":code,"message":"m"}}).to_string();
        let items = decode_with(
            Binding::JsonRpc,
            CallKind::SendMessage,
            "1",
            200,
            &head("application/json"),
            body.as_bytes(),
            1000,
        );
        assert_eq!(rejected(&items).code, want, "{code}");
        assert_eq!(rejected(&items).rpc_code, Some(code));
    }
}

#[test]
fn error_info_is_found_by_type_then_by_reason() {
    let body = json!({"error":{"code":400,"status":"FAILED_PRECONDITION","message":"m","details":[
        {"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[]},
        {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"EXTENSION_SUPPORT_REQUIRED"}]}})
    .to_string();
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "",
        400,
        &head("application/json"),
        body.as_bytes(),
        1000,
    );
    assert_eq!(rejected(&items).code, "a2a.extension_support_required");
    // Java reads details[0] without @type.
    let body = json!({"error":{"code":403,"status":"PERMISSION_DENIED","message":"no","details":[{"reason":"AUTHORIZATION_DENIED"}]}}).to_string();
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "",
        403,
        &head("application/json"),
        body.as_bytes(),
        1000,
    );
    assert_eq!(rejected(&items).code, "a2a.authorization_denied");
    // No details at all: a2a.http.<status>.
    let body =
        json!({"error":{"code":500,"status":"INTERNAL","message":"unknown exception"}}).to_string();
    let items = decode_with(
        Binding::HttpJson,
        CallKind::GetTask,
        "",
        500,
        &head("application/json"),
        body.as_bytes(),
        1000,
    );
    assert_eq!(rejected(&items).code, "a2a.http.500");
}

#[test]
fn a_non_2xx_error_keeps_its_response_headers_redacted_and_retry_after_as_retry_after() {
    let body = json!({"type":"about:blank","title":"Busy","status":503}).to_string();
    let mut h = head("application/problem+json");
    h.push(("Retry-After".into(), "12".into()));
    h.push(("X-Request-Id".into(), "req-7".into()));
    h.push(("Authorization".into(), "Bearer planted-secret".into()));
    h.push(("Set-Cookie".into(), "session=planted-cookie".into()));
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "",
        503,
        &h,
        body.as_bytes(),
        1000,
    );
    let e = rejected(&items);
    let names: Vec<&str> = e.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "Content-Type",
            "Retry-After",
            "X-Request-Id",
            "Authorization",
            "Set-Cookie"
        ],
        "every header kept, in order, named as sent"
    );
    let evidence = e.evidence();
    assert_eq!(evidence["retryAfter"], "12");
    assert_eq!(evidence["httpStatus"], 503);
    assert_eq!(evidence["headers"]["x-request-id"], "req-7");
    let shown = evidence.to_string();
    assert!(!shown.contains("planted-secret"), "{shown}");
    assert!(!shown.contains("planted-cookie"), "{shown}");

    // An error inside a 2xx JSON-RPC body: the HTTP layer said nothing wrong, no headers kept.
    let body =
        json!({"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"gone"}}).to_string();
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::GetTask,
        "1",
        200,
        &h,
        body.as_bytes(),
        1000,
    );
    let e = rejected(&items);
    assert_eq!(e.code, "a2a.task_not_found");
    assert!(e.headers.is_empty());
    assert_eq!(e.evidence()["headers"], json!({}));
}

#[test]
fn non_2xx_shapes_problem_legacy_plain_and_retry_after() {
    let body = json!({"type":"about:blank","title":"Too many","status":429,"detail":"slow down"})
        .to_string();
    let mut h = head("application/problem+json");
    h.push(("Retry-After".into(), "30".into()));
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "",
        429,
        &h,
        body.as_bytes(),
        1000,
    );
    let e = rejected(&items);
    assert_eq!(
        (e.code.as_str(), e.message.as_str()),
        ("remote.problem.429", "slow down")
    );
    assert_eq!(e.retry_after.as_deref(), Some("30"));

    let body =
        json!({"error":"org.a2aproject.sdk.spec.TaskNotFoundError","message":"Task not found"})
            .to_string();
    let items = decode_with(
        Binding::HttpJson,
        CallKind::GetTask,
        "",
        404,
        &head("application/json"),
        body.as_bytes(),
        1000,
    );
    assert_eq!(rejected(&items).code, "a2a.task_not_found");

    let mut h = head("text/html");
    h.push(("retry-after".into(), "Wed, 21 Oct 2026 07:28:00 GMT".into()));
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SendMessage,
        "1",
        503,
        &h,
        b"<html>busy</html>",
        1000,
    );
    let e = rejected(&items);
    assert_eq!(
        (e.code.as_str(), e.http_status),
        ("a2a.http.503", Some(503))
    );
    assert_eq!(
        e.retry_after.as_deref(),
        Some("Wed, 21 Oct 2026 07:28:00 GMT")
    );

    // A JSON-RPC error behind a proxy status keeps its reason and the observed status.
    let body = json!({"jsonrpc":"2.0","id":"1","error":{"code":-32001,"message":"x"}}).to_string();
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::GetTask,
        "1",
        502,
        &head("application/json"),
        body.as_bytes(),
        1000,
    );
    let e = rejected(&items);
    assert_eq!(
        (e.code.as_str(), e.http_status),
        ("a2a.task_not_found", Some(502))
    );
}

#[test]
fn nested_error_in_a_task_is_business_content() {
    let body = json!({"task":{"id":"t","status":{"state":"TASK_STATE_FAILED"},
        "metadata":{"error":{"code":500,"message":"business"}}}})
    .to_string();
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "",
        200,
        &head("application/a2a+json"),
        body.as_bytes(),
        1000,
    );
    assert_eq!(describe(&items), ["task:TASK_STATE_FAILED", "end:1"]);
}

#[test]
fn unary_results_by_call_kind() {
    let msg = json!({"jsonrpc":"2.0","id":"q","result":{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"hi"}]}}}).to_string();
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SendMessage,
        "q",
        200,
        &head("application/json"),
        msg.as_bytes(),
        3,
    );
    assert_eq!(describe(&items), ["message", "end:1"]);
    // v0.3 kind-discriminated result.
    let v03 = json!({"jsonrpc":"2.0","id":"q","result":{"kind":"task","id":"t","status":{"state":"completed"}}}).to_string();
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SendMessage,
        "q",
        200,
        &head("application/json"),
        v03.as_bytes(),
        3,
    );
    assert_eq!(describe(&items), ["task:TASK_STATE_COMPLETED", "end:1"]);
    // GetTask: bare task, also tolerated wrapped.
    for body in [
        json!({"id":"t","status":{"state":"TASK_STATE_WORKING"}}),
        json!({"task":{"id":"t","status":{"state":"TASK_STATE_WORKING"}}}),
    ] {
        let items = decode_with(
            Binding::HttpJson,
            CallKind::GetTask,
            "",
            200,
            &head("application/json"),
            body.to_string().as_bytes(),
            4,
        );
        assert_eq!(describe(&items), ["task:TASK_STATE_WORKING", "end:1"]);
    }
}

#[test]
fn malformed_unary_bodies() {
    for (binding, body) in [
        (Binding::JsonRpc, &b""[..]),
        (Binding::JsonRpc, b"{\"result\":"),
        (Binding::JsonRpc, b"[1,2]"),
        (
            Binding::JsonRpc,
            b"{\"jsonrpc\":\"2.0\",\"id\":\"other\",\"result\":{\"task\":{\"id\":\"t\"}}}",
        ),
        (Binding::JsonRpc, b"{\"jsonrpc\":\"2.0\",\"id\":\"me\"}"),
        (
            Binding::HttpJson,
            b"{\"task\":{\"id\":\"t\"},\"message\":{\"messageId\":\"m\"}}",
        ),
        (
            Binding::HttpJson,
            b"{\"message\":{\"messageId\":\"m\",\"parts\":[{}]}}",
        ),
    ] {
        let items = decode_with(
            binding,
            CallKind::SendMessage,
            "me",
            200,
            &head("application/json"),
            body,
            2,
        );
        assert_eq!(
            describe(&items),
            ["malformed:a2a.invalid_agent_response", "end:0"],
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    let limits = DecodeLimits {
        max_event_bytes: 10,
        max_body_bytes: 10,
    };
    let mut d = ResponseDecoder::new(Binding::HttpJson, CallKind::SendMessage, "", limits);
    let mut out = Vec::new();
    d.on_head(200, &head("application/json"));
    d.on_body(b"{\"task\":", &mut out);
    d.on_body(b"{\"id\":\"t\"}}", &mut out);
    d.on_body(b"more", &mut out);
    d.on_end(&mut out);
    assert_eq!(describe(&out), ["malformed:a2a.body_too_large", "end:0"]);
}

#[test]
fn secrets_are_redacted_in_messages_and_details() {
    let body = json!({"error":{"code":401,"status":"UNAUTHENTICATED","message":"bad header Authorization: Bearer abc.def.ghi","details":[
        {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNAUTHENTICATED",
         "metadata":{"Authorization":"Bearer abc","accessSession":"s3cr3t","note":"sent Basic dXNlcjpwdw== twice","n":1}}]}})
    .to_string();
    let items = decode_with(
        Binding::HttpJson,
        CallKind::SendMessage,
        "",
        401,
        &head("application/json"),
        body.as_bytes(),
        1000,
    );
    let e = rejected(&items);
    assert_eq!(e.message, "bad header Authorization: Bearer [REDACTED]");
    let meta = &e.details[0]["metadata"];
    assert_eq!(meta["Authorization"], "[REDACTED]");
    assert_eq!(meta["accessSession"], "[REDACTED]");
    assert_eq!(meta["note"], "sent Basic [REDACTED] twice");
    assert_eq!(meta["n"], 1);
    let mut v = json!({"password":"p","nested":[{"refresh_token":"t","x":"basic"}]});
    redact_json(&mut v);
    assert_eq!(
        v,
        json!({"password":"[REDACTED]","nested":[{"refresh_token":"[REDACTED]","x":"basic"}]})
    );
    assert_eq!(redact_str("Bearer"), "Bearer");
    assert_eq!(redact_str("unbearer x"), "unbearer x");
}

#[test]
fn numeric_jsonrpc_ids_match_their_text() {
    let body = br#"{"result":{"task":{"id":"t","status":{"state":"TASK_STATE_COMPLETED"}}},"id":12,"jsonrpc":"2.0"}"#;
    let items = decode_with(
        Binding::JsonRpc,
        CallKind::SendMessage,
        "12",
        200,
        &head("application/json"),
        body,
        7,
    );
    assert!(matches!(
        &items[0],
        ResponseItem::Event(StreamResponse::Task(_))
    ));
}

#[test]
fn list_tasks_yields_one_task_event_per_listed_task_on_both_bindings() {
    // As the Python SDK prints it: every field, defaults included (a2a-wire P20).
    let listed = json!({"tasks": [
        {"id": "t1", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}, "artifacts": [], "history": []},
        {"id": "t2", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}
    ], "nextPageToken": "", "pageSize": 50, "totalSize": 2});
    let rpc = json!({"jsonrpc": "2.0", "id": "r1", "result": listed});
    for (binding, body) in [(Binding::JsonRpc, &rpc), (Binding::HttpJson, &listed)] {
        let bytes = body.to_string();
        let items = decode_with(
            binding,
            CallKind::ListTasks,
            "r1",
            200,
            &head("application/json"),
            bytes.as_bytes(),
            7,
        );
        assert_eq!(
            describe(&items),
            [
                "task:TASK_STATE_WORKING",
                "task:TASK_STATE_COMPLETED",
                "end:2"
            ],
            "{binding:?}"
        );
        let ResponseItem::Event(StreamResponse::Task(second)) = &items[1] else {
            panic!("task expected");
        };
        assert_eq!(second.id, "t2");
    }
    // An empty listing, and one without any `tasks` field, list nothing.
    for empty in [json!({"tasks": [], "nextPageToken": ""}), json!({})] {
        let items = decode_with(
            Binding::HttpJson,
            CallKind::ListTasks,
            "r1",
            200,
            &head("application/json"),
            empty.to_string().as_bytes(),
            64,
        );
        assert_eq!(describe(&items), ["end:0"]);
    }
    // A listing that is not a list, or holds an invalid task, is malformed as a whole.
    for bad in [
        json!({"tasks": {"id": "t1"}}),
        json!({"tasks": [{"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}, {"status": 3}]}),
    ] {
        let items = decode_with(
            Binding::HttpJson,
            CallKind::ListTasks,
            "r1",
            200,
            &head("application/json"),
            bad.to_string().as_bytes(),
            64,
        );
        assert_eq!(
            describe(&items),
            ["malformed:a2a.invalid_agent_response", "end:0"],
            "{bad}"
        );
    }
}
