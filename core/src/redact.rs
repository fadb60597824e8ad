//! Redaction of secrets in logged text: header values, JSON on the wire text, form
//! bodies, query strings and URLs. Redaction cannot be turned off; the protocol log builds its
//! entries with these functions, logins and discovery their `Debug` output and logged URLs.
//! A leaf module: it depends on no other module that logs.

use crate::a2a::error::{REDACTED, redact_str};
use crate::urlenc::url_decode;

/// The replacement of secret values.
pub const MASK: &str = "***";
/// What an access token reads in logged URLs; it is a placeholder, not a secret, so
/// redaction keeps it.
pub const ANONYMOUS: &str = "<anonymous>";

const SECRET_PARTS: [&str; 5] = ["authorization", "cookie", "token", "secret", "password"];
const SECRET_EXACT: [&str; 6] = [
    "pwd",
    "passwd",
    "accesssession",
    "x-api-key",
    "api-key",
    "apikey",
];

/// Whether a header name or JSON key names a secret. URI-shaped names (with `://`) are
/// never secret.
pub fn is_secret_name(name: &str) -> bool {
    if name.contains("://") {
        return false;
    }
    let n = name.trim().to_ascii_lowercase();
    SECRET_PARTS.iter().any(|p| n.contains(p)) || SECRET_EXACT.contains(&n.as_str())
}

/// Whether a form or query parameter name is secret (the form rules plus [`is_secret_name`]).
pub fn is_secret_form_name(name: &str) -> bool {
    let n = name.trim().to_ascii_lowercase();
    is_secret_name(&n)
        || matches!(
            n.as_str(),
            "password" | "passwd" | "pwd" | "accesssession" | "api-key" | "api_key" | "apikey"
        )
        || n.ends_with("token")
        || n.ends_with("secret")
}

/// Masks `Bearer …` / `Basic …` credentials and the values of secret `name=value` pairs
/// (e.g. `token=…` in a query string or an unlabelled form body) in free text.
pub fn mask_credentials(s: &str) -> String {
    let r = redact_str(s);
    let r = if r == s { r } else { r.replace(REDACTED, MASK) };
    if r.contains('=') { mask_pairs(&r) } else { r }
}

fn mask_pairs(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut last, mut i) = (0, 0);
    while let Some(p) = s[i..].find('=') {
        let eq = i + p;
        let mut st = eq;
        while st > 0
            && (b[st - 1].is_ascii_alphanumeric() || matches!(b[st - 1], b'_' | b'-' | b'.' | b'%'))
        {
            st -= 1;
        }
        let vs = eq + 1;
        let mut ve = vs;
        while ve < b.len()
            && !matches!(b[ve], b'&' | b';' | b',' | b'"' | b'\'' | b'<' | b'>')
            && !is_ws(b[ve])
        {
            ve += 1;
        }
        // A pair without a name (`=v`) has the empty name, which is not secret.
        let secret_name = is_secret_form_name(&url_decode(&s[st..eq]));
        if ve > vs && (secret_name || carries_credential(&s[vs..ve])) {
            out.push_str(&s[last..vs]);
            out.push_str(MASK);
            last = ve;
            i = ve;
        } else {
            i = vs;
        }
    }
    out.push_str(&s[last..]);
    out
}

/// Whether a form-encoded value is, once decoded, a `Bearer …` or `Basic …` credential
/// (`Bearer+abc`, `Bearer%20abc`): free-text masking sees only the literal space.
fn carries_credential(encoded: &str) -> bool {
    let decoded = url_decode(encoded);
    redact_str(&decoded) != decoded
}

/// A header value as logged: `***` for a secret name, credentials masked otherwise.
pub fn redact_header(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        MASK.to_owned()
    } else {
        mask_credentials(value)
    }
}

pub(crate) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The index just after the string starting at `b[start] == b'"'`, or `None` if unterminated.
pub(crate) fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The index just after the JSON value starting at `start`, or `None` if the text ends first.
fn value_end(b: &[u8], start: usize) -> Option<usize> {
    match b.get(start)? {
        b'"' => string_end(b, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let mut i = start;
            while i < b.len() {
                if matches!(b[i], b',' | b'}' | b']') || is_ws(b[i]) {
                    return Some(i);
                }
                i += 1;
            }
            None
        }
    }
}

