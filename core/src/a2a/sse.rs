//! Incremental Server-Sent Events decoder (a2a-wire §2.4).
//!
//! * Line terminators CRLF, LF and CR; a CR ending one chunk followed by LF at the start of the
//!   next is one terminator.
//! * Lines are UTF-8 decoded (lossily) only once complete, so multibyte characters split across
//!   chunks survive.
//! * `:` lines are comments; `data:` strips exactly one leading space; several `data` lines are
//!   joined with `\n`; a blank line dispatches; events whose data is empty are skipped;
//!   `retry:` and unknown fields are ignored; a leading UTF-8 BOM is dropped.
//! * [`SseEvent::id`] is the `id:` of that event block only (not the sticky last-event-id).
//! * Size cap: when the bytes of one event exceed `max_event_bytes`, `push` reports
//!   [`SseError::EventTooLarge`] once, drops that event and resynchronises at the next blank
//!   line. Events completed in the same chunk are still delivered.
//! * At [`SseDecoder::finish`] an unterminated last line is processed and a pending event is
//!   dispatched (lenient: the payload decoder still rejects a truncated JSON document).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, if any (Python names errors `error`; Java never names events).
    pub event: Option<String>,
    /// The data lines joined with `\n`.
    pub data: String,
    /// The `id:` of this event block, if any.
    pub id: Option<String>,
}

/// SSE decoding problems.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event exceeded the configured size; it was dropped.
    #[error("SSE event larger than {limit} bytes; event dropped")]
    EventTooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
}

/// Incremental SSE decoder; feed it the body bytes in any chunking.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    max_event_bytes: usize,
    line: Vec<u8>,
    /// Whether the current line has any byte (also while discarding, when `line` stays empty).
    line_seen: bool,
    after_cr: bool,
    at_start: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
    event_bytes: usize,
    discarding: bool,
}

impl SseDecoder {
    /// A decoder that drops events larger than `max_event_bytes` (field names, values and line
    /// terminators of the event's lines are counted).
    pub fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            max_event_bytes,
            line: Vec::new(),
            line_seen: false,
            after_cr: false,
            at_start: true,
            data: String::new(),
            has_data: false,
            event: None,
            id: None,
            event_bytes: 0,
            discarding: false,
        }
    }

    /// Feeds bytes; complete events are appended to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut overflow = false;
        let mut rest = bytes;
        if self.at_start && !rest.is_empty() {
            // Drop a UTF-8 BOM, even when it arrives split across chunks.
            const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
            let have = self.line.len();
            let take = (3 - have).min(rest.len());
            if BOM[have..have + take] == rest[..take] {
                self.line.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if self.line.len() < 3 {
                    return Ok(());
                }
                self.line.clear();
            } else {
                // Not a BOM: whatever was held back is ordinary line content.
                let held = core::mem::take(&mut self.line);
                self.at_start = false;
                self.push_inner(&held, out, &mut overflow);
            }
            self.at_start = false;
        }
        self.push_inner(rest, out, &mut overflow);
        if overflow {
            Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            })
        } else {
            Ok(())
        }
    }

    fn push_inner(&mut self, mut rest: &[u8], out: &mut Vec<SseEvent>, overflow: &mut bool) {
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(pos) => {
                    self.extend_line(&rest[..pos], overflow);
                    self.account(1, overflow);
                    if rest[pos] == b'\r' {
                        self.after_cr = true;
                    }
                    rest = &rest[pos + 1..];
                    self.end_line(out);
                }
                None => {
                    self.extend_line(rest, overflow);
                    rest = &[];
                }
            }
        }
    }

    fn account(&mut self, n: usize, overflow: &mut bool) {
        if self.discarding {
            return;
        }
        self.event_bytes = self.event_bytes.saturating_add(n);
        if self.event_bytes > self.max_event_bytes {
            self.discarding = true;
            *overflow = true;
            self.line.clear();
            self.reset_event();
        }
    }

    fn extend_line(&mut self, bytes: &[u8], overflow: &mut bool) {
        if bytes.is_empty() {
            return;
        }
        self.line_seen = true;
        self.account(bytes.len(), overflow);
        if !self.discarding {
            self.line.extend_from_slice(bytes);
        }
    }

    fn reset_event(&mut self) {
        self.data.clear();
        self.has_data = false;
        self.event = None;
        self.id = None;
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = core::mem::take(&mut self.line);
        let blank = !self.line_seen;
        self.line_seen = false;
        if blank {
            // Blank line: dispatch (or finish discarding an oversized event).
            if self.discarding {
                self.discarding = false;
            } else {
                self.dispatch(out);
            }
            self.event_bytes = 0;
            return;
        }
        if self.discarding {
            return;
        }
        self.field(&String::from_utf8_lossy(&line));
    }

    fn field(&mut self, line: &str) {
        if line.starts_with(':') {
            return;
        }
        let (name, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        match name {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data && !self.data.is_empty() {
            out.push(SseEvent {
                event: self.event.take().filter(|e| !e.is_empty()),
                data: core::mem::take(&mut self.data),
                id: self.id.take(),
            });
        }
        self.reset_event();
    }

    /// Ends the stream: processes an unterminated last line and dispatches a pending event.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.at_start {
            // Only (part of) a BOM was seen, or nothing at all.
            self.line.clear();
            self.at_start = false;
        }
        if self.line_seen {
            self.end_line(out);
        }
        self.after_cr = false;
        if self.discarding {
            self.discarding = false;
            self.reset_event();
        } else {
            self.dispatch(out);
        }
        self.event_bytes = 0;
        Ok(())
    }
}
