//! Protobuf encoding of the `lf.a2a.v1` messages the client sends and receives, mapped to and
//! from the same Rust types the JSON bindings use, plus the well-known types they embed
//! (`google.protobuf.Struct`/`Value`/`ListValue`/`Timestamp`).
//!
//! Mapping rules (where the Rust model and proto3 differ):
//! * An empty string is proto3's default, so `""` on the wire reads as `None` for optional
//!   strings, as the JSON reader does.
//! * A message-typed field that is present reads as `Some`, even when empty (`metadata: {}`
//!   survives a round trip).
//! * oneofs (`Part.content`, `Value.kind`, the response payloads) follow protobuf: when a
//!   member appears twice or two members appear, the last one wins.
//! * `Value` numbers are doubles, so a JSON integer is written as a double and reads back as
//!   a float (`1` → `1.0`), exactly as a Python agent's ProtoJSON does; NaN and infinities have
//!   no JSON form and are an error. A `Value` with no kind set (the proto default) reads as
//!   `null`.
//! * Timestamps are kept as RFC 3339 strings in the Rust model: reading prints UTC with 0, 3, 6
//!   or 9 fractional digits (the ProtoJSON form); writing parses RFC 3339 and omits a string
//!   that does not parse.
//! * Enum numbers this client does not know read as [`TaskState::Unrecognized`] /
//!   [`Role::Unspecified`]; `Unrecognized` has no number and is written as 0.

use super::wire::{Field, Reader, WireError, Writer};
use crate::a2a::types::{
    Artifact, Message, Part, PartContent, RemoteTaskStatus, Role, SendMessageConfiguration,
    SendMessageRequest, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatusUpdateEvent,
};
use serde_json::{Map, Number, Value};

/// How many `google.protobuf.Struct`/`ListValue` levels may nest in one metadata map or data
/// part, the outermost counting as one; deeper input is [`WireError::TooDeep`]. Bounds the
/// decoder's recursion.
pub const MAX_STRUCT_DEPTH: usize = 64;

/// A message with a protobuf encoding in the `lf.a2a.v1` schema.
pub trait GrpcMessage: Sized {
    /// The protobuf bytes of this message (not framed).
    fn encode_proto(&self) -> Vec<u8>;
    /// Decodes protobuf bytes (one whole message, not framed). Unknown fields are skipped.
    fn decode_proto(bytes: &[u8]) -> Result<Self, WireError>;
}

macro_rules! grpc_message {
    ($t:ty, $write:ident, $read:ident) => {
        impl GrpcMessage for $t {
            fn encode_proto(&self) -> Vec<u8> {
                let mut w = Writer::new();
                $write(self, &mut w);
                w.into_bytes()
            }
            fn decode_proto(bytes: &[u8]) -> Result<Self, WireError> {
                $read(bytes)
            }
        }
    };
}

// ---- google.protobuf.Struct / Value / ListValue --------------------------------------------

fn write_struct(m: &Map<String, Value>, w: &mut Writer) {
    for (k, v) in m {
        // map<string, Value> fields = 1: each entry is a message {key = 1, value = 2}.
        w.message(1, |e| {
            e.string(1, k);
            e.message(2, |vw| write_value(v, vw));
        });
    }
}

fn write_value(v: &Value, w: &mut Writer) {
    // Every member of the `kind` oneof is written even at its default: presence is the value.
    match v {
        Value::Null => w.uint64(1, 0),
        Value::Number(n) => w.double(2, n.as_f64().unwrap_or(0.0)),
        Value::String(s) => w.string(3, s),
        Value::Bool(b) => w.uint64(4, u64::from(*b)),
        Value::Object(m) => w.message(5, |s| write_struct(m, s)),
        Value::Array(items) => w.message(6, |l| {
            for item in items {
                l.message(1, |iw| write_value(item, iw));
            }
        }),
    }
}

fn read_struct(b: &[u8], depth: usize) -> Result<Map<String, Value>, WireError> {
    if depth > MAX_STRUCT_DEPTH {
        return Err(WireError::TooDeep {
            limit: MAX_STRUCT_DEPTH,
        });
    }
    let mut m = Map::new();
    let mut r = Reader::new(b, "google.protobuf.Struct");
    while let Some(f) = r.next_field()? {
        if f.number != 1 {
            continue;
        }
        let mut key = String::new();
        let mut value = Value::Null;
        let mut e = Reader::new(f.bytes()?, "google.protobuf.Struct.FieldsEntry");
        while let Some(ef) = e.next_field()? {
            match ef.number {
                1 => key = ef.string()?,
                2 => value = read_value(ef.bytes()?, depth)?,
                _ => {}
            }
        }
        m.insert(key, value);
    }
    Ok(m)
}

