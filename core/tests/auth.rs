//! Built-in authentication (features.md §1.15 AU, a2a-wire §5.1).

use a2at_core::HttpRequest;
use a2at_core::a2a::card::AgentCard;
use a2at_core::auth::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

mod auth_support;
use auth_support::{IV, KEY_HEX, card, creds, key, request_to};

fn request() -> HttpRequest {
    request_to("https://agent.example/rpc")
}

// ---------------------------------------------------------------- AU-10 enc: values

#[test]
fn enc_round_trip_and_plaintext_passthrough() {
    let enc = encrypt_value("s3cr3t pässword", &key(), IV);
    assert!(enc.starts_with("enc:"));
    assert!(!enc.contains("s3cr3t"));
    assert_eq!(
        decrypt_value(&enc, Some(&key())).unwrap(),
        "s3cr3t pässword"
    );
    assert_eq!(decrypt_value("plain", None).unwrap(), "plain");
    assert_eq!(decrypt_value("plain", Some(&key())).unwrap(), "plain");
}

#[test]
fn enc_known_vector_layout() {
    // IV base64 of twelve 0x07 bytes; ciphertext+tag = len(plaintext) + 16 bytes.
    let enc = encrypt_value("abc", &key(), IV);
    let parts: Vec<&str> = enc.splitn(3, ':').collect();
    assert_eq!(parts[0], "enc");
    assert_eq!(parts[1], "BwcHBwcHBwcHBwcH");
    use base64::Engine as _;
    let ct = base64::engine::general_purpose::STANDARD
        .decode(parts[2])
        .unwrap();
    assert_eq!(ct.len(), 3 + 16);
}

#[test]
fn enc_fails_closed() {
    let enc = encrypt_value("secret", &key(), IV);
    assert_eq!(decrypt_value(&enc, None), Err(CredentialError::MissingKey));
    let other = CredentialKey::from_bytes([9; 32]);
    assert_eq!(
        decrypt_value(&enc, Some(&other)),
        Err(CredentialError::DecryptFailed)
    );
    // Tamper with the last byte (the tag).
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (head, ct) = enc.rsplit_once(':').unwrap();
    let mut bytes = b64.decode(ct).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    let tampered = format!("{head}:{}", b64.encode(&bytes));
    assert_eq!(
        decrypt_value(&tampered, Some(&key())),
        Err(CredentialError::DecryptFailed)
    );
    for bad in [
        "enc:",
        "enc:nocolon",
        "enc:!!!:AAAA",
        "enc:AAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        "enc:BwcHBwcHBwcHBwcH:!!!",
        "enc:BwcHBwcHBwcHBwcH:AAAA",
    ] {
        let r = decrypt_value(bad, Some(&key()));
        assert!(
            matches!(r, Err(CredentialError::MalformedEncrypted(_))),
            "{bad}: {r:?}"
        );
    }
}

#[test]
fn key_parsing() {
    assert!(CredentialKey::from_hex(&KEY_HEX.to_uppercase()).is_ok());
    assert!(CredentialKey::from_hex(&format!(" {KEY_HEX}\n")).is_ok());
    assert!(CredentialKey::from_hex("abcd").is_err());
    assert!(CredentialKey::from_hex(&"zz".repeat(32)).is_err());
    assert_eq!(format!("{:?}", key()), "CredentialKey(***)");
}

// ---------------------------------------------------------------- AU-5 credentials file

#[test]
fn login_defaults_and_decryption() {
    let pw = encrypt_value("pw1", &key(), IV);
    let c = creds(json!({"agentA": {"s": {
        "login_url": "https://login.example/auth",
        "request_fields": {"user": "bob", "pass": pw, "n": 3}}}}));
    let SchemeCredential::Login(l) = &c.agent("agentA").unwrap().schemes["s"] else {
        panic!()
    };
    assert_eq!(l.method, "POST");
    assert_eq!(l.content_type, "application/json");
    assert_eq!(l.token_field, "accessSession");
    assert_eq!(l.token_ttl, 3600);
    assert_eq!(l.username_field, "username");
    assert_eq!(l.password_field, "password");
    assert_eq!(l.delivery, Delivery::default());
    assert_eq!(l.request_fields["pass"], json!("pw1"));
    assert_eq!(l.request_fields["n"], json!(3));
    // Debug never shows a secret.
    let c2 = creds(json!({"a": {"s": {"token": "tok-xyz"}}}));
    assert!(!format!("{c2:?}").contains("tok-xyz"));
}

