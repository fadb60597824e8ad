//! Discovery helpers (features.md §1.18 DS).

use a2at_core::a2a::HttpMethod;
use a2at_core::a2a::card::SecurityScheme;
use a2at_core::auth::Secret;
use a2at_core::discovery::*;
use serde_json::{Value, json};

#[test]
fn registry_requests() {
    let r = RegistryRequests::new("https://reg.example/base//");
    assert_eq!(r.base(), "https://reg.example/base");
    let q = r.fetch_all_request();
    assert_eq!(q.method, HttpMethod::Get);
    assert_eq!(
        q.url,
        "https://reg.example/base/rest/v1/registry-center/agent-cards"
    );
    let q = r.fetch_by_name_request("city agent", Some("org&1"));
    assert_eq!(
        q.url,
        "https://reg.example/base/rest/v1/registry-center/agent-cards?name=city%20agent&organization=org%261"
    );
    let q = r.fetch_by_name_request("a", None);
    assert!(q.url.ends_with("agent-cards?name=a"));
    let q = r.register_request(&json!({"name": "a"}));
    assert_eq!(q.method, HttpMethod::Post);
    let body: Value = serde_json::from_slice(&q.body).unwrap();
    assert_eq!(body, json!({"agentCards": [{"name": "a"}]}));
    assert!(
        q.headers
            .contains(&("Content-Type".into(), "application/json".into()))
    );
}

