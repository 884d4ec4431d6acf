//! Streams of notifications about a session: the legacy era's `GET /mcp`
//! stream, and 2026-07-28 `subscriptions/listen`. This module decides
//! whether a stream opens and renders every message it will carry;
//! `http/notification_stream.rs` sends them as SSE.
//!
//! Only `notifications/tools/list_changed` is ever delivered, and only on
//! a session whose surface says its list can change
//! ([`ToolSurface::list_can_change`](crate::ToolSurface::list_can_change)):
//! that is also exactly when `initialize` and `server/discover` advertise
//! `listChanged: true`.

use std::sync::Arc;

use serde_json::Value;

use super::reply::{write_error, Answer, Handled, Listening, ReplyClass, Subscription};
use crate::jsonrpc::{self, code, ErrorObject, JsonWriter, Params};
use crate::protocol::{META_SERVER_INFO, META_SUBSCRIPTION_ID};
use crate::state::{Audience, Lease, StreamRefused, StreamSlot};

/// The legacy change notification: no subscription, no params.
const LEGACY_CHANGE: &[u8] = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

/// `GET /mcp` with `Accept: text/event-stream` (legacy era): a stream of
/// the session's list changes, announcing to `audience`: the client's MCP
/// session, or the session's stateless audience when it sent no id.
pub(crate) fn legacy_stream(
    lease: &Lease,
    audience: Arc<Audience>,
) -> Result<Subscription, StreamRefused> {
    if !lease.is_live() {
        return Err(StreamRefused::Revoked);
    }
    let slot = open_slot(lease, audience)?;
    Ok(Subscription {
        opening: None,
        listening: Some(Listening {
            change: LEGACY_CHANGE.to_vec(),
            slot,
        }),
        closing: None,
    })
}

fn open_slot(lease: &Lease, audience: Arc<Audience>) -> Result<StreamSlot, StreamRefused> {
    let limit = lease.shared.config.max_streams_per_session;
    lease.session.list_changes().open_stream(limit, audience)
}

/// The error for a session whose streams are all open, for GET and listen
/// alike.
pub(crate) fn too_many_streams(limit: usize) -> ErrorObject {
    ErrorObject::new(
        code::INVALID_REQUEST,
        "Conflict: this session has as many open streams as the host allows",
    )
    .with_data(serde_json::json!({"maxStreamsPerSession": limit}))
}

/// Longest id a `subscriptions/listen` may have, as the JSON text the
/// stream writes (quotes and escapes included: an id of control
/// characters takes six bytes each once written). The stream keeps its
/// messages pre-rendered for its whole life, each with the id in it (the
/// acknowledgement, the change notice, the closing result): without a
/// bound, four listens with 4 MiB ids held 66 MB until their client left.
/// Clients use counters and UUIDs; 256 bytes leaves room for far more.
/// The refusal names no id: echoing it would write the long id back.
const MAX_LISTEN_ID_BYTES: usize = 256;

/// Whether `id`, written as JSON, is over [`MAX_LISTEN_ID_BYTES`]: a
/// string that is, even unescaped, is refused without a scan (a 4 MiB id
/// is not copied to be refused); any other is written by serde_json,
/// escapes and all, and measured. What is written is small: a string of
/// at most 254 bytes (six bytes each once escaped) or an integer, the only
/// ids `jsonrpc::read` admits. Written into a `Vec` through the same
/// serde_json code the response writer uses: a stack buffer instead
/// compiled another copy of that code, 4,760 bytes of the stripped size
/// consumer (2026-12-07, measured on `18f6741`).
fn id_too_long(id: &Value) -> bool {
    matches!(id.as_str(), Some(text) if text.len() + 2 > MAX_LISTEN_ID_BYTES)
        || serde_json::to_vec(id).is_ok_and(|written| written.len() > MAX_LISTEN_ID_BYTES)
}

