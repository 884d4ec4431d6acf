//! The hyper service function: every HTTP check, in order, then dispatch.
//!
//! The order is part of the security model — each step runs before anything
//! that trusts the request more:
//!
//! | step | check | failure |
//! |---|---|---|
//! | 1 | exactly one `Host`, naming the loopback listener, and the request target's authority, if it has one (absolute form), likewise; at most one `Origin`, allowed if present | 400 (two of one header), 403 |
//! | 2 | the path is `/mcp` | 404 |
//! | 3 | when the host checks the peer user and the request carries `Authorization`: the connection's client is the host's own user (asked of the kernel once per connection, before the bearer is looked at, so a live and a dead bearer get the same answer); then exactly one `Authorization: Bearer …`, live (before the body is read); then the connection is charged to that bearer's session, moving there from another's if need be, within its share (`conn/session_share.rs`) | 403 (another local user); 401; 429 (the session holds its share) |
//! | 4 | at most one `Mcp-Session-Id`; the method is `POST`, `GET` with `Accept: text/event-stream` on a session whose surface can change (the legacy stream of list changes, see `mcp/subscriptions.rs`), or `DELETE` with an `Mcp-Session-Id` outside the 2026-07-28 era (ends that MCP session: 200, empty) | 400 (two ids); 405 with `Allow: GET, POST, DELETE` (or `Allow: POST, DELETE` when the session offers no stream); 404 `-32001` for a GET or DELETE whose id names no open MCP session of this bearer's; 409 past `max_streams_per_session` |
//! | 5 | exactly one `Content-Type`, `application/json` | 400 (two), 415 |
//! | 6 | `Accept`, if present, admits `application/json` | 406 |
//! | 7 | the body fits `max_body_bytes` and arrives within `body_read_timeout` | 413, 408 |
//! | 8 | JSON-RPC dispatch (`mcp/`) | 400 for malformed bodies and era/envelope errors (an MCP header sent twice among them), 404 for unknown modern methods and (`-32001`) for a legacy message whose `Mcp-Session-Id` names no open MCP session, 409 for a `subscriptions/listen` past `max_streams_per_session`, 401 if revoked meanwhile, else 200 (JSON, with `Mcp-Session-Id` for `initialize`, or an SSE stream) / 202 |
//!
//! A header that must appear once and appears twice is never resolved by
//! picking one of its values: two components reading the same request
//! (a proxy, this host) could pick differently. RFC 9112 §3.2 makes two
//! `Host` headers a 400; the host treats `Origin`, `Content-Type` and the
//! MCP headers the same way.
//!
//! Every error body is a JSON-RPC error object with `"id": null` (the
//! request was not read, or not readable), so clients can show the message.
//! A rejection made before the bearer was accepted (steps 1–3, the 403 and
//! 429 of step 3 among them) also closes the connection (`Connection:
//! close`), so a probe holds no slot past its answer; a request with a
//! live bearer marks its connection authenticated, which no flood can
//! displace (`conn/admission.rs`). After step 7 the body's
//! JSON must also fit `max_parsed_bytes` once parsed (413, see
//! `jsonrpc/json_scan.rs`).
//! The 401 is the same bytes for a missing, malformed, unknown or revoked
//! bearer, so a probe learns nothing from it.
//!
//! `Accept` is treated leniently (a choice the spec leaves open): absent, or
//! naming `application/json`, `application/*` or `*/*`, is fine; the host
//! answers JSON either way.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use hyper::body::{Body as _, Bytes, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::{service_fn, Service};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::auth::Bearer;
use crate::conn::{Connection, WriteStallGuard};
use crate::http::notification_stream::NotificationStream;
use crate::http::rejection::Rejection;
use crate::http::request_body;
use crate::http::request_headers::{self, is_json_media_type, RequestHeaders};
use crate::http::response_body::{complete, json, ResponseBody};
use crate::http::sse::SseCall;
use crate::jsonrpc::json_scan;
use crate::mcp::{self, Handled, Reply, ReplyClass, RequestContext, Subscription};
use crate::observer::{Observation, Observer, Outcome, SessionId};
use crate::protocol::{era, EnvelopeHeaders, Header};
use crate::state::{Lease, McpSessionHeader, Shared, StreamRefused};
use crate::util::waiting_at_most;

