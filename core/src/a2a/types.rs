//! The A2A v1.0 data model (`lf.a2a.v1`) for the client subset, with ProtoJSON encoding.
//!
//! Every type has `from_json(&Value)` (tolerant reader: ProtoJSON rules plus the v0.3 shapes of
//! a2a-wire §1.7) and `to_json()` (strict v1.0 writer: camelCase, proto field order, defaults
//! omitted). `Serialize` writes that same v1.0 form straight to the serializer, and
//! `Deserialize` applies the same tolerant reader. v0.3 is never written.

use super::dom::{Dom, View};
use super::protojson::{
    DecodeError, DecodeErrorKind, FieldWriter, Path, as_object, boolean, decode_base64,
    deserialize_via_decode, encode_base64, integer, list, member, opt_bool, opt_i32, opt_string,
    opt_struct, string, string_list, value_of, wrong,
};
use serde::ser::{Serialize, Serializer};
use serde_json::{Map, Value};

/// The content of a [`Part`]: exactly one member on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// `text`: plain text.
    Text(String),
    /// `raw`: inline bytes (base64 on the wire).
    Raw(Vec<u8>),
    /// `url`: a file by reference (never fetched by the engine).
    Url(String),
    /// `data`: any JSON value.
    Data(Value),
}

/// One piece of message or artifact content (a2a-wire §1.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The single content member.
    pub content: PartContent,
    /// Per-part metadata.
    pub metadata: Option<Map<String, Value>>,
    /// File name, e.g. `report.pdf`.
    pub filename: Option<String>,
    /// MIME type; allowed on every part kind.
    pub media_type: Option<String>,
}

impl Part {
    fn with(content: PartContent) -> Part {
        Part {
            content,
            metadata: None,
            filename: None,
            media_type: None,
        }
    }

    /// A text part.
    pub fn text(s: impl Into<String>) -> Part {
        Part::with(PartContent::Text(s.into()))
    }

    /// A structured data part.
    pub fn data(v: Value) -> Part {
        Part::with(PartContent::Data(v))
    }

    /// A file-by-reference part.
    pub fn url(u: impl Into<String>, media_type: Option<String>) -> Part {
        Part {
            media_type,
            ..Part::with(PartContent::Url(u.into()))
        }
    }

    /// An inline-bytes part.
    pub fn raw(bytes: impl Into<Vec<u8>>, media_type: Option<String>) -> Part {
        Part {
            media_type,
            ..Part::with(PartContent::Raw(bytes.into()))
        }
    }

    /// The text, when this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The text parts of `parts`, in order, one per line (other parts are skipped).
    pub fn text_of(parts: &[Part]) -> String {
        let texts: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
        texts.join("\n")
    }

    /// Decodes a part (v1.0, or v0.3 `kind` form).
    pub fn from_json(v: &Value) -> Result<Part, DecodeError> {
        Part::decode(v, &Path::Root)
    }