fn read_value(b: &[u8], depth: usize) -> Result<Value, WireError> {
    let mut value = Value::Null;
    let mut r = Reader::new(b, "google.protobuf.Value");
    while let Some(f) = r.next_field()? {
        value = match f.number {
            1 => {
                f.varint()?;
                Value::Null
            }
            2 => {
                let d = f.double()?;
                Value::Number(
                    Number::from_f64(d).ok_or_else(|| WireError::NonFiniteNumber(d.to_string()))?,
                )
            }
            3 => Value::String(f.string()?),
            4 => Value::Bool(f.boolean()?),
            5 => Value::Object(read_struct(f.bytes()?, depth + 1)?),
            6 => Value::Array(read_list(f.bytes()?, depth + 1)?),
            _ => continue,
        };
    }
    Ok(value)
}

fn read_list(b: &[u8], depth: usize) -> Result<Vec<Value>, WireError> {
    if depth > MAX_STRUCT_DEPTH {
        return Err(WireError::TooDeep {
            limit: MAX_STRUCT_DEPTH,
        });
    }
    let mut items = Vec::new();
    let mut r = Reader::new(b, "google.protobuf.ListValue");
    while let Some(f) = r.next_field()? {
        if f.number == 1 {
            items.push(read_value(f.bytes()?, depth)?);
        }
    }
    Ok(items)
}

fn metadata(f: &Field<'_>) -> Result<Option<Map<String, Value>>, WireError> {
    read_struct(f.bytes()?, 1).map(Some)
}

fn write_metadata(w: &mut Writer, field: u32, m: &Option<Map<String, Value>>) {
    if let Some(m) = m {
        w.message(field, |s| write_struct(m, s));
    }
}

// ---- google.protobuf.Timestamp --------------------------------------------------------------

const MIN_SECONDS: i64 = -62_135_596_800; // 0001-01-01T00:00:00Z
const MAX_SECONDS: i64 = 253_402_300_799; // 9999-12-31T23:59:59Z

/// Days since 1970-01-01 of a proleptic Gregorian date (the era-based civil calendar
/// conversion).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Formats a Timestamp as RFC 3339 UTC with 0, 3, 6 or 9 fractional digits.
pub fn format_timestamp(seconds: i64, nanos: i32) -> Result<String, WireError> {
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) || !(0..=999_999_999).contains(&nanos) {
        return Err(WireError::TimestampOutOfRange { seconds, nanos });
    }
    let (y, mo, d) = civil_from_days(seconds.div_euclid(86_400));
    let secs = seconds.rem_euclid(86_400);
    let mut s = format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if nanos != 0 {
        if nanos % 1_000_000 == 0 {
            s.push_str(&format!(".{:03}", nanos / 1_000_000));
        } else if nanos % 1000 == 0 {
            s.push_str(&format!(".{:06}", nanos / 1000));
        } else {
            s.push_str(&format!(".{nanos:09}"));
        }
    }
    s.push('Z');
    Ok(s)
}

/// Parses an RFC 3339 date-time (`T`/`t`, `Z`/`z` or a `±hh:mm` offset, 0 to 9 fractional
/// digits) into Timestamp seconds and nanos; `None` when it is not one.
pub fn parse_timestamp(s: &str) -> Option<(i64, i32)> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let digits = b.get(from..from + len)?;
        digits.iter().try_fold(0i64, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
        })
    };
    let sep = |at: usize, c: &[u8]| b.get(at).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (h, mi, se) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo) || d < 1 || d > month_days[(mo - 1) as usize] {
        return None;
    }
    if h > 23 || mi > 59 || se > 59 {
        return None;
    }
    let mut i = 19;
    let mut nanos = 0i64;
    if sep(i, b".") {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let n = i - start;
        if n == 0 || n > 9 {
            return None;
        }
        nanos = num(start, n)? * 10i64.pow((9 - n) as u32);
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        c @ (b'+' | b'-') if i + 6 == b.len() && sep(i + 3, b":") => {
            let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *c == b'+' { o } else { -o }
        }
        _ => return None,
    };
    let seconds = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset;
    (MIN_SECONDS..=MAX_SECONDS)
        .contains(&seconds)
        .then_some((seconds, nanos as i32))
}