/// Redacts JSON wire text without reserialising it: values under secret keys become
/// `"***"` (whole objects and arrays included), strings elsewhere have `Bearer`/`Basic`
/// credentials masked, and a secret value cut off by the end of the text (a truncated or
/// streamed body) is masked to the end. Text that is not JSON is scanned the same way.
pub fn redact_json_text(text: &str) -> String {
    redact_json_with(text, &|k| is_secret_name(k))
}

pub(crate) fn redact_json_with(text: &str, secret: &dyn Fn(&str) -> bool) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let Some(q) = text[i..].find('"').map(|q| i + q) else {
            out.push_str(&mask_credentials(&text[i..]));
            break;
        };
        out.push_str(&mask_credentials(&text[i..q]));
        let Some(e) = string_end(b, q) else {
            // An unterminated string: its content may be a cut-off secret of unknown key.
            out.push_str(&mask_credentials(&text[q..]));
            break;
        };
        let raw = &text[q..e];
        let mut j = e;
        while j < b.len() && is_ws(b[j]) {
            j += 1;
        }
        if j < b.len() && b[j] == b':' {
            // A key.
            let key: String = serde_json::from_str(raw).unwrap_or_else(|_| raw.to_owned());
            out.push_str(raw);
            let mut k = j + 1;
            while k < b.len() && is_ws(b[k]) {
                k += 1;
            }
            out.push_str(&text[e..k]);
            if secret(&key) {
                if k >= b.len() {
                    break;
                }
                match value_end(b, k) {
                    Some(ve) => {
                        out.push('"');
                        out.push_str(MASK);
                        out.push('"');
                        i = ve;
                    }
                    None => {
                        // Cut-off secret: mask to the end of the text.
                        out.push('"');
                        out.push_str(MASK);
                        break;
                    }
                }
            } else {
                i = k;
            }
        } else {
            out.push_str(&mask_credentials(raw));
            i = e;
        }
    }
    out
}

/// Redacts an `application/x-www-form-urlencoded` body or query string.
pub fn redact_form(text: &str) -> String {
    text.split('&')
        .map(|pair| match pair.split_once('=') {
            // The DS-9 placeholder stands where a token was taken out: it is no secret.
            Some((_, v)) if v == ANONYMOUS => pair.to_owned(),
            Some((k, v)) => {
                if is_secret_form_name(&url_decode(k)) {
                    format!("{k}={MASK}")
                } else {
                    let dv = url_decode(v);
                    if mask_credentials(&dv) != dv {
                        format!("{k}={MASK}")
                    } else {
                        pair.to_owned()
                    }
                }
            }
            None => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Redacts a URL for logs: secret parameters (e.g. `access_token`, `api_key`) of the query and
/// of the fragment become `***`, and a `user:password@` userinfo becomes `***@`. The fragment
/// counts because OAuth's implicit flow hands tokens over in it (`#access_token=…`).
pub fn redact_url(url: &str) -> String {
    let (before_frag, frag) = match url.find('#') {
        Some(i) => (&url[..i], format!("#{}", redact_form(&url[i + 1..]))),
        None => (url, String::new()),
    };
    let (base, query) = match before_frag.find('?') {
        Some(i) => (&before_frag[..i], Some(&before_frag[i + 1..])),
        None => (before_frag, None),
    };
    let mut base = base.to_owned();
    if let Some(s) = base.find("://") {
        let auth_end = base[s + 3..].find('/').map_or(base.len(), |p| s + 3 + p);
        if let Some(at) = base[s + 3..auth_end].rfind('@') {
            base.replace_range(s + 3..s + 3 + at, MASK);
        }
    }
    match query {
        Some(q) => format!("{base}?{}{frag}", redact_form(q)),
        None => format!("{base}{frag}"),
    }
}