    /// Encodes the part as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(v: &D, path: &Path<'_>) -> Result<Part, DecodeError> {
        let m = as_object(v, path)?;
        let mut found: Option<(&'static str, PartContent)> = None;
        let mut filename = opt_string(m, "filename", path)?;
        let mut media_type = opt_string(m, "mediaType", path)?;
        let mut set = |name: &'static str, c: PartContent| -> Result<(), DecodeError> {
            if let Some((first, _)) = &found {
                return Err(path.err(DecodeErrorKind::PartWithTwoContents {
                    first,
                    second: name,
                }));
            }
            found = Some((name, c));
            Ok(())
        };
        if let Some(t) = member(m, "text") {
            match t.view() {
                View::String(s) => set("text", PartContent::Text(s.to_owned()))?,
                _ => return Err(wrong(&path.key("text"), "string", t)),
            }
        }
        if let Some(r) = member(m, "raw") {
            let p = path.key("raw");
            match r.view() {
                View::String(s) => {
                    let bytes =
                        decode_base64(s).ok_or_else(|| p.err(DecodeErrorKind::BadBase64))?;
                    set("raw", PartContent::Raw(bytes))?
                }
                _ => return Err(wrong(&p, "string", r)),
            }
        }
        if let Some(u) = member(m, "url") {
            match u.view() {
                View::String(s) => set("url", PartContent::Url(s.to_owned()))?,
                _ => return Err(wrong(&path.key("url"), "string", u)),
            }
        }
        if let Some(d) = member(m, "data") {
            // An explicit `null` counts as absent, like every other member.
            set("data", PartContent::Data(d.to_value()))?;
        }
        // v0.3: {"kind":"file","file":{"bytes"|"uri","mimeType","name"}}
        if let Some(f) = member(m, "file") {
            let fp = path.key("file");
            let fm = as_object(f, &fp)?;
            let content = if let Some(b) = member(fm, "bytes") {
                match b.view() {
                    View::String(s) => PartContent::Raw(
                        decode_base64(s)
                            .ok_or_else(|| fp.key("bytes").err(DecodeErrorKind::BadBase64))?,
                    ),
                    _ => return Err(wrong(&fp.key("bytes"), "string", b)),
                }
            } else if let Some(u) = opt_string(fm, "uri", &fp)? {
                PartContent::Url(u)
            } else {
                return Err(fp.err(DecodeErrorKind::FileWithoutContent));
            };
            set("file", content)?;
            if media_type.is_none() {
                media_type = opt_string(fm, "mimeType", &fp)?;
            }
            if filename.is_none() {
                filename = opt_string(fm, "name", &fp)?;
            }
        }
        let (_, content) = found.ok_or_else(|| path.err(DecodeErrorKind::PartWithoutContent))?;
        Ok(Part {
            content,
            metadata: opt_struct(m, "metadata", path)?,
            filename,
            media_type,
        })
    }
}
impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        match &self.content {
            PartContent::Text(t) => w.put("text", t)?,
            PartContent::Raw(b) => w.put("raw", &encode_base64(b))?,
            PartContent::Url(u) => w.put("url", u)?,
            PartContent::Data(d) => w.put("data", d)?,
        }
        .opt("metadata", &self.metadata)?
        .opt_str("filename", &self.filename)?
        .opt_str("mediaType", &self.media_type)?;
        w.end()
    }
}
deserialize_via_decode!(Part);

/// Who authored a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// `ROLE_UNSPECIFIED` (0); also what an unknown role name or number reads as.
    #[default]
    Unspecified,
    /// `ROLE_USER` (1): client to agent.
    User,
    /// `ROLE_AGENT` (2): agent to client.
    Agent,
}

impl Role {
    /// The proto enum name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Unspecified => "ROLE_UNSPECIFIED",
            Role::User => "ROLE_USER",
            Role::Agent => "ROLE_AGENT",
        }
    }

    fn decode<D: Dom>(v: Option<&D>, path: &Path<'_>) -> Result<Role, DecodeError> {
        let Some(v) = v else {
            return Ok(Role::Unspecified);
        };
        Ok(match v.view() {
            View::String(s) => match s {
                "ROLE_USER" | "user" | "USER" => Role::User,
                "ROLE_AGENT" | "agent" | "AGENT" => Role::Agent,
                _ => Role::Unspecified,
            },
            View::Number(_) => match integer(v, path)? {
                1 => Role::User,
                2 => Role::Agent,
                _ => Role::Unspecified,
            },
            _ => return Err(wrong(path, "enum name or number", v)),
        })
    }
}