/// The one MCP endpoint.
pub(crate) const ENDPOINT: &str = "/mcp";

const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");
const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// `socket` served as every connection is. Its writes fail when they stall
/// past `write_stall_timeout` (see `conn/write_stall.rs`), and it runs the
/// transport with the connection's admission state, under these HTTP/1.1
/// settings: hyper gets no timer, so it keeps none (the header read timeout
/// is the connection supervisor's, `conn/idle_deadline.rs`, off the request
/// path); `max_header_size` counts the head's bytes exactly, as they arrive
/// (one write or many), while `max_buf_size` alone only bounds the read
/// buffer, which a head arriving in one large write can overrun.
pub(crate) fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(
    shared: &Arc<Shared>,
    socket: S,
    connection: Arc<Connection>,
) -> http1::Connection<
    TokioIo<WriteStallGuard<S>>,
    impl Service<Request<Incoming>, Response = Response<ResponseBody>, Error = Infallible, Future: Send>,
> {
    let config = &shared.config;
    let io = TokioIo::new(WriteStallGuard::new(socket, config.write_stall_timeout));
    let shared = Arc::clone(shared);
    http1::Builder::new()
        .header_read_timeout(None)
        .max_header_size(config.max_header_bytes)
        .max_buf_size(config.max_header_bytes)
        .keep_alive(true)
        .serve_connection(
            io,
            service_fn(move |request| serve(Arc::clone(&shared), Arc::clone(&connection), request)),
        )
}

/// Serves one HTTP request on `connection`. Never fails: every failure is a
/// status code. With an observer, tells it of a request refused before
/// dispatch (the dispatcher tells it of the others).
pub(crate) async fn serve(
    shared: Arc<Shared>,
    connection: Arc<Connection>,
    request: Request<Incoming>,
) -> Result<Response<ResponseBody>, Infallible> {
    // The head is in: the header read timeout stops until the response is
    // handed over (`conn/idle_deadline.rs`).
    connection.activity().begin();
    let since = shared.config.observer.as_ref().map(|_| Instant::now());
    let mut session = None;
    let checked = serve_checked(&shared, &connection, request, since, &mut session).await;
    let mut response = checked.unwrap_or_else(|rejection| {
        let response = rejection.into_response();
        if let (Some(observer), Some(since)) = (&shared.config.observer, since) {
            tell_rejected(observer, session, since, &response);
        }
        response
    });
    response.body_mut().sent_on(connection);
    Ok(response)
}

/// Tells the observer of a request refused before dispatch: nothing of it
/// but its session, if its bearer was live, and the status; refused before
/// authentication, it is counted, and told with the others (`Observer`).
/// Cold: only a host with an observer comes here.
#[cold]
#[inline(never)]
fn tell_rejected(
    observer: &Observer,
    session: Option<SessionId>,
    since: Instant,
    response: &Response<ResponseBody>,
) {
    let status = response.status().as_u16();
    if session.is_none() {
        return observer.count_refusal(status);
    }
    observer.tell(&Observation {
        response_bytes: response.body().size_hint().exact().unwrap_or(0),
        ..Observation::bare(session, since.elapsed(), Outcome::Rejected { status })
    });
}

