//! AgentCard parsing, normalisation (features.md §2.3, a2a-wire §1.7), selection (§7.1),
//! validation (WM-13) and required extensions (TT-8).

use a2at_core::a2a::card::normalize_card_json;
use a2at_core::a2a::{
    AgentCard, Binding, CardError, CardProblem, SecurityScheme, check_required_extensions,
    select_endpoint, validate_cards,
};
use serde_json::{Value, json};

fn spec_card() -> Value {
    json!({"name":"demo-agent","description":"demo","version":"1.0.0",
     "supportedInterfaces":[
       {"url":"http://127.0.0.1:8765/a2a/jsonrpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
       {"url":"http://127.0.0.1:8765/a2a/rest","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"}],
     "capabilities":{"streaming":true,"pushNotifications":false,"extensions":[
       {"uri":"https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/v1","description":"Task-T"},
       {"uri":"https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1",
        "description":"Negotiation-T","params":{"maxRounds":3.0}}]},
     "securitySchemes":{"bearer":{"httpAuthSecurityScheme":{"scheme":"Bearer","bearerFormat":"JWT"}}},
     "securityRequirements":[{"schemes":{"bearer":{}}}],
     "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
     "skills":[{"id":"es","name":"energy","description":"energy saving","tags":["ran"]}]})
}

#[test]
fn spec_card_round_trips() {
    let v = spec_card();
    let card = AgentCard::from_json_value(&v).unwrap();
    assert_eq!(
        card.security_schemes["bearer"],
        SecurityScheme::HttpAuth {
            description: None,
            scheme: "Bearer".into(),
            bearer_format: Some("JWT".into())
        }
    );
    assert_eq!(
        card.security_requirements[0].schemes["bearer"],
        Vec::<String>::new()
    );
    assert!(card.declares_extension(a2at_core::a2at::NEGOTIATION_T_URI));
    assert!(!card.declares_extension(a2at_core::a2at::NEGOTIATION_T_NL_URI));
    assert_eq!(card.required_extensions().count(), 0);
    assert_eq!(card.to_json(), v);
    let via_serde: AgentCard = serde_json::from_value(v).unwrap();
    assert_eq!(via_serde, card);
}

#[test]
fn openapi_style_card_is_normalised() {
    let input = json!({"name":"spn_domain_agent_city1",
     "securitySchemes":{"bearerAuth":{"type":"http","scheme":"bearer"},
                        "key":{"type":"apiKey","in":"header","name":"X-API-Key"}},
     "securityRequirements":[{"schemes":["bearerAuth"]}]});
    let n = normalize_card_json(&input);
    assert_eq!(
        n,
        json!({"name":"spn_domain_agent_city1",
         "securitySchemes":{"bearerAuth":{"httpAuthSecurityScheme":{"scheme":"bearer"}},
                            "key":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"}}},
         "securityRequirements":[{"schemes":{"bearerAuth":{}}}]})
    );
    let card = AgentCard::from_json_value(&input).unwrap();
    assert!(
        matches!(&card.security_schemes["key"], SecurityScheme::ApiKey { location, name, .. } if location == "header" && name == "X-API-Key")
    );
    // Requirements are never auto-populated.
    let no_reqs = json!({"name":"a","securitySchemes":{"b":{"type":"http","scheme":"bearer"}}});
    assert!(
        AgentCard::from_json_value(&no_reqs)
            .unwrap()
            .security_requirements
            .is_empty()
    );
    let explicit_empty = json!({"name":"a","securitySchemes":{"b":{"type":"http","scheme":"bearer"}},"securityRequirements":[]});
    assert!(
        AgentCard::from_json_value(&explicit_empty)
            .unwrap()
            .security_requirements
            .is_empty()
    );
}

#[test]
fn v03_card_is_normalised() {
    let v03 = json!({"name":"old","description":"d","version":"1","url":"https://old.example/rpc",
        "preferredTransport":"JSONRPC","protocolVersion":"0.3.0",
        "additionalInterfaces":[{"url":"https://old.example/rpc","transport":"JSONRPC"},
                                {"url":"https://old.example/rest","transport":"HTTP+JSON"}],
        "supportsAuthenticatedExtendedCard":true,
        "capabilities":{"streaming":false},
        "securitySchemes":{"oidc":{"type":"openIdConnect","openIdConnectUrl":"https://id/.well-known"},
                           "mtls":{"type":"mutualTLS"},
                           "o":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"https://t"}}}},
        "security":[{"oidc":["read","write"]},{"mtls":[]}]});
    let card = AgentCard::from_json_value(&v03).unwrap();
    let urls: Vec<(&str, &str, &str)> = card
        .supported_interfaces
        .iter()
        .map(|i| {
            (
                i.url.as_str(),
                i.protocol_binding.as_str(),
                i.protocol_version.as_str(),
            )
        })
        .collect();
    assert_eq!(
        urls,
        [
            ("https://old.example/rpc", "JSONRPC", "0.3.0"),
            ("https://old.example/rest", "HTTP+JSON", "0.3.0")
        ]
    );
    assert_eq!(card.capabilities.extended_agent_card, Some(true));
    assert!(
        matches!(&card.security_schemes["oidc"], SecurityScheme::OpenIdConnect { open_id_connect_url, .. } if open_id_connect_url == "https://id/.well-known")
    );
    assert!(matches!(
        card.security_schemes["mtls"],
        SecurityScheme::Mtls { .. }
    ));
    assert!(
        matches!(&card.security_schemes["o"], SecurityScheme::OAuth2 { flows, .. } if flows["clientCredentials"]["tokenUrl"] == "https://t")
    );
    assert_eq!(
        card.security_requirements[0].schemes["oidc"],
        ["read", "write"]
    );
    assert!(card.security_requirements[1].schemes.contains_key("mtls"));
    // A 0.3-only card is not usable by this v1.0 client, and the error names the agent.
    let e = select_endpoint(&card, None).unwrap_err();
    assert!(matches!(&e, CardError::NoUsableInterface { agent, .. } if agent == "old"));
    assert!(e.to_string().contains("\"old\""), "{e}");
}