fn read_timestamp(b: &[u8]) -> Result<String, WireError> {
    let (mut seconds, mut nanos) = (0i64, 0i32);
    let mut r = Reader::new(b, "google.protobuf.Timestamp");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => seconds = f.int64()?,
            2 => nanos = f.int32()?,
            _ => {}
        }
    }
    format_timestamp(seconds, nanos)
}

fn write_timestamp(w: &mut Writer, field: u32, ts: Option<&str>) {
    if let Some((seconds, nanos)) = ts.and_then(parse_timestamp) {
        w.message(field, |t| {
            if seconds != 0 {
                t.int64(1, seconds);
            }
            if nanos != 0 {
                t.int32(2, nanos);
            }
        });
    }
}

// ---- enums ----------------------------------------------------------------------------------

fn state_number(s: TaskState) -> i32 {
    match s {
        TaskState::Unspecified | TaskState::Unrecognized => 0,
        TaskState::Submitted => 1,
        TaskState::Working => 2,
        TaskState::Completed => 3,
        TaskState::Failed => 4,
        TaskState::Canceled => 5,
        TaskState::InputRequired => 6,
        TaskState::Rejected => 7,
        TaskState::AuthRequired => 8,
    }
}

fn role_from(n: i32) -> Role {
    match n {
        1 => Role::User,
        2 => Role::Agent,
        _ => Role::Unspecified,
    }
}

fn role_number(r: Role) -> i32 {
    match r {
        Role::Unspecified => 0,
        Role::User => 1,
        Role::Agent => 2,
    }
}

fn write_enum(w: &mut Writer, field: u32, n: i32) {
    if n != 0 {
        w.int32(field, n);
    }
}

// ---- lf.a2a.v1 messages ---------------------------------------------------------------------

fn write_part(p: &Part, w: &mut Writer) {
    match &p.content {
        PartContent::Text(t) => w.string(1, t),
        PartContent::Raw(b) => w.bytes(2, b),
        PartContent::Url(u) => w.string(3, u),
        PartContent::Data(v) => w.message(4, |vw| write_value(v, vw)),
    }
    write_metadata(w, 5, &p.metadata);
    w.opt_string(6, p.filename.as_deref());
    w.opt_string(7, p.media_type.as_deref());
}

fn read_part(b: &[u8]) -> Result<Part, WireError> {
    let mut content = None;
    let mut p = Part::text("");
    let mut r = Reader::new(b, "lf.a2a.v1.Part");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => content = Some(PartContent::Text(f.string()?)),
            2 => content = Some(PartContent::Raw(f.bytes()?.to_vec())),
            3 => content = Some(PartContent::Url(f.string()?)),
            4 => content = Some(PartContent::Data(read_value(f.bytes()?, 0)?)),
            5 => p.metadata = metadata(&f)?,
            6 => p.filename = f.opt_string()?,
            7 => p.media_type = f.opt_string()?,
            _ => {}
        }
    }
    p.content = content.ok_or(WireError::PartWithoutContent)?;
    Ok(p)
}
grpc_message!(Part, write_part, read_part);

fn write_message(m: &Message, w: &mut Writer) {
    w.string(1, &m.message_id);
    w.opt_string(2, m.context_id.as_deref());
    w.opt_string(3, m.task_id.as_deref());
    write_enum(w, 4, role_number(m.role));
    for p in &m.parts {
        w.message(5, |pw| write_part(p, pw));
    }
    write_metadata(w, 6, &m.metadata);
    w.strings(7, &m.extensions);
    w.strings(8, &m.reference_task_ids);
}

fn read_message(b: &[u8]) -> Result<Message, WireError> {
    let mut m = Message::default();
    let mut r = Reader::new(b, "lf.a2a.v1.Message");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => m.message_id = f.string()?,
            2 => m.context_id = f.opt_string()?,
            3 => m.task_id = f.opt_string()?,
            4 => m.role = role_from(f.int32()?),
            5 => m.parts.push(read_part(f.bytes()?)?),
            6 => m.metadata = metadata(&f)?,
            7 => m.extensions.push(f.string()?),
            8 => m.reference_task_ids.push(f.string()?),
            _ => {}
        }
    }
    Ok(m)
}
grpc_message!(Message, write_message, read_message);

