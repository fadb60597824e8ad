//! Per-invocation response assembly: the task view, received messages, outputs and text.
//!
//! One [`ResponseAccumulator`] per task invocation or stream; never shared. It folds every
//! [`StreamResponse`] of that invocation (unary results, stream events, polling snapshots) into
//! the current task view:
//!
//! * `artifactUpdate` with `append: false` replaces the artifact with the same id (or adds it);
//!   `append: true` extends its parts and shallow-merges its metadata (new keys win; name,
//!   description and extensions fall back to the earlier ones); `append` for an unknown id
//!   creates the artifact. Artifacts keep the order of first appearance.
//! * A `task` event is an authoritative snapshot: it replaces state, status message, task
//!   metadata and the artifact set, so repeated snapshots never duplicate content.
//! * A `statusUpdate` replaces state and status message (the status message is the message of
//!   the *latest* status, `None` when that status has none) and, when it carries metadata,
//!   the task metadata.
//! * A standalone `message` is kept (de-duplicated by `messageId`; a repeat replaces the
//!   earlier copy in place).

use super::types::{Artifact, Message, Part, PartContent, Role, StreamResponse, TaskState};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message as received, with each metadata layer kept separate.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedMessage {
    /// The standalone message, or the task's latest status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// The task id (from the task, or the standalone message's `taskId`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// The context id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task state (`None` for a standalone message).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "state_serde")]
    pub task_state: Option<TaskState>,
    /// Task-level metadata (`Task.metadata` / latest `statusUpdate.metadata`), distinct from
    /// the message's own metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_metadata: Option<Map<String, Value>>,
    /// The assembled artifacts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
}

mod state_serde {
    use super::TaskState;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(s: &Option<TaskState>, ser: S) -> Result<S::Ok, S::Error> {
        match s {
            Some(s) => ser.serialize_str(s.as_str()),
            None => ser.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TaskState>, D::Error> {
        Ok(Option::<String>::deserialize(d)?.map(|s| TaskState::from_name(&s)))
    }
}

/// Folds the responses of one invocation into the current task view.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResponseAccumulator {
    task_seen: bool,
    task_id: Option<String>,
    context_id: Option<String>,
    state: Option<TaskState>,
    // Boxed, both: an accumulator lives as long as its subtask, most of that time without
    // either, and inline they would take 296 of its 400 bytes.
    status_message: Option<Box<Message>>,
    task_metadata: Option<Box<Map<String, Value>>>,
    artifacts: Vec<Artifact>,
    messages: Vec<Message>,
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

impl ResponseAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        ResponseAccumulator::default()
    }

    /// Applies one response item, keeping what it needs of the item without copying it.
    pub fn apply(&mut self, ev: StreamResponse) {
        match ev {
            StreamResponse::Task(t) => {
                self.task_seen = true;
                self.task_id = non_empty(t.id).or(self.task_id.take());
                if t.context_id.is_some() {
                    self.context_id = t.context_id;
                }
                self.state = Some(t.status.state);
                self.status_message = t.status.message.map(Box::new);
                self.task_metadata = t.metadata.map(Box::new);
                self.artifacts.clear();
                self.artifacts.reserve_exact(t.artifacts.len());
                for a in t.artifacts {
                    self.merge_artifact(a, false);
                }
            }
            StreamResponse::StatusUpdate(s) => {
                self.task_seen = true;
                if self.task_id.is_none() {
                    self.task_id = non_empty(s.task_id);
                }
                if self.context_id.is_none() {
                    self.context_id = s.context_id;
                }
                self.state = Some(s.status.state);
                self.status_message = s.status.message.map(Box::new);
                if s.metadata.is_some() {
                    self.task_metadata = s.metadata.map(Box::new);
                }
            }
            StreamResponse::ArtifactUpdate(a) => {
                self.task_seen = true;
                if self.task_id.is_none() {
                    self.task_id = non_empty(a.task_id);
                }
                if self.context_id.is_none() {
                    self.context_id = a.context_id;
                }
                self.merge_artifact(a.artifact, a.append);
            }
            StreamResponse::Message(m) => {
                if self.context_id.is_none() {
                    self.context_id.clone_from(&m.context_id);
                }
                match self
                    .messages
                    .iter_mut()
                    .find(|x| !m.message_id.is_empty() && x.message_id == m.message_id)
                {
                    Some(existing) => *existing = m,
                    None => self.messages.push(m),
                }
            }
        }
    }

    fn merge_artifact(&mut self, a: Artifact, append: bool) {
        let Some(existing) = self
            .artifacts
            .iter_mut()
            .find(|x| x.artifact_id == a.artifact_id)
        else {
            self.artifacts.push(a);
            return;
        };
        if !append {
            *existing = a;
            return;
        }
        existing.parts.extend(a.parts);
        if let Some(new_meta) = a.metadata {
            let meta = existing.metadata.get_or_insert_with(Map::new);
            for (k, v) in new_meta {
                meta.insert(k, v);
            }
        }
        if a.name.is_some() {
            existing.name = a.name;
        }
        if a.description.is_some() {
            existing.description = a.description;
        }
        if !a.extensions.is_empty() {
            existing.extensions = a.extensions;
        }
    }

    /// The remote task id, once known.
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// The context id, once known.
    pub fn context_id(&self) -> Option<&str> {
        self.context_id.as_deref()
    }