/// A message between client and agent (a2a-wire §1.1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    /// Creator-generated id.
    pub message_id: String,
    /// Conversation id.
    pub context_id: Option<String>,
    /// Task this message continues (client) or belongs to (agent).
    pub task_id: Option<String>,
    /// Author.
    pub role: Role,
    /// Content.
    pub parts: Vec<Part>,
    /// Message metadata (A2A-T content lives here).
    pub metadata: Option<Map<String, Value>>,
    /// Extension URIs that contributed to this message.
    pub extensions: Vec<String>,
    /// Related tasks (informational).
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// Decodes a message.
    pub fn from_json(v: &Value) -> Result<Message, DecodeError> {
        Message::decode(v, &Path::Root)
    }

    /// Encodes the message as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(v: &D, path: &Path<'_>) -> Result<Message, DecodeError> {
        let m = as_object(v, path)?;
        Ok(Message {
            message_id: string(m, "messageId", path)?,
            context_id: opt_string(m, "contextId", path)?,
            task_id: opt_string(m, "taskId", path)?,
            role: Role::decode(member(m, "role"), &path.key("role"))?,
            parts: list(m, "parts", path, Part::decode)?,
            metadata: opt_struct(m, "metadata", path)?,
            extensions: string_list(m, "extensions", path)?,
            reference_task_ids: string_list(m, "referenceTaskIds", path)?,
        })
    }
}
impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        w.str("messageId", &self.message_id)?
            .opt_str("contextId", &self.context_id)?
            .opt_str("taskId", &self.task_id)?;
        if self.role != Role::Unspecified {
            w.put("role", self.role.as_str())?;
        }
        w.list("parts", &self.parts)?
            .opt("metadata", &self.metadata)?
            .list("extensions", &self.extensions)?
            .list("referenceTaskIds", &self.reference_task_ids)?;
        w.end()
    }
}
deserialize_via_decode!(Message);

/// The lifecycle state of a task (a2a-wire §1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskState {
    /// `TASK_STATE_UNSPECIFIED` (0).
    #[default]
    Unspecified,
    /// `TASK_STATE_SUBMITTED` (1).
    Submitted,
    /// `TASK_STATE_WORKING` (2).
    Working,
    /// `TASK_STATE_COMPLETED` (3).
    Completed,
    /// `TASK_STATE_FAILED` (4).
    Failed,
    /// `TASK_STATE_CANCELED` (5).
    Canceled,
    /// `TASK_STATE_INPUT_REQUIRED` (6).
    InputRequired,
    /// `TASK_STATE_REJECTED` (7).
    Rejected,
    /// `TASK_STATE_AUTH_REQUIRED` (8).
    AuthRequired,
    /// A name or number this client does not know (also v0.3 `unknown`).
    Unrecognized,
}

impl TaskState {
    /// The proto enum name (`TASK_STATE_UNRECOGNIZED` for [`TaskState::Unrecognized`], which has
    /// no proto name).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
            TaskState::Unrecognized => "TASK_STATE_UNRECOGNIZED",
        }
    }

    /// COMPLETED, FAILED, CANCELED or REJECTED.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// INPUT_REQUIRED or AUTH_REQUIRED.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// SUBMITTED or WORKING.
    pub fn is_active(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }

    /// Reads a state by v1.0 name, v0.3 lowercase name or number; anything else is
    /// [`TaskState::Unrecognized`].
    pub fn from_name(s: &str) -> TaskState {
        match s {
            "TASK_STATE_UNSPECIFIED" => TaskState::Unspecified,
            "TASK_STATE_SUBMITTED" | "submitted" => TaskState::Submitted,
            "TASK_STATE_WORKING" | "working" => TaskState::Working,
            "TASK_STATE_COMPLETED" | "completed" => TaskState::Completed,
            "TASK_STATE_FAILED" | "failed" => TaskState::Failed,
            "TASK_STATE_CANCELED" | "canceled" | "cancelled" => TaskState::Canceled,
            "TASK_STATE_INPUT_REQUIRED" | "input-required" => TaskState::InputRequired,
            "TASK_STATE_REJECTED" | "rejected" => TaskState::Rejected,
            "TASK_STATE_AUTH_REQUIRED" | "auth-required" => TaskState::AuthRequired,
            _ => TaskState::Unrecognized,
        }
    }

    /// Reads a state by proto number; unknown numbers are [`TaskState::Unrecognized`].
    pub fn from_number(n: i64) -> TaskState {
        match n {
            0 => TaskState::Unspecified,
            1 => TaskState::Submitted,
            2 => TaskState::Working,
            3 => TaskState::Completed,
            4 => TaskState::Failed,
            5 => TaskState::Canceled,
            6 => TaskState::InputRequired,
            7 => TaskState::Rejected,
            8 => TaskState::AuthRequired,
            _ => TaskState::Unrecognized,
        }
    }

    fn decode<D: Dom>(v: Option<&D>, path: &Path<'_>) -> Result<TaskState, DecodeError> {
        let Some(v) = v else {
            return Ok(TaskState::Unspecified);
        };
        Ok(match v.view() {
            View::String(s) => TaskState::from_name(s),
            View::Number(_) => match integer(v, path) {
                Ok(i) => TaskState::from_number(i),
                Err(_) => TaskState::Unrecognized,
            },
            _ => return Err(wrong(path, "enum name or number", v)),
        })
    }
}

