//! tokio as the driver's runtime, for the driver's own tests only (the adapters depend on this
//! crate); outgoing connections are `async-net`'s, which work on any executor. It counts the
//! timers armed on each thread, so a test on a current-thread runtime can check how often the
//! run loop asks for one, and the size of every future spawned, so a test can bound what a
//! task keeps.
use std::cell::Cell;

thread_local! {
    static TIMERS_ARMED: Cell<usize> = const { Cell::new(0) };
    static SPAWNED_SIZES: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The sizes of the futures spawned through [`TestTokio`] on this thread so far, in order.
pub(crate) fn spawned_sizes() -> Vec<usize> {
    SPAWNED_SIZES.with(|s| s.borrow().clone())
}

/// Timers armed through [`TestTokio`] on this thread so far.
pub(crate) fn timers_armed() -> usize {
    TIMERS_ARMED.with(Cell::get)
}

#[derive(Debug, Clone)]
pub(crate) struct TestTokio;

impl crate::Runtime for TestTokio {
    type TcpStream = smol::net::TcpStream;

    fn now() -> std::time::Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep_until(at: std::time::Instant) -> crate::BoxFuture<()> {
        TIMERS_ARMED.with(|n| n.set(n.get() + 1));
        Box::pin(tokio::time::sleep_until(at.into()))
    }

    fn spawn(task: impl std::future::Future<Output = ()> + Send + 'static) {
        SPAWNED_SIZES.with(|s| s.borrow_mut().push(std::mem::size_of_val(&task)));
        tokio::spawn(task);
    }

    async fn run_blocking(call: impl FnOnce() + Send + 'static) {
        let _ = tokio::task::spawn_blocking(call).await;
    }

    async fn connect(host: &str, port: u16) -> std::io::Result<Self::TcpStream> {
        let stream = smol::net::TcpStream::connect((host, port)).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}