fn write_status(s: &RemoteTaskStatus, w: &mut Writer) {
    write_enum(w, 1, state_number(s.state));
    if let Some(m) = &s.message {
        w.message(2, |mw| write_message(m, mw));
    }
    write_timestamp(w, 3, s.timestamp.as_deref());
}

fn read_status(b: &[u8]) -> Result<RemoteTaskStatus, WireError> {
    let mut s = RemoteTaskStatus::default();
    let mut r = Reader::new(b, "lf.a2a.v1.RemoteTaskStatus");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => s.state = TaskState::from_number(i64::from(f.int32()?)),
            2 => s.message = Some(read_message(f.bytes()?)?),
            3 => s.timestamp = Some(read_timestamp(f.bytes()?)?),
            _ => {}
        }
    }
    Ok(s)
}
grpc_message!(RemoteTaskStatus, write_status, read_status);

fn write_artifact(a: &Artifact, w: &mut Writer) {
    w.string(1, &a.artifact_id);
    w.opt_string(2, a.name.as_deref());
    w.opt_string(3, a.description.as_deref());
    for p in &a.parts {
        w.message(4, |pw| write_part(p, pw));
    }
    write_metadata(w, 5, &a.metadata);
    w.strings(6, &a.extensions);
}

fn read_artifact(b: &[u8]) -> Result<Artifact, WireError> {
    let mut a = Artifact::default();
    let mut r = Reader::new(b, "lf.a2a.v1.Artifact");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => a.artifact_id = f.string()?,
            2 => a.name = f.opt_string()?,
            3 => a.description = f.opt_string()?,
            4 => a.parts.push(read_part(f.bytes()?)?),
            5 => a.metadata = metadata(&f)?,
            6 => a.extensions.push(f.string()?),
            _ => {}
        }
    }
    Ok(a)
}
grpc_message!(Artifact, write_artifact, read_artifact);

fn write_task(t: &Task, w: &mut Writer) {
    w.string(1, &t.id);
    w.opt_string(2, t.context_id.as_deref());
    w.message(3, |sw| write_status(&t.status, sw));
    for a in &t.artifacts {
        w.message(4, |aw| write_artifact(a, aw));
    }
    for m in &t.history {
        w.message(5, |mw| write_message(m, mw));
    }
    write_metadata(w, 6, &t.metadata);
}

fn read_task(b: &[u8]) -> Result<Task, WireError> {
    let mut t = Task::default();
    let mut r = Reader::new(b, "lf.a2a.v1.Task");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => t.id = f.string()?,
            2 => t.context_id = f.opt_string()?,
            3 => t.status = read_status(f.bytes()?)?,
            4 => t.artifacts.push(read_artifact(f.bytes()?)?),
            5 => t.history.push(read_message(f.bytes()?)?),
            6 => t.metadata = metadata(&f)?,
            _ => {}
        }
    }
    Ok(t)
}
grpc_message!(Task, write_task, read_task);

fn write_status_update(e: &TaskStatusUpdateEvent, w: &mut Writer) {
    w.string(1, &e.task_id);
    w.opt_string(2, e.context_id.as_deref());
    w.message(3, |sw| write_status(&e.status, sw));
    write_metadata(w, 4, &e.metadata);
}

fn read_status_update(b: &[u8]) -> Result<TaskStatusUpdateEvent, WireError> {
    let mut e = TaskStatusUpdateEvent::default();
    let mut r = Reader::new(b, "lf.a2a.v1.TaskStatusUpdateEvent");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => e.task_id = f.string()?,
            2 => e.context_id = f.opt_string()?,
            3 => e.status = read_status(f.bytes()?)?,
            4 => e.metadata = metadata(&f)?,
            _ => {}
        }
    }
    Ok(e)
}
grpc_message!(
    TaskStatusUpdateEvent,
    write_status_update,
    read_status_update
);