impl core::fmt::Display for TaskState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task's current status.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RemoteTaskStatus {
    /// The state.
    pub state: TaskState,
    /// The agent's status message (e.g. a Negotiation-T Propose).
    pub message: Option<Message>,
    /// RFC 3339 timestamp, kept verbatim.
    pub timestamp: Option<String>,
}

impl RemoteTaskStatus {
    /// Decodes a status.
    pub fn from_json(v: &Value) -> Result<RemoteTaskStatus, DecodeError> {
        RemoteTaskStatus::decode(v, &Path::Root)
    }

    /// Encodes the status as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(v: &D, path: &Path<'_>) -> Result<RemoteTaskStatus, DecodeError> {
        let m = as_object(v, path)?;
        Ok(RemoteTaskStatus {
            state: TaskState::decode(member(m, "state"), &path.key("state"))?,
            message: member(m, "message")
                .map(|mv| Message::decode(mv, &path.key("message")))
                .transpose()?,
            timestamp: opt_string(m, "timestamp", path)?,
        })
    }
}
impl Serialize for RemoteTaskStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        if self.state != TaskState::Unspecified {
            w.put("state", self.state.as_str())?;
        }
        w.opt("message", &self.message)?
            .opt_str("timestamp", &self.timestamp)?;
        w.end()
    }
}
deserialize_via_decode!(RemoteTaskStatus);

/// An output of a task (a2a-wire §1.4).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Artifact {
    /// Unique within the task.
    pub artifact_id: String,
    /// Human-readable name.
    pub name: Option<String>,
    /// Human-readable description.
    pub description: Option<String>,
    /// Content.
    pub parts: Vec<Part>,
    /// Artifact metadata (A2A-T results may live here).
    pub metadata: Option<Map<String, Value>>,
    /// Extension URIs that contributed to this artifact.
    pub extensions: Vec<String>,
}

impl Artifact {
    /// Decodes an artifact.
    pub fn from_json(v: &Value) -> Result<Artifact, DecodeError> {
        Artifact::decode(v, &Path::Root)
    }

    /// Encodes the artifact as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(v: &D, path: &Path<'_>) -> Result<Artifact, DecodeError> {
        let m = as_object(v, path)?;
        Ok(Artifact {
            artifact_id: string(m, "artifactId", path)?,
            name: opt_string(m, "name", path)?,
            description: opt_string(m, "description", path)?,
            parts: list(m, "parts", path, Part::decode)?,
            metadata: opt_struct(m, "metadata", path)?,
            extensions: string_list(m, "extensions", path)?,
        })
    }
}
impl Serialize for Artifact {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        w.str("artifactId", &self.artifact_id)?
            .opt_str("name", &self.name)?
            .opt_str("description", &self.description)?
            .list("parts", &self.parts)?
            .opt("metadata", &self.metadata)?
            .list("extensions", &self.extensions)?;
        w.end()
    }
}
deserialize_via_decode!(Artifact);

