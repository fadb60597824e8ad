//! URL and form encoding helpers shared by logins, discovery requests and the protocol log.

/// Whether `content_type` is `application/x-www-form-urlencoded` (parameters ignored).
pub fn is_form_content_type(content_type: &str) -> bool {
    crate::io::media_type(content_type).eq_ignore_ascii_case("application/x-www-form-urlencoded")
}

/// Appends URL-encoded query parameters to `url`, before any `#fragment`.
pub fn append_query(url: &str, params: &[(String, String)]) -> String {
    if params.is_empty() {
        return url.to_owned();
    }
    let (base, fragment) = match url.find('#') {
        Some(i) => (&url[..i], &url[i..]),
        None => (url, ""),
    };
    let mut out = base.to_owned();
    for (k, v) in params {
        if !out.contains('?') {
            out.push('?');
        } else if !(out.ends_with('?') || out.ends_with('&')) {
            out.push('&');
        }
        out.push_str(&url_encode(k));
        out.push('=');
        out.push_str(&url_encode(v));
    }
    out.push_str(fragment);
    out
}

/// Percent-encodes everything except the RFC 3986 unreserved characters (valid for query
/// strings, path segments and form bodies).
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decodes `%XX` and `+` (form encoding), lossily.
pub fn url_decode(s: &str) -> String {
    decode(s, true)
}

/// Decodes `%XX` sequences as UTF-8 bytes, lossily; `+` stays `+`, and a `%` not followed by
/// two hex digits is kept as it is.
pub fn percent_decode(s: &str) -> String {
    decode(s, false)
}

fn decode(s: &str, plus_is_space: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' if plus_is_space => out.push(b' '),
            b'%' if i + 2 < b.len() => match (hex_digit(b[i + 1]), hex_digit(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h << 4) | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(crate) fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
