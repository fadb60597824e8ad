//! gRPC length-prefixed message framing: each message is a 1-byte compressed flag, a 4-byte
//! big-endian length and the message bytes.
//!
//! This client never negotiates compression (it sends no `grpc-accept-encoding`), so a set
//! compressed flag is a protocol error. The declared length is checked against the limit as
//! soon as the 5-byte prefix is complete, before any buffer is reserved, and the message buffer
//! then grows only with bytes that actually arrived.

/// Length of the message prefix.
pub const FRAME_HEADER_LEN: usize = 5;

/// A framing problem. After any of them the stream cannot be resynchronised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The compressed flag is set (or is not 0/1), but no compression was negotiated.
    #[error("gRPC message has compressed flag {flag}, but no compression was negotiated")]
    Compressed {
        /// The flag byte found.
        flag: u8,
    },
    /// A length prefix above the configured maximum message size.
    #[error("gRPC message of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// The declared length.
        len: u64,
        /// The configured maximum.
        limit: usize,
    },
    /// The stream ended inside a frame.
    #[error("gRPC stream ended inside a frame: {received} of {expected} bytes")]
    Truncated {
        /// Bytes of the frame (prefix included) received.
        received: usize,
        /// Bytes the frame needs (the prefix length while the prefix itself is incomplete).
        expected: usize,
    },
}

/// Frames one message; `None` when it is 4 GiB or larger and cannot be framed.
pub fn encode_frame(message: &[u8]) -> Option<Vec<u8>> {
    let len = u32::try_from(message.len()).ok()?;
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + message.len());
    out.push(0);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Some(out)
}

/// Incremental decoder of a framed message stream; feed it body bytes in any chunking.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    max_message_bytes: usize,
    header: [u8; FRAME_HEADER_LEN],
    header_len: usize,
    /// The declared length of the message being received, once its prefix is complete.
    expected: Option<usize>,
    body: Vec<u8>,
    failed: bool,
}

impl FrameDecoder {
    /// A decoder that rejects messages longer than `max_message_bytes`.
    pub fn new(max_message_bytes: usize) -> Self {
        FrameDecoder {
            max_message_bytes,
            header: [0; FRAME_HEADER_LEN],
            header_len: 0,
            expected: None,
            body: Vec::new(),
            failed: false,
        }
    }