#[test]
fn static_shapes() {
    let c = creds(json!({"a": {
        "k": {"api_key": "K1"},
        "t": {"token": "T1", "auth_header": "X-Auth", "auth_header_prefix": "Tok "},
        "b": {"username": "u", "password": "p"}}}));
    let s = &c.agent("a").unwrap().schemes;
    assert!(
        matches!(&s["k"], SchemeCredential::ApiKey { api_key, .. } if api_key.expose() == "K1")
    );
    assert!(
        matches!(&s["t"], SchemeCredential::Token { delivery, .. } if delivery.auth_header.as_deref() == Some("X-Auth"))
    );
    assert!(matches!(&s["b"], SchemeCredential::Basic { .. }));
}

fn invalid(v: Value) -> CredentialError {
    CredentialsConfig::from_json_value(&v, Some(&key())).unwrap_err()
}

#[test]
fn strict_errors_name_agent_scheme_field() {
    let e = invalid(json!({"a": {"s": {"login_url": "u", "colour": 1}}}));
    assert_eq!(
        e,
        CredentialError::Invalid {
            agent: "a".into(),
            scheme: "s".into(),
            field: "colour".into(),
            problem: Problem::UnknownField
        }
    );
    assert!(e.to_string().contains("colour"));
    let e = invalid(json!({"a": {"s": {"login_url": "u", "token_ttl": "x"}}}));
    assert!(
        matches!(e, CredentialError::Invalid { field, problem: Problem::WrongType(_), .. } if field == "token_ttl")
    );
    let e = invalid(json!({"a": {"s": {"token": "t", "api_key": "k"}}}));
    assert!(matches!(
        e,
        CredentialError::Invalid {
            problem: Problem::Shape(_),
            ..
        }
    ));
    let e = invalid(json!({"a": {"s": {}}}));
    assert!(matches!(
        e,
        CredentialError::Invalid {
            problem: Problem::Shape(_),
            ..
        }
    ));
    let e = invalid(json!({"a": {"s": {"username": "u"}}}));
    assert!(
        matches!(e, CredentialError::Invalid { field, problem: Problem::Missing, .. } if field == "password")
    );
    let e = invalid(json!({"a": {"s": {"api_key": "k", "auth_header": "X"}}}));
    assert!(matches!(
        e,
        CredentialError::Invalid {
            problem: Problem::UnknownField,
            ..
        }
    ));
    let e = invalid(json!({"a": ["x"]}));
    assert!(matches!(
        e,
        CredentialError::Invalid {
            problem: Problem::NotAnObject,
            ..
        }
    ));
    let e = invalid(json!([1]));
    assert!(matches!(
        e,
        CredentialError::Invalid {
            problem: Problem::NotAnObject,
            ..
        }
    ));
    assert!(matches!(
        CredentialsConfig::from_json_str("{", None),
        Err(CredentialError::Json(_))
    ));
}

#[test]
fn enc_value_without_key_fails_at_load() {
    let enc = encrypt_value("p", &key(), IV);
    let v = json!({"a": {"s": {"username": "u", "password": enc}}});
    let e = CredentialsConfig::from_json_value(&v, None).unwrap_err();
    assert!(
        matches!(e, CredentialError::Invalid { ref field, problem: Problem::Decrypt(ref d), .. }
        if field == "password" && **d == CredentialError::MissingKey)
    );
    let other = CredentialKey::from_bytes([1; 32]);
    let e = CredentialsConfig::from_json_value(&v, Some(&other)).unwrap_err();
    assert!(
        matches!(e, CredentialError::Invalid { problem: Problem::Decrypt(ref d), .. } if **d == CredentialError::DecryptFailed)
    );
}

// ---------------------------------------------------------------- AU-4 / AU-8 planning

