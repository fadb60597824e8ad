//! Rules of AgentCard parsing, normalisation and encoding that cargo-mutants found unpinned, each
//! stated against public behaviour: the normalised JSON, the parsed card, the JSON a card
//! encodes to and the agent directory's chosen endpoint.

use std::collections::BTreeMap;

use a2at_core::a2a::card::normalize_card_json;
use a2at_core::a2a::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    Binding, SecurityRequirement, SecurityScheme,
};
use a2at_core::agents::AgentDirectory;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A v0.3 card (no `supportedInterfaces`) with the given extra members.
fn v03_card(extra: Value) -> Value {
    let mut card = json!({"name":"old","description":"d","version":"1",
        "url":"https://old.example/rpc","capabilities":{}});
    for (k, v) in extra.as_object().expect("object") {
        card[k] = v.clone();
    }
    card
}

/// The `(url, binding, version)` of every interface of a parsed card.
fn interfaces(card: &AgentCard) -> Vec<(String, String, String)> {
    card.supported_interfaces
        .iter()
        .map(|i| {
            (
                i.url.clone(),
                i.protocol_binding.clone(),
                i.protocol_version.clone(),
            )
        })
        .collect()
}

fn iface(url: &str, binding: &str, version: &str) -> (String, String, String) {
    (url.to_owned(), binding.to_owned(), version.to_owned())
}

// A v0.3 card's `preferredTransport` names the binding of its main `url`: an HTTP+JSON agent
// is reached over HTTP+JSON, not JSON-RPC.
// mutant: replace match guard !s.is_empty() with false in normalize_card_json (preferredTransport)
// mutant: delete ! in normalize_card_json (preferredTransport guard)
#[test]
fn v03_preferred_transport_is_the_main_urls_binding() {
    let card = AgentCard::from_json_value(&v03_card(json!({
        "preferredTransport":"HTTP+JSON","protocolVersion":"1.0"
    })))
    .unwrap();
    assert_eq!(
        interfaces(&card),
        [iface("https://old.example/rpc", "HTTP+JSON", "1.0")]
    );
    // The directory then talks HTTP+JSON to it.
    let dir = AgentDirectory::new(vec![card], None).unwrap();
    assert_eq!(dir.get("old").unwrap().endpoint.binding, Binding::HttpJson);
}

// A blank `preferredTransport` is no transport: the v0.3 default JSONRPC applies.
// mutant: replace match guard !s.is_empty() with true in normalize_card_json (preferredTransport)
#[test]
fn v03_blank_preferred_transport_means_jsonrpc() {
    let card = AgentCard::from_json_value(&v03_card(json!({
        "preferredTransport":"","protocolVersion":"1.0"
    })))
    .unwrap();
    assert_eq!(
        interfaces(&card),
        [iface("https://old.example/rpc", "JSONRPC", "1.0")]
    );
}

// A blank `protocolVersion` is no version: the interfaces of a v0.3 card get "0.3".
// mutant: replace match guard !s.is_empty() with true in normalize_card_json (protocolVersion)
#[test]
fn v03_blank_protocol_version_means_0_3() {
    let card = AgentCard::from_json_value(&v03_card(json!({
        "protocolVersion":"",
        "additionalInterfaces":[{"url":"https://old.example/rest","transport":"HTTP+JSON"}]
    })))
    .unwrap();
    assert_eq!(
        interfaces(&card),
        [
            iface("https://old.example/rpc", "JSONRPC", "0.3"),
            iface("https://old.example/rest", "HTTP+JSON", "0.3"),
        ]
    );
    // An absent one too.
    let card = AgentCard::from_json_value(&v03_card(json!({}))).unwrap();
    assert_eq!(
        interfaces(&card),
        [iface("https://old.example/rpc", "JSONRPC", "0.3")]
    );
}

