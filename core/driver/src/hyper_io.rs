//! hyper's I/O traits over a connection in the `futures` I/O traits, without clearing hyper's
//! read buffer on every read.
//!
//! hyper hands a read its buffer's spare capacity uninitialised. A `futures` reader takes an
//! initialised `&mut [u8]`, and without `unsafe` (forbidden here) the only way to fill hyper's
//! buffer is `put_slice`. The usual adapter zeroes the whole spare capacity first (8 KiB and
//! more) at every poll, also when the read then finds nothing: under callgrind that was a
//! quarter of the engine's instructions on a 100-step chain. Here each read goes to a scratch
//! buffer of the thread, zeroed once, and only the bytes read are copied into hyper's buffer.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::io::{AsyncRead, AsyncWrite};
use hyper::rt::ReadBufCursor;

/// Most bytes one read takes: twice hyper's first read buffer, so the scratch never limits a
/// read hyper asked for at its usual size.
const SCRATCH_LEN: usize = 16 * 1024;

thread_local! {
    /// The thread's scratch buffer, taken for one read and put back after it. A read that
    /// finds it taken (a reader that reads another connection inside its own read) allocates
    /// one for itself.
    static SCRATCH: Cell<Option<Box<[u8]>>> = const { Cell::new(None) };
}

/// A connection in the `futures` I/O traits (a runtime adapter's TCP stream, a TLS stream over
/// it) in hyper's I/O traits: what the engine's HTTP/1.1 and HTTP/2 connections run on.
///
/// Each read goes through a scratch buffer of the thread, so hyper's read buffer is never
/// zeroed; only the bytes read are copied into it. A host driving its own hyper client on a
/// `futures` runtime can use it the same way.
pub struct HyperIo<T> {
    inner: T,
}

impl<T> HyperIo<T> {
    /// Wraps `inner`.
    pub fn new(inner: T) -> HyperIo<T> {
        HyperIo { inner }
    }
}

impl<T: AsyncRead + Unpin> hyper::rt::Read for HyperIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let want = buf.remaining().min(SCRATCH_LEN);
        let mut scratch = SCRATCH
            .take()
            .unwrap_or_else(|| vec![0; SCRATCH_LEN].into_boxed_slice());
        let polled = Pin::new(&mut self.inner).poll_read(cx, &mut scratch[..want]);
        if let Poll::Ready(Ok(read)) = polled {
            // A reader claiming more than it was given is not trusted past the slice it had.
            buf.put_slice(&scratch[..read.min(want)]);
        }
        SCRATCH.set(Some(scratch));
        polled.map_ok(drop)
    }
}

impl<T: AsyncWrite + Unpin> hyper::rt::Write for HyperIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_close(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Read as _;

    /// Hands out its bytes `step` at a time, answering `Pending` (and waking) between reads.
    struct Trickle {
        bytes: Vec<u8>,
        at: usize,
        step: usize,
        pending_next: bool,
    }

    impl AsyncRead for Trickle {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            out: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            if std::mem::replace(&mut self.pending_next, false) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.pending_next = true;
            let n = self.step.min(out.len()).min(self.bytes.len() - self.at);
            out[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(n))
        }
    }

    /// Reads `io` to its end through hyper's read trait, into a buffer of `capacity` per read.
    fn read_all(io: &mut HyperIo<Trickle>, capacity: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        loop {
            let mut storage = vec![std::mem::MaybeUninit::<u8>::uninit(); capacity];
            let mut buf = hyper::rt::ReadBuf::uninit(&mut storage);
            match Pin::new(&mut *io).poll_read(&mut cx, buf.unfilled()) {
                Poll::Pending => continue,
                Poll::Ready(result) => result.expect("the reader does not fail"),
            }
            if buf.filled().is_empty() {
                return out;
            }
            out.extend_from_slice(buf.filled());
        }
    }

    #[test]
    fn every_byte_arrives_once_and_in_order_whatever_the_read_sizes() {
        let bytes: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for (step, capacity) in [(1, 8192), (1000, 7), (40_000, 8192), (20_000, 100_000)] {
            let mut io = HyperIo::new(Trickle {
                bytes: bytes.clone(),
                at: 0,
                step,
                pending_next: false,
            });
            assert_eq!(
                read_all(&mut io, capacity),
                bytes,
                "reads of {step} into {capacity}"
            );
        }
    }

    #[test]
    fn a_read_never_takes_more_than_the_room_hyper_gave() {
        let mut io = HyperIo::new(Trickle {
            bytes: vec![1; 100],
            at: 0,
            step: 100,
            pending_next: false,
        });
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut storage = vec![std::mem::MaybeUninit::<u8>::uninit(); 10];
        let mut buf = hyper::rt::ReadBuf::uninit(&mut storage);
        let polled = Pin::new(&mut io).poll_read(&mut cx, buf.unfilled());
        assert!(matches!(polled, Poll::Ready(Ok(()))));
        assert_eq!(buf.filled(), &[1; 10]);
        assert_eq!(io.inner.at, 10, "the rest stays in the connection");
    }

    /// Claims to have read more than the slice it was given (a broken reader).
    struct Boastful;

    impl AsyncRead for Boastful {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            out: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            out.fill(7);
            Poll::Ready(Ok(out.len() + 5))
        }
    }

    #[test]
    fn a_reader_claiming_more_than_it_was_given_fills_only_its_slice() {
        let mut io = HyperIo::new(Boastful);
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut storage = vec![std::mem::MaybeUninit::<u8>::uninit(); 10];
        let mut buf = hyper::rt::ReadBuf::uninit(&mut storage);
        let polled = Pin::new(&mut io).poll_read(&mut cx, buf.unfilled());
        assert!(matches!(polled, Poll::Ready(Ok(()))));
        assert_eq!(buf.filled(), &[7; 10]);
    }

    /// Reads by reading another connection through `HyperIo` inside its own read, as a tunnel
    /// over a hyper connection would: the inner read finds the thread's scratch buffer taken.
    struct Nested(HyperIo<Trickle>);

    impl AsyncRead for Nested {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            out: &mut [u8],
        ) -> Poll<io::Result<usize>> {
            let mut buf = hyper::rt::ReadBuf::new(out);
            std::task::ready!(Pin::new(&mut self.0).poll_read(cx, buf.unfilled()))?;
            Poll::Ready(Ok(buf.filled().len()))
        }
    }

    #[test]
    fn a_read_inside_a_read_on_the_same_thread_gets_its_own_scratch() {
        let bytes: Vec<u8> = (0..30_000u32).map(|i| (i % 253) as u8).collect();
        let mut io = HyperIo::new(Nested(HyperIo::new(Trickle {
            bytes: bytes.clone(),
            at: 0,
            step: 5000,
            pending_next: false,
        })));
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut out = Vec::new();
        loop {
            let mut storage = vec![std::mem::MaybeUninit::<u8>::uninit(); 8192];
            let mut buf = hyper::rt::ReadBuf::uninit(&mut storage);
            match Pin::new(&mut io).poll_read(&mut cx, buf.unfilled()) {
                Poll::Pending => continue,
                Poll::Ready(result) => result.expect("the reader does not fail"),
            }
            if buf.filled().is_empty() {
                break;
            }
            out.extend_from_slice(buf.filled());
        }
        assert_eq!(out, bytes);
    }
}