/// A unit of work on the agent (a2a-wire §1.3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Task {
    /// Server-generated id.
    pub id: String,
    /// Conversation id.
    pub context_id: Option<String>,
    /// Current status.
    pub status: RemoteTaskStatus,
    /// Outputs so far.
    pub artifacts: Vec<Artifact>,
    /// Message history.
    pub history: Vec<Message>,
    /// Task-level metadata.
    pub metadata: Option<Map<String, Value>>,
}

impl Task {
    /// Decodes a task.
    pub fn from_json(v: &Value) -> Result<Task, DecodeError> {
        Task::decode(v, &Path::Root)
    }

    /// Encodes the task as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(v: &D, path: &Path<'_>) -> Result<Task, DecodeError> {
        let m = as_object(v, path)?;
        Ok(Task {
            id: string(m, "id", path)?,
            context_id: opt_string(m, "contextId", path)?,
            status: match member(m, "status") {
                Some(s) => RemoteTaskStatus::decode(s, &path.key("status"))?,
                None => RemoteTaskStatus::default(),
            },
            artifacts: list(m, "artifacts", path, Artifact::decode)?,
            history: list(m, "history", path, Message::decode)?,
            metadata: opt_struct(m, "metadata", path)?,
        })
    }
}
impl Serialize for Task {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        w.str("id", &self.id)?
            .opt_str("contextId", &self.context_id)?
            .put("status", &self.status)?
            .list("artifacts", &self.artifacts)?
            .list("history", &self.history)?
            .opt("metadata", &self.metadata)?;
        w.end()
    }
}
deserialize_via_decode!(Task);

/// A status change delivered on a stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: Option<String>,
    /// The new status.
    pub status: RemoteTaskStatus,
    /// Event (task-level) metadata.
    pub metadata: Option<Map<String, Value>>,
}

impl TaskStatusUpdateEvent {
    /// Decodes a status update (v0.3 `final` is ignored).
    pub fn from_json(v: &Value) -> Result<TaskStatusUpdateEvent, DecodeError> {
        TaskStatusUpdateEvent::decode(v, &Path::Root)
    }

    /// Encodes the event as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(
        v: &D,
        path: &Path<'_>,
    ) -> Result<TaskStatusUpdateEvent, DecodeError> {
        let m = as_object(v, path)?;
        Ok(TaskStatusUpdateEvent {
            task_id: string(m, "taskId", path)?,
            context_id: opt_string(m, "contextId", path)?,
            status: match member(m, "status") {
                Some(s) => RemoteTaskStatus::decode(s, &path.key("status"))?,
                None => RemoteTaskStatus::default(),
            },
            metadata: opt_struct(m, "metadata", path)?,
        })
    }
}
impl Serialize for TaskStatusUpdateEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        w.str("taskId", &self.task_id)?
            .opt_str("contextId", &self.context_id)?
            .put("status", &self.status)?
            .opt("metadata", &self.metadata)?;
        w.end()
    }
}
deserialize_via_decode!(TaskStatusUpdateEvent);

/// An artifact chunk delivered on a stream.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its context.
    pub context_id: Option<String>,
    /// The artifact (chunk).
    pub artifact: Artifact,
    /// `true`: extend the earlier artifact with the same id; `false`: replace it.
    pub append: bool,
    /// `true`: the artifact is complete.
    pub last_chunk: bool,
    /// Event metadata.
    pub metadata: Option<Map<String, Value>>,
}

impl TaskArtifactUpdateEvent {
    /// Decodes an artifact update.
    pub fn from_json(v: &Value) -> Result<TaskArtifactUpdateEvent, DecodeError> {
        TaskArtifactUpdateEvent::decode(v, &Path::Root)
    }