/// `subscriptions/listen` (2026-07-28): an SSE stream that acknowledges
/// the honoured filter (only `toolsListChanged` is ever honoured; other
/// requested types are left out, never an error), then carries each change
/// under the listen request's id.
pub(super) fn listen(answer: &mut Answer<'_>, params: Option<&Params<'_>>) -> Handled {
    let lease = answer.lease;
    if !lease.is_live() {
        return Handled::Revoked;
    }
    // Refused with no id: echoing it would write the long id back.
    if id_too_long(&answer.id) {
        let error = ErrorObject::new(
            code::INVALID_REQUEST,
            "subscriptions/listen's id is kept for the stream's whole life: written as JSON, it may be at most 256 bytes",
        );
        return write_error(answer.out, None, &error, ReplyClass::Malformed);
    }
    if !answer.context.may_stream {
        let error = ErrorObject::new(
            code::INVALID_REQUEST,
            "subscriptions/listen is answered with an SSE stream: Accept must name text/event-stream",
        );
        return answer.error_as(&error, ReplyClass::Malformed);
    }
    let notifications = params.and_then(|p| p.get("notifications"));
    let requested = notifications
        .as_deref()
        .and_then(|n| n.get("toolsListChanged"))
        == Some(&Value::Bool(true));
    let changes = lease.session.list_changes();
    let listening = if requested && changes.offered() {
        // Each subscription is its own audience, told of changes from now.
        let audience = Audience::starting_at(changes.generation());
        let slot = match open_slot(lease, audience) {
            Ok(slot) => slot,
            Err(StreamRefused::TooMany) => {
                let error = too_many_streams(lease.shared.config.max_streams_per_session);
                return answer.error_as(&error, ReplyClass::TooManyStreams);
            }
            Err(StreamRefused::Revoked | StreamRefused::NotOffered) => return Handled::Revoked,
        };
        Some(Listening {
            change: change_notification(&answer.id),
            slot,
        })
    } else {
        None
    };
    let honoured = listening.is_some();
    Handled::Listen(Box::new(Subscription {
        opening: Some(acknowledgement(&answer.id, honoured)),
        listening,
        closing: Some(closing_result(answer)),
    }))
}

/// `"_meta":{"io.modelcontextprotocol/subscriptionId":ID}`, and the
/// server's implementation too when `server` is given.
fn write_subscription_meta(object: &mut JsonWriter<'_>, id: &Value, server: Option<&str>) {
    let mut meta = object.object_in("_meta");
    meta.value(META_SUBSCRIPTION_ID, id);
    if let Some(server) = server {
        meta.raw(META_SERVER_INFO, server.as_bytes());
    }
    meta.end();
}

fn acknowledgement(id: &Value, tools_list_changed: bool) -> Vec<u8> {
    let method = "notifications/subscriptions/acknowledged";
    jsonrpc::notification(192, method, |params| {
        write_subscription_meta(params, id, None);
        let mut honoured = params.object_in("notifications");
        if tools_list_changed {
            honoured.raw("toolsListChanged", b"true");
        }
        honoured.end();
    })
}

fn change_notification(id: &Value) -> Vec<u8> {
    jsonrpc::notification(160, "notifications/tools/list_changed", |params| {
        write_subscription_meta(params, id, None);
    })
}

/// The listen request's result, which ends the subscription gracefully:
/// `resultType`, and in `_meta` the subscription id and, as on every
/// modern result, the server.
fn closing_result(answer: &Answer<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let server = answer.lease.shared.info.implementation.as_str();
    jsonrpc::write_result(&mut out, &answer.id, |result| {
        result.raw("resultType", b"\"complete\"");
        write_subscription_meta(result, &answer.id, Some(server));
    });
    out
}

#[cfg(test)]
mod id_length_tests {
    use super::*;

    /// The count agrees with what is written, escapes included, at the
    /// limit and one byte past it.
    #[test]
    fn an_id_is_measured_as_written() {
        let samples = [
            "i".repeat(254),
            "\u{1}".repeat(42),
            "\"\\\n\r\t\u{8}\u{c}".repeat(18),
            "é".repeat(127),
            "\u{7f}".repeat(254),
        ];
        for base in samples {
            for extra in ["", "i"] {
                let id = Value::String(format!("{base}{extra}"));
                let written = serde_json::to_vec(&id).unwrap().len();
                assert_eq!(
                    id_too_long(&id),
                    written > MAX_LISTEN_ID_BYTES,
                    "{written} bytes"
                );
            }
        }
        assert!(id_too_long(&Value::String("\u{1}".repeat(256))));
        assert!(!id_too_long(&serde_json::json!(u64::MAX)));
    }
}