fn secured_card() -> AgentCard {
    card(json!({"name": "a",
        "supportedInterfaces": [{"url": "https://agent.example/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "basic": {"type": "http", "scheme": "basic"},
            "hk": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "qk": {"type": "apiKey", "in": "query", "name": "api key"},
            "ck": {"type": "apiKey", "in": "cookie", "name": "sid"},
            "tls": {"mtlsSecurityScheme": {}}},
        "securityRequirements": [{"schemes": ["bearer", "qk"]}, {"schemes": ["hk"]}, {"schemes": ["basic"]}]}))
}

#[test]
fn no_requirements_means_no_builtin_auth() {
    let c = card(
        json!({"name": "a", "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}),
    );
    let cr = creds(json!({"a": {"bearer": {"token": "t"}}}));
    let plan = plan_auth(&c, cr.agent("a"), AuthContext::default()).unwrap();
    assert!(plan.is_empty());
    let c = card(json!({"name": "a", "securityRequirements": []}));
    assert!(
        plan_auth(&c, None, AuthContext::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn first_fully_satisfied_requirement_wins() {
    // Only `bearer` of the first requirement has credentials: skip it, use `hk`.
    let cr = creds(
        json!({"a": {"bearer": {"token": "T"}, "hk": {"api_key": "K"}, "basic": {"username": "u", "password": "p"}}}),
    );
    let plan = plan_auth(&secured_card(), cr.agent("a"), AuthContext::default()).unwrap();
    assert_eq!(plan.requirement, Some(1));
    let m = plan.material(&BTreeMap::new()).unwrap();
    assert_eq!(m.headers, vec![("X-API-Key".to_owned(), "K".to_owned())]);

    // Both schemes of the first requirement: bearer header + query key.
    let cr = creds(json!({"a": {"bearer": {"token": "T"}, "qk": {"api_key": "Q&1"}}}));
    let plan = plan_auth(&secured_card(), cr.agent("a"), AuthContext::default()).unwrap();
    assert_eq!(plan.requirement, Some(0));
    let m = plan.material(&BTreeMap::new()).unwrap();
    assert_eq!(
        m.headers,
        vec![("Authorization".to_owned(), "Bearer T".to_owned())]
    );
    assert_eq!(m.query, vec![("api key".to_owned(), "Q&1".to_owned())]);
    let mut req = request();
    apply(&m, &[], &mut req).unwrap();
    assert_eq!(req.url, "https://agent.example/rpc?api%20key=Q%261");

    // Basic.
    let cr = creds(json!({"a": {"basic": {"username": "Aladdin", "password": "open sesame"}}}));
    let plan = plan_auth(&secured_card(), cr.agent("a"), AuthContext::default()).unwrap();
    let m = plan.material(&BTreeMap::new()).unwrap();
    assert_eq!(
        m.headers,
        vec![(
            "Authorization".to_owned(),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==".to_owned()
        )]
    );
}

#[test]
fn unsatisfied_requirements_block_the_send() {
    let e = plan_auth(&secured_card(), None, AuthContext::default()).unwrap_err();
    assert!(
        matches!(&e, AuthError::NoUsableCredentials { agent, required } if agent == "a" && required == "bearer+qk | hk | basic")
    );
    let cr = creds(json!({"other": {"hk": {"api_key": "K"}}}));
    assert!(plan_auth(&secured_card(), cr.agent("a"), AuthContext::default()).is_err());
    // An AuthProvider may be the only auth source (AU-1).
    let ctx = AuthContext {
        provider_configured: true,
        ..Default::default()
    };
    assert!(plan_auth(&secured_card(), None, ctx).unwrap().is_empty());
}

#[test]
fn empty_requirement_allows_anonymous_and_mtls_needs_a_certificate() {
    let c = card(
        json!({"name": "a", "securitySchemes": {"tls": {"mtlsSecurityScheme": {}}},
        "securityRequirements": [{"schemes": ["tls"]}, {"schemes": {}}]}),
    );
    let plan = plan_auth(&c, None, AuthContext::default()).unwrap();
    assert_eq!(plan.requirement, Some(1));
    assert!(plan.is_empty());
    let ctx = AuthContext {
        client_certificate: true,
        ..Default::default()
    };
    let plan = plan_auth(&c, None, ctx).unwrap();
    assert_eq!(plan.requirement, Some(0));
    assert_eq!(
        plan.steps,
        vec![("tls".to_owned(), SchemeStep::ClientCertificate)]
    );
}

#[test]
fn incompatible_credentials_are_errors() {
    let c = card(
        json!({"name": "a", "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "securityRequirements": [{"schemes": ["bearer"]}]}),
    );
    let cr = creds(json!({"a": {"bearer": {"api_key": "K"}}}));
    assert!(matches!(
        plan_auth(&c, cr.agent("a"), AuthContext::default()),
        Err(AuthError::IncompatibleCredential { .. })
    ));
}

#[test]
fn custom_header_prefix_accept_cookie() {
    let c = card(json!({"name": "a", "securitySchemes": {
            "s": {"type": "http", "scheme": "bearer"},
            "ck": {"type": "apiKey", "in": "cookie", "name": "sid"}},
        "securityRequirements": [{"schemes": ["s", "ck"]}]}));
    let cr = creds(json!({"a": {
        "s": {"token": "T", "auth_header": "X-Access", "auth_header_prefix": "Session ", "accept_header": "application/vnd+json"},
        "ck": {"api_key": "C1"}}}));
    let plan = plan_auth(&c, cr.agent("a"), AuthContext::default()).unwrap();
    let m = plan.material(&BTreeMap::new()).unwrap();
    let mut req = request();
    req.headers.push(("cookie".into(), "a=b".into()));
    apply(&m, &[("X-Trace".into(), "1".into())], &mut req).unwrap();
    let h = |n: &str| {
        req.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(n))
            .map(|(_, v)| v.as_ref())
            .collect::<Vec<_>>()
    };
    assert_eq!(h("X-Access"), vec!["Session T"]);
    assert_eq!(h("Accept"), vec!["application/vnd+json"]);
    assert_eq!(h("Cookie"), vec!["a=b; sid=C1"]);
    assert_eq!(h("X-Trace"), vec!["1"]);
    assert_eq!(h("Authorization"), Vec::<&str>::new());
}

// ---------------------------------------------------------------- AU-2 merging

#[test]
fn header_merge_conflicts() {
    let b = vec![("Authorization".to_owned(), "Bearer A".to_owned())];
    let same = vec![("authorization".to_owned(), "Bearer A".to_owned())];
    let diff = vec![("AUTHORIZATION".to_owned(), "Bearer B".to_owned())];
    assert_eq!(merge_headers(&b, &same).unwrap(), b);
    assert_eq!(
        merge_headers(&b, &diff),
        Err(AuthError::HeaderConflict {
            header: "AUTHORIZATION".into()
        })
    );
    let mut req = request();
    let m = AuthMaterial {
        headers: b,
        ..Default::default()
    };
    assert!(apply(&m, &diff, &mut req).is_err());
}

#[test]
fn a_query_credential_is_refused_on_grpc_and_nothing_is_changed() {
    let m = AuthMaterial {
        headers: vec![("Authorization".into(), "Bearer t".into())],
        query: vec![("key".into(), "k1".into())],
        ..Default::default()
    };
    let mut req = request();
    req.http2 = true;
    let before = req.clone();
    let e = apply(&m, &[], &mut req).unwrap_err();
    assert!(matches!(&e, AuthError::QueryOverGrpc { agent } if *agent == req.agent));
    assert!(!e.to_string().contains("k1"), "{e}");
    assert_eq!(req, before);
    // Headers alone are metadata: fine on gRPC.
    let headers_only = AuthMaterial {
        query: Vec::new(),
        ..m
    };
    apply(&headers_only, &[], &mut req).unwrap();
    assert!(req.headers.iter().any(|(n, _)| n == "Authorization"));
}

#[test]
fn query_appending() {
    let p = vec![("k".to_owned(), "v w".to_owned())];
    assert_eq!(append_query("http://h/p", &p), "http://h/p?k=v%20w");
    assert_eq!(append_query("http://h/p?a=1", &p), "http://h/p?a=1&k=v%20w");
    assert_eq!(append_query("http://h/p?", &p), "http://h/p?k=v%20w");
    assert_eq!(append_query("http://h/p#f", &p), "http://h/p?k=v%20w#f");
    assert_eq!(append_query("http://h/p", &[]), "http://h/p");
}

// ---------------------------------------------------------------- AU-6 login

fn login_cfg(v: Value) -> LoginConfig {
    let cr = creds(json!({"a": {"s": v}}));
    match cr.agents["a"].schemes["s"].clone() {
        SchemeCredential::Login(l) => l,
        other => panic!("{other:?}"),
    }
}

#[test]
fn login_request_json_and_form() {
    let pw = encrypt_value("p@ss word", &key(), IV);
    let l = login_cfg(
        json!({"login_url": "https://l/x", "request_fields": {"user": "bob", "pwd": pw}}),
    );
    let r = login_request(&l);
    assert_eq!(r.method, "POST");
    assert_eq!(r.url, "https://l/x");
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body, json!({"user": "bob", "pwd": "p@ss word"}));
    assert!(!format!("{r:?}").contains("p@ss"));

    let l = login_cfg(
        json!({"login_url": "https://l/x", "content_type": "application/x-www-form-urlencoded",
        "username": "bob", "password": pw, "password_field": "pass"}),
    );
    let r = login_request(&l);
    assert_eq!(
        String::from_utf8(r.body).unwrap(),
        "username=bob&pass=p%40ss%20word"
    );
    assert!(r.headers.contains(&(
        "Content-Type".into(),
        "application/x-www-form-urlencoded".into()
    )));
}

#[test]
fn login_response_paths_and_fallbacks() {
    let t = parse_login_response(
        200,
        br#"{"data":{"session":{"id":"S1"}}}"#,
        "data.session.id",
    );
    assert_eq!(t.unwrap().value.expose(), "S1");
    for (body, want) in [
        (r#"{"accessSession":"A"}"#, "A"),
        (r#"{"access_session":"B"}"#, "B"),
        (r#"{"access_token":"C"}"#, "C"),
        (r#"{"token":"D"}"#, "D"),
        (r#"{"access_token":"","token":"E"}"#, "E"),
    ] {
        assert_eq!(
            parse_login_response(201, body.as_bytes(), "missing.path")
                .unwrap()
                .value
                .expose(),
            want
        );
    }
    assert_eq!(
        parse_login_response(401, br#"{"token":"x"}"#, "token"),
        Err(LoginError::Status { status: 401 })
    );
    assert_eq!(
        parse_login_response(200, b"<html>", "token"),
        Err(LoginError::NotJson)
    );
    let e = parse_login_response(200, br#"{"tok":"x"}"#, "a.b").unwrap_err();
    assert_eq!(
        e,
        LoginError::NoToken {
            tried: "a.b, accessSession, access_session, access_token, token".into()
        }
    );
}

// ---------------------------------------------------------------- AU-7 token cache

#[test]
fn token_cache_state_machine() {
    let mut c = TokenCache::new();
    assert_eq!(c.get("a", "s", 1000), CacheState::NeedsLogin);
    assert_eq!(c.begin_login("a", "s"), BeginLogin::Go);
    assert_eq!(c.get("a", "s", 1000), CacheState::LoginInProgress);
    assert_eq!(c.begin_login("a", "s"), BeginLogin::Wait);
    // Another key is independent.
    assert_eq!(c.begin_login("a", "t"), BeginLogin::Go);
    c.finish_login("a", "s", Token::new("T"), 3600, 1000);
    assert_eq!(c.get("a", "s", 1000), CacheState::Fresh(Token::new("T")));
    // Fresh until 60 s before expiry (4600).
    assert_eq!(c.get("a", "s", 4539), CacheState::Fresh(Token::new("T")));
    assert_eq!(c.get("a", "s", 4540), CacheState::NeedsLogin);
    assert_eq!(c.begin_login("a", "s"), BeginLogin::Go);
    assert_eq!(c.get("a", "s", 4540), CacheState::LoginInProgress);
    // The old token is still served to others while it is within the skew window? No: stale
    // tokens are never served; waiters wait.
    c.fail_login("a", "s");
    assert_eq!(c.get("a", "s", 4540), CacheState::NeedsLogin);
    c.finish_login("a", "s", Token::new("U"), 3600, 4540);
    c.invalidate("a", "s");
    assert_eq!(c.get("a", "s", 4541), CacheState::NeedsLogin);
}

#[test]
fn resolve_drives_login_then_ready() {
    let c = card(
        json!({"name": "a", "securitySchemes": {"s": {"type": "http", "scheme": "bearer"}},
        "securityRequirements": [{"schemes": ["s"]}]}),
    );
    let cr = creds(
        json!({"a": {"s": {"login_url": "https://l/login", "token_field": "data.tok", "token_ttl": 100,
        "request_fields": {"u": "x"}, "accept_header": "application/json"}}}),
    );
    let plan = plan_auth(&c, cr.agent("a"), AuthContext::default()).unwrap();
    let mut cache = TokenCache::new();
    let Resolution::Login(pending) = plan.resolve("a", &mut cache, 10).unwrap() else {
        panic!()
    };
    assert_eq!(pending.scheme, "s");
    assert_eq!(pending.token_ttl, 100);
    assert_eq!(pending.request.url, "https://l/login");
    // A second request meanwhile waits.
    assert_eq!(
        plan.resolve("a", &mut cache, 11).unwrap(),
        Resolution::Wait { scheme: "s".into() }
    );
    let token =
        parse_login_response(200, br#"{"data":{"tok":"TT"}}"#, &pending.token_field).unwrap();
    cache.finish_login("a", &pending.scheme, token, pending.token_ttl, 12);
    let Resolution::Ready(m) = plan.resolve("a", &mut cache, 13).unwrap() else {
        panic!()
    };
    assert_eq!(
        m.headers,
        vec![
            ("Authorization".to_owned(), "Bearer TT".to_owned()),
            ("Accept".to_owned(), "application/json".to_owned())
        ]
    );
    // 100 s TTL: refresh at 52.
    assert!(matches!(
        plan.resolve("a", &mut cache, 52).unwrap(),
        Resolution::Login(_)
    ));
    assert_eq!(
        plan.material(&BTreeMap::new()),
        Err(AuthError::TokenMissing { scheme: "s".into() })
    );
}

#[test]
fn login_token_on_api_key_scheme_uses_its_location() {
    let c = card(
        json!({"name": "a", "securitySchemes": {"k": {"type": "apiKey", "in": "header", "name": "X-Session"}},
        "securityRequirements": [{"schemes": ["k"]}]}),
    );
    let cr = creds(json!({"a": {"k": {"login_url": "https://l"}}}));
    let plan = plan_auth(&c, cr.agent("a"), AuthContext::default()).unwrap();
    let mut t = BTreeMap::new();
    t.insert("k".to_owned(), Token::new("Z"));
    assert_eq!(
        plan.material(&t).unwrap().headers,
        vec![("X-Session".to_owned(), "Z".to_owned())]
    );
}

#[test]
fn url_codec() {
    assert_eq!(url_encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    assert_eq!(url_decode("a+b%26c%3dd%C3%A9%"), "a b&c=dé%");
}

#[test]
fn applied_auth_values_are_masked_for_the_log_whatever_their_names() {
    let material = AuthMaterial {
        headers: vec![
            ("X-Session".into(), "tok-1".into()),
            ("Accept".into(), "application/vnd+json".into()),
        ],
        query: vec![("k".into(), "query-secret".into())],
        cookies: vec![("sid".into(), "cookie-secret".into())],
    };
    let provider = vec![("X-Tenant-Key".into(), "hook-secret".into())];
    let mut req = request();
    let before = req.url.clone();
    apply(&material, &provider, &mut req).unwrap();
    assert!(
        req.url.contains("k=query-secret"),
        "the wire keeps the values"
    );
    let mut logged = req.clone();
    mask_applied(&mut logged, &material, &provider, &before);
    let text = format!("{:?} {}", logged.headers, logged.url);
    for secret in ["tok-1", "query-secret", "hook-secret"] {
        assert!(!text.contains(secret), "{secret}: {text}");
    }
    assert!(logged.url.ends_with("k=***"), "{}", logged.url);
    assert!(
        text.contains("application/vnd+json"),
        "Accept stays visible"
    );
    assert_eq!(
        logged.headers.len(),
        req.headers.len(),
        "no header added or lost"
    );
}
