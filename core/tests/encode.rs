//! Request encoding for both bindings: exact URLs, headers and JSON bodies.

use a2at_core::a2a::{
    A2aCall, Binding, EncodedRequest, Endpoint, HttpMethod, Message, Part, Role,
    SendMessageConfiguration, SendMessageRequest,
};
use a2at_core::io::HeaderText;
use serde_json::{Value, json};

/// The JSON bindings' encoding (no deadline; they never fail).
fn encode_call(ep: &Endpoint, call: &A2aCall<'_>, rpc_id: &str, ext: &[String]) -> EncodedRequest {
    a2at_core::a2a::encode_call(ep, call, rpc_id, ext, None).unwrap()
}

fn endpoint(binding: Binding, url: &str, tenant: Option<&str>) -> Endpoint {
    Endpoint {
        binding,
        url: url.to_owned(),
        tenant: tenant.map(str::to_owned),
        protocol_version: "1.0".to_owned(),
    }
}

fn request() -> SendMessageRequest {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "templateUri".to_owned(),
        json!("Task-T/network-layer/ran-energy-saving/v1"),
    );
    SendMessageRequest {
        tenant: None,
        message: Message {
            message_id: "m-1".to_owned(),
            context_id: Some("c-1".to_owned()),
            role: Role::User,
            parts: vec![Part::text("hello")],
            metadata: Some(meta),
            extensions: vec!["urn:x".to_owned()],
            ..Message::default()
        },
        configuration: Some(SendMessageConfiguration {
            history_length: Some(0),
            ..SendMessageConfiguration::default()
        }),
        metadata: None,
    }
}

fn message_json() -> Value {
    json!({"messageId":"m-1","contextId":"c-1","role":"ROLE_USER","parts":[{"text":"hello"}],
           "metadata":{"templateUri":"Task-T/network-layer/ran-energy-saving/v1"},"extensions":["urn:x"]})
}

fn body(r: &a2at_core::a2a::EncodedRequest) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

fn header<'a>(r: &'a a2at_core::a2a::EncodedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_ref())
}