fn write_artifact_update(e: &TaskArtifactUpdateEvent, w: &mut Writer) {
    w.string(1, &e.task_id);
    w.opt_string(2, e.context_id.as_deref());
    w.message(3, |aw| write_artifact(&e.artifact, aw));
    w.flag(4, e.append);
    w.flag(5, e.last_chunk);
    write_metadata(w, 6, &e.metadata);
}

fn read_artifact_update(b: &[u8]) -> Result<TaskArtifactUpdateEvent, WireError> {
    let mut e = TaskArtifactUpdateEvent::default();
    let mut r = Reader::new(b, "lf.a2a.v1.TaskArtifactUpdateEvent");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => e.task_id = f.string()?,
            2 => e.context_id = f.opt_string()?,
            3 => e.artifact = read_artifact(f.bytes()?)?,
            4 => e.append = f.boolean()?,
            5 => e.last_chunk = f.boolean()?,
            6 => e.metadata = metadata(&f)?,
            _ => {}
        }
    }
    Ok(e)
}
grpc_message!(
    TaskArtifactUpdateEvent,
    write_artifact_update,
    read_artifact_update
);

fn write_stream_response(s: &StreamResponse, w: &mut Writer) {
    match s {
        StreamResponse::Task(t) => w.message(1, |x| write_task(t, x)),
        StreamResponse::Message(m) => w.message(2, |x| write_message(m, x)),
        StreamResponse::StatusUpdate(e) => w.message(3, |x| write_status_update(e, x)),
        StreamResponse::ArtifactUpdate(e) => w.message(4, |x| write_artifact_update(e, x)),
    }
}

fn read_stream_response(b: &[u8]) -> Result<StreamResponse, WireError> {
    let mut payload = None;
    let mut r = Reader::new(b, "lf.a2a.v1.StreamResponse");
    while let Some(f) = r.next_field()? {
        payload = Some(match f.number {
            1 => StreamResponse::Task(read_task(f.bytes()?)?),
            2 => StreamResponse::Message(read_message(f.bytes()?)?),
            3 => StreamResponse::StatusUpdate(read_status_update(f.bytes()?)?),
            4 => StreamResponse::ArtifactUpdate(read_artifact_update(f.bytes()?)?),
            _ => continue,
        });
    }
    payload.ok_or(WireError::NoPayload {
        message: "lf.a2a.v1.StreamResponse",
    })
}
grpc_message!(StreamResponse, write_stream_response, read_stream_response);

/// The `SendMessage` result: `lf.a2a.v1.SendMessageResponse`, a oneof of task and message.
#[derive(Debug, Clone, PartialEq)]
pub enum SendMessageResponse {
    /// `task` (1).
    Task(Task),
    /// `message` (2).
    Message(Message),
}

impl From<SendMessageResponse> for StreamResponse {
    fn from(r: SendMessageResponse) -> StreamResponse {
        match r {
            SendMessageResponse::Task(t) => StreamResponse::Task(t),
            SendMessageResponse::Message(m) => StreamResponse::Message(m),
        }
    }
}

fn write_send_response(s: &SendMessageResponse, w: &mut Writer) {
    match s {
        SendMessageResponse::Task(t) => w.message(1, |x| write_task(t, x)),
        SendMessageResponse::Message(m) => w.message(2, |x| write_message(m, x)),
    }
}

fn read_send_response(b: &[u8]) -> Result<SendMessageResponse, WireError> {
    let mut payload = None;
    let mut r = Reader::new(b, "lf.a2a.v1.SendMessageResponse");
    while let Some(f) = r.next_field()? {
        payload = Some(match f.number {
            1 => SendMessageResponse::Task(read_task(f.bytes()?)?),
            2 => SendMessageResponse::Message(read_message(f.bytes()?)?),
            _ => continue,
        });
    }
    payload.ok_or(WireError::NoPayload {
        message: "lf.a2a.v1.SendMessageResponse",
    })
}
grpc_message!(SendMessageResponse, write_send_response, read_send_response);

fn write_configuration(c: &SendMessageConfiguration, w: &mut Writer) {
    w.strings(1, &c.accepted_output_modes);
    // `optional int32`: presence is explicit, so `Some(0)` is written.
    if let Some(h) = c.history_length {
        w.int32(3, h);
    }
    w.flag(4, c.return_immediately);
}