// Only an additional interface with both the main url AND the preferred transport repeats the
// main one; the same url on another transport, or another url on the same transport, is an
// interface of its own and is kept.
// mutant: replace && with || in normalize_card_json
#[test]
fn v03_additional_interfaces_drop_only_the_exact_repeat() {
    let card = AgentCard::from_json_value(&v03_card(json!({
        "preferredTransport":"JSONRPC","protocolVersion":"1.0",
        "additionalInterfaces":[
            {"url":"https://old.example/rpc","transport":"jsonrpc"},
            {"url":"https://old.example/rpc","transport":"HTTP+JSON"},
            {"url":"https://mirror.example/rpc","transport":"JSONRPC"}
        ]
    })))
    .unwrap();
    assert_eq!(
        interfaces(&card),
        [
            iface("https://old.example/rpc", "JSONRPC", "1.0"),
            iface("https://old.example/rpc", "HTTP+JSON", "1.0"),
            iface("https://mirror.example/rpc", "JSONRPC", "1.0"),
        ]
    );
    // Preferring HTTP+JSON finds the interface on the shared url.
    let dir = AgentDirectory::new(vec![card], Some(Binding::HttpJson)).unwrap();
    let e = &dir.get("old").unwrap().endpoint;
    assert_eq!(
        (e.binding, e.url.as_str()),
        (Binding::HttpJson, "https://old.example/rpc")
    );
}

// Normalising a flat (OpenAPI) scheme copies only members with a value: `null` and `""` are
// dropped, not carried into the wrapper form.
// mutant: replace && with || in normalize_scheme
#[test]
fn flat_scheme_members_without_a_value_are_dropped() {
    let n = normalize_card_json(&json!({"name":"a","securitySchemes":{
        "b":{"type":"http","scheme":"bearer","bearerFormat":"","description":null},
        "k":{"type":"apiKey","in":"header","name":"X-Key","description":""},
        "o":{"type":"oauth2","flows":null,"oauth2MetadataUrl":"https://m"}
    }}));
    assert_eq!(
        n["securitySchemes"],
        json!({
            "b":{"httpAuthSecurityScheme":{"scheme":"bearer"}},
            "k":{"apiKeySecurityScheme":{"location":"header","name":"X-Key"}},
            "o":{"oauth2SecurityScheme":{"oauth2MetadataUrl":"https://m"}}
        })
    );
}

// A flat scheme is HTTP auth only when it names a `scheme`: `{"type":"http"}` without one is
// an unknown shape, kept verbatim, not an HTTP scheme with a blank auth scheme. Nor does a
// stray `scheme` member turn an apiKey scheme into HTTP auth.
// mutant: replace && with || in normalize_scheme (scheme present && type http-or-blank)
#[test]
fn flat_scheme_is_http_auth_only_with_a_scheme_and_an_http_type() {
    let v = json!({"name":"a","securitySchemes":{
        "h":{"type":"http"},
        "k":{"type":"apiKey","in":"query","name":"key","scheme":"x"}
    }});
    let n = normalize_card_json(&v);
    assert_eq!(n["securitySchemes"]["h"], json!({"type":"http"}));
    let card = AgentCard::from_json_value(&v).unwrap();
    assert_eq!(
        card.security_schemes["h"],
        SecurityScheme::Other(json!({"type":"http"}))
    );
    assert_eq!(
        card.security_schemes["k"],
        SecurityScheme::ApiKey {
            description: None,
            location: "query".into(),
            name: "key".into()
        }
    );
}

// An OAuth2 scheme encodes its flows: the card a client reads back still knows the token URL.
// mutant: delete ! in SecurityScheme::to_json
#[test]
fn oauth2_scheme_encodes_its_flows() {
    let flows = json!({"clientCredentials":{"tokenUrl":"https://t","scopes":{"read":"r"}}});
    let scheme = SecurityScheme::OAuth2 {
        description: None,
        flows: flows.clone(),
        oauth2_metadata_url: None,
    };
    assert_eq!(
        scheme.to_json(),
        json!({"oauth2SecurityScheme":{"flows":flows}})
    );
    // Without flows, no `flows` member (not `null`).
    let bare = SecurityScheme::OAuth2 {
        description: None,
        flows: Value::Null,
        oauth2_metadata_url: Some("https://m".into()),
    };
    assert_eq!(
        bare.to_json(),
        json!({"oauth2SecurityScheme":{"oauth2MetadataUrl":"https://m"}})
    );
}