#[test]
fn merged_card_prefers_v1_fields() {
    let v = json!({"name":"m","securitySchemes":{"b":{"httpAuthSecurityScheme":{"scheme":"Bearer"},"type":"http","scheme":"basic"}}});
    let card = AgentCard::from_json_value(&v).unwrap();
    assert!(
        matches!(&card.security_schemes["b"], SecurityScheme::HttpAuth { scheme, .. } if scheme == "Bearer")
    );
}

fn card_with(ifaces: Value) -> AgentCard {
    AgentCard::from_json_value(
        &json!({"name":"agent-x","capabilities":{},"supportedInterfaces":ifaces}),
    )
    .unwrap()
}

#[test]
fn endpoint_selection() {
    let c = card_with(json!([
        {"url":"grpc.example:443","protocolBinding":"GRPC","protocolVersion":"1.0"},
        {"url":"https://x/v03","protocolBinding":"JSONRPC","protocolVersion":"0.3"},
        {"url":"https://x/unversioned","protocolBinding":"jsonrpc","protocolVersion":""},
        {"url":"https://x/rest","protocolBinding":"http+json","protocolVersion":"1.1","tenant":"t1"},
        {"url":"https://x/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}
    ]));
    let e = select_endpoint(&c, None).unwrap();
    assert_eq!(
        (e.binding, e.url.as_str(), e.tenant.as_deref()),
        (Binding::HttpJson, "https://x/rest", Some("t1"))
    );
    assert_eq!(e.protocol_version, "1.1");
    let e = select_endpoint(&c, Some(Binding::JsonRpc)).unwrap();
    assert_eq!(e.url, "https://x/rpc", "major 1 before unversioned");
    let only_unversioned = card_with(json!([{"url":"https://x/u","protocolBinding":"JSONRPC"}]));
    assert_eq!(
        select_endpoint(&only_unversioned, None).unwrap().url,
        "https://x/u"
    );
    let e = select_endpoint(&only_unversioned, Some(Binding::HttpJson)).unwrap_err();
    assert!(
        matches!(&e, CardError::PreferredBindingUnavailable { agent, preferred, .. } if agent == "agent-x" && preferred == "HTTP+JSON")
    );
    // gRPC comes after every JSON interface, even an unversioned one, unless preferred.
    let e = select_endpoint(&c, Some(Binding::Grpc)).unwrap();
    assert_eq!(
        (e.binding, e.url.as_str()),
        (Binding::Grpc, "http://grpc.example:443")
    );
    let grpc_last = card_with(json!([
        {"url":"g:1","protocolBinding":"grpc","protocolVersion":"1.0"},
        {"url":"https://x/u","protocolBinding":"JSONRPC"}
    ]));
    assert_eq!(
        select_endpoint(&grpc_last, None).unwrap().binding,
        Binding::JsonRpc
    );
    let grpc_only =
        card_with(json!([{"url":"g:1","protocolBinding":"GRPC","protocolVersion":"1.0"}]));
    let e = select_endpoint(&grpc_only, None).unwrap();
    assert_eq!((e.binding, e.url.as_str()), (Binding::Grpc, "http://g:1"));
    let e = select_endpoint(&grpc_only, Some(Binding::JsonRpc)).unwrap_err();
    assert!(e.to_string().contains("GRPC 1.0 g:1"), "{e}");
}

#[test]
fn grpc_interface_urls_in_both_forms() {
    let cases = [
        ("localhost:50051", Some("http://localhost:50051")),
        (" 127.0.0.1:9 ", Some("http://127.0.0.1:9")),
        ("dns:///svc.example:8443", Some("http://svc.example:8443")),
        ("[::1]:50051", Some("http://[::1]:50051")),
        ("http://h:1", Some("http://h:1")),
        ("HTTPS://h.example/", Some("https://h.example")),
        (
            "https://h.example:8443/a2a/grpc/",
            Some("https://h.example:8443/a2a/grpc"),
        ),
        ("http://[::1]:7/p", Some("http://[::1]:7/p")),
        ("localhost", None),
        ("localhost:0", None),
        ("localhost:65536", None),
        ("localhost:+1", None),
        ("a b:1", None),
        ("::1:50051", None),
        ("[]:1", None),
        ("[::1:1", None),
        ("ftp://h:1", None),
        ("http://", None),
        ("http://h:x", None),
        ("https://user@h:1", None),
        ("https://h/p?q=1", None),
        ("http://h:1/a b", None),
        ("", None),
    ];
    for (url, want) in cases {
        assert_eq!(
            a2at_core::a2a::binding::grpc_base_url(url).as_deref(),
            want,
            "{url:?}"
        );
        let card = card_with(json!([{"url":url,"protocolBinding":"GRPC","protocolVersion":"1.0"}]));
        match want {
            Some(base) => assert_eq!(select_endpoint(&card, None).unwrap().url, base),
            None => assert!(
                matches!(
                    select_endpoint(&card, Some(Binding::Grpc)),
                    Err(CardError::PreferredBindingUnavailable { .. })
                ),
                "{url:?} is no usable target"
            ),
        }
    }
    assert_eq!(Binding::parse(" gRPC "), Some(Binding::Grpc));
    assert_eq!(Binding::Grpc.as_str(), "GRPC");
}

#[test]
fn card_set_validation_reports_every_problem() {
    let ok = AgentCard::from_json_value(&spec_card()).unwrap();
    assert_eq!(validate_cards(std::slice::from_ref(&ok)), Ok(()));
    let mut no_caps = spec_card();
    no_caps.as_object_mut().unwrap().remove("capabilities");
    no_caps["name"] = json!("other");
    let no_caps = AgentCard::from_json_value(&no_caps).unwrap();
    assert!(!no_caps.has_capabilities);
    let blank = AgentCard::from_json_value(&json!({"name":"  ","capabilities":{}})).unwrap();
    let err = validate_cards(&[ok.clone(), no_caps, blank, ok]).unwrap_err();
    assert_eq!(
        err.problems,
        vec![
            CardProblem::MissingCapabilities {
                index: 1,
                name: "other".into()
            },
            CardProblem::BlankName { index: 2 },
            CardProblem::NoInterfaces {
                index: 2,
                name: "  ".into()
            },
            CardProblem::DuplicateName {
                index: 3,
                first: 0,
                name: "demo-agent".into()
            },
        ]
    );
    assert!(
        err.to_string().contains("no capabilities") && err.to_string().contains("cards #0 and #3")
    );
}

#[test]
fn required_extensions_must_be_activated() {
    let v = json!({"name":"r","capabilities":{"extensions":[
        {"uri":"urn:opt"},{"uri":"urn:req1","required":true},{"uri":"urn:req2","required":true}]}});
    let card = AgentCard::from_json_value(&v).unwrap();
    assert_eq!(
        card.required_extensions().collect::<Vec<_>>(),
        ["urn:req1", "urn:req2"]
    );
    assert!(check_required_extensions(&card, &["urn:req1".into(), "urn:req2".into()]).is_ok());
    let e = check_required_extensions(&card, &["urn:req1".into()]).unwrap_err();
    assert_eq!(e.to_string(), "Required extension not activated: urn:req2");
}

#[test]
fn invalid_cards_are_typed_errors() {
    assert!(matches!(
        AgentCard::from_json_value(&json!([1])),
        Err(CardError::NotAnObject { found: "array" })
    ));
    let e = AgentCard::from_json_value(&json!({"name":1})).unwrap_err();
    assert!(e.to_string().contains("$.name"), "{e}");
    let e = AgentCard::from_json_value(&json!({"name":"n","capabilities":{"streaming":"yes"}}))
        .unwrap_err();
    assert!(e.to_string().contains("$.capabilities.streaming"), "{e}");
}