/// Step 3. On a request that carries `Authorization`, when the host
/// checks, the kernel must say the host's own user opened the connection
/// (asked once per connection), before the bearer is looked at, so another
/// user gets the same 403 for a live bearer and a dead one. Then one
/// well-formed, live bearer (two `Authorization` headers are ambiguous, so
/// neither counts), which sets `session`; then the request is charged to
/// that bearer's session, within its share (`conn/session_share.rs`).
fn authenticate(
    shared: &Arc<Shared>,
    connection: &Arc<Connection>,
    authorization: Header<'_>,
    session: &mut Option<SessionId>,
) -> Result<Lease, Rejection> {
    let other_user = |uid| authorization != Header::Absent && !connection.comes_from(uid);
    if shared.peer_user.is_some_and(other_user) {
        return Err(Rejection::OtherUser);
    }
    let bearer = authorization.value().and_then(Bearer::parse_header);
    let lease = bearer.and_then(|bearer| Lease::acquire(shared, &bearer));
    let lease = lease.ok_or(Rejection::Unauthorized)?;
    *session = Some(lease.session.id());
    let limit = || shared.config.connections_per_session();
    if !connection.authenticate(lease.session.connections(), limit) {
        return Err(Rejection::SessionFull);
    }
    Ok(lease)
}

/// The steps of the table above, in order; `since`, for the observer, is
/// when the head arrived, and `session` is set once the bearer is found
/// live. A rejection is a refusal before dispatch: once dispatched, the
/// answer is a response whatever it is.
async fn serve_checked(
    shared: &Arc<Shared>,
    connection: &Arc<Connection>,
    request: Request<Incoming>,
    since: Option<Instant>,
    session: &mut Option<SessionId>,
) -> Result<Response<ResponseBody>, Rejection> {
    let (parts, body) = request.into_parts();
    let headers = RequestHeaders::read(&parts.headers);
    check_addressing(shared, &parts.uri, &headers)?;
    if parts.uri.path() != ENDPOINT {
        return Err(Rejection::NotFound);
    }
    let lease = authenticate(shared, connection, headers.authorization, session)?;
    // Step 4's lookup among this bearer's MCP sessions only (an id minted
    // under another bearer is unknown here).
    let why = "Bad request: more than one Mcp-Session-Id header";
    let mcp_session = at_most_one(headers.session_id, why)?;
    let mcp_session = mcp_session.map(|id| lease.session.mcp_sessions().find(id));
    let mcp_session_header = match &mcp_session {
        None => McpSessionHeader::Absent,
        Some(Some(known)) => McpSessionHeader::Known(known),
        Some(None) => McpSessionHeader::Unknown,
    };
    if parts.method != Method::POST {
        return not_post(shared, &lease, &parts.method, &headers, mcp_session_header);
    }
    check_content_headers(&headers)?;
    let body = read_body(shared, body).await?;
    // No allocation when there are none, the usual case.
    let params = match headers.has_params {
        true => request_headers::params(&parts.headers),
        false => Vec::new(),
    };
    let (version, method, name) = (headers.protocol_version, headers.method, headers.name);
    let context = RequestContext::new(
        EnvelopeHeaders::new(version, method, name, &params),
        headers.accepts.event_stream,
        mcp_session_header,
        since,
        body.len(),
    );
    Ok(answer(shared, mcp::dispatch(&lease, &context, &body).await))
}

/// A header that may appear at most once: its value, if sent; sent twice,
/// a 400 that says `why`.
fn at_most_one<'a>(header: Header<'a>, why: &'static str) -> Result<Option<&'a [u8]>, Rejection> {
    match header {
        Header::Repeated => Err(Rejection::Ambiguous(why)),
        header => Ok(header.value()),
    }
}