// A card that carried a `capabilities` object encodes one, even an empty one (a card without
// it is invalid, so dropping it would make a valid card invalid).
// mutant: replace || with && in AgentCard::to_json
#[test]
fn empty_capabilities_survive_encoding() {
    let v = json!({"name":"a","capabilities":{},
        "supportedInterfaces":[{"url":"https://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]});
    let card = AgentCard::from_json_value(&v).unwrap();
    assert!(card.has_capabilities);
    assert_eq!(card.to_json()["capabilities"], json!({}));
    let again = AgentCard::from_json_value(&card.to_json()).unwrap();
    assert!(
        AgentDirectory::new(vec![again], None).is_ok(),
        "the re-read card is still valid"
    );
}

// A card without `capabilities` encodes none: encoding does not make an invalid card valid.
// mutant: replace != with == in AgentCard::to_json
#[test]
fn missing_capabilities_stay_missing_when_encoded() {
    let v = json!({"name":"a",
        "supportedInterfaces":[{"url":"https://a/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]});
    let card = AgentCard::from_json_value(&v).unwrap();
    assert!(!card.has_capabilities);
    assert_eq!(card.to_json(), v);
    let again = AgentCard::from_json_value(&card.to_json()).unwrap();
    assert!(AgentDirectory::new(vec![again], None).is_err());
    // Capabilities set in code are encoded even without the wire flag.
    let built = AgentCard {
        capabilities: AgentCapabilities {
            streaming: Some(true),
            ..AgentCapabilities::default()
        },
        ..card
    };
    assert_eq!(built.to_json()["capabilities"], json!({"streaming":true}));
}

// `supports_streaming` is `capabilities.streaming == true`: not stated and `false` are both
// "no", and it agrees with the directory's streaming flag.
// mutant: replace AgentCard::supports_streaming -> bool with true
// mutant: replace AgentCard::supports_streaming -> bool with false
// mutant: replace == with != in AgentCard::supports_streaming
#[test]
fn supports_streaming_only_when_stated_true() {
    for (caps, want) in [
        (json!({"streaming":true}), true),
        (json!({"streaming":false}), false),
        (json!({}), false),
    ] {
        let card = AgentCard::from_json_value(&json!({"name":"s","capabilities":caps,
            "supportedInterfaces":[{"url":"https://s/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}))
        .unwrap();
        assert_eq!(card.supports_streaming(), want, "{caps}");
        let entry = AgentDirectory::entry(card, None).unwrap();
        assert_eq!(entry.streaming, want, "{caps}");
    }
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 :/._-]{0,8}"
}

/// An optional string as a card holds it after parsing: never `Some("")`.
fn opt_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of("[a-zA-Z0-9:/._-]{1,8}")
}

fn texts() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(text(), 0..3)
}

fn requirement() -> impl Strategy<Value = SecurityRequirement> {
    proptest::collection::btree_map(text(), texts(), 0..3)
        .prop_map(|schemes| SecurityRequirement { schemes })
}

fn scheme() -> impl Strategy<Value = SecurityScheme> {
    let flows = prop_oneof![
        Just(Value::Null),
        text().prop_map(|u| json!({"clientCredentials":{"tokenUrl":u}})),
    ];
    prop_oneof![
        (opt_text(), text(), text()).prop_map(|(description, location, name)| {
            SecurityScheme::ApiKey {
                description,
                location,
                name,
            }
        }),
        (opt_text(), text(), opt_text()).prop_map(|(description, scheme, bearer_format)| {
            SecurityScheme::HttpAuth {
                description,
                scheme,
                bearer_format,
            }
        }),
        (opt_text(), flows, opt_text()).prop_map(|(description, flows, oauth2_metadata_url)| {
            SecurityScheme::OAuth2 {
                description,
                flows,
                oauth2_metadata_url,
            }
        }),
        (opt_text(), text()).prop_map(|(description, open_id_connect_url)| {
            SecurityScheme::OpenIdConnect {
                description,
                open_id_connect_url,
            }
        }),
        opt_text().prop_map(|description| SecurityScheme::Mtls { description }),
    ]
}

fn capabilities() -> impl Strategy<Value = AgentCapabilities> {
    let params = proptest::option::of(
        proptest::collection::btree_map(text(), text(), 0..2)
            .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect()),
    );
    let extension = (text(), opt_text(), any::<bool>(), params).prop_map(
        |(uri, description, required, params): (_, _, _, Option<Map<String, Value>>)| {
            AgentExtension {
                uri,
                description,
                required,
                params,
            }
        },
    );
    (
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        proptest::collection::vec(extension, 0..3),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(streaming, push_notifications, extensions, extended_agent_card)| AgentCapabilities {
                streaming,
                push_notifications,
                extensions,
                extended_agent_card,
            },
        )
}

fn skill() -> impl Strategy<Value = AgentSkill> {
    (
        (text(), text(), text()),
        (texts(), texts(), texts(), texts()),
        proptest::collection::vec(requirement(), 0..2),
    )
        .prop_map(
            |((id, name, description), (tags, examples, input_modes, output_modes), reqs)| {
                AgentSkill {
                    id,
                    name,
                    description,
                    tags,
                    examples,
                    input_modes,
                    output_modes,
                    security_requirements: reqs,
                }
            },
        )
}

/// A card as parsing yields it: `has_capabilities` is false only with default capabilities.
fn card() -> impl Strategy<Value = AgentCard> {
    let interface = (text(), text(), opt_text(), text()).prop_map(
        |(url, protocol_binding, tenant, protocol_version)| AgentInterface {
            url,
            protocol_binding,
            tenant,
            protocol_version,
        },
    );
    let provider = proptest::option::of(
        (text(), text()).prop_map(|(url, organization)| AgentProvider { url, organization }),
    );
    (
        (text(), text(), text(), opt_text(), opt_text()),
        (
            proptest::collection::vec(interface, 0..3),
            provider,
            proptest::option::of(capabilities()),
        ),
        (
            proptest::collection::btree_map(text(), scheme(), 0..3),
            proptest::collection::vec(requirement(), 0..3),
        ),
        (
            texts(),
            texts(),
            proptest::collection::vec(skill(), 0..2),
            proptest::collection::vec(text().prop_map(|s| json!({"protected": s})), 0..2),
        ),
    )
        .prop_map(
            |(
                (name, description, version, documentation_url, icon_url),
                (supported_interfaces, provider, caps),
                (security_schemes, security_requirements),
                (default_input_modes, default_output_modes, skills, signatures),
            )| AgentCard {
                name,
                description,
                version,
                supported_interfaces,
                provider,
                documentation_url,
                icon_url,
                has_capabilities: caps.is_some(),
                capabilities: caps.unwrap_or_default(),
                security_schemes: security_schemes.into_iter().collect::<BTreeMap<_, _>>(),
                security_requirements,
                default_input_modes,
                default_output_modes,
                skills,
                signatures,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // Encoding loses nothing: parse(encode(card)) == card, through both the card parser and serde.
    // mutant: delete ! in SecurityScheme::to_json (OAuth2 flows dropped)
    // mutant: replace || with && in AgentCard::to_json (empty capabilities dropped)
    // mutant: replace != with == in AgentCard::to_json (absent capabilities invented)
    #[test]
    fn a_card_reads_back_as_encoded(card in card()) {
        let v = card.to_json();
        prop_assert_eq!(&AgentCard::from_json_value(&v).unwrap(), &card, "{}", v);
        let via_serde: AgentCard = serde_json::from_value(serde_json::to_value(&card).unwrap()).unwrap();
        prop_assert_eq!(via_serde, card);
    }
}
