//! The body of every response the host sends: complete bytes, a streamed
//! tool call (`sse.rs`), or a notification stream
//! (`notification_stream.rs`); and the [`Chunk`]s it yields.

use std::convert::Infallible;
use std::io::Cursor;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Buf, Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use crate::conn::{Connection, InService};
use crate::http::notification_stream::NotificationStream;
use crate::http::sse::SseCall;

/// A response body.
pub(crate) enum ResponseBody {
    /// A complete body (JSON, or empty); `None` once sent.
    Full(Option<Chunk>),
    /// An SSE stream driving one tool call; its connection is in service
    /// until the stream is dropped (`None` until [`ResponseBody::sent_on`]).
    Call(Box<SseCall>, Option<InService>),
    /// An SSE stream of notifications about a session; likewise.
    Notifications(Box<NotificationStream>, Option<InService>),
}

impl ResponseBody {
    /// A complete body, handed to hyper as the vector it was written into.
    pub(crate) fn full(bytes: Vec<u8>) -> Self {
        Self::Full((!bytes.is_empty()).then_some(Chunk::Owned(Cursor::new(bytes))))
    }

    /// This body is the response to `connection`'s request in service: a
    /// complete body ends the service now (hyper writes it at once, and a
    /// client that stops reading meets `write_stall_timeout`); a stream
    /// keeps the connection in service until it is dropped.
    pub(crate) fn sent_on(&mut self, connection: Arc<Connection>) {
        match self {
            Self::Full(_) => connection.activity().finish(),
            Self::Call(_, in_service) | Self::Notifications(_, in_service) => {
                *in_service = Some(InService::new(connection));
            }
        }
    }
}

/// What a response body yields: a complete body as the vector it was
/// written into, or a stream's frame.
///
/// Not `Bytes` throughout: `Bytes::from(Vec<u8>)` allocates a shared
/// header whenever the vector has spare capacity, which a response written
/// into a buffer sized in advance always has. That was one allocation (and
/// its free) per call for nothing, found by counting the server's
/// allocations per call against the floors'.
pub(crate) enum Chunk {
    /// A complete body, and how much of it hyper has taken.
    Owned(Cursor<Vec<u8>>),
    /// One frame of a stream.
    Shared(Bytes),
}

impl Buf for Chunk {
    fn remaining(&self) -> usize {
        match self {
            Self::Owned(bytes) => bytes.remaining(),
            Self::Shared(bytes) => bytes.remaining(),
        }
    }

    fn chunk(&self) -> &[u8] {
        match self {
            Self::Owned(bytes) => bytes.chunk(),
            Self::Shared(bytes) => bytes.chunk(),
        }
    }

    fn advance(&mut self, n: usize) {
        match self {
            Self::Owned(bytes) => bytes.advance(n),
            Self::Shared(bytes) => bytes.advance(n),
        }
    }
}

/// A complete `application/json` response.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response<ResponseBody> {
    let mut response = Response::new(ResponseBody::full(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

impl hyper::body::Body for ResponseBody {
    type Data = Chunk;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Chunk>, Infallible>>> {
        let next = match self.get_mut() {
            Self::Full(chunk) => return Poll::Ready(chunk.take().map(|c| Ok(Frame::data(c)))),
            Self::Call(call, _) => call.poll_next(cx),
            Self::Notifications(stream, _) => stream.poll_next(cx),
        };
        next.map(|bytes| bytes.map(|b| Ok(Frame::data(Chunk::Shared(b)))))
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(chunk) => {
                SizeHint::with_exact(chunk.as_ref().map_or(0, |c| c.remaining() as u64))
            }
            Self::Call(..) | Self::Notifications(..) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body;

    /// A full body reports its exact size and ends after one frame, which
    /// yields its bytes as written, in as many steps as hyper takes.
    #[test]
    fn full_body() {
        let mut body = ResponseBody::full(b"abc".to_vec());
        assert_eq!(body.size_hint().exact(), Some(3));
        assert!(!body.is_end_stream());
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) else {
            panic!("a full body yields its frame at once");
        };
        let mut chunk = frame.into_data().ok().unwrap();
        assert_eq!((chunk.remaining(), chunk.chunk()), (3, &b"abc"[..]));
        chunk.advance(1);
        assert_eq!((chunk.remaining(), chunk.chunk()), (2, &b"bc"[..]));
        chunk.advance(2);
        assert!(!chunk.has_remaining());
        assert!(body.is_end_stream());
        let empty = ResponseBody::full(Vec::new());
        assert!(empty.is_end_stream());
        assert_eq!(empty.size_hint().exact(), Some(0));
    }

    /// A stream's frames pass through as they are.
    #[test]
    fn shared_chunk() {
        let mut chunk = Chunk::Shared(Bytes::from_static(b"data: x\n\n"));
        assert_eq!(chunk.remaining(), 9);
        chunk.advance(6);
        assert_eq!(chunk.chunk(), b"x\n\n");
    }
}