/// Step 8's answer: the dispatcher's reply as an HTTP response, by the
/// status table below (a revocation met meanwhile is step 3's 401).
fn answer(shared: &Shared, (handled, body): Reply) -> Response<ResponseBody> {
    let status = match handled {
        Handled::Wrote | Handled::Erred(ReplyClass::Answer, _) => StatusCode::OK,
        Handled::Erred(ReplyClass::Malformed, _) => StatusCode::BAD_REQUEST,
        Handled::Erred(ReplyClass::NotFound | ReplyClass::UnknownSession, _) => {
            StatusCode::NOT_FOUND
        }
        Handled::Erred(ReplyClass::TooManyStreams, _) => StatusCode::CONFLICT,
        Handled::Silent => return complete(StatusCode::ACCEPTED, Vec::new()),
        Handled::Revoked => return Rejection::Unauthorized.into_response(),
        Handled::Initialized(session) => {
            let mut response = json(StatusCode::OK, body);
            // Hex digits: always a valid header value.
            if let Ok(id) = HeaderValue::from_bytes(session.id()) {
                response.headers_mut().insert(MCP_SESSION_ID, id);
            }
            return response;
        }
        Handled::Stream(call) => {
            let call = SseCall::new(*call, shared.config.sse_keep_alive);
            return event_stream(ResponseBody::Call(Box::new(call), None));
        }
        Handled::Listen(subscription) => return notification_stream(shared, *subscription),
    };
    json(status, body)
}

/// Step 4 for a method other than `POST`. `GET` (legacy era) with
/// `text/event-stream` accepted opens a stream of the session's list
/// changes, for the MCP session its id names (or for the clients that sent
/// none). `DELETE` with an id, outside the 2026-07-28 era (which has no
/// sessions), ends the MCP session it names, and that session's streams.
/// Any other method or case, or a session with nothing to stream, is 405.
fn not_post(
    shared: &Shared,
    lease: &Lease,
    method: &Method,
    headers: &RequestHeaders<'_>,
    session: McpSessionHeader<'_>,
) -> Result<Response<ResponseBody>, Rejection> {
    let get = lease.session.list_changes().offered();
    let not_allowed = Rejection::MethodNotAllowed { get };
    let version = headers.protocol_version.value();
    let delete = *method == Method::DELETE && !version.is_some_and(era::is_modern_version);
    if !delete && (*method != Method::GET || !headers.accepts.event_stream) {
        return Err(not_allowed);
    }
    let audience = match session {
        McpSessionHeader::Unknown => return Err(Rejection::UnknownSession),
        McpSessionHeader::Absent if delete => return Err(not_allowed),
        McpSessionHeader::Known(known) if delete => {
            // Ended by a concurrent DELETE meanwhile: ended all the same.
            lease.session.end_mcp_session(known);
            return Ok(complete(StatusCode::OK, Vec::new()));
        }
        McpSessionHeader::Absent => lease.session.list_changes().stateless(),
        McpSessionHeader::Known(known) => known.audience(),
    };
    match mcp::legacy_stream(lease, Arc::clone(audience)) {
        Ok(subscription) => Ok(notification_stream(shared, subscription)),
        Err(StreamRefused::NotOffered) => Err(not_allowed),
        Err(StreamRefused::TooMany) => Err(Rejection::TooManyStreams(
            shared.config.max_streams_per_session,
        )),
        Err(StreamRefused::Revoked) => Err(Rejection::Unauthorized),
    }
}

fn notification_stream(shared: &Shared, subscription: Subscription) -> Response<ResponseBody> {
    let stream = NotificationStream::new(subscription, shared);
    event_stream(ResponseBody::Notifications(Box::new(stream), None))
}

/// Step 1: one `Host` naming this listener, a request target naming it too
/// if it names a host at all, and at most one `Origin`, an allowed one.
fn check_addressing(
    shared: &Shared,
    uri: &hyper::Uri,
    headers: &RequestHeaders<'_>,
) -> Result<(), Rejection> {
    let host = at_most_one(headers.host, "Bad request: more than one Host header")?;
    if !host.is_some_and(|host| shared.host_allowed(host)) {
        let why = "Forbidden: Host is not this loopback listener";
        return Err(Rejection::Forbidden(why));
    }
    // An absolute-form target (`POST http://name/mcp`) names a host too,
    // and RFC 9112 §3.2.2 lets it override `Host`: both must be this one.
    let authority = uri.authority().map(|a| a.as_str().as_bytes());
    if authority.is_some_and(|a| uri.scheme_str() != Some("http") || !shared.host_allowed(a)) {
        let why = "Forbidden: the request target names another host";
        return Err(Rejection::Forbidden(why));
    }
    let origin = at_most_one(headers.origin, "Bad request: more than one Origin header")?;
    if origin.is_some_and(|origin| !shared.origin_allowed(origin)) {
        return Err(Rejection::Forbidden("Forbidden: Origin is not allowed"));
    }
    Ok(())
}

