//! The body of every response the host sends: complete bytes, a streamed
//! tool call (`sse.rs`), or a notification stream
//! (`notification_stream.rs`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::body::{Bytes, Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use crate::conn::{Connection, InService};
use crate::http::notification_stream::NotificationStream;
use crate::http::sse::SseCall;

/// A response body.
pub(crate) enum ResponseBody {
    /// A complete body (JSON, or empty); `None` once sent.
    Full(Option<Bytes>),
    /// An SSE stream driving one tool call; its connection is in service
    /// until the stream is dropped (`None` until [`ResponseBody::sent_on`]).
    Call(Box<SseCall>, Option<InService>),
    /// An SSE stream of notifications about a session; likewise.
    Notifications(Box<NotificationStream>, Option<InService>),
}

impl ResponseBody {
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

/// A complete response: `status` and `body`, no header yet.
pub(crate) fn complete(status: StatusCode, body: Vec<u8>) -> Response<ResponseBody> {
    let body = ResponseBody::Full((!body.is_empty()).then(|| Bytes::from(body)));
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

/// A complete `application/json` response.
pub(crate) fn json(status: StatusCode, body: Vec<u8>) -> Response<ResponseBody> {
    let mut response = complete(status, body);
    let json = HeaderValue::from_static("application/json");
    response.headers_mut().insert(header::CONTENT_TYPE, json);
    response
}

impl hyper::body::Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    // Always inlined into hyper's writer, the one caller: there LLVM sees
    // that no frame is ever trailers and drops hyper's trailer encoding.
    // Left to its own judgement once this body grew, LLVM kept the call
    // and the trailer code, 13,952 bytes of the stripped size consumer
    // (2026-12-07, measured on `18f6741`).
    #[inline(always)]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let next = match self.get_mut() {
            Self::Full(chunk) => return Poll::Ready(chunk.take().map(|c| Ok(Frame::data(c)))),
            Self::Call(call, _) => call.poll_next(cx),
            Self::Notifications(stream, _) => stream.poll_next(cx),
        };
        next.map(|bytes| bytes.map(|b| Ok(Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(chunk) => SizeHint::with_exact(chunk.as_ref().map_or(0, |c| c.len() as u64)),
            Self::Call(..) | Self::Notifications(..) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::body::Body;

    /// A full body reports its exact size and ends after one frame, which
    /// yields its bytes as written.
    #[test]
    fn full_body() {
        let mut body = complete(StatusCode::OK, b"abc".to_vec()).into_body();
        assert_eq!(body.size_hint().exact(), Some(3));
        assert!(!body.is_end_stream());
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) else {
            panic!("a full body yields its frame at once");
        };
        assert_eq!(frame.into_data().ok().unwrap(), &b"abc"[..]);
        assert!(body.is_end_stream());
        let empty = complete(StatusCode::OK, Vec::new()).into_body();
        assert!(empty.is_end_stream());
        assert_eq!(empty.size_hint().exact(), Some(0));
    }
}
