//! Runtime behaviour suites written once, compiled per runtime.
//!
//! A suite in [`crate::suites`] is a set of functions generic over a [`TestRuntime`]; a runtime
//! crate's test file instantiates it in a few lines:
//!
//! ```ignore
//! a2at_tests::tokio_test_runtime!(OnTokio, current_thread);
//! a2at_tests::security_suite!(OnTokio);
//! ```
//!
//! The `*_test_runtime!` macros expand in the calling test crate, so `a2at-tests` itself never
//! depends on tokio or smol (a2at-smol's dependency tree stays free of a tokio runtime).

use std::future::Future;
use std::time::Duration;

use a2at_driver::{BoxFuture, Runtime};

/// A runtime as the behaviour suites drive it: the adapter's [`Runtime`] plus a way to block
/// on a future from a test thread.
pub trait TestRuntime: 'static {
    /// The adapter's runtime type (`a2at_tokio::Tokio`, `a2at_smol::Smol`).
    type Rt: Runtime;

    /// A name for messages and tables.
    const NAME: &'static str;

    /// Runs `future` to its end on a fresh runtime (tokio) or the global one (smol).
    fn block_on<F: Future>(future: F) -> F::Output;

    /// Sleeps `d` on the runtime's clock; must be polled inside [`TestRuntime::block_on`].
    fn sleep(d: Duration) -> BoxFuture<()> {
        let now = <Self::Rt as Runtime>::now();
        <Self::Rt as Runtime>::sleep_until(now + d)
    }

    /// Runs `task` in the background on the runtime; the returned future gives its output.
    fn spawn<O: Send + 'static>(
        task: impl Future<Output = O> + Send + 'static,
    ) -> impl Future<Output = O> + Send {
        let (tx, rx) = futures::channel::oneshot::channel();
        <Self::Rt as Runtime>::spawn(async move {
            let _ = tx.send(task.await);
        });
        async move { rx.await.expect("the spawned task ran to its end") }
    }
}

/// Declares `$name`, a [`TestRuntime`] on `a2at_tokio::Tokio` with a fresh tokio runtime per
/// `block_on`: `current_thread` (logs of spawned tasks stay on the capturing thread) or
/// `multi_thread` (two workers). The calling crate needs `a2at-tokio` and `tokio` (`rt`,
/// `rt-multi-thread`, `time`, `net`).
#[macro_export]
macro_rules! tokio_test_runtime {
    ($name:ident, current_thread) => {
        $crate::tokio_test_runtime!(@impl $name, new_current_thread());
    };
    ($name:ident, multi_thread) => {
        $crate::tokio_test_runtime!(@impl $name, new_multi_thread().worker_threads(2));
    };
    (@impl $name:ident, $($builder:tt)*) => {
        /// tokio, as the shared suites drive it.
        pub struct $name;

        impl $crate::runtime::TestRuntime for $name {
            type Rt = a2at_tokio::Tokio;
            const NAME: &'static str = "tokio";

            fn block_on<F: ::std::future::Future>(future: F) -> F::Output {
                tokio::runtime::Builder::$($builder)*
                    .enable_all()
                    .build()
                    .expect("a tokio runtime")
                    .block_on(future)
            }
        }
    };
}

/// Declares `$name`, a [`TestRuntime`] on `a2at_smol::Smol` with `smol::block_on` on the test
/// thread (no tokio runtime exists there). The calling crate needs `a2at-smol` and `smol`.
#[macro_export]
macro_rules! smol_test_runtime {
    ($name:ident) => {
        /// smol, as the shared suites drive it.
        pub struct $name;

        impl $crate::runtime::TestRuntime for $name {
            type Rt = a2at_smol::Smol;
            const NAME: &'static str = "smol";

            fn block_on<F: ::std::future::Future>(future: F) -> F::Output {
                smol::block_on(future)
            }
        }
    };
}