/// Steps 5 and 6: a JSON body, and a client that takes a JSON answer.
fn check_content_headers(headers: &RequestHeaders<'_>) -> Result<(), Rejection> {
    let why = "Bad request: more than one Content-Type header";
    if !at_most_one(headers.content_type, why)?.is_some_and(is_json_media_type) {
        return Err(Rejection::UnsupportedMediaType);
    }
    if !headers.accepts.json {
        return Err(Rejection::NotAcceptable);
    }
    Ok(())
}

/// Step 7: the whole body, within `max_body_bytes` and `body_read_timeout`,
/// and parseable within `max_parsed_bytes`.
async fn read_body(shared: &Shared, body: Incoming) -> Result<Bytes, Rejection> {
    let limit = shared.config.max_body_bytes;
    // hyper has read `Content-Length` already (and refused one it cannot
    // frame the body by): a declared length is the body's exact size.
    if body.size_hint().lower() > limit as u64 {
        return Err(Rejection::PayloadTooLarge);
    }
    let read = request_body::read_whole(body, limit);
    // The limit runs from the first time the body is found incomplete,
    // right after its head: a body that came with its head needs no timer.
    // A body the client broke off is a `BadBody`: whatever we answer goes
    // nowhere.
    let body = waiting_at_most(shared.config.body_read_timeout, read).await;
    let body = body.ok_or(Rejection::BodyTimeout)??;
    // A body too short to be charged past the limit skips the scan.
    let limit = shared.config.max_parsed_bytes;
    if json_scan::may_exceed(body.len(), limit) && json_scan::parsed_size_bound(&body) > limit {
        return Err(Rejection::ParsedTooLarge);
    }
    Ok(body)
}

/// A 200 SSE response with a streaming `body`.
fn event_stream(body: ResponseBody) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    let sse = HeaderValue::from_static("text/event-stream");
    headers.insert(header::CONTENT_TYPE, sse);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Tell buffering proxies (nginx) to pass each event on at once.
    headers.insert(X_ACCEL_BUFFERING, HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Step 8's status table: a result, and each class of error, and the
    /// status it is sent with; a body that wrote nothing is a 202, and a
    /// revocation met during dispatch is the 401 of step 3, with its
    /// headers.
    #[test]
    fn reply_status_table() {
        let rows = [
            (Handled::Wrote, 200),
            (Handled::Erred(ReplyClass::Answer, 0), 200),
            (Handled::Erred(ReplyClass::Malformed, 0), 400),
            (Handled::Erred(ReplyClass::NotFound, 0), 404),
            (Handled::Erred(ReplyClass::TooManyStreams, 0), 409),
            (Handled::Erred(ReplyClass::UnknownSession, 0), 404),
            (Handled::Silent, 202),
        ];
        let shared = Shared::new(Default::default(), "127.0.0.1:4321".parse().unwrap());
        for (row, (handled, status)) in rows.into_iter().enumerate() {
            let response = answer(&shared, (handled, b"{}".to_vec()));
            assert_eq!(response.status().as_u16(), status, "row {row}");
        }
        let revoked = answer(&shared, (Handled::Revoked, Vec::new()));
        let unauthorized = Rejection::Unauthorized.into_response();
        assert_eq!(revoked.status(), unauthorized.status());
        assert_eq!(revoked.headers(), unauthorized.headers());
    }
}
