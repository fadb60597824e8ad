//! A2A-T helpers: URIs, Negotiation-T context parsing, layers, activation.

use a2at_core::a2a::{Artifact, Message, Part, ReceivedMessage};
use a2at_core::a2at::*;
use serde_json::{Map, Value, json};

fn ctx(round: Value, max: Value, perf: &str) -> Value {
    json!({"id":"3f6c1e2a-9b7d-4c1e-8a2f-5d9e0b7c4a11","round":round,"maxRounds":max,"performative":perf})
}

#[test]
fn uris_are_exact() {
    assert_eq!(TASK_T_URI, format!("{EXTENSION_URI_BASE}Task-T/v1"));
    assert_eq!(
        NEGOTIATION_T_URI,
        format!("{EXTENSION_URI_BASE}Negotiation-T/v1")
    );
    assert_eq!(
        NEGOTIATION_T_NL_URI,
        format!("{EXTENSION_URI_BASE}Negotiation-T/NL/v1")
    );
    assert_eq!(
        AUTHORIZATION_T_URI,
        format!("{EXTENSION_URI_BASE}Authorization-T/v1")
    );
    assert_eq!(
        NOTIFICATION_T_URI,
        format!("{EXTENSION_URI_BASE}Notification-T/v1")
    );
    assert!(is_negotiation_uri(NEGOTIATION_T_URI) && is_negotiation_uri(NEGOTIATION_T_NL_URI));
    assert!(!is_negotiation_uri(&format!(
        "{EXTENSION_URI_BASE}NEGOTIATION-T"
    )));
    assert!(!is_negotiation_uri(&format!("{NEGOTIATION_T_URI}/")));
}

#[test]
fn context_accept_table() {
    for (r, m) in [
        (json!(1), json!(3)),
        (json!(1.0), json!(3.0)),
        (serde_json::from_str::<Value>("1e0").unwrap(), json!(5)),
        (json!(3), json!(3)),
    ] {
        let c = NegotiationContext::from_json(&ctx(r.clone(), m.clone(), "PROPOSE")).unwrap();
        assert!(c.round >= 1 && c.max_rounds >= c.round, "{r} {m}");
        assert_eq!(c.performative, Performative::Propose);
    }
    let c = NegotiationContext::from_json(&ctx(json!(4), json!(3), "ABORT")).unwrap();
    assert!(c.is_exhausted());
    assert!(
        !NegotiationContext::from_json(&ctx(json!(3), json!(3), "ACCEPT"))
            .unwrap()
            .is_exhausted()
    );
}

#[test]
fn context_reject_table() {
    let bad = [
        ctx(json!(1.5), json!(3), "PROPOSE"),
        ctx(json!("1"), json!(3), "PROPOSE"),
        ctx(json!(true), json!(3), "PROPOSE"),
        ctx(json!(0), json!(3), "PROPOSE"),
        ctx(json!(-1), json!(3), "PROPOSE"),
        ctx(json!(1), json!(0), "PROPOSE"),
        ctx(json!(1), json!(1e20), "PROPOSE"),
        ctx(json!(1), json!(null), "PROPOSE"),
        ctx(json!(1), json!(3), "propose"),
        ctx(json!(1), json!(3), "Accept"),
        ctx(json!(1), json!(3), "COUNTER"),
        json!({"id":"  ","round":1,"maxRounds":3,"performative":"PROPOSE"}),
        json!({"id":7,"round":1,"maxRounds":3,"performative":"PROPOSE"}),
        json!({"round":1,"maxRounds":3,"performative":"PROPOSE"}),
        json!({"negotiationId":"x","status":"PROPOSE"}),
        json!("not an object"),
    ];
    for b in bad {
        assert!(NegotiationContext::from_json(&b).is_err(), "accepted {b}");
    }
    let e = NegotiationContext::from_json(&ctx(json!(1.5), json!(3), "PROPOSE")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "negotiationContext.round must be an integral JSON number >= 1, found 1.5"
    );
}

#[test]
fn to_json_order_and_derivations() {
    let c = NegotiationContext::from_json(&ctx(json!(1.0), json!(3.0), "PROPOSE")).unwrap();
    assert_eq!(
        serde_json::to_string(&c.to_json()).unwrap(),
        r#"{"id":"3f6c1e2a-9b7d-4c1e-8a2f-5d9e0b7c4a11","round":1,"maxRounds":3,"performative":"PROPOSE"}"#
    );
    let a = c.with_performative(Performative::Accept);
    assert_eq!(
        (a.round, a.max_rounds, a.performative),
        (1, 3, Performative::Accept)
    );
    let n = c.next_round();
    assert_eq!(
        (n.round, n.max_rounds, n.performative, n.id.as_str()),
        (2, 3, Performative::Propose, c.id.as_str())
    );
}