    /// The latest task state, once a task was seen.
    pub fn state(&self) -> Option<TaskState> {
        self.state
    }

    /// The message of the latest status.
    pub fn status_message(&self) -> Option<&Message> {
        self.status_message.as_deref()
    }

    /// The task-level metadata.
    pub fn task_metadata(&self) -> Option<&Map<String, Value>> {
        self.task_metadata.as_deref()
    }

    /// The assembled artifacts, in order of first appearance.
    pub fn artifacts(&self) -> &[Artifact] {
        &self.artifacts
    }

    /// The standalone messages, de-duplicated, in order of first appearance.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Whether any task-level item (task, status or artifact update) was applied.
    pub fn task_seen(&self) -> bool {
        self.task_seen
    }

    /// One [`ReceivedMessage`] per standalone message, then (if a task was seen) one
    /// holding the latest status message, the task metadata and the assembled artifacts.
    pub fn received_messages(&self) -> Vec<ReceivedMessage> {
        self.clone().into_received_messages()
    }

    /// [`ResponseAccumulator::received_messages`], moving the content instead of copying it.
    pub fn into_received_messages(self) -> Vec<ReceivedMessage> {
        // Sized exactly: the list is kept in the run's history for as long as the run lives,
        // and a push past a collected length would leave room for three more (over a KB each
        // time, on every remote subtask of a long run).
        let mut out = Vec::with_capacity(self.messages.len() + usize::from(self.task_seen));
        out.extend(self.messages.into_iter().map(|m| ReceivedMessage {
            task_id: m.task_id.clone(),
            context_id: m.context_id.clone(),
            message: Some(m),
            ..ReceivedMessage::default()
        }));
        if self.task_seen {
            let mut artifacts = self.artifacts;
            // Pushed one by one, the list (and an appended artifact's parts) has room to spare:
            // four artifacts' worth for the first one, about 450 bytes kept per remote subtask.
            artifacts.shrink_to_fit();
            for artifact in &mut artifacts {
                artifact.parts.shrink_to_fit();
            }
            out.push(ReceivedMessage {
                message: self.status_message.map(|m| *m),
                task_id: self.task_id,
                context_id: self.context_id,
                task_state: self.state,
                task_metadata: self.task_metadata.map(|m| *m),
                artifacts,
            });
        }
        out
    }

    /// The outputs of a successful interaction: text parts as strings and data parts as their
    /// value (never flattened, never concatenated). Raw and url parts are not outputs. They are
    /// taken from the first source that has parts, in this order:
    ///
    /// 1. the assembled artifacts, in order;
    /// 2. the status message of the task when its final state is `TASK_STATE_COMPLETED` (the
    ///    agent answered with its final status message and no artifact);
    /// 3. the last standalone message not authored by the user.
    pub fn outputs(&self) -> Vec<Value> {
        if self.artifacts.iter().any(|a| !a.parts.is_empty()) {
            return outputs_of(self.artifacts.iter().flat_map(|a| &a.parts));
        }
        let from_status = self
            .status_message
            .as_ref()
            .filter(|m| self.state == Some(TaskState::Completed) && m.role != Role::User)
            .map_or(&[][..], |m| &m.parts[..]);
        let parts = if from_status.is_empty() {
            self.messages
                .iter()
                .rev()
                .find(|m| m.role != Role::User)
                .map_or(&[][..], |m| &m.parts[..])
        } else {
            from_status
        };
        outputs_of(parts.iter())
    }

    /// The text convenience: see [`convenience_text`].
    pub fn text(&self) -> String {
        convenience_text(
            &self.artifacts,
            self.status_message.as_deref(),
            self.messages.iter(),
        )
    }
}

/// The outputs among `parts`: text parts as strings, data parts as their value. The list has
/// room for exactly them: it is kept with the task's result for the run's life, where a list
/// collected one by one would keep room for four.
fn outputs_of<'p>(parts: impl Iterator<Item = &'p Part> + Clone) -> Vec<Value> {
    let is_output =
        |part: &&Part| matches!(part.content, PartContent::Text(_) | PartContent::Data(_));
    let mut outputs = Vec::with_capacity(parts.clone().filter(is_output).count());
    outputs.extend(parts.filter_map(|part| match &part.content {
        PartContent::Text(t) => Some(Value::String(t.clone())),
        PartContent::Data(d) => Some(d.clone()),
        PartContent::Raw(_) | PartContent::Url(_) => None,
    }));
    outputs
}

/// The text convenience of one response: the text parts of the artifacts joined with `\n`;
/// else the text of the status message; else that of the standalone messages. A diagnostic
/// only: it never stands in for the full response.
pub fn convenience_text<'a>(
    artifacts: &[Artifact],
    status_message: Option<&Message>,
    messages: impl Iterator<Item = &'a Message>,
) -> String {
    fn texts<'a>(parts: impl Iterator<Item = &'a super::types::Part>) -> Vec<&'a str> {
        parts.filter_map(|p| p.as_text()).collect()
    }
    let a = texts(artifacts.iter().flat_map(|a| a.parts.iter()));
    if !a.is_empty() {
        return a.join("\n");
    }
    if let Some(m) = status_message {
        let s = texts(m.parts.iter());
        if !s.is_empty() {
            return s.join("\n");
        }
    }
    texts(messages.flat_map(|m| m.parts.iter())).join("\n")
}
