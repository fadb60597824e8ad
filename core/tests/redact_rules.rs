//! Rules of redaction (features.md PL-3) stated against the text it returns: the masked value
//! is exactly the secret one, and text around it stays as sent.

use a2at_core::redact::*;

/// The form rules name `*token` and `*secret` by their ending: a form or query name that is
/// URI-shaped is still secret by it (only JSON keys are exempt, for extension URIs).
#[test]
fn a_uri_shaped_form_name_ending_in_token_or_secret_is_masked() {
    for name in ["https://ex.com/ns/token", "https://ex.com/ns/client_secret"] {
        assert!(!is_secret_name(name), "{name}");
        assert!(is_secret_form_name(name), "{name}");
        assert_eq!(
            redact_form(&format!("x=1&{name}=S3cr3tV&y=2")),
            format!("x=1&{name}=***&y=2")
        );
    }
    assert!(!is_secret_form_name("https://ex.com/ns/tokens"));
}

/// A secret object or array cut off by the end of the text (a capped or streamed body) is
/// masked to the end, whether the cut falls inside a string or between values.
#[test]
fn a_secret_container_cut_off_between_values_is_masked_to_the_end() {
    for text in [
        r#"{"token":{"a":1"#,
        r#"{"token":[1,2"#,
        r#"{"token":{"a":"S3cr3tV","#,
        r#"{"token":{"#,
    ] {
        assert_eq!(redact_json_text(text), r#"{"token":"***"#, "{text}");
    }
}

/// Text that ends right after a string (a bare JSON string, an event's data, a cut body) is
/// redacted like any other: credentials in the string masked, the rest kept.
#[test]
fn text_ending_with_a_string_is_redacted_and_kept() {
    assert_eq!(redact_json_text(r#""Bearer S3cr3tV""#), r#""Bearer ***""#);
    assert_eq!(redact_json_text(r#""plain""#), r#""plain""#);
    assert_eq!(redact_json_text(r#"{"a":"b""#), r#"{"a":"b""#);
    assert_eq!(redact_json_text(r#"{"a":"b" "#), r#"{"a":"b" "#);
    assert_eq!(redact_json_text(r#"["x", "y""#), r#"["x", "y""#);
}

/// The userinfo of a URL is masked whatever the length of the host after it.
#[test]
fn url_userinfo_is_masked_before_a_short_host() {
    for (url, logged) in [
        ("https://u:pw@host/p", "https://***@host/p"),
        ("https://user:S3cr3tV@h/", "https://***@h/"),
        ("http://a:b@hh:80/x?y=1", "http://***@hh:80/x?y=1"),
        ("https://u:pw@host", "https://***@host"),
        ("https://host/p@q", "https://host/p@q"),
    ] {
        assert_eq!(redact_url(url), logged, "{url}");
    }
}

/// A secret value is masked whole, up to its own end: a string holding separators, or an
/// object or array holding strings with brackets or quotes, does not end it early.
#[test]
fn a_secret_value_is_masked_whole_whatever_its_strings_hold() {
    for value in [
        r#""a b, c} d""#,
        r#""x\"y, z""#,
        r#"{"note":"}] S3cr3tV","k":"v"}"#,
        r#"["[", "S3cr3tV ]", {"q":"\"}"}]"#,
    ] {
        let text = format!(r#"{{"password":{value},"ok":1}}"#);
        assert_eq!(
            redact_json_text(&text),
            r#"{"password":"***","ok":1}"#,
            "{text}"
        );
    }
}
