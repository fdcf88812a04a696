//! What the gRPC listener allows its connections: at most
//! `daemon.max_connections` open at once (one beyond is closed as soon as
//! it is accepted, so idle or abandoned connections cannot use up the file
//! descriptors the journal needs), HTTP/2 keepalive pings
//! (`daemon.http2_keepalive`) that drop peers gone silent, and, over TLS,
//! concurrent handshakes bounded by `daemon.handshake_timeout` (tonic runs
//! each handshake in its own task).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use cuzk_core::config::DaemonConfig;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::Connected;
use tracing::warn;

/// A connection holding one of the listener's connection slots until it
/// is dropped.
pub struct Limited<IO> {
    io: IO,
    _slot: OwnedSemaphorePermit,
}

/// `incoming` with at most `max` connections open at once; the ones beyond
/// are closed at once (warned about once per burst).
pub fn limited<S, IO, E>(incoming: S, max: usize) -> impl Stream<Item = Result<Limited<IO>, E>>
where
    S: Stream<Item = Result<IO, E>>,
{
    let slots = Arc::new(Semaphore::new(max));
    let warned = AtomicBool::new(false);
    incoming.filter_map(move |accepted| match accepted {
        Ok(io) => match slots.clone().try_acquire_owned() {
            Ok(slot) => {
                warned.store(false, Ordering::Relaxed);
                Some(Ok(Limited { io, _slot: slot }))
            }
            Err(_) => {
                if !warned.swap(true, Ordering::Relaxed) {
                    warn!(
                        max_connections = max,
                        "gRPC connection refused: daemon.max_connections are open"
                    );
                }
                None
            }
        },
        Err(e) => Some(Err(e)),
    })
}

/// The server builder with the keepalive of `daemon`.
pub fn with_keepalive(
    builder: tonic::transport::Server,
    daemon: &DaemonConfig,
) -> tonic::transport::Server {
    let every = Some(daemon.http2_keepalive).filter(|d| !d.is_zero());
    builder
        .http2_keepalive_interval(every)
        .http2_keepalive_timeout(every)
        .tcp_keepalive(every)
}

impl<IO: Connected> Connected for Limited<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Limited<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Limited<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
