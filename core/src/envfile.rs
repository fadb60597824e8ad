//! `.env` file parsing, without reading files or the environment: the runtime reads the
//! file and decides what the values are used for (the engine never loads `.env` implicitly).

/// The `NAME=value` entries of a `.env` text, in file order: blank lines and lines starting
/// with `#` are skipped, each line is split on its first `=`, name and value are trimmed, and
/// one pair of surrounding **double** quotes is stripped from the value. Lines without `=` or
/// with an empty name are skipped. When a name repeats, the first entry wins (a later one would
/// overwrite a variable that is already set).
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || out.iter().any(|(n, _)| n == name) {
            continue;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        out.push((name.to_owned(), value.to_owned()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::parse_env_file;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn comments_blanks_first_equals_trimming_and_double_quotes() {
        let text = "# a comment\n\n  A2AT_CRED_KEY = \"ab=cd\"  \nPLAIN=x=y\n  # indented comment\n\
                    SINGLE='kept'\nEMPTY=\nNO_EQUALS\n=nameless\nHALF=\"open\nPLAIN=second\n";
        assert_eq!(
            parse_env_file(text),
            pairs(&[
                ("A2AT_CRED_KEY", "ab=cd"),
                ("PLAIN", "x=y"),
                ("SINGLE", "'kept'"),
                ("EMPTY", ""),
                ("HALF", "\"open"),
            ])
        );
    }

    #[test]
    fn crlf_lines_and_an_empty_text() {
        assert_eq!(parse_env_file(""), Vec::new());
        assert_eq!(
            parse_env_file("A=1\r\nB=\"2\"\r\n"),
            pairs(&[("A", "1"), ("B", "2")])
        );
    }
}