fn meta(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn metadata_helpers() {
    let m = meta(
        json!({NEGOTIATION_T_NL_URI: "text", "templateUri": "Negotiation-T/information-negotiation/propose/v1",
        "negotiationContext": ctx(json!(1), json!(3), "PROPOSE")}),
    );
    assert!(
        metadata_has_negotiation_key(&m),
        "NL alias accepted on read"
    );
    assert_eq!(metadata_negotiation(&m).unwrap().unwrap().round, 1);
    assert_eq!(metadata_negotiation(&meta(json!({"x":1}))).unwrap(), None);
    assert!(metadata_negotiation(&meta(json!({"negotiationContext":{"id":"x"}}))).is_err());
    assert!(!metadata_has_negotiation_key(&meta(
        json!({TASK_T_URI: "t"})
    )));

    let exts = vec![TASK_T_URI.to_owned()];
    assert!(activates(
        &exts,
        &meta(json!({TASK_T_URI: "t"})),
        TASK_T_URI
    ));
    assert!(
        !activates(&exts, &meta(json!({})), TASK_T_URI),
        "metadata key missing"
    );
    assert!(
        !activates(&[], &meta(json!({TASK_T_URI: "t"})), TASK_T_URI),
        "extension missing"
    );
}

fn received(
    msg_ctx: Option<Value>,
    task_ctx: Option<Value>,
    art_ctx: Option<Value>,
) -> ReceivedMessage {
    let layer = |c: Option<Value>| c.map(|c| meta(json!({ "negotiationContext": c })));
    ReceivedMessage {
        message: Some(Message {
            message_id: "m".into(),
            parts: vec![Part::text("x")],
            metadata: layer(msg_ctx),
            ..Message::default()
        }),
        task_metadata: layer(task_ctx),
        artifacts: vec![Artifact {
            artifact_id: "a".into(),
            parts: vec![Part::text("y")],
            metadata: layer(art_ctx),
            ..Artifact::default()
        }],
        ..ReceivedMessage::default()
    }
}

#[test]
fn context_of_across_layers() {
    let p = ctx(json!(1), json!(3), "PROPOSE");
    assert_eq!(context_of(&received(None, None, None)).unwrap(), None);
    assert_eq!(
        context_of(&received(None, None, Some(p.clone())))
            .unwrap()
            .unwrap()
            .round,
        1
    );
    // The same context as 1 and 1.0 in two layers is not a conflict.
    let p_double = ctx(json!(1.0), json!(3.0), "PROPOSE");
    assert!(
        context_of(&received(Some(p.clone()), Some(p_double), None))
            .unwrap()
            .is_some()
    );
    let other = ctx(json!(2), json!(3), "PROPOSE");
    let e = context_of(&received(Some(p.clone()), None, Some(other))).unwrap_err();
    assert!(matches!(e, NegotiationContextError::Conflicting { .. }));
    assert!(
        e.to_string().contains("message") && e.to_string().contains("artifact a"),
        "{e}"
    );
    let e = context_of(&received(Some(p), Some(json!({"id":"x"})), None)).unwrap_err();
    assert!(matches!(
        e,
        NegotiationContextError::Missing { field: "round" }
    ));
}

/// Only a Propose keeps a negotiation going; every other performative ends it.
#[test]
fn only_propose_is_not_terminal() {
    assert!(!Performative::Propose.is_terminal());
    for p in [
        Performative::Accept,
        Performative::Reject,
        Performative::Abort,
    ] {
        assert!(p.is_terminal(), "{p} ends a negotiation");
    }
}

/// Every performative parses from exactly its uppercase wire spelling and nothing else.
#[test]
fn every_performative_parses_from_its_exact_spelling_only() {
    for p in [
        Performative::Propose,
        Performative::Accept,
        Performative::Reject,
        Performative::Abort,
    ] {
        assert_eq!(Performative::parse(p.as_str()), Some(p));
        assert_eq!(Performative::parse(&p.as_str().to_lowercase()), None);
        let context = ctx(json!(1), json!(3), p.as_str());
        let parsed = NegotiationContext::from_json(&context).map(|c| c.performative);
        assert_eq!(parsed, Ok(p), "{context}");
    }
    assert_eq!(Performative::parse("COUNTER"), None);
}

/// Performatives print as their wire spelling.
#[test]
fn performatives_display_their_wire_spelling() {
    assert_eq!(Performative::Accept.to_string(), "ACCEPT");
    assert_eq!(Performative::Propose.to_string(), "PROPOSE");
}

/// An invalid value is quoted in the error up to 80 characters of its JSON; a longer one is cut
/// there and marked with an ellipsis, so a hostile value cannot flood a log line.
#[test]
fn invalid_values_are_quoted_up_to_80_characters() {
    let found = |performative: &str| {
        let err = NegotiationContext::from_json(&ctx(json!(1), json!(3), performative))
            .expect_err("not a performative");
        let text = err.to_string();
        text[text.find("found ").expect("quotes the value") + "found ".len()..].to_owned()
    };
    let exactly_80 = "x".repeat(78); // 80 characters once quoted
    assert_eq!(found(&exactly_80), format!("\"{exactly_80}\""));
    let long = "y".repeat(200);
    let cut = found(&long);
    assert_eq!(cut.chars().count(), 81, "{cut}");
    assert!(cut.starts_with("\"yyy") && cut.ends_with('…'), "{cut}");
}