    /// Encodes the event as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(
        v: &D,
        path: &Path<'_>,
    ) -> Result<TaskArtifactUpdateEvent, DecodeError> {
        let m = as_object(v, path)?;
        Ok(TaskArtifactUpdateEvent {
            task_id: string(m, "taskId", path)?,
            context_id: opt_string(m, "contextId", path)?,
            artifact: match member(m, "artifact") {
                Some(a) => Artifact::decode(a, &path.key("artifact"))?,
                None => Artifact::default(),
            },
            append: boolean(m, "append", path)?,
            last_chunk: boolean(m, "lastChunk", path)?,
            metadata: opt_struct(m, "metadata", path)?,
        })
    }
}
impl Serialize for TaskArtifactUpdateEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        w.str("taskId", &self.task_id)?
            .opt_str("contextId", &self.context_id)?
            .put("artifact", &self.artifact)?
            .flag("append", self.append)?
            .flag("lastChunk", self.last_chunk)?
            .opt("metadata", &self.metadata)?;
        w.end()
    }
}
deserialize_via_decode!(TaskArtifactUpdateEvent);

/// One item of a stream, or the result of `SendMessage` (which is only ever `Task` or
/// `Message`).
#[derive(Debug, Clone, PartialEq)]
pub enum StreamResponse {
    /// `{"task":…}`: an authoritative snapshot.
    Task(Task),
    /// `{"message":…}`: a standalone message.
    Message(Message),
    /// `{"statusUpdate":…}`.
    StatusUpdate(TaskStatusUpdateEvent),
    /// `{"artifactUpdate":…}`.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

const PAYLOAD_KEYS: [&str; 4] = ["task", "message", "statusUpdate", "artifactUpdate"];

impl StreamResponse {
    /// Decodes a v1.0 wrapper, a v0.3 `kind`-discriminated bare object, or a bare
    /// object recognised by its members: `id`+`status` is a task, `artifact`+`taskId` an
    /// artifact update, `status`+`taskId` a status update, `messageId`+`parts` a message.
    pub fn from_json(v: &Value) -> Result<StreamResponse, DecodeError> {
        StreamResponse::decode(v, &Path::Root)
    }

    /// Encodes the v1.0 wrapper form.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(v: &D, path: &Path<'_>) -> Result<StreamResponse, DecodeError> {
        let m = as_object(v, path)?;
        let mut found: Option<(&'static str, &D)> = None;
        for k in PAYLOAD_KEYS {
            if let Some(inner) = member(m, k) {
                if let Some((first, _)) = found {
                    return Err(path.err(DecodeErrorKind::TwoPayloads { first, second: k }));
                }
                found = Some((k, inner));
            }
        }
        if let Some((k, inner)) = found {
            let p = path.key(k);
            return StreamResponse::decode_as(k, inner, &p);
        }
        // v0.3 bare objects with a `kind` discriminator.
        if let Some(View::String(kind)) = member(m, "kind").map(Dom::view) {
            let k = match kind {
                "task" => "task",
                "message" => "message",
                "status-update" => "statusUpdate",
                "artifact-update" => "artifactUpdate",
                other => {
                    return Err(path
                        .key("kind")
                        .err(DecodeErrorKind::UnknownKind(other.to_owned())));
                }
            };
            return StreamResponse::decode_as(k, v, path);
        }
        // TR-14: non-standard bare payloads.
        let has = |k: &str| member(m, k).is_some();
        let k = if has("id") && has("status") {
            "task"
        } else if has("artifact") && has("taskId") {
            "artifactUpdate"
        } else if has("status") && has("taskId") {
            "statusUpdate"
        } else if has("messageId") && has("parts") {
            "message"
        } else {
            return Err(path.err(DecodeErrorKind::NoPayload));
        };
        StreamResponse::decode_as(k, v, path)
    }

