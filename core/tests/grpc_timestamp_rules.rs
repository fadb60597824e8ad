//! Rules of the `google.protobuf.Timestamp` the gRPC binding carries and the RFC 3339 text the
//! Rust model holds instead: which texts are timestamps (the calendar, the clock, fractions of 1
//! to 9 digits, `Z` or a `±hh:mm` offset, the range 0001..9999), the seconds and nanos they
//! mean, the ProtoJSON text a Timestamp prints as, and the bytes a status timestamp is sent as.
//! Days are checked against a reference calendar that counts year by year and month by month
//! from 1970.

use a2at_core::a2a::grpc::{GrpcMessage, WireError, format_timestamp, parse_timestamp};
use a2at_core::a2a::{RemoteTaskStatus, TaskState};
use proptest::prelude::*;

/// 0001-01-01T00:00:00Z, the first second a Timestamp may hold.
const MIN_SECONDS: i64 = -62_135_596_800;
/// 9999-12-31T23:59:59Z, the last second a Timestamp may hold.
const MAX_SECONDS: i64 = 253_402_300_799;
const DAY: i64 = 86_400;

// ---- the reference calendar -------------------------------------------------------------------

/// The Gregorian rule: every fourth year, but not a century unless it is a fourth century.
fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_year(y: i64) -> i64 {
    if is_leap(y) { 366 } else { 365 }
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a date, counted year by year and then month by month.
fn reference_days(y: i64, m: i64, d: i64) -> i64 {
    let mut days = 0;
    if y >= 1970 {
        for year in 1970..y {
            days += days_in_year(year);
        }
    } else {
        for year in y..1970 {
            days -= days_in_year(year);
        }
    }
    for month in 1..m {
        days += days_in_month(y, month);
    }
    days + d - 1
}

/// The date that is `days` days after 1970-01-01 (before it when negative), by the same count.
fn reference_date(days: i64) -> (i64, i64, i64) {
    let (mut y, mut rest) = (1970, days);
    while rest < 0 {
        y -= 1;
        rest += days_in_year(y);
    }
    while rest >= days_in_year(y) {
        rest -= days_in_year(y);
        y += 1;
    }
    let mut m = 1;
    while rest >= days_in_month(y, m) {
        rest -= days_in_month(y, m);
        m += 1;
    }
    (y, m, rest + 1)
}

/// `YYYY-MM-DDThh:mm:ss` of a second since the epoch, without fraction or zone.
fn reference_clock(seconds: i64) -> String {
    let (y, m, d) = reference_date(seconds.div_euclid(DAY));
    let s = seconds.rem_euclid(DAY);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// The ProtoJSON fraction: the nine digits of the nanos with trailing groups of three zeros
/// dropped (so 0, 3, 6 or 9 digits), after a dot when any remain.
fn protojson_fraction(nanos: i32) -> String {
    let mut digits = format!("{nanos:09}");
    while digits.ends_with("000") {
        digits.truncate(digits.len() - 3);
    }
    if digits.is_empty() {
        digits
    } else {
        format!(".{digits}")
    }
}

fn reference_text(seconds: i64, nanos: i32) -> String {
    format!("{}{}Z", reference_clock(seconds), protojson_fraction(nanos))
}

/// A `±hh:mm` offset of a signed number of minutes.
fn offset_text(minutes: i64) -> String {
    let sign = if minutes < 0 { '-' } else { '+' };
    let m = minutes.abs();
    format!("{sign}{:02}:{:02}", m / 60, m % 60)
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The protobuf bytes of a Timestamp message: fields left out at their zero default.
fn timestamp_bytes(seconds: i64, nanos: i32) -> Vec<u8> {
    let mut b = Vec::new();
    if seconds != 0 {
        b.push(0x08);
        varint(seconds as u64, &mut b);
    }
    if nanos != 0 {
        b.push(0x10);
        varint(nanos as u64, &mut b);
    }
    b
}

/// A working status with a timestamp, as bytes: state 2 in field 1, the Timestamp in field 3.
fn status_bytes(timestamp: &[u8]) -> Vec<u8> {
    let mut b = vec![0x08, 0x02, 0x1a, timestamp.len() as u8];
    b.extend_from_slice(timestamp);
    b
}

fn working(timestamp: &str) -> RemoteTaskStatus {
    RemoteTaskStatus {
        state: TaskState::Working,
        message: None,
        timestamp: Some(timestamp.into()),
    }
}

// ---- strategies -------------------------------------------------------------------------------

/// Any second of the range, with extra weight on its two ends, on the years 1..1000 (printed
/// with leading zeros) and on the years around the epoch.
fn seconds_in_range() -> impl Strategy<Value = i64> {
    prop_oneof![
        MIN_SECONDS..=MAX_SECONDS,
        MIN_SECONDS..=MIN_SECONDS + 3 * 366 * DAY,
        MAX_SECONDS - 3 * 366 * DAY..=MAX_SECONDS,
        MIN_SECONDS..=-30_610_224_000, // 0001..1000
        -3 * 366 * DAY..=3 * 366 * DAY,
    ]
}

/// Nanos of every kind: none, whole milliseconds, whole microseconds, any.
fn nanos_in_range() -> impl Strategy<Value = i32> {
    prop_oneof![
        Just(0),
        (1..1000i32).prop_map(|ms| ms * 1_000_000),
        (1..1_000_000i32).prop_map(|us| us * 1000),
        0..=999_999_999i32,
    ]
}

/// A date anywhere in 0001..9999.
fn date() -> impl Strategy<Value = (i64, i64, i64)> {
    (1..=9999i64, 1..=12i64).prop_flat_map(|(y, m)| (Just(y), Just(m), 1..=days_in_month(y, m)))
}

// ---- the reference calendar agrees with itself -----------------------------------------------

/// The reference calendar's two directions agree, and pin the well-known day numbers, so the
/// properties below test against a calendar that is right.
#[test]
fn the_reference_calendar_counts_known_days() {
    assert_eq!(reference_days(1970, 1, 1), 0);
    assert_eq!(reference_days(2000, 3, 1), 11_017);
    assert_eq!(reference_days(1, 1, 1) * DAY, MIN_SECONDS);
    assert_eq!(reference_days(9999, 12, 31) * DAY + DAY - 1, MAX_SECONDS);
    for days in [-719_162, -1, 0, 59, 11_016, 2_932_896] {
        let (y, m, d) = reference_date(days);
        assert_eq!(reference_days(y, m, d), days, "{days}");
    }
    assert_eq!(reference_date(11_016), (2000, 2, 29));
}

// ---- printing ---------------------------------------------------------------------------------

proptest! {
    /// Every Timestamp of the range prints as its UTC date and time, with the nanos in the
    /// fewest of 0, 3, 6 or 9 digits that show them exactly, and `Z`: the ProtoJSON form a
    /// Python or Go agent prints for the same value.
    #[test]
    fn a_timestamp_prints_as_its_utc_calendar_date_in_protojson_form(
        seconds in seconds_in_range(),
        nanos in nanos_in_range(),
    ) {
        prop_assert_eq!(format_timestamp(seconds, nanos), Ok(reference_text(seconds, nanos)));
    }

    /// Reading the printed text gives back the same seconds and nanos: nothing is lost between
    /// a Timestamp on the wire and the text the model holds.
    #[test]
    fn a_printed_timestamp_parses_back_to_the_same_seconds_and_nanos(
        seconds in seconds_in_range(),
        nanos in nanos_in_range(),
    ) {
        prop_assert_eq!(parse_timestamp(&reference_text(seconds, nanos)), Some((seconds, nanos)));
    }
}

/// The nanos print in 3 digits when they are whole milliseconds, in 6 when whole microseconds,
/// otherwise in 9, and not at all when zero.
#[test]
fn fractions_print_in_three_six_or_nine_digits() {
    for (nanos, text) in [
        (0, "1970-01-01T00:00:00Z"),
        (1, "1970-01-01T00:00:00.000000001Z"),
        (10, "1970-01-01T00:00:00.000000010Z"),
        (1_000, "1970-01-01T00:00:00.000001Z"),
        (100_000, "1970-01-01T00:00:00.000100Z"),
        (1_000_000, "1970-01-01T00:00:00.001Z"),
        (500_000_000, "1970-01-01T00:00:00.500Z"),
        (500_000_001, "1970-01-01T00:00:00.500000001Z"),
        (500_001_000, "1970-01-01T00:00:00.500001Z"),
        (999_999_999, "1970-01-01T00:00:00.999999999Z"),
    ] {
        assert_eq!(format_timestamp(0, nanos).as_deref(), Ok(text), "{nanos}");
    }
}

/// Only 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z print, with nanos 0 to
/// 999,999,999: a value outside has no RFC 3339 form and is an error naming it.
#[test]
fn only_timestamps_of_years_1_to_9999_print() {
    assert_eq!(
        format_timestamp(MIN_SECONDS, 0).as_deref(),
        Ok("0001-01-01T00:00:00Z")
    );
    assert_eq!(
        format_timestamp(MAX_SECONDS, 999_999_999).as_deref(),
        Ok("9999-12-31T23:59:59.999999999Z")
    );
    for (seconds, nanos) in [
        (MIN_SECONDS - 1, 0),
        (MIN_SECONDS - 1, 999_999_999),
        (MAX_SECONDS + 1, 0),
        (i64::MIN, 0),
        (i64::MAX, 0),
        (0, -1),
        (0, 1_000_000_000),
        (MIN_SECONDS, -1),
        (MAX_SECONDS, 1_000_000_000),
        (0, i32::MIN),
        (0, i32::MAX),
    ] {
        assert_eq!(
            format_timestamp(seconds, nanos),
            Err(WireError::TimestampOutOfRange { seconds, nanos }),
            "{seconds} {nanos}"
        );
    }
}

// ---- the calendar of parsing ------------------------------------------------------------------

proptest! {
    /// Any date of the years 1..9999 at any time of day parses to the seconds the reference
    /// calendar counts from 1970.
    #[test]
    fn a_date_parses_to_the_days_counted_from_1970(
        (y, m, d) in date(),
        time in 0..DAY,
    ) {
        let text = format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            time / 3600,
            time / 60 % 60,
            time % 60
        );
        prop_assert_eq!(parse_timestamp(&text), Some((reference_days(y, m, d) * DAY + time, 0)));
    }

    /// Each month has exactly its days: its last day parses and the day after it does not, nor
    /// does a day 0, a month 0 or a month 13.
    #[test]
    fn each_month_has_exactly_its_number_of_days(y in 1..=9999i64, m in 1..=12i64) {
        let last = days_in_month(y, m);
        let at = |m: i64, d: i64| parse_timestamp(&format!("{y:04}-{m:02}-{d:02}T00:00:00Z"));
        prop_assert_eq!(at(m, last), Some((reference_days(y, m, last) * DAY, 0)));
        prop_assert_eq!(at(m, last + 1), None);
        prop_assert_eq!(at(m, 0), None);
        prop_assert_eq!(at(0, 1), None);
        prop_assert_eq!(at(13, 1), None);
    }
}

/// February 29 exists only in a leap year: every fourth year, but 1900 and 2100 (centuries)
/// have none, and 2000 (a fourth century) has one. Checked for every year 1..9999.
#[test]
fn a_leap_day_exists_only_in_leap_years() {
    assert!(parse_timestamp("1900-02-29T00:00:00Z").is_none());
    assert!(parse_timestamp("2100-02-29T00:00:00Z").is_none());
    assert!(parse_timestamp("2023-02-29T00:00:00Z").is_none());
    assert_eq!(
        parse_timestamp("2000-02-29T00:00:00Z"),
        Some((951_782_400, 0))
    );
    assert_eq!(
        parse_timestamp("2024-02-29T12:00:00Z"),
        Some((1_709_208_000, 0))
    );
    let mut march_first = MIN_SECONDS + 59 * DAY; // 0001-03-01
    for y in 1..=9999i64 {
        let leap_day = parse_timestamp(&format!("{y:04}-02-29T00:00:00Z"));
        let expected = is_leap(y).then_some((march_first - DAY, 0));
        assert_eq!(leap_day, expected, "{y}");
        assert_eq!(
            parse_timestamp(&format!("{y:04}-03-01T00:00:00Z")),
            Some((march_first, 0)),
            "{y}"
        );
        march_first += days_in_year(y + 1) * DAY;
    }
}

/// Every month of every year 1..9999 begins and ends on the days the calendar counts, in print
/// and in parsing: the days where calendars go wrong (a month's last day, a century's leap day
/// that is missing, every 400th year's leap day that is not) are each checked, not sampled.
#[test]
fn every_month_of_every_year_begins_and_ends_on_its_counted_day() {
    let mut first = MIN_SECONDS;
    for y in 1..=9999i64 {
        for m in 1..=12i64 {
            let last = first + (days_in_month(y, m) - 1) * DAY;
            for (seconds, d) in [(first, 1), (last, days_in_month(y, m))] {
                let text = format!("{y:04}-{m:02}-{d:02}T00:00:00Z");
                assert_eq!(format_timestamp(seconds, 0).as_deref(), Ok(&*text));
                assert_eq!(parse_timestamp(&text), Some((seconds, 0)), "{text}");
            }
            first = last + DAY;
        }
    }
    assert_eq!(first, MAX_SECONDS + 1);
}

/// The clock runs 00:00:00 to 23:59:59: hour 24, minute 60 and second 60 are refused.
#[test]
fn the_clock_stops_at_23_59_59() {
    assert_eq!(parse_timestamp("1970-01-01T23:59:59Z"), Some((DAY - 1, 0)));
    assert_eq!(parse_timestamp("1970-01-02T00:00:00Z"), Some((DAY, 0)));
    for bad in [
        "1970-01-01T24:00:00Z",
        "1970-01-01T23:60:00Z",
        "1970-01-01T23:59:60Z",
        "1970-01-01T99:00:00Z",
    ] {
        assert_eq!(parse_timestamp(bad), None, "{bad}");
    }
}

// ---- range ends -------------------------------------------------------------------------------

/// The first and the last instant of years 1..9999 parse, and one second before the first or
/// after the last does not: they have no Timestamp. It is the instant that counts, not the
/// local date: 0000-12-31T23:00:00-01:00 is the first instant.
#[test]
fn only_instants_of_years_1_to_9999_parse() {
    for (text, want) in [
        ("0001-01-01T00:00:00Z", Some((MIN_SECONDS, 0))),
        ("0001-01-01T00:01:00+00:01", Some((MIN_SECONDS, 0))),
        ("0001-01-01T00:00:59+00:01", None),
        ("0001-01-01T00:00:00+00:01", None),
        ("0000-12-31T23:59:59Z", None),
        ("0000-12-31T23:59:59.999999999Z", None),
        ("0000-12-31T23:00:00-01:00", Some((MIN_SECONDS, 0))),
        ("0000-12-31T23:59:00-00:01", Some((MIN_SECONDS, 0))),
        ("0000-12-31T22:59:59-01:00", None),
        ("9999-12-31T23:59:59Z", Some((MAX_SECONDS, 0))),
        (
            "9999-12-31T23:59:59.999999999Z",
            Some((MAX_SECONDS, 999_999_999)),
        ),
        ("9999-12-31T23:58:59-00:01", Some((MAX_SECONDS, 0))),
        ("9999-12-31T23:59:00-00:01", None),
        ("9999-12-31T23:59:59-00:01", None),
        ("9999-12-31T23:59:59+00:01", Some((MAX_SECONDS - 60, 0))),
    ] {
        assert_eq!(parse_timestamp(text), want, "{text}");
    }
}

// ---- fractions --------------------------------------------------------------------------------

proptest! {
    /// A fraction of any length from 1 to 9 digits is that many leading digits of the nanos,
    /// the rest zero.
    #[test]
    fn a_fraction_of_one_to_nine_digits_gives_the_nanos_it_writes(
        seconds in seconds_in_range(),
        nanos in 0..=999_999_999i32,
        len in 1..=9usize,
    ) {
        let digits = &format!("{nanos:09}")[..len];
        let text = format!("{}.{digits}Z", reference_clock(seconds));
        let kept: i32 = digits.parse::<i32>().unwrap() * 10i32.pow(9 - len as u32);
        prop_assert_eq!(parse_timestamp(&text), Some((seconds, kept)));
    }
}

/// Every fraction length 1..9 is read, each digit at its place; no digit after the dot, or a
/// tenth digit, is not a timestamp.
#[test]
fn fractions_have_one_to_nine_digits() {
    let base = "2026-12-02T10:39:06";
    let seconds = 1_796_207_946;
    for (fraction, nanos) in [
        ("1", 100_000_000),
        ("12", 120_000_000),
        ("123", 123_000_000),
        ("1234", 123_400_000),
        ("12345", 123_450_000),
        ("123456", 123_456_000),
        ("1234567", 123_456_700),
        ("12345678", 123_456_780),
        ("123456789", 123_456_789),
        ("000000001", 1),
        ("9", 900_000_000),
        ("0", 0),
        ("000000000", 0),
        ("999999999", 999_999_999),
    ] {
        assert_eq!(
            parse_timestamp(&format!("{base}.{fraction}Z")),
            Some((seconds, nanos)),
            "{fraction}"
        );
        assert_eq!(
            parse_timestamp(&format!("{base}.{fraction}+01:00")),
            Some((seconds - 3600, nanos)),
            "{fraction}"
        );
    }
    for bad in [
        ".",
        ".Z",
        ".1234567890",
        ".0000000000",
        ".12345678901",
        "..1",
        ".1.2",
    ] {
        assert_eq!(parse_timestamp(&format!("{base}{bad}Z")), None, "{bad}");
        assert_eq!(
            parse_timestamp(&format!("{base}{bad}+00:00")),
            None,
            "{bad}"
        );
    }
}

// ---- zones ------------------------------------------------------------------------------------

proptest! {
    /// A local time with an offset `+hh:mm` is that much ahead of UTC and one with `-hh:mm`
    /// that much behind, for any offset up to 23:59 each way; the instant it names must still
    /// lie in years 1..9999.
    #[test]
    fn an_offset_moves_the_local_time_back_to_utc(
        local in seconds_in_range(),
        nanos in nanos_in_range(),
        minutes in -(23 * 60 + 59)..=(23 * 60 + 59i64),
    ) {
        let text = format!(
            "{}{}{}",
            reference_clock(local),
            protojson_fraction(nanos),
            offset_text(minutes)
        );
        let utc = local - minutes * 60;
        let want = (MIN_SECONDS..=MAX_SECONDS).contains(&utc).then_some((utc, nanos));
        prop_assert_eq!(parse_timestamp(&text), want);
    }
}

/// UTC is `Z` or `z`, or an offset of either sign; an offset's hour runs to 23 and its minute
/// to 59, and it is written `±hh:mm` exactly.
#[test]
fn a_zone_is_z_or_a_signed_hours_and_minutes_offset() {
    let base = "2026-12-02T10:39:06";
    let utc = 1_796_207_946;
    for (zone, seconds) in [
        ("Z", utc),
        ("z", utc),
        ("+00:00", utc),
        ("-00:00", utc),
        ("+02:00", utc - 2 * 3600),
        ("-02:00", utc + 2 * 3600),
        ("+00:30", utc - 30 * 60),
        ("-00:30", utc + 30 * 60),
        ("+05:45", utc - 5 * 3600 - 45 * 60),
        ("-09:30", utc + 9 * 3600 + 30 * 60),
        ("+23:59", utc - 23 * 3600 - 59 * 60),
        ("-23:59", utc + 23 * 3600 + 59 * 60),
    ] {
        assert_eq!(
            parse_timestamp(&format!("{base}{zone}")),
            Some((seconds, 0)),
            "{zone}"
        );
    }
    for bad in [
        "", "+24:00", "-24:00", "+00:60", "-00:60", "+99:99", "+0200", "+02", "+02:0", "+2:00",
        "+02-00", "+02:00Z", "Z+02:00", "02:00", "*02:00", "ZZ", "UTC", "GMT", " Z", "+02:00 ",
        "+02:000", "+002:00", "+0a:00", "+02:a0",
    ] {
        assert_eq!(parse_timestamp(&format!("{base}{bad}")), None, "{bad:?}");
    }
}

// ---- the shape of the text --------------------------------------------------------------------

/// A few valid texts of every shape: with and without a fraction, `Z`/`z` and offsets.
fn valid_texts(seconds: i64, nanos: i32, minutes: i64) -> Vec<String> {
    let clock = reference_clock(seconds);
    let lower_t = clock.replacen('T', "t", 1);
    vec![
        format!("{clock}Z"),
        format!("{lower_t}z"),
        format!("{clock}.{nanos:09}Z"),
        format!("{clock}.{}Z", nanos % 10),
        format!("{clock}{}", offset_text(minutes)),
        format!("{clock}.{nanos:09}{}", offset_text(minutes)),
        format!("{lower_t}.{:03}{}", nanos % 1000, offset_text(-minutes)),
    ]
}

proptest! {
    /// A valid timestamp cut short anywhere is not a timestamp: a text that lost its zone, its
    /// fraction's tail or any field must not be read as some other instant.
    #[test]
    fn every_truncation_of_a_timestamp_is_refused(
        seconds in MIN_SECONDS + DAY..=MAX_SECONDS - DAY,
        nanos in 0..=999_999_999i32,
        minutes in -(23 * 60 + 59)..=(23 * 60 + 59i64),
    ) {
        for text in valid_texts(seconds, nanos, minutes) {
            prop_assert!(parse_timestamp(&text).is_some(), "{}", text);
            for cut in 0..text.len() {
                prop_assert_eq!(parse_timestamp(&text[..cut]), None, "{}", &text[..cut]);
            }
            for tail in ["Z", "z", "0", "+", ":", " ", "x"] {
                let longer = format!("{text}{tail}");
                prop_assert_eq!(parse_timestamp(&longer), None, "{}", longer);
            }
        }
    }

    /// Each field is digits only and each separator is exactly its character (`-`, `-`, `T` or
    /// `t`, `:`, `:`, `.` and the offset's `:`): any other byte in any place is refused.
    #[test]
    fn every_position_holds_only_its_own_kind_of_character(
        seconds in MIN_SECONDS + DAY..=MAX_SECONDS - DAY,
        nanos in 0..=999_999_999i32,
        minutes in -(23 * 60 + 59)..=(23 * 60 + 59i64),
        other in prop::sample::select(b"-:Tt. +Zzx/a\x7f".to_vec()),
    ) {
        let text = format!("{}.{nanos:09}{}", reference_clock(seconds), offset_text(minutes));
        prop_assert!(parse_timestamp(&text).is_some(), "{}", text);
        for at in 0..text.len() {
            let mut bytes = text.clone().into_bytes();
            let original = bytes[at];
            // The separators: date dashes, T, time colons, dot, offset sign, offset colon.
            let allowed: &[u8] = match at {
                4 | 7 => b"-",
                10 => b"Tt",
                13 | 16 | 32 => b":",
                19 => b".",
                29 => b"+-",
                _ => b"0123456789",
            };
            prop_assert!(allowed.contains(&original), "{} at {}", text, at);
            if allowed.contains(&other) {
                continue;
            }
            bytes[at] = other;
            let changed = String::from_utf8(bytes).unwrap();
            prop_assert_eq!(parse_timestamp(&changed), None, "{}", changed);
        }
    }
}

/// The date and time separator is `T` or `t`, nothing else (not the space RFC 3339 allows in
/// prose), and the zone may be written in either case.
#[test]
fn the_date_and_time_are_joined_by_t_in_either_case() {
    for text in [
        "2026-12-02T10:39:06Z",
        "2026-12-02t10:39:06Z",
        "2026-12-02T10:39:06z",
        "2026-12-02t10:39:06z",
    ] {
        assert_eq!(parse_timestamp(text), Some((1_796_207_946, 0)), "{text}");
    }
    for bad in [
        "2026-12-02 10:39:06Z",
        "2026-12-02_10:39:06Z",
        "2026/12/02T10:39:06Z",
        "2026-12-02T10.39.06Z",
        "20261202T103906Z",
        "+2026-12-02T10:39:06Z",
        "-2026-12-02T10:39:06Z",
        "02026-12-02T10:39:06Z",
        "2026-1-02T10:39:06Z",
        "2026-12-2T10:39:06Z",
        "2026-12-02T1:39:06Z",
        "",
    ] {
        assert_eq!(parse_timestamp(bad), None, "{bad}");
    }
}

// ---- on the wire ------------------------------------------------------------------------------

proptest! {
    /// A status timestamp is sent as a Timestamp message of its UTC seconds and nanos, each
    /// left out when zero, whatever offset the text was written with; reading those bytes gives
    /// the ProtoJSON text back.
    #[test]
    fn a_status_timestamp_is_sent_as_seconds_and_nanos_and_read_back_as_text(
        seconds in seconds_in_range(),
        nanos in nanos_in_range(),
        minutes in -(23 * 60 + 59)..=(23 * 60 + 59i64),
    ) {
        let text = reference_text(seconds, nanos);
        let bytes = status_bytes(&timestamp_bytes(seconds, nanos));
        prop_assert_eq!(working(&text).encode_proto(), bytes.clone());
        prop_assert_eq!(RemoteTaskStatus::decode_proto(&bytes), Ok(working(&text)));
        let local = seconds + minutes * 60;
        if (MIN_SECONDS..=MAX_SECONDS).contains(&local) {
            let shifted = format!(
                "{}{}{}",
                reference_clock(local),
                protojson_fraction(nanos),
                offset_text(minutes)
            );
            prop_assert_eq!(working(&shifted).encode_proto(), bytes);
        }
    }
}

/// The epoch is a Timestamp with both fields at their default: an empty message, still sent
/// so the status keeps its timestamp; seconds or nanos alone are sent alone.
#[test]
fn zero_seconds_and_nanos_are_left_out_of_a_sent_timestamp() {
    assert_eq!(
        working("1970-01-01T00:00:00Z").encode_proto(),
        [0x08, 0x02, 0x1a, 0x00]
    );
    assert_eq!(
        working("1970-01-01T00:00:01Z").encode_proto(),
        [0x08, 0x02, 0x1a, 0x02, 0x08, 0x01]
    );
    assert_eq!(
        working("1970-01-01T00:00:00.000000001Z").encode_proto(),
        [0x08, 0x02, 0x1a, 0x02, 0x10, 0x01]
    );
    assert_eq!(
        working("1970-01-01T00:00:01.000000001Z").encode_proto(),
        [0x08, 0x02, 0x1a, 0x04, 0x08, 0x01, 0x10, 0x01]
    );
    let mut before = vec![0x08, 0x02, 0x1a, 0x0b, 0x08];
    varint(-1i64 as u64, &mut before);
    assert_eq!(working("1969-12-31T23:59:59Z").encode_proto(), before);
    assert_eq!(
        RemoteTaskStatus::decode_proto(&[0x08, 0x02, 0x1a, 0x00]),
        Ok(working("1970-01-01T00:00:00Z"))
    );
    // A text that is not a timestamp, or outside the range, is not sent at all.
    for bad in [
        "",
        "yesterday",
        "0000-12-31T23:59:59Z",
        "2026-02-29T00:00:00Z",
    ] {
        assert_eq!(working(bad).encode_proto(), [0x08, 0x02], "{bad}");
    }
}

/// A received Timestamp outside years 1..9999 or with nanos outside 0..999,999,999 is an error
/// naming its fields, not a text the model cannot hold; unknown fields in it are skipped.
#[test]
fn a_received_timestamp_out_of_range_is_an_error() {
    for (seconds, nanos) in [
        (MIN_SECONDS - 1, 0),
        (MAX_SECONDS + 1, 0),
        (0, -1),
        (0, 1_000_000_000),
        (MAX_SECONDS, 1_000_000_000),
    ] {
        let bytes = status_bytes(&timestamp_bytes(seconds, nanos));
        assert_eq!(
            RemoteTaskStatus::decode_proto(&bytes),
            Err(WireError::TimestampOutOfRange { seconds, nanos }),
            "{seconds} {nanos}"
        );
    }
    for (seconds, nanos, text) in [
        (MIN_SECONDS, 0, "0001-01-01T00:00:00Z"),
        (MAX_SECONDS, 999_999_999, "9999-12-31T23:59:59.999999999Z"),
        (-1, 999_000_000, "1969-12-31T23:59:59.999Z"),
    ] {
        let mut ts = timestamp_bytes(seconds, nanos);
        ts.extend_from_slice(&[0x18, 0x07]);
        assert_eq!(
            RemoteTaskStatus::decode_proto(&status_bytes(&ts)),
            Ok(working(text)),
            "{text}"
        );
    }
}
