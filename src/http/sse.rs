//! The SSE stream that *drives* a tool call and carries its progress and
//! log messages, and the keep-alive comments every stream sends.
//!
//! The stream owns the call's future and polls it from the body's
//! `poll_frame`, so the call lives exactly as long as the response: when
//! the client closes the stream or the connection, hyper drops the body,
//! which drops the tool's future — the cancellation MCP 2026-07-28 defines —
//! and nothing more is sent for that request.
//!
//! Event order on the wire: `notifications/message` events (each, in
//! order) and `notifications/progress` events (strictly increasing, at most
//! one per [`PROGRESS_INTERVAL`], the latest when reports come faster; a
//! waiting log goes first, so a report can follow a log made after it),
//! `:` keep-alive comments after each `keep_alive` of silence, then the
//! events still waiting when the call ends, then one final JSON-RPC
//! response, then the end of the stream.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Bytes;
use tokio::time::{Instant, Sleep};

use crate::mcp::StreamedCall;
use crate::surface::{CallEvents, Event};
use crate::util::{sse_event as event, BoxFuture};

/// Least time between two progress events on one stream.
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_millis(25);

/// One streamed tool call: its future (which yields the stream's last
/// frames, its waiting events and final response, or none when the call
/// was cancelled and nothing more may be sent), its events and its timers. Every frame it sends while the call runs is
/// counted in the events (`CallEvents::count_sent`), for the host's
/// observer; the call counts its last frames itself.
pub(crate) struct SseCall {
    call: Option<BoxFuture<'static, Vec<Bytes>>>,
    events: Arc<CallEvents>,
    /// Frames to send before anything else: the call's last ones, the
    /// events flushed at its end and its final response.
    queued: VecDeque<Bytes>,
    keep_alive: KeepAlive,
    /// When the next progress event may go out.
    throttle: Pin<Box<Sleep>>,
    throttled: bool,
}

impl SseCall {
    /// The stream of `call`, with a keep-alive comment after each
    /// `keep_alive` of silence.
    pub(crate) fn new(call: StreamedCall, keep_alive: Duration) -> Self {
        Self {
            call: Some(call.call),
            events: call.events,
            queued: VecDeque::new(),
            keep_alive: KeepAlive::new(keep_alive),
            throttle: Box::pin(tokio::time::sleep_until(Instant::now())),
            throttled: false,
        }
    }

    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(frame) = self.queued.pop_front() {
            return Poll::Ready(Some(frame));
        }
        let Some(call) = self.call.as_mut() else {
            return Poll::Ready(None);
        };
        // The call first: a finished call ends the stream, and what it
        // logged or reported on its way out is flushed just ahead of the
        // response.
        if let Poll::Ready(last) = call.as_mut().poll(cx) {
            self.call = None;
            // Already closed by the call when it answered; when cancelled,
            // closed here, and nothing more is sent for this request.
            self.events.close();
            self.queued = VecDeque::from(last);
            return Poll::Ready(self.queued.pop_front());
        }
        if self.throttled && self.throttle.as_mut().poll(cx).is_ready() {
            self.throttled = false;
        }
        if let Some(next) = self.events.next(cx.waker(), !self.throttled) {
            let message = match next {
                Event::Log(message) => message,
                Event::Progress(message) => {
                    let next_report = Instant::now() + PROGRESS_INTERVAL;
                    self.throttle.as_mut().reset(next_report);
                    self.throttled = true;
                    message
                }
            };
            self.keep_alive.sent();
            let frame = event(&message);
            self.events.count_sent(frame.len());
            return Poll::Ready(Some(frame));
        }
        if let Some(comment) = self.keep_alive.poll(cx) {
            self.events.count_sent(comment.len());
            return Poll::Ready(Some(comment));
        }
        // A throttled report waits for `throttle`, polled (and so
        // registered) above while pending: its expiry wakes us.
        Poll::Pending
    }
}