    /// Feeds bytes; every complete message is appended to `out`. After an error every further
    /// byte is ignored (the error is reported once).
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), FrameError> {
        while !bytes.is_empty() && !self.failed {
            match self.expected {
                None => {
                    let take = (FRAME_HEADER_LEN - self.header_len).min(bytes.len());
                    self.header[self.header_len..self.header_len + take]
                        .copy_from_slice(&bytes[..take]);
                    self.header_len += take;
                    bytes = &bytes[take..];
                    if self.header_len == FRAME_HEADER_LEN {
                        self.start_message(out)?;
                    }
                }
                Some(len) => {
                    let take = (len - self.body.len()).min(bytes.len());
                    self.body.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if self.body.len() == len {
                        self.complete(out);
                    }
                }
            }
        }
        Ok(())
    }

    fn start_message(&mut self, out: &mut Vec<Vec<u8>>) -> Result<(), FrameError> {
        let flag = self.header[0];
        if flag != 0 {
            self.failed = true;
            return Err(FrameError::Compressed { flag });
        }
        let len = u32::from_be_bytes([
            self.header[1],
            self.header[2],
            self.header[3],
            self.header[4],
        ]);
        match usize::try_from(len)
            .ok()
            .filter(|n| *n <= self.max_message_bytes)
        {
            Some(n) => {
                self.expected = Some(n);
                if n == 0 {
                    self.complete(out);
                }
                Ok(())
            }
            None => {
                self.failed = true;
                Err(FrameError::TooLarge {
                    len: u64::from(len),
                    limit: self.max_message_bytes,
                })
            }
        }
    }

    fn complete(&mut self, out: &mut Vec<Vec<u8>>) {
        out.push(core::mem::take(&mut self.body));
        self.expected = None;
        self.header_len = 0;
    }

    /// Checks the end of the stream: a partly received frame is [`FrameError::Truncated`].
    pub fn finish(&self) -> Result<(), FrameError> {
        if self.failed {
            return Ok(());
        }
        match self.expected {
            Some(len) => Err(FrameError::Truncated {
                received: FRAME_HEADER_LEN + self.body.len(),
                expected: FRAME_HEADER_LEN + len,
            }),
            None if self.header_len > 0 => Err(FrameError::Truncated {
                received: self.header_len,
                expected: FRAME_HEADER_LEN,
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(messages: &[&[u8]]) -> Vec<u8> {
        messages
            .iter()
            .flat_map(|m| encode_frame(m).unwrap())
            .collect()
    }

    #[test]
    fn the_prefix_is_flag_zero_and_a_big_endian_length() {
        assert_eq!(
            encode_frame(b"abc").unwrap(),
            [0, 0, 0, 0, 3, b'a', b'b', b'c']
        );
        assert_eq!(encode_frame(b"").unwrap(), [0, 0, 0, 0, 0]);
        let big = vec![7u8; 0x0102];
        assert_eq!(&encode_frame(&big).unwrap()[..5], &[0, 0, 0, 1, 2]);
    }

    #[test]
    fn every_split_point_gives_the_same_messages() {
        let messages: [&[u8]; 4] = [b"first", b"", b"third message", &[0u8; 300]];
        let bytes = stream(&messages);
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                let mut d = FrameDecoder::new(1024);
                let mut out = Vec::new();
                for chunk in [&bytes[..a], &bytes[a..b], &bytes[b..]] {
                    d.push(chunk, &mut out).unwrap();
                }
                d.finish().unwrap();
                assert_eq!(out, messages.map(<[u8]>::to_vec), "split at {a}/{b}");
            }
        }
    }

    #[test]
    fn one_byte_at_a_time_delivers_each_message_when_its_last_byte_arrives() {
        let bytes = stream(&[b"ab", b"c"]);
        let mut d = FrameDecoder::new(16);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for b in &bytes {
            d.push(&[*b], &mut out).unwrap();
            seen.push(out.len());
        }
        assert_eq!(seen, [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2]);
    }

    #[test]
    fn an_oversized_prefix_is_rejected_before_its_body_arrives() {
        let mut d = FrameDecoder::new(10);
        let mut out = Vec::new();
        assert_eq!(
            d.push(&[0, 0xff, 0xff, 0xff, 0xff], &mut out),
            Err(FrameError::TooLarge {
                len: u64::from(u32::MAX),
                limit: 10
            })
        );
        assert_eq!(d.body.capacity(), 0);
        // Poisoned: later bytes are ignored, the error is not repeated.
        assert_eq!(d.push(&stream(&[b"ok"]), &mut out), Ok(()));
        assert!(out.is_empty());
        assert_eq!(d.finish(), Ok(()));
        // Exactly at the limit is fine.
        let mut d = FrameDecoder::new(2);
        d.push(&stream(&[b"ok"]), &mut out).unwrap();
        assert_eq!(out, [b"ok".to_vec()]);
    }

    #[test]
    fn a_compressed_flag_is_rejected() {
        let mut d = FrameDecoder::new(10);
        let mut out = Vec::new();
        assert_eq!(
            d.push(&[1, 0, 0, 0, 1, b'x'], &mut out),
            Err(FrameError::Compressed { flag: 1 })
        );
        assert!(out.is_empty());
    }

    #[test]
    fn a_truncated_frame_at_the_end_is_an_error() {
        let mut d = FrameDecoder::new(10);
        let mut out = Vec::new();
        d.push(&[0, 0, 0, 0, 4, b'a'], &mut out).unwrap();
        assert_eq!(
            d.finish(),
            Err(FrameError::Truncated {
                received: 6,
                expected: 9
            })
        );
        let mut d = FrameDecoder::new(10);
        d.push(&[0, 0], &mut out).unwrap();
        assert_eq!(
            d.finish(),
            Err(FrameError::Truncated {
                received: 2,
                expected: 5
            })
        );
    }
}
