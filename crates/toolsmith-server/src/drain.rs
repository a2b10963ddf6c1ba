//! Request bodies nobody read are read to their end before the connection moves on.
//!
//! A request refused before its body was read (an unknown toolset, a missing token, a
//! forbidden route) would otherwise make hyper stop reading the connection and close it with
//! the body's bytes still unread in the kernel's buffer: the kernel then answers with a reset,
//! and a client still sending its body can lose the error response it was about to read
//! (seen as a bare `ReadError` in the Python MCP client). [`layer`] wraps every request's body
//! so that, dropped unread, what is left of it is read in the background — up to
//! [`crate::BODY_LIMIT`] bytes and [`DRAIN_DEADLINE`] — and the connection stays usable.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http_body::Frame;

/// How long the rest of an unread body may take to arrive before the connection is given up.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(15);

/// Middleware: gives each request a body that drains itself when dropped unread.
pub async fn layer(req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let body = if body.is_end_stream() {
        body
    } else {
        Body::new(Draining(Some(body)))
    };
    next.run(Request::from_parts(parts, body)).await
}

/// A body that, dropped before its end, reads the rest on a task of its own.
struct Draining(Option<Body>);

impl HttpBody for Draining {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        match self.0.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.0.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.0
            .as_ref()
            .map_or_else(|| http_body::SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Draining {
    fn drop(&mut self) {
        let Some(body) = self.0.take() else { return };
        if body.is_end_stream() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = tokio::time::timeout(DRAIN_DEADLINE, read_to_end(body)).await;
        });
    }
}

/// Reads and discards `body` up to [`crate::BODY_LIMIT`] bytes; beyond that (or on an error)
/// it is dropped and hyper closes the connection.
async fn read_to_end(mut body: Body) {
    let mut seen = 0usize;
    while let Some(Ok(frame)) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
    {
        seen += frame.data_ref().map_or(0, Bytes::len);
        if seen > crate::BODY_LIMIT {
            return;
        }
    }
}