#[test]
fn jsonrpc_send_message_exact_envelope_and_headers() {
    let req = request();
    let ep = endpoint(Binding::JsonRpc, "https://a.example/a2a/jsonrpc", None);
    let r = encode_call(&ep, &A2aCall::SendMessage(&req), "rpc-1", &[]);
    assert_eq!(r.method, HttpMethod::Post);
    assert_eq!(r.url, "https://a.example/a2a/jsonrpc");
    assert_eq!(
        r.headers,
        vec![
            ("A2A-Version".into(), "1.0".into()),
            ("Content-Type".into(), "application/json".into()),
            ("Accept".into(), "application/json".into()),
        ] as Vec<(HeaderText, HeaderText)>
    );
    let expected = json!({"jsonrpc":"2.0","id":"rpc-1","method":"SendMessage",
        "params":{"message":message_json(),"configuration":{"historyLength":0}}});
    assert_eq!(body(&r), expected);
    // Compact bytes, and key order as documented.
    assert_eq!(
        String::from_utf8(r.body.clone()).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
}

#[test]
fn a_jsonrpc_id_is_written_as_a_json_string_whatever_it_holds() {
    let ep = endpoint(Binding::JsonRpc, "https://a.example/a2a/jsonrpc", None);
    for id in ["quote\" backslash\\ tab\t", "\u{7f}é", ""] {
        let r = encode_call(
            &ep,
            &A2aCall::GetTask {
                task_id: "t",
                history_length: None,
            },
            id,
            &[],
        );
        let expected = json!({"jsonrpc":"2.0","id":id,"method":"GetTask","params":{"id":"t"}});
        assert_eq!(
            String::from_utf8(r.body.clone()).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }
}

#[test]
fn jsonrpc_all_calls_with_tenant_and_extensions() {
    let req = request();
    let ep = endpoint(Binding::JsonRpc, "https://a.example/rpc/", Some("acme"));
    let ext = vec![
        "urn:a".to_owned(),
        " urn:b ".to_owned(),
        "urn:a".to_owned(),
        "".to_owned(),
    ];
    let cases: Vec<(A2aCall<'_>, &str, Value, &str)> = vec![
        (
            A2aCall::SendMessage(&req),
            "SendMessage",
            json!({"tenant":"acme","message":message_json(),"configuration":{"historyLength":0}}),
            "application/json",
        ),
        (
            A2aCall::SendStreamingMessage(&req),
            "SendStreamingMessage",
            json!({"tenant":"acme","message":message_json(),"configuration":{"historyLength":0}}),
            "text/event-stream",
        ),
        (
            A2aCall::GetTask {
                task_id: "t/1",
                history_length: Some(0),
            },
            "GetTask",
            json!({"tenant":"acme","id":"t/1","historyLength":0}),
            "application/json",
        ),
        (
            A2aCall::CancelTask { task_id: "t/1" },
            "CancelTask",
            json!({"tenant":"acme","id":"t/1"}),
            "application/json",
        ),
        (
            A2aCall::SubscribeToTask { task_id: "t/1" },
            "SubscribeToTask",
            json!({"tenant":"acme","id":"t/1"}),
            "text/event-stream",
        ),
    ];
    for (call, method, params, accept) in cases {
        let r = encode_call(&ep, &call, "7", &ext);
        assert_eq!(r.url, "https://a.example/rpc/", "JSON-RPC url is verbatim");
        assert_eq!(r.method, HttpMethod::Post);
        assert_eq!(
            body(&r),
            json!({"jsonrpc":"2.0","id":"7","method":method,"params":params})
        );
        assert_eq!(header(&r, "Accept"), Some(accept), "{method}");
        assert_eq!(header(&r, "A2A-Extensions"), Some("urn:a,urn:b"));
        assert_eq!(header(&r, "A2A-Version"), Some("1.0"));
        assert_eq!(header(&r, "Content-Type"), Some("application/json"));
        assert_eq!(call.kind().is_streaming(), accept == "text/event-stream");
    }
}

#[test]
fn rest_all_calls_without_tenant() {
    let req = request();
    let ep = endpoint(Binding::HttpJson, "https://a.example/a2a/rest/", None);
    let r = encode_call(&ep, &A2aCall::SendMessage(&req), "ignored", &[]);
    assert_eq!(
        (r.method, r.url.as_str()),
        (HttpMethod::Post, "https://a.example/a2a/rest/message:send")
    );
    assert_eq!(
        body(&r),
        json!({"message":message_json(),"configuration":{"historyLength":0}})
    );
    assert_eq!(header(&r, "A2A-Extensions"), None);

    let r = encode_call(&ep, &A2aCall::SendStreamingMessage(&req), "x", &[]);
    assert_eq!(r.url, "https://a.example/a2a/rest/message:stream");
    assert_eq!(header(&r, "Accept"), Some("text/event-stream"));

    let r = encode_call(
        &ep,
        &A2aCall::GetTask {
            task_id: "abc",
            history_length: Some(10),
        },
        "x",
        &[],
    );
    assert_eq!(
        (r.method, r.url.as_str()),
        (
            HttpMethod::Get,
            "https://a.example/a2a/rest/tasks/abc?historyLength=10"
        )
    );
    assert!(r.body.is_empty());
    assert_eq!(header(&r, "Content-Type"), None, "no body, no content type");
    assert_eq!(header(&r, "A2A-Version"), Some("1.0"));

    let r = encode_call(
        &ep,
        &A2aCall::GetTask {
            task_id: "abc",
            history_length: None,
        },
        "x",
        &[],
    );
    assert_eq!(r.url, "https://a.example/a2a/rest/tasks/abc");

    let r = encode_call(&ep, &A2aCall::CancelTask { task_id: "abc" }, "x", &[]);
    assert_eq!(
        (r.method, r.url.as_str()),
        (
            HttpMethod::Post,
            "https://a.example/a2a/rest/tasks/abc:cancel"
        )
    );
    assert_eq!(r.body, b"{}");
    assert_eq!(header(&r, "Content-Type"), Some("application/json"));

    let r = encode_call(
        &ep,
        &A2aCall::SubscribeToTask { task_id: "abc" },
        "x",
        &["urn:n".to_owned()],
    );
    assert_eq!(
        (r.method, r.url.as_str()),
        (
            HttpMethod::Post,
            "https://a.example/a2a/rest/tasks/abc:subscribe"
        )
    );
    assert!(r.body.is_empty());
    assert_eq!(header(&r, "Content-Type"), None);
    assert_eq!(header(&r, "Accept"), Some("text/event-stream"));
    assert_eq!(header(&r, "A2A-Extensions"), Some("urn:n"));
}

#[test]
fn rest_tenant_prefix_and_percent_encoding() {
    let req = request();
    let ep = endpoint(
        Binding::HttpJson,
        "https://a.example/rest",
        Some("acme corp/1"),
    );
    let r = encode_call(&ep, &A2aCall::SendMessage(&req), "x", &[]);
    assert_eq!(r.url, "https://a.example/rest/acme%20corp%2F1/message:send");
    assert_eq!(body(&r)["tenant"], "acme corp/1");
    let r = encode_call(
        &ep,
        &A2aCall::GetTask {
            task_id: "a b:c/ü",
            history_length: Some(0),
        },
        "x",
        &[],
    );
    assert_eq!(
        r.url,
        "https://a.example/rest/acme%20corp%2F1/tasks/a%20b%3Ac%2F%C3%BC?historyLength=0"
    );
    let r = encode_call(&ep, &A2aCall::CancelTask { task_id: "t" }, "x", &[]);
    assert_eq!(
        r.url,
        "https://a.example/rest/acme%20corp%2F1/tasks/t:cancel"
    );
    assert_eq!(body(&r), json!({"tenant":"acme corp/1"}));
}

#[test]
fn request_tenant_overrides_endpoint_tenant() {
    let mut req = request();
    req.tenant = Some("own".to_owned());
    let ep = endpoint(Binding::HttpJson, "https://a.example", Some("iface"));
    let r = encode_call(&ep, &A2aCall::SendMessage(&req), "x", &[]);
    assert_eq!(r.url, "https://a.example/own/message:send");
    assert_eq!(body(&r)["tenant"], "own");
}

#[test]
fn client_messages_carry_role_user_on_the_wire() {
    let req = request();
    let ep = endpoint(Binding::JsonRpc, "http://x", None);
    let r = encode_call(&ep, &A2aCall::SendMessage(&req), "1", &[]);
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.contains(r#""role":"ROLE_USER""#), "{text}");
    assert!(!text.contains("ROLE_AGENT"));
}

#[test]
fn list_tasks_filters_by_context_on_both_bindings() {
    use a2at_core::a2a::CallKind;
    let call = A2aCall::ListTasks {
        context_id: "ctx 1",
        page_size: Some(10),
    };
    assert_eq!(call.kind(), CallKind::ListTasks);
    assert!(!call.kind().is_streaming());
    let rpc = encode_call(
        &endpoint(Binding::JsonRpc, "http://a/rpc", Some("t")),
        &call,
        "id-1",
        &[],
    );
    assert_eq!(rpc.method, HttpMethod::Post);
    assert_eq!(
        body(&rpc),
        json!({"jsonrpc": "2.0", "id": "id-1", "method": "ListTasks",
            "params": {"tenant": "t", "contextId": "ctx 1", "pageSize": 10, "historyLength": 0}})
    );
    let rest = encode_call(
        &endpoint(Binding::HttpJson, "http://a/rest/", None),
        &call,
        "id-1",
        &[],
    );
    assert_eq!(rest.method, HttpMethod::Get);
    assert_eq!(
        rest.url,
        "http://a/rest/tasks?contextId=ctx%201&historyLength=0&pageSize=10"
    );
    assert!(rest.body.is_empty());
    assert_eq!(header(&rest, "Accept"), Some("application/json"));
    let unpaged = encode_call(
        &endpoint(Binding::HttpJson, "http://a/rest", None),
        &A2aCall::ListTasks {
            context_id: "c",
            page_size: None,
        },
        "id-1",
        &[],
    );
    assert_eq!(
        unpaged.url,
        "http://a/rest/tasks?contextId=c&historyLength=0"
    );
}
