//! Rules of built-in authentication that the mutation run of `core/src/auth.rs` showed were
//! not yet pinned down: each test names the rule and the mutant it kills. All secrets here are
//! obvious dummies.

use a2at_core::a2a::card::AgentCard;
use a2at_core::auth::*;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

mod auth_support;
use auth_support::{IV, KEY_HEX, card, creds, key, request_to as request};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A card whose only requirement is the single scheme `s`, declared as `scheme`.
fn one_scheme_card(scheme: Value) -> AgentCard {
    card(json!({"name": "a", "securitySchemes": {"s": scheme},
        "securityRequirements": [{"schemes": ["s"]}]}))
}

// ---------------------------------------------------------------- secrets and keys

// Rule: a secret's Debug output is exactly `***`, whatever the secret.
// mutant: replace <impl Debug for Secret>::fmt with Ok(Default::default())
#[test]
fn secret_debug_is_the_mask() {
    assert_eq!(format!("{:?}", Secret::new("dummy-secret")), "***");
    assert_eq!(format!("{:?}", Secret::new("")), "***");
    assert_eq!(
        format!("{:?}", Token::new("dummy-token")),
        "Token { value: *** }"
    );
}

// Rule: each pair of hex digits is one key byte, high nibble first: the hex key and the raw
// bytes it spells are the same key.
// mutants: replace << with >> / replace | with & in CredentialKey::from_hex
#[test]
fn hex_key_spells_its_bytes() {
    let bytes: [u8; 32] = std::array::from_fn(|i| i as u8);
    assert_eq!(
        CredentialKey::from_hex(KEY_HEX),
        Ok(CredentialKey::from_bytes(bytes))
    );
    let high: [u8; 32] = std::array::from_fn(|i| 0xff - i as u8);
    assert_eq!(
        CredentialKey::from_hex(&hex(&high).to_uppercase()),
        Ok(CredentialKey::from_bytes(high))
    );
    // A value sealed under the raw bytes opens with the hex spelling of them.
    let enc = encrypt_value("dummy", &CredentialKey::from_bytes(high), IV);
    let hex_key = CredentialKey::from_hex(&hex(&high)).unwrap();
    assert_eq!(decrypt_value(&enc, Some(&hex_key)).as_deref(), Ok("dummy"));
}

