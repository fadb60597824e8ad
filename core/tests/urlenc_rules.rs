//! Rules of URL and form encoding, stated against the text the helpers return: what a login
//! form body, a discovery query and a gRPC message carry on the wire, and what they decode to.

use a2at_core::a2a::grpc::status::percent_decode;
use a2at_core::auth::{append_query, is_form_content_type, url_decode, url_encode};
use proptest::prelude::*;

/// The form media type is recognised whatever its case, its surrounding blanks and its
/// parameters, and nothing else is: a JSON login body must never be sent as a form.
#[test]
fn only_the_form_media_type_is_a_form_whatever_its_case_and_parameters() {
    for form in [
        "application/x-www-form-urlencoded",
        "Application/X-WWW-Form-URLEncoded",
        " application/x-www-form-urlencoded ; charset=utf-8",
    ] {
        assert!(is_form_content_type(form), "{form}");
    }
    for other in [
        "application/json",
        "",
        "text/plain; x=application/x-www-form-urlencoded",
        "application/x-www-form-urlencoded-extra",
    ] {
        assert!(!is_form_content_type(other), "{other}");
    }
}

/// The unreserved characters of RFC 3986 go as they are and every other byte as `%XX` in
/// capitals: the text is the same in a query, a path segment and a form body.
#[test]
fn only_unreserved_characters_are_left_unencoded() {
    let unreserved = "azAZ09-._~";
    assert_eq!(url_encode(unreserved), unreserved);
    assert_eq!(url_encode(""), "");
    assert_eq!(
        url_encode("a b/c?d=e&f+g%h#ü"),
        "a%20b%2Fc%3Fd%3De%26f%2Bg%25h%23%C3%BC"
    );
}

/// Query parameters are added with `?` first and `&` between, after any query the URL
/// already has, and before its fragment, which stays last.
#[test]
fn query_parameters_join_the_existing_query_before_the_fragment() {
    let params = |kv: &[(&str, &str)]| -> Vec<(String, String)> {
        kv.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let two = params(&[("a", "1"), ("b c", "d&e")]);
    for (url, want) in [
        ("https://h/p", "https://h/p?a=1&b%20c=d%26e"),
        ("https://h/p?x=0", "https://h/p?x=0&a=1&b%20c=d%26e"),
        ("https://h/p?", "https://h/p?a=1&b%20c=d%26e"),
        ("https://h/p?x=0&", "https://h/p?x=0&a=1&b%20c=d%26e"),
        ("https://h/p#frag", "https://h/p?a=1&b%20c=d%26e#frag"),
        ("https://h/p?x=0#f?g", "https://h/p?x=0&a=1&b%20c=d%26e#f?g"),
    ] {
        assert_eq!(append_query(url, &two), want, "{url}");
    }
    assert_eq!(
        append_query("https://h/p", &params(&[("token", "")])),
        "https://h/p?token="
    );
    assert_eq!(append_query("https://h/p#f", &[]), "https://h/p#f");
}

/// Form decoding turns `+` into a space and `%XX` (either case) into its byte; the plain
/// percent decoding of gRPC messages keeps `+` as it is.
#[test]
fn plus_is_a_space_only_in_form_decoding() {
    assert_eq!(url_decode("a+b%20c"), "a b c");
    assert_eq!(percent_decode("a+b%20c"), "a+b c");
    assert_eq!(url_decode("%41%62%7e%7E%2f%2F%09"), "Ab~~//\t");
    assert_eq!(percent_decode("%c3%bc%C3%BC"), "üü");
    assert_eq!(url_decode("%30%39%3a%3A%40%46%47%60%66%67"), "09::@FG`fg");
}

/// A `%` that is not followed by two hex digits, at the end of the text or before other
/// characters, is kept as it is with what follows: decoding never fails on bad input.
#[test]
fn a_percent_without_two_hex_digits_is_kept() {
    for (text, want) in [
        ("%", "%"),
        ("%4", "%4"),
        ("a%", "a%"),
        ("a%4", "a%4"),
        ("%%41", "%A"),
        ("%g1", "%g1"),
        ("%1g", "%1g"),
        ("%G0%:0%/0%@0%`0", "%G0%:0%/0%@0%`0"),
        ("100%", "100%"),
        ("%41%", "A%"),
        ("%41%4", "A%4"),
    ] {
        assert_eq!(url_decode(text), want, "{text}");
        assert_eq!(percent_decode(text), want, "{text}");
    }
}

/// Bytes that are not UTF-8 decode to the replacement character instead of failing.
#[test]
fn invalid_utf8_decodes_lossily() {
    assert_eq!(url_decode("a%FFb"), "a\u{FFFD}b");
    assert_eq!(percent_decode("%C3"), "\u{FFFD}");
}

/// `text` with the hex digits of its `%XX` escapes in lower case.
fn lower_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut left = 0;
    for c in text.chars() {
        if c == '%' {
            left = 2;
            out.push(c);
        } else if left > 0 {
            left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

proptest! {
    // Rule: decoding undoes encoding for any text, so a value sent in a form or a query
    // arrives unchanged; the digits may be in either case.
    #[test]
    fn decoding_undoes_encoding_in_either_hex_case(s in "\\PC*", lower in any::<bool>()) {
        let encoded = url_encode(&s);
        prop_assert!(encoded
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
        let encoded = if lower { lower_escapes(&encoded) } else { encoded };
        prop_assert_eq!(url_decode(&encoded), s.clone());
        prop_assert_eq!(percent_decode(&encoded), s);
    }

    // Rule: text without `%` and `+` decodes to itself: decoding touches nothing else.
    #[test]
    fn text_without_escapes_decodes_to_itself(s in "[^%+]*") {
        prop_assert_eq!(url_decode(&s), s.clone());
        prop_assert_eq!(percent_decode(&s), s);
    }
}