fn read_configuration(b: &[u8]) -> Result<SendMessageConfiguration, WireError> {
    let mut c = SendMessageConfiguration::default();
    let mut r = Reader::new(b, "lf.a2a.v1.SendMessageConfiguration");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => c.accepted_output_modes.push(f.string()?),
            3 => c.history_length = Some(f.int32()?),
            4 => c.return_immediately = f.boolean()?,
            _ => {}
        }
    }
    Ok(c)
}
grpc_message!(
    SendMessageConfiguration,
    write_configuration,
    read_configuration
);

fn write_send_request(s: &SendMessageRequest, w: &mut Writer) {
    write_send_request_with_tenant(s, s.tenant.as_deref(), w);
}

/// The request's bytes with `tenant` in place of its own, without copying the message.
pub(crate) fn encode_send_request(s: &SendMessageRequest, tenant: Option<&str>) -> Vec<u8> {
    let mut w = Writer::new();
    write_send_request_with_tenant(s, tenant, &mut w);
    w.into_bytes()
}

fn write_send_request_with_tenant(s: &SendMessageRequest, tenant: Option<&str>, w: &mut Writer) {
    w.opt_string(1, tenant);
    w.message(2, |mw| write_message(&s.message, mw));
    if let Some(c) = &s.configuration {
        w.message(3, |cw| write_configuration(c, cw));
    }
    write_metadata(w, 4, &s.metadata);
}

fn read_send_request(b: &[u8]) -> Result<SendMessageRequest, WireError> {
    let mut s = SendMessageRequest::default();
    let mut message = None;
    let mut r = Reader::new(b, "lf.a2a.v1.SendMessageRequest");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => s.tenant = f.opt_string()?,
            2 => message = Some(read_message(f.bytes()?)?),
            3 => s.configuration = Some(read_configuration(f.bytes()?)?),
            4 => s.metadata = metadata(&f)?,
            _ => {}
        }
    }
    s.message = message.ok_or(WireError::Missing {
        message: "lf.a2a.v1.SendMessageRequest",
        field: "message",
    })?;
    Ok(s)
}
grpc_message!(SendMessageRequest, write_send_request, read_send_request);

/// `lf.a2a.v1.GetTaskRequest`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GetTaskRequest {
    /// `tenant` (1).
    pub tenant: Option<String>,
    /// `id` (2): the task id.
    pub id: String,
    /// `history_length` (3, optional): `Some(0)` asks for no history.
    pub history_length: Option<i32>,
}

fn write_get_task(g: &GetTaskRequest, w: &mut Writer) {
    w.opt_string(1, g.tenant.as_deref());
    w.string(2, &g.id);
    if let Some(h) = g.history_length {
        w.int32(3, h);
    }
}

fn read_get_task(b: &[u8]) -> Result<GetTaskRequest, WireError> {
    let mut g = GetTaskRequest::default();
    let mut r = Reader::new(b, "lf.a2a.v1.GetTaskRequest");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => g.tenant = f.opt_string()?,
            2 => g.id = f.string()?,
            3 => g.history_length = Some(f.int32()?),
            _ => {}
        }
    }
    Ok(g)
}
grpc_message!(GetTaskRequest, write_get_task, read_get_task);

/// `lf.a2a.v1.CancelTaskRequest`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CancelTaskRequest {
    /// `tenant` (1).
    pub tenant: Option<String>,
    /// `id` (2): the task id.
    pub id: String,
    /// `metadata` (3).
    pub metadata: Option<Map<String, Value>>,
}

fn write_cancel_task(c: &CancelTaskRequest, w: &mut Writer) {
    w.opt_string(1, c.tenant.as_deref());
    w.string(2, &c.id);
    write_metadata(w, 3, &c.metadata);
}

fn read_cancel_task(b: &[u8]) -> Result<CancelTaskRequest, WireError> {
    let mut c = CancelTaskRequest::default();
    let mut r = Reader::new(b, "lf.a2a.v1.CancelTaskRequest");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => c.tenant = f.opt_string()?,
            2 => c.id = f.string()?,
            3 => c.metadata = metadata(&f)?,
            _ => {}
        }
    }
    Ok(c)
}
grpc_message!(CancelTaskRequest, write_cancel_task, read_cancel_task);

/// `lf.a2a.v1.SubscribeToTaskRequest`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SubscribeToTaskRequest {
    /// `tenant` (1).
    pub tenant: Option<String>,
    /// `id` (2): the task id.
    pub id: String,
}