    fn decode_as<D: Dom>(k: &str, v: &D, path: &Path<'_>) -> Result<StreamResponse, DecodeError> {
        Ok(match k {
            "task" => StreamResponse::Task(Task::decode(v, path)?),
            "message" => StreamResponse::Message(Message::decode(v, path)?),
            "statusUpdate" => StreamResponse::StatusUpdate(TaskStatusUpdateEvent::decode(v, path)?),
            _ => StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent::decode(v, path)?),
        })
    }

    /// The task id this item refers to, if any.
    pub fn task_id(&self) -> Option<&str> {
        match self {
            StreamResponse::Task(t) => Some(&t.id),
            StreamResponse::Message(m) => m.task_id.as_deref(),
            StreamResponse::StatusUpdate(s) => Some(&s.task_id),
            StreamResponse::ArtifactUpdate(a) => Some(&a.task_id),
        }
    }

    /// The task state this item reports: a task's or a status update's.
    pub(crate) fn state(&self) -> Option<TaskState> {
        match self {
            StreamResponse::Task(t) => Some(t.status.state),
            StreamResponse::StatusUpdate(u) => Some(u.status.state),
            StreamResponse::ArtifactUpdate(_) | StreamResponse::Message(_) => None,
        }
    }
}
impl Serialize for StreamResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        match self {
            StreamResponse::Task(t) => w.put("task", t)?,
            StreamResponse::Message(m) => w.put("message", m)?,
            StreamResponse::StatusUpdate(u) => w.put("statusUpdate", u)?,
            StreamResponse::ArtifactUpdate(a) => w.put("artifactUpdate", a)?,
        };
        w.end()
    }
}
deserialize_via_decode!(StreamResponse);

/// Per-request options of `SendMessage`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SendMessageConfiguration {
    /// MIME types the client accepts (advisory).
    pub accepted_output_modes: Vec<String>,
    /// History messages to return: `Some(0)` omits history.
    pub history_length: Option<i32>,
    /// Return the first snapshot instead of blocking.
    pub return_immediately: bool,
}

impl SendMessageConfiguration {
    /// Decodes a configuration (v0.3 `blocking:false` reads as `returnImmediately:true`).
    pub fn from_json(v: &Value) -> Result<SendMessageConfiguration, DecodeError> {
        SendMessageConfiguration::decode(v, &Path::Root)
    }

    /// Encodes the configuration as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        value_of(self)
    }

    pub(crate) fn decode<D: Dom>(
        v: &D,
        path: &Path<'_>,
    ) -> Result<SendMessageConfiguration, DecodeError> {
        let m = as_object(v, path)?;
        let return_immediately = match opt_bool(m, "returnImmediately", path)? {
            Some(b) => b,
            None => opt_bool(m, "blocking", path)?.map(|b| !b).unwrap_or(false),
        };
        Ok(SendMessageConfiguration {
            accepted_output_modes: string_list(m, "acceptedOutputModes", path)?,
            history_length: opt_i32(m, "historyLength", path)?,
            return_immediately,
        })
    }
}
impl Serialize for SendMessageConfiguration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        w.list("acceptedOutputModes", &self.accepted_output_modes)?
            .opt("historyLength", &self.history_length)?
            .flag("returnImmediately", self.return_immediately)?;
        w.end()
    }
}
deserialize_via_decode!(SendMessageConfiguration);

/// The `SendMessage` / `SendStreamingMessage` request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SendMessageRequest {
    /// Tenant (normally filled from the selected interface by the encoder).
    pub tenant: Option<String>,
    /// The message.
    pub message: Message,
    /// Options.
    pub configuration: Option<SendMessageConfiguration>,
    /// Request-level metadata.
    pub metadata: Option<Map<String, Value>>,
}

impl SendMessageRequest {
    /// Decodes a request.
    pub fn from_json(v: &Value) -> Result<SendMessageRequest, DecodeError> {
        SendMessageRequest::decode(v, &Path::Root)
    }

