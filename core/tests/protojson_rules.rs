//! Rules of the ProtoJSON reading helpers (`core/src/a2a/protojson.rs`) that the mutation run
//! of that file showed were not yet pinned down, each stated against what a caller sees: the
//! value a type's `from_json` reads, and the [`DecodeError`] it reports.

use a2at_core::a2a::{DecodeError, DecodeErrorKind, SendMessageConfiguration};
use proptest::prelude::*;
use serde_json::{Value, json};

fn history_length(v: Value) -> Result<Option<i32>, DecodeError> {
    SendMessageConfiguration::from_json(&json!({ "historyLength": v })).map(|c| c.history_length)
}

fn bad_integer(text: &str) -> DecodeError {
    DecodeError {
        path: "$.historyLength".to_owned(),
        kind: DecodeErrorKind::BadInteger(text.to_owned()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// An integer may arrive as a numeric string in any spelling a JSON number allows, a
    /// fraction or an exponent included (`"3.0"`, `"30e-1"`), with blanks around it: ProtoJSON
    /// writers in other languages send int64 and sometimes int32 values that way, and reading
    /// them must not depend on which spelling a peer chose.
    #[test]
    fn a_numeric_string_in_any_number_spelling_reads_as_its_integer(n in any::<i32>()) {
        for text in [
            format!("{n}"),
            format!(" {n} "),
            format!("{n}.0"),
            format!("{n}e0"),
            format!("{n}0e-1"),
            format!("{n}.00E+0"),
            format!("\t{n}.0\n"),
        ] {
            prop_assert_eq!(history_length(json!(text)), Ok(Some(n)), "{:?}", text);
        }
    }

    /// A numeric string that is not integral, or a string that is not a number at all, is a
    /// bad integer named with its JSON text, never a truncated value.
    #[test]
    fn a_string_that_is_not_an_integral_number_is_a_bad_integer(
        n in -1000i32..1000,
        frac in 1u32..10,
    ) {
        for text in [
            format!("{n}.{frac}"),
            format!("{n}{frac}e-1"),
            format!("{n}x"),
            format!("0x{frac}"),
            "inf".to_owned(),
            "NaN".to_owned(),
            "1e400".to_owned(),
            String::new(),
        ] {
            let json_text = Value::String(text.clone()).to_string();
            prop_assert_eq!(history_length(json!(text)), Err(bad_integer(&json_text)));
        }
    }
}

/// A bad value is quoted in the error as its JSON text up to 120 characters, and cut there
/// with an ellipsis beyond: an error names what was wrong without carrying a whole document.
#[test]
fn a_bad_value_is_quoted_whole_up_to_120_characters_and_cut_beyond() {
    // The JSON text of a string is the string and its two quotes.
    let exactly = "x".repeat(118);
    assert_eq!(
        history_length(json!(exactly)),
        Err(bad_integer(&format!("\"{exactly}\"")))
    );
    let longer = "y".repeat(119);
    assert_eq!(
        history_length(json!(longer)),
        Err(bad_integer(&format!("\"{}…", "y".repeat(119))))
    );
    assert_eq!(history_length(json!("ten")), Err(bad_integer("\"ten\"")));
    assert_eq!(history_length(json!(1.5)), Err(bad_integer("1.5")));
    // Characters, not bytes, are counted.
    let wide = "é".repeat(130);
    assert_eq!(
        history_length(json!(wide)),
        Err(bad_integer(&format!("\"{}…", "é".repeat(119))))
    );
}