#[test]
fn registry_cards_are_read_and_normalised() {
    let card = json!({"name": "c1", "securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": "X-K"}},
        "securityRequirements": [{"schemes": ["k"]}]});
    for body in [
        json!({"agentCards": [card.clone()], "data": []}),
        json!({"data": [card.clone()]}),
        json!([card.clone()]),
    ] {
        let cards = RegistryRequests::parse_cards(200, body.to_string().as_bytes()).unwrap();
        assert_eq!(cards.len(), 1);
        assert_eq!(cards[0].name, "c1");
        assert!(
            matches!(&cards[0].security_schemes["k"], SecurityScheme::ApiKey { name, .. } if name == "X-K")
        );
        assert!(cards[0].security_requirements[0].schemes.contains_key("k"));
    }
    assert!(
        RegistryRequests::parse_cards(200, b"{}")
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        RegistryRequests::parse_cards(500, b"{}"),
        Err(DiscoveryResponseError::Status { status: 500 })
    ));
    assert!(matches!(
        RegistryRequests::parse_cards(200, b"<html>"),
        Err(DiscoveryResponseError::NotJson(_))
    ));
    assert!(matches!(
        RegistryRequests::parse_cards(200, br#"{"agentCards": [{"name": "ok"}, 3]}"#),
        Err(DiscoveryResponseError::InvalidCard { index: 1, .. })
    ));
    let first = RegistryRequests::parse_card(
        200,
        json!({"agentCards": [{"name": "x"}, {"name": "y"}]})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(first.unwrap().name, "x");
    assert!(
        RegistryRequests::parse_card(200, br#"{"agentCards": []}"#)
            .unwrap()
            .is_none()
    );
}

#[test]
fn registration_outcome() {
    let o = RegistryRequests::parse_register(201, br#"{"ok":true}"#);
    assert!(o.success);
    assert_eq!(o.body, json!({"ok": true}));
    assert!(RegistryRequests::parse_register(200, b"").success);
    let o = RegistryRequests::parse_register(409, br#"{"error":"exists"}"#);
    assert!(!o.success);
    assert_eq!(o.body["error"], "exists");
}

#[test]
fn psop_requests_hide_the_token_in_log_urls() {
    let c = PsopRequests::new("https://psop.example/", Some(Secret::new("S3cr3t/+=1")));
    let q = c.load_request("wf 1");
    assert_eq!(q.method, HttpMethod::Get);
    assert_eq!(
        q.url,
        "https://psop.example/api/v1/orchestrate/psop/wf%201?access_token=S3cr3t%2F%2B%3D1"
    );
    assert_eq!(
        q.log_url,
        "https://psop.example/api/v1/orchestrate/psop/wf%201?access_token=<anonymous>"
    );
    assert!(!format!("{q:?}").contains("S3cr3t"));
    let q = c.search_request("plan a trip", None);
    assert_eq!(q.method, HttpMethod::Post);
    assert_eq!(
        q.log_url,
        "https://psop.example/api/v1/orchestrate/search?access_token=<anonymous>"
    );
    let body: Value = serde_json::from_slice(&q.body).unwrap();
    assert_eq!(body, json!({"intent": "plan a trip", "top_n": 5}));
    let q = c.search_request("x", Some(2));
    let body: Value = serde_json::from_slice(&q.body).unwrap();
    assert_eq!(body["top_n"], 2);
    let anon = PsopRequests::new("https://psop.example", None).load_request("id");
    assert_eq!(anon.url, "https://psop.example/api/v1/orchestrate/psop/id");
    assert_eq!(anon.url, anon.log_url);
    let (wire, log) = with_access_token("https://h/p?x=1", Some(&Secret::new("T")));
    assert_eq!(wire, "https://h/p?x=1&access_token=T");
    assert_eq!(log, "https://h/p?x=1&access_token=<anonymous>");
}

#[test]
fn psop_load_unwraps_data_and_parses_the_workflow() {
    let wf = json!({"id": "w", "steps": [{"name": "s", "step_type": "SELF_LOOP",
        "subtasks": [{"agent": "me", "description": "d"}]}]});
    for body in [
        json!({"data": wf.clone()}),
        wf.clone(),
        json!({"data": wf.to_string()}),
    ] {
        let v = PsopRequests::parse_load(200, body.to_string().as_bytes()).unwrap();
        assert_eq!(v.workflow().steps[0].name, "s");
    }
    assert!(matches!(
        PsopRequests::parse_load(404, b"{}"),
        Err(DiscoveryResponseError::Status { status: 404 })
    ));
    assert!(matches!(
        PsopRequests::parse_load(200, br#"{"data": {"steps": "nope"}}"#),
        Err(DiscoveryResponseError::Workflow(_))
    ));
}

#[test]
fn psop_search_results() {
    let body = json!({"data": [
        {"workflow_id": "w1", "workflow_type": "PSOP", "name": "Trip", "description": "d",
         "tags": ["travel", 3], "created_at": 1700000000, "score": 0.75, "user_intent": "trip",
         "related_preflow": {"a": 1}, "tasks_summary": ["t1"]},
        {"id": 42, "score": "high", "created_at": "2024-01-01"}
    ]});
    let r = PsopRequests::parse_search(200, body.to_string().as_bytes()).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].workflow_id, "w1");
    assert_eq!(r[0].workflow_type.as_deref(), Some("PSOP"));
    assert_eq!(r[0].tags, vec!["travel", "3"]);
    assert_eq!(r[0].created_at.as_deref(), Some("1700000000"));
    assert_eq!(r[0].score, 0.75);
    assert_eq!(r[0].related_preflow, Some(json!({"a": 1})));
    assert_eq!(r[0].tasks_summary, Some(json!(["t1"])));
    assert_eq!(r[1].workflow_id, "42");
    assert_eq!(r[1].score, 1.0);
    assert_eq!(r[1].created_at.as_deref(), Some("2024-01-01"));
    assert_eq!(r[1].name, None);
    assert!(PsopRequests::parse_search(200, b"{}").unwrap().is_empty());
    assert!(PsopRequests::parse_search(401, b"{}").is_err());
    assert!(matches!(
        PsopRequests::parse_search(200, br#"{"data": [{"name": "no id"}]}"#),
        Err(DiscoveryResponseError::Shape(_))
    ));
}

#[test]
fn a_redirect_url_is_logged_with_the_token_anonymous_and_other_secrets_masked() {
    let logged = log_url("https://center.example/psop?access_token=TOKEN-1&api_key=KEY-2&q=x#top");
    assert_eq!(
        logged,
        "https://center.example/psop?access_token=<anonymous>&api_key=***&q=x#top"
    );
    assert_eq!(
        log_url("https://center.example/cards"),
        "https://center.example/cards"
    );
    // The placeholder written by `with_access_token` survives the generic URL redaction.
    let (_, log) = with_access_token("https://c.example/x", Some(&Secret::new("T-3")));
    assert_eq!(a2at_core::protolog::redact_url(&log), log);
    assert!(!log.contains("T-3"));
}

#[test]
fn redirects_keep_or_drop_the_body_and_stay_on_http() {
    let post = DiscoveryRequest {
        method: HttpMethod::Post,
        url: "https://center.example:8443/rest/v1/x?access_token=s3cret".into(),
        log_url: "https://center.example:8443/rest/v1/x?access_token=<anonymous>".into(),
        headers: vec![
            ("Accept".into(), "application/json".into()),
            ("Content-Type".into(), "application/json".into()),
        ],
        body: b"{\"a\":1}".to_vec(),
    };
    // Not a redirect, or a redirect without Location: the answer is final.
    assert_eq!(post.redirected(200, Some("/elsewhere")), Ok(None));
    assert_eq!(post.redirected(304, Some("/elsewhere")), Ok(None));
    assert_eq!(post.redirected(302, None), Ok(None));
    // 307/308 repeat the request; a path stays on the same origin.
    for status in [307, 308] {
        let next = post.redirected(status, Some(" /v2/x ")).unwrap().unwrap();
        assert_eq!(next.url, "https://center.example:8443/v2/x");
        assert_eq!(next.method, HttpMethod::Post);
        assert_eq!(next.body, post.body);
        assert_eq!(next.headers, post.headers);
    }
    // 301/302/303 continue as GET without body or Content-Type.
    for status in [301, 302, 303] {
        let next = post
            .redirected(status, Some("http://other.example/y?access_token=t0ken"))
            .unwrap()
            .unwrap();
        assert_eq!(next.url, "http://other.example/y?access_token=t0ken");
        assert_eq!(
            next.log_url,
            "http://other.example/y?access_token=<anonymous>"
        );
        assert_eq!(next.method, HttpMethod::Get);
        assert!(next.body.is_empty());
        assert_eq!(
            next.headers,
            vec![("Accept".to_owned(), "application/json".to_owned())]
        );
    }
    // Other schemes, scheme-relative and relative locations are refused.
    for bad in [
        "ftp://x/y",
        "//evil.example/x",
        "relative/path",
        "file:///etc/passwd",
    ] {
        let e = post.redirected(302, Some(bad)).unwrap_err();
        assert!(e.contains("unusable Location"), "{bad}: {e}");
    }
}

// Rules the whole-file mutation run of core/src/discovery.rs (issue #24) found unstated.

#[test]
fn a_discovery_request_debugs_as_its_logged_form_never_with_the_token() {
    let c = PsopRequests::new("https://psop.example", Some(Secret::new("S3cr3t-9")));
    let q = c.search_request("plan a trip", Some(3));
    let shown = format!("{q:?}");
    // What `{:?}` shows is what may be logged: the method, the URL with the token as
    // `<anonymous>`, the headers and the body as text.
    assert!(shown.starts_with("DiscoveryRequest"), "{shown}");
    assert!(shown.contains("Post"), "{shown}");
    assert!(
        shown.contains(
            "\"https://psop.example/api/v1/orchestrate/search?access_token=<anonymous>\""
        ),
        "{shown}"
    );
    assert!(shown.contains("Content-Type"), "{shown}");
    assert!(shown.contains("plan a trip"), "{shown}");
    assert!(!shown.contains("S3cr3t-9"), "{shown}");
}

#[test]
fn a_psop_search_answer_may_be_a_bare_list_of_results() {
    let r = PsopRequests::parse_search(200, br#"[{"workflow_id": "w1"}, {"id": 7}]"#).unwrap();
    let ids: Vec<&str> = r.iter().map(|h| h.workflow_id.as_str()).collect();
    assert_eq!(ids, ["w1", "7"]);
    // `data` of null reads as no results; any other non-list `data` or top level is refused.
    assert!(
        PsopRequests::parse_search(200, br#"{"data": null}"#)
            .unwrap()
            .is_empty()
    );
    for bad in [&br#"{"data": {"workflow_id": "w1"}}"#[..], b"3", br#""w1""#] {
        assert!(
            matches!(
                PsopRequests::parse_search(200, bad),
                Err(DiscoveryResponseError::Shape(_))
            ),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
}