fn write_subscribe(s: &SubscribeToTaskRequest, w: &mut Writer) {
    w.opt_string(1, s.tenant.as_deref());
    w.string(2, &s.id);
}

fn read_subscribe(b: &[u8]) -> Result<SubscribeToTaskRequest, WireError> {
    let mut s = SubscribeToTaskRequest::default();
    let mut r = Reader::new(b, "lf.a2a.v1.SubscribeToTaskRequest");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => s.tenant = f.opt_string()?,
            2 => s.id = f.string()?,
            _ => {}
        }
    }
    Ok(s)
}
grpc_message!(SubscribeToTaskRequest, write_subscribe, read_subscribe);

/// `lf.a2a.v1.ListTasksRequest`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListTasksRequest {
    /// `tenant` (1).
    pub tenant: Option<String>,
    /// `context_id` (2): only tasks of this context.
    pub context_id: Option<String>,
    /// `status` (3): only tasks in this state; `Unspecified` filters nothing.
    pub status: TaskState,
    /// `page_size` (4, optional).
    pub page_size: Option<i32>,
    /// `page_token` (5).
    pub page_token: Option<String>,
    /// `history_length` (6, optional).
    pub history_length: Option<i32>,
    /// `status_timestamp_after` (7), RFC 3339; a string that does not parse is not sent.
    pub status_timestamp_after: Option<String>,
    /// `include_artifacts` (8, optional).
    pub include_artifacts: Option<bool>,
}

fn write_list_tasks(l: &ListTasksRequest, w: &mut Writer) {
    w.opt_string(1, l.tenant.as_deref());
    w.opt_string(2, l.context_id.as_deref());
    write_enum(w, 3, state_number(l.status));
    if let Some(n) = l.page_size {
        w.int32(4, n);
    }
    w.opt_string(5, l.page_token.as_deref());
    if let Some(h) = l.history_length {
        w.int32(6, h);
    }
    write_timestamp(w, 7, l.status_timestamp_after.as_deref());
    if let Some(b) = l.include_artifacts {
        w.uint64(8, u64::from(b));
    }
}

fn read_list_tasks(b: &[u8]) -> Result<ListTasksRequest, WireError> {
    let mut l = ListTasksRequest::default();
    let mut r = Reader::new(b, "lf.a2a.v1.ListTasksRequest");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => l.tenant = f.opt_string()?,
            2 => l.context_id = f.opt_string()?,
            3 => l.status = TaskState::from_number(i64::from(f.int32()?)),
            4 => l.page_size = Some(f.int32()?),
            5 => l.page_token = f.opt_string()?,
            6 => l.history_length = Some(f.int32()?),
            7 => l.status_timestamp_after = Some(read_timestamp(f.bytes()?)?),
            8 => l.include_artifacts = Some(f.boolean()?),
            _ => {}
        }
    }
    Ok(l)
}
grpc_message!(ListTasksRequest, write_list_tasks, read_list_tasks);

/// `lf.a2a.v1.ListTasksResponse`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListTasksResponse {
    /// `tasks` (1).
    pub tasks: Vec<Task>,
    /// `next_page_token` (2): `""` on the last page.
    pub next_page_token: String,
    /// `page_size` (3).
    pub page_size: i32,
    /// `total_size` (4).
    pub total_size: i32,
}

fn write_list_response(l: &ListTasksResponse, w: &mut Writer) {
    for t in &l.tasks {
        w.message(1, |tw| write_task(t, tw));
    }
    w.opt_string(2, Some(&l.next_page_token));
    write_enum(w, 3, l.page_size);
    write_enum(w, 4, l.total_size);
}

fn read_list_response(b: &[u8]) -> Result<ListTasksResponse, WireError> {
    let mut l = ListTasksResponse::default();
    let mut r = Reader::new(b, "lf.a2a.v1.ListTasksResponse");
    while let Some(f) = r.next_field()? {
        match f.number {
            1 => l.tasks.push(read_task(f.bytes()?)?),
            2 => l.next_page_token = f.string()?,
            3 => l.page_size = f.int32()?,
            4 => l.total_size = f.int32()?,
            _ => {}
        }
    }
    Ok(l)
}
grpc_message!(ListTasksResponse, write_list_response, read_list_response);
