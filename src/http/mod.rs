//! The HTTP side: everything between hyper and the dispatcher.
//!
//! - `transport.rs`: the hyper service function — every HTTP check, in the
//!   order the security model fixes — and the HTTP/1.1 settings a
//!   connection is served with; it maps the dispatcher's replies to
//!   status codes;
//! - `request_headers.rs`: the one pass over a request's headers that reads
//!   all the checks need;
//! - `request_body.rs`: reading a body whole within its byte limit;
//! - `rejection.rs`: every refusal before dispatch and its status;
//! - `response_body.rs`, `sse.rs`, `notification_stream.rs`: response
//!   bodies — complete bytes, the SSE stream that drives a streamed call,
//!   and the one that carries a session's list changes.
//!
//! `host.rs` uses only the function re-exported below.

mod notification_stream;
mod rejection;
mod request_body;
mod request_headers;
mod response_body;
mod sse;
mod transport;

pub(crate) use transport::serve_connection;