/// An SSE comment: keeps a silent stream from looking dead to proxies and
/// clients.
const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// A stream's keep-alive: a comment after each `interval` of silence.
pub(crate) struct KeepAlive {
    interval: Duration,
    silence: Pin<Box<Sleep>>,
}

impl KeepAlive {
    pub(crate) fn new(interval: Duration) -> Self {
        Self {
            interval,
            silence: Box::pin(tokio::time::sleep_until(Instant::now() + interval)),
        }
    }

    /// The stream just sent something: the silence starts again.
    pub(crate) fn sent(&mut self) {
        self.silence.as_mut().reset(Instant::now() + self.interval);
    }

    /// The comment, when the silence has lasted `interval`; else registers
    /// the task to be woken when it has.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Option<Bytes> {
        self.silence.as_mut().poll(cx).is_ready().then(|| {
            self.sent();
            Bytes::from_static(KEEP_ALIVE_COMMENT)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::surface::LogLevel;
    use serde_json::{json, Value};

    /// One poll of the stream: its frame as JSON (`None` for the end,
    /// `Some(None)` while it waits).
    async fn poll_once(call: &mut SseCall) -> Option<Option<Value>> {
        std::future::poll_fn(|cx| {
            Poll::Ready(match call.poll_next(cx) {
                Poll::Ready(Some(frame)) => {
                    let text = std::str::from_utf8(&frame).unwrap();
                    let data = text.strip_prefix("event: message\ndata: ").unwrap();
                    Some(Some(serde_json::from_str(data.trim_end()).unwrap()))
                }
                Poll::Ready(None) => None,
                Poll::Pending => Some(None),
            })
        })
        .await
    }

    /// On a paused clock: a second report waits out the 25 ms interval
    /// while a log goes at once; what is pending when the call ends goes
    /// out ahead of the response, and then the stream ends.
    #[tokio::test(start_paused = true)]
    async fn throttling_and_flush_order() {
        let events = CallEvents::new(Some(json!("t")), Some(LogLevel::Info));
        let (finish, finished) = tokio::sync::oneshot::channel::<()>();
        let events_at_end = Arc::clone(&events);
        let run = async move {
            let _ = finished.await;
            let mut last: Vec<Bytes> = events_at_end.close().iter().map(|m| event(m)).collect();
            last.push(event(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
            last
        };
        let call = StreamedCall::new(Box::pin(run), Arc::clone(&events));
        let mut sse = SseCall::new(call, Duration::from_secs(3600));
        events.report_progress(1.0, None, None);
        let first = poll_once(&mut sse).await.unwrap().unwrap();
        assert_eq!(first["params"]["progress"], 1.0);
        events.report_progress(2.0, None, None);
        assert_eq!(poll_once(&mut sse).await, Some(None), "throttled");
        events.log(LogLevel::Info, None, &json!("now"));
        assert_eq!(
            poll_once(&mut sse).await.unwrap().unwrap()["params"]["data"],
            "now"
        );
        tokio::time::advance(PROGRESS_INTERVAL).await;
        let second = poll_once(&mut sse).await.unwrap().unwrap();
        assert_eq!(second["params"]["progress"], 2.0);
        events.report_progress(3.0, None, None);
        events.log(LogLevel::Info, None, &json!("last"));
        finish.send(()).unwrap();
        let order: Vec<Value> = [
            poll_once(&mut sse).await,
            poll_once(&mut sse).await,
            poll_once(&mut sse).await,
        ]
        .into_iter()
        .map(|frame| frame.unwrap().unwrap())
        .collect();
        assert_eq!(order[0]["params"]["data"], "last");
        assert_eq!(order[1]["params"]["progress"], 3.0);
        assert_eq!(order[2]["id"], 1);
        assert_eq!(
            poll_once(&mut sse).await,
            None,
            "the stream ends after the response"
        );
    }

    /// The frame format: one `data:` line per message, blank-line terminated.
    #[test]
    fn event_framing() {
        assert_eq!(
            &event(b"{\"a\":1}")[..],
            b"event: message\ndata: {\"a\":1}\n\n"
        );
    }
}