// Rule: the empty plaintext is a valid secret: its ciphertext is exactly the 16-byte tag, and
// a ciphertext shorter than the tag is malformed.
// mutant: replace < with <= in decrypt_value
#[test]
fn an_empty_secret_round_trips() {
    let enc = encrypt_value("", &key(), IV);
    assert_eq!(decrypt_value(&enc, Some(&key())).as_deref(), Ok(""));
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let short = format!("enc:{}:{}", b64.encode(IV), b64.encode([0u8; 15]));
    assert!(matches!(
        decrypt_value(&short, Some(&key())),
        Err(CredentialError::MalformedEncrypted(_))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    // Rule: any plaintext sealed under a key opens under the same key, including the empty one.
    #[test]
    fn enc_values_round_trip(plain in ".{0,40}", k in any::<[u8; 32]>(), iv in any::<[u8; 12]>()) {
        let key = CredentialKey::from_bytes(k);
        let enc = encrypt_value(&plain, &key, iv);
        prop_assert_eq!(decrypt_value(&enc, Some(&key)), Ok(plain));
    }

    // Rule: a hex key (either case, with surrounding whitespace) is the key of the bytes it
    // spells.
    #[test]
    fn any_hex_key_is_its_bytes(k in any::<[u8; 32]>(), upper in any::<bool>()) {
        let h = if upper { hex(&k).to_uppercase() } else { hex(&k) };
        prop_assert_eq!(CredentialKey::from_hex(&format!(" {h}\n")), Ok(CredentialKey::from_bytes(k)));
    }

    // Rule: no secret ever shows in the Debug output of the secret, its token, the parsed
    // credentials or the material built from them.
    #[test]
    fn secrets_never_show_in_debug(s in "[a-z0-9]{4,12}") {
        let secret = format!("dummy-{s}");
        prop_assert_eq!(format!("{:?}", Secret::new(secret.clone())), "***");
        let c = creds(json!({"a": {
            "t": {"token": secret.clone()},
            "b": {"username": secret.clone(), "password": secret.clone()},
            "l": {"login_url": "https://login.example/x", "password": secret.clone(),
                  "request_fields": {"f": secret.clone()}}}}));
        let shown = format!("{c:?}");
        prop_assert!(!shown.contains(&secret), "{}", shown);
        let m = TokenPlacement::Query { name: "k".into() }.material(&secret, None);
        let shown = format!("{m:?}");
        prop_assert!(!shown.contains(&secret), "{}", shown);
        let SchemeCredential::Login(l) = &c.agents["a"].schemes["l"] else { unreachable!() };
        let shown = format!("{:?}", login_request(l));
        prop_assert!(!shown.contains(&secret), "{}", shown);
    }
}

// ---------------------------------------------------------------- Debug of the carriers

// Rule: a login configuration's Debug names its fields, redacts the URL and shows neither the
// user name, the password nor the values of the request fields.
// mutant: replace <impl Debug for LoginConfig>::fmt with Ok(Default::default())
#[test]
fn login_config_debug_shows_fields_not_secrets() {
    let c = creds(json!({"a": {"s": {
        "login_url": "https://dummy-user:dummy-pass@login.example/auth?access_token=dummy-qs",
        "username": "dummy-name", "password": "dummy-pw",
        "request_fields": {"tenant": "dummy-field"}, "token_field": "data.tok"}}}));
    let SchemeCredential::Login(l) = &c.agents["a"].schemes["s"] else {
        panic!()
    };
    let d = format!("{l:?}");
    for shown in [
        "LoginConfig",
        "login_url",
        "https://***@login.example/auth?access_token=***",
        "POST",
        "application/json",
        "\"tenant\"",
        "data.tok",
        "3600",
        "username_field",
        "password_field",
    ] {
        assert!(d.contains(shown), "{shown} missing from {d}");
    }
    for hidden in [
        "dummy-user",
        "dummy-pass",
        "dummy-qs",
        "dummy-name",
        "dummy-pw",
        "dummy-field",
    ] {
        assert!(!d.contains(hidden), "{hidden} leaked in {d}");
    }
}

// Rule: auth material's Debug lists each name with `***` in place of its value.
// mutant: replace <impl Debug for AuthMaterial>::fmt with Ok(Default::default())
#[test]
fn auth_material_debug_shows_names_only() {
    let m = AuthMaterial {
        headers: vec![("X-Session".into(), "dummy-h".into())],
        query: vec![("k".into(), "dummy-q".into())],
        cookies: vec![("sid".into(), "dummy-c".into())],
    };
    assert_eq!(
        format!("{m:?}"),
        r#"AuthMaterial { headers: ["X-Session: ***"], query: ["k: ***"], cookies: ["sid: ***"] }"#
    );
}

// Rule: a login request's Debug shows method, redacted URL, content type and the body's size,
// never the body.
// mutant: replace <impl Debug for LoginRequest>::fmt with Ok(Default::default())
#[test]
fn login_request_debug_shows_body_size_not_body() {
    let r = LoginRequest {
        method: "POST".into(),
        url: "https://login.example/x?api_key=dummy-qs".into(),
        content_type: "application/json".into(),
        headers: vec![],
        body: br#"{"password":"dummy-pw"}"#.to_vec(),
    };
    assert_eq!(
        format!("{r:?}"),
        r#"LoginRequest { method: "POST", url: "https://login.example/x?api_key=***", content_type: "application/json", body: <23 bytes> }"#
    );
}

// ---------------------------------------------------------------- the credentials file

// Rule: a scheme object with no credential key says which keys it needs (and is not reported as
// mixing kinds); one with two kinds says they are mixed.
// mutant: delete match arm 0 in parse_scheme
#[test]
fn a_scheme_without_a_credential_kind_says_what_it_needs() {
    let needs = Problem::Shape("needs one of login_url, token, api_key, or username+password");
    for v in [json!({}), json!({"accept_header": "text/plain"})] {
        let e = CredentialsConfig::from_json_value(&json!({"a": {"s": v}}), None).unwrap_err();
        assert_eq!(
            e,
            CredentialError::Invalid {
                agent: "a".into(),
                scheme: "s".into(),
                field: String::new(),
                problem: needs.clone(),
            }
        );
        assert!(e.to_string().contains("needs one of"), "{e}");
    }
    let e = CredentialsConfig::from_json_value(
        &json!({"a": {"s": {"token": "dummy", "username": "u", "password": "p"}}}),
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("mixes credential kinds"), "{e}");
}

// ---------------------------------------------------------------- planning

fn incompatible(scheme: Value, cred: Value) -> AuthError {
    let cr = creds(json!({"a": {"s": cred}}));
    plan_auth(
        &one_scheme_card(scheme),
        cr.agent("a"),
        AuthContext::default(),
    )
    .unwrap_err()
}

fn declared_kind(e: &AuthError) -> (&'static str, &'static str) {
    match e {
        AuthError::IncompatibleCredential {
            credential,
            declared,
            ..
        } => (credential, declared),
        other => panic!("{other:?}"),
    }
}

// Rule: an incompatible credential's error names the credential kind and the declared scheme's
// kind, telling HTTP Basic (any case) from other HTTP schemes.
// mutants: replace scheme_kind with "" / "xyzzy"; replace match guard
// scheme.eq_ignore_ascii_case("basic") with true / false in scheme_kind
#[test]
fn incompatible_credential_names_the_declared_kind() {
    let api_key = json!({"api_key": "dummy-k"});
    let token = json!({"token": "dummy-t"});
    let basic = json!({"username": "u", "password": "dummy-p"});
    let cases = [
        (
            json!({"httpAuthSecurityScheme": {"scheme": "Bearer"}}),
            api_key.clone(),
            ("api_key", "httpAuthSecurityScheme"),
        ),
        (
            json!({"httpAuthSecurityScheme": {"scheme": "BASIC"}}),
            api_key.clone(),
            ("api_key", "httpAuthSecurityScheme basic"),
        ),
        (
            json!({"httpAuthSecurityScheme": {"scheme": "basic"}}),
            token,
            ("token", "httpAuthSecurityScheme basic"),
        ),
        (
            json!({"apiKeySecurityScheme": {"location": "header", "name": "X-K"}}),
            basic.clone(),
            ("username/password", "apiKeySecurityScheme"),
        ),
        (
            json!({"oauth2SecurityScheme": {"flows": {}}}),
            basic.clone(),
            ("username/password", "oauth2SecurityScheme"),
        ),
        (
            json!({"openIdConnectSecurityScheme": {"openIdConnectUrl": "https://id.example"}}),
            basic,
            ("username/password", "openIdConnectSecurityScheme"),
        ),
        (
            json!({"mtlsSecurityScheme": {}}),
            api_key.clone(),
            ("file", "mtlsSecurityScheme"),
        ),
        (
            json!({"someFutureScheme": {}}),
            api_key,
            ("api_key", "a scheme of unknown shape"),
        ),
    ];
    for (scheme, cred, want) in cases {
        let e = incompatible(scheme.clone(), cred);
        assert_eq!(declared_kind(&e), want, "{scheme}");
        assert!(
            e.to_string()
                .ends_with(&format!("a {} credential cannot serve {}", want.0, want.1)),
            "{e}"
        );
        assert!(!e.to_string().contains("dummy"), "{e}");
    }
}

// Rule: a file credential never serves an mTLS scheme: without a client certificate the plan
// fails rather than pretend the certificate is there.
// mutant: replace match guard ctx.client_certificate with true in plan_auth
#[test]
fn a_file_credential_cannot_stand_in_for_a_client_certificate() {
    let c = one_scheme_card(json!({"mtlsSecurityScheme": {}}));
    let cr = creds(json!({"a": {"s": {"token": "dummy-t"}}}));
    let e = plan_auth(&c, cr.agent("a"), AuthContext::default()).unwrap_err();
    assert_eq!(
        e,
        AuthError::IncompatibleCredential {
            agent: "a".into(),
            scheme: "s".into(),
            credential: "file",
            declared: "mtlsSecurityScheme",
        }
    );
}

// Rule: with a client certificate an mTLS scheme is served by the certificate, even when the
// file also has an entry under its name.
// mutant: replace match guard ctx.client_certificate with false in plan_auth
#[test]
fn a_client_certificate_serves_mtls_even_with_a_file_entry() {
    let c = one_scheme_card(json!({"mtlsSecurityScheme": {}}));
    let cr = creds(json!({"a": {"s": {"token": "dummy-t"}}}));
    let ctx = AuthContext {
        client_certificate: true,
        ..Default::default()
    };
    let plan = plan_auth(&c, cr.agent("a"), ctx).unwrap();
    assert_eq!(plan.requirement, Some(0));
    assert_eq!(
        plan.steps,
        vec![("s".to_owned(), SchemeStep::ClientCertificate)]
    );
    assert_eq!(
        plan.material(&BTreeMap::new()).unwrap(),
        AuthMaterial::default()
    );
}

// Rule: a plan that adds anything (a static credential, a login, or a client certificate) is
// not empty; only "no built-in auth" is.
// mutant: replace AuthPlan::is_empty -> bool with true
#[test]
fn a_plan_with_steps_is_not_empty() {
    let c = one_scheme_card(json!({"httpAuthSecurityScheme": {"scheme": "bearer"}}));
    for cred in [
        json!({"token": "dummy-t"}),
        json!({"login_url": "https://login.example/x"}),
    ] {
        let cr = creds(json!({"a": {"s": cred}}));
        let plan = plan_auth(&c, cr.agent("a"), AuthContext::default()).unwrap();
        assert!(!plan.is_empty(), "{plan:?}");
    }
    let c = one_scheme_card(json!({"mtlsSecurityScheme": {}}));
    let ctx = AuthContext {
        client_certificate: true,
        ..Default::default()
    };
    assert!(!plan_auth(&c, None, ctx).unwrap().is_empty());
}

// Rule: static credentials of one requirement that set one header to different values are
// refused when planning, before anything is sent.
// mutant: delete ! in plan_auth (the conflict check before returning a static plan)
#[test]
fn conflicting_static_credentials_are_refused_at_planning() {
    let c = card(json!({"name": "a", "securitySchemes": {
            "t": {"httpAuthSecurityScheme": {"scheme": "bearer"}},
            "b": {"httpAuthSecurityScheme": {"scheme": "basic"}}},
        "securityRequirements": [{"schemes": ["t", "b"]}]}));
    let cr = creds(json!({"a": {
        "t": {"token": "dummy-t"},
        "b": {"username": "u", "password": "dummy-p"}}}));
    let e = plan_auth(&c, cr.agent("a"), AuthContext::default()).unwrap_err();
    assert_eq!(
        e,
        AuthError::HeaderConflict {
            header: "Authorization".into()
        }
    );
    assert!(!e.to_string().contains("dummy"), "{e}");
}

// ---------------------------------------------------------------- login responses

// Rule: the NoToken error lists every path tried once, in order: a token_field equal to a
// fallback is not tried twice, and an empty token_field is not tried at all.
// mutant: replace || with && in parse_login_response
#[test]
fn no_token_lists_each_path_once() {
    for (field, tried) in [
        (
            "token",
            "token, accessSession, access_session, access_token",
        ),
        (
            "access_token",
            "access_token, accessSession, access_session, token",
        ),
        ("", "accessSession, access_session, access_token, token"),
    ] {
        assert_eq!(
            parse_login_response(200, br#"{"other":"dummy"}"#, field),
            Err(LoginError::NoToken {
                tried: tried.into()
            }),
            "{field:?}"
        );
    }
}

// ---------------------------------------------------------------- applying and masking

// Rule: an auth cookie joins a non-blank Cookie header with `; ` and replaces a blank one.
// mutant: replace match guard !v.trim().is_empty() with true in apply
#[test]
fn an_auth_cookie_replaces_a_blank_cookie_header() {
    let m = AuthMaterial {
        cookies: vec![("sid".into(), "dummy-c".into())],
        ..Default::default()
    };
    for blank in ["", "  "] {
        let mut req = request("https://agent.example/rpc");
        req.headers.push(("Cookie".into(), blank.into()));
        apply(&m, &[], &mut req).unwrap();
        let cookies: Vec<_> = req
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("cookie"))
            .map(|(_, v)| v.as_ref())
            .collect();
        assert_eq!(cookies, vec!["sid=dummy-c"], "{blank:?}");
    }
}

// Rule: the URL written to the log is the URL sent, with each auth query value replaced by
// `***`: same separators, same fragment, whatever query the URL already had.
// mutants: in mask_applied, replace match guard `i + 1 == base.len() || base.ends_with('&')`
// with true / false, replace || with &&, replace == with !=, replace + with - / *
#[test]
fn the_logged_url_is_the_sent_url_with_values_masked() {
    let m = AuthMaterial {
        query: vec![
            ("k".into(), "dummy-q1".into()),
            ("j".into(), "dummy-q2".into()),
        ],
        ..Default::default()
    };
    for before in [
        "https://h/p",
        "https://h/p?",
        "https://h/p?a=1",
        "https://h/p?a=1&",
        "https://h/p#frag",
        "https://h/p?#frag",
        "https://h/p?a=1#frag",
        "https://h/p?a=1&#frag",
        "https://h/p#frag?x=1",
    ] {
        let mut req = request(before);
        apply(&m, &[], &mut req).unwrap();
        let mut logged = req.clone();
        mask_applied(&mut logged, &m, &[], before);
        let want = req
            .url
            .replace("dummy-q1", "***")
            .replace("dummy-q2", "***");
        assert_eq!(logged.url, want, "before: {before}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    // Rule (general form of the one above): for any base URL and query, the logged URL is the
    // sent URL with the auth values masked.
    #[test]
    fn logged_url_matches_sent_url(
        path in "[a-z/]{0,6}",
        q in proptest::option::of("[a-z=&]{0,8}"),
        frag in proptest::option::of("[a-z?=]{0,6}"),
        names in proptest::collection::vec("[a-z]{1,4}", 1..3),
    ) {
        let mut before = format!("https://h/{path}");
        if let Some(q) = q { before = format!("{before}?{q}"); }
        if let Some(f) = frag { before = format!("{before}#{f}"); }
        let m = AuthMaterial {
            query: names.iter().map(|n| (n.clone(), "DUMMYVALUE".to_owned())).collect(),
            ..Default::default()
        };
        let mut req = request(&before);
        apply(&m, &[], &mut req).unwrap();
        let mut logged = req.clone();
        mask_applied(&mut logged, &m, &[], &before);
        prop_assert_eq!(logged.url, req.url.replace("DUMMYVALUE", "***"));
    }
}
