//! The node's one stop signal: set by SIGINT/SIGTERM (what `ros2 launch` sends) or by
//! the end of the input, seen by the processing thread and the transport's loop.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::task::AtomicWaker;

use crate::error::{Error, Result, TransportError};

/// Why the node stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// SIGINT or SIGTERM.
    Signal,
    /// The input ended (end of a video file) or failed.
    InputEnded,
}

/// A stop request, settable from any thread (a signal handler included) and awaitable
/// by one task.
#[derive(Default)]
pub struct Shutdown {
    flag: AtomicBool,
    reason: Mutex<Option<Reason>>,
    waker: AtomicWaker,
}

impl Shutdown {
    /// A shutdown requested by SIGINT or SIGTERM once this returns.
    pub fn on_signals() -> Result<Arc<Self>> {
        let shutdown = Arc::new(Self::default());
        let handler = shutdown.clone();
        ctrlc::set_handler(move || handler.request(Reason::Signal)).map_err(|source| {
            Error::Transport(TransportError::Ros {
                what: "cannot install the SIGINT/SIGTERM handler".into(),
                source: Box::new(source),
            })
        })?;
        Ok(shutdown)
    }

    /// Asks everything to stop; the first reason given is kept.
    pub fn request(&self, reason: Reason) {
        self.reason
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get_or_insert(reason);
        self.flag.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    /// The flag the processing thread polls.
    pub fn flag(&self) -> &AtomicBool {
        &self.flag
    }

    pub fn is_requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Why the node stops; `None` while it runs.
    pub fn reason(&self) -> Option<Reason> {
        *self
            .reason
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Completes once a stop is requested.
    pub fn requested(&self) -> Requested<'_> {
        Requested(self)
    }
}

/// The future of [`Shutdown::requested`].
pub struct Requested<'a>(&'a Shutdown);

impl Future for Requested<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.waker.register(cx.waker());
        if self.0.is_requested() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