    pub(crate) fn decode<D: Dom>(
        v: &D,
        path: &Path<'_>,
    ) -> Result<SendMessageRequest, DecodeError> {
        let m = as_object(v, path)?;
        Ok(SendMessageRequest {
            tenant: opt_string(m, "tenant", path)?,
            message: match member(m, "message") {
                Some(mv) => Message::decode(mv, &path.key("message"))?,
                None => return Err(path.key("message").err(DecodeErrorKind::Missing)),
            },
            configuration: member(m, "configuration")
                .map(|c| SendMessageConfiguration::decode(c, &path.key("configuration")))
                .transpose()?,
            metadata: opt_struct(m, "metadata", path)?,
        })
    }

    /// Encodes the request as v1.0 ProtoJSON.
    pub fn to_json(&self) -> Value {
        self.to_json_with_tenant(self.tenant.as_deref())
    }

    /// Encodes the request with `tenant` in place of [`SendMessageRequest::tenant`].
    pub fn to_json_with_tenant(&self, tenant: Option<&str>) -> Value {
        value_of(&self.with_tenant(tenant))
    }

    /// The request as written with `tenant` in place of [`SendMessageRequest::tenant`].
    pub(crate) fn with_tenant<'r>(&'r self, tenant: Option<&'r str>) -> WithTenant<'r> {
        WithTenant {
            request: self,
            tenant,
        }
    }
}

/// A [`SendMessageRequest`] written with another tenant.
pub(crate) struct WithTenant<'r> {
    request: &'r SendMessageRequest,
    tenant: Option<&'r str>,
}

impl Serialize for WithTenant<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut w = FieldWriter::begin(s)?;
        if let Some(t) = self.tenant {
            w.str("tenant", t)?;
        }
        w.put("message", &self.request.message)?
            .opt("configuration", &self.request.configuration)?
            .opt("metadata", &self.request.metadata)?;
        w.end()
    }
}

impl Serialize for SendMessageRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.with_tenant(self.tenant.as_deref()).serialize(s)
    }
}
deserialize_via_decode!(SendMessageRequest);

/// The filters and paging of one `ListTasks` call. Every field is optional; an absent field
/// is not sent, so the agent applies its own default (and its own authorisation scope: an
/// agent lists only the tasks the caller may see).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListTasksParams {
    /// Only tasks of this context.
    pub context_id: Option<String>,
    /// Only tasks in this state.
    pub status: Option<TaskState>,
    /// Tasks per page (the protocol allows 1 to 100; the agent's default, usually 50, when
    /// absent).
    pub page_size: Option<u32>,
    /// The `nextPageToken` of the previous page; absent for the first page.
    pub page_token: Option<String>,
    /// History messages to include per task (`Some(0)`: none).
    pub history_length: Option<u32>,
    /// Only tasks whose status changed after this RFC 3339 time, sent verbatim.
    pub status_timestamp_after: Option<String>,
    /// Whether to include artifacts.
    pub include_artifacts: Option<bool>,
}

/// One page of a `ListTasks` answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskPage {
    /// The tasks, in the agent's order.
    pub tasks: Vec<Task>,
    /// The token of the next page; `None` on the last page (the wire's `""`).
    pub next_page_token: Option<String>,
    /// The page size the agent applied, when it said.
    pub page_size: Option<i32>,
    /// The number of matching tasks over all pages, when the agent said.
    pub total_size: Option<i32>,
}

impl TaskPage {
    /// Decodes a `ListTasksResponse` (defaults printed as `""`, `0` or `[]` read as absent).
    pub fn from_json(v: &Value) -> Result<TaskPage, DecodeError> {
        let path = Path::Root;
        let m = as_object(v, &path)?;
        Ok(TaskPage {
            tasks: list(m, "tasks", &path, Task::decode)?,
            next_page_token: opt_string(m, "nextPageToken", &path)?,
            page_size: opt_i32(m, "pageSize", &path)?,
            total_size: opt_i32(m, "totalSize", &path)?,
        })
    }
}
