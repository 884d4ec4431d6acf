//! JSON-RPC 2.0, and JSON text in and out. Nothing here knows about HTTP
//! or MCP methods; the error-code table holds MCP's codes too (`-32001`,
//! `-32020`, `-32022`), since they are JSON-RPC error codes
//! that the framing here writes.
//!
//! - this file: envelopes, the error-code table, and framing replies;
//! - `read.rs`: reading a body, the usual one by the allocation-free pass
//!   of `envelope.rs`, whose members serde_json reads into `Value`s when a
//!   method asks;
//! - `json_scan.rs`: a body's JSON shape before parsing (the memory its
//!   parse would take, a batch's length), used as a namespace;
//! - `json_out.rs`: appending JSON to a response buffer.

mod envelope;
mod json_out;
pub(crate) mod json_scan;
mod read;

use std::borrow::Cow;

use serde_json::{Map, Value};

#[cfg(any(test, feature = "bench-internals"))]
pub(crate) use read::reads_agree;
pub(crate) use read::{classify, parse, Parsed};

pub(crate) use envelope::RawMembers;

pub(crate) use json_out::{write_json, write_json_str};
use read::member_value;

/// The JSON-RPC error codes the host emits, each in one place.
pub(crate) mod code {
    /// The body is not JSON.
    pub(crate) const PARSE_ERROR: i32 = -32700;
    /// JSON, but not a valid JSON-RPC request.
    pub(crate) const INVALID_REQUEST: i32 = -32600;
    /// No such method (tools-only host: everything but the MCP lifecycle and tools).
    pub(crate) const METHOD_NOT_FOUND: i32 = -32601;
    /// Bad params: an unknown tool, a bad cursor, a malformed `tools/call`.
    pub(crate) const INVALID_PARAMS: i32 = -32602;
    /// The host could not run the tool.
    pub(crate) const INTERNAL_ERROR: i32 = -32603;
    /// Legacy era: the `Mcp-Session-Id` names no open MCP session (HTTP
    /// 404). The code the TypeScript SDK's server sends and MCP clients
    /// re-initialize on; never sent in the 2026-07-28 era, which has no
    /// sessions.
    pub(crate) const SESSION_NOT_FOUND: i32 = -32001;
    /// MCP 2026-07-28: a header is missing or disagrees with the body.
    pub(crate) const HEADER_MISMATCH: i32 = -32020;
    /// MCP 2026-07-28: the request's protocol version is not served here.
    pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ErrorObject {
    pub(crate) code: i32,
    pub(crate) message: Cow<'static, str>,
    pub(crate) data: Option<Value>,
}

impl ErrorObject {
    pub(crate) fn new(code: i32, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub(crate) fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// A request's `params` object. Both forms answer the same questions; which
/// one a request gets only depends on how its body could be read (see
/// `read::parse`).
#[derive(Debug)]
pub(crate) enum Params<'a> {
    /// Members as raw JSON text, from the fast reading: the usual case. A
    /// member becomes a [`Value`] only when asked for, and never fails to
    /// (see `envelope.rs`).
    Raw(&'a RawMembers<'a>),
    /// A batch member, or a body the fast reading left to the general one.
    Owned(Map<String, Value>),
}

impl<'a> Params<'a> {
    /// A member's value, if present.
    pub(crate) fn get(&self, key: &str) -> Option<Cow<'_, Value>> {
        match self {
            Self::Raw(members) => members.get(key).map(|raw| Cow::Owned(member_value(raw))),
            Self::Owned(members) => members.get(key).map(Cow::Borrowed),
        }
    }

    /// A member's value when it is a string (borrowed from the body unless
    /// it has escapes); `None` when absent or not a string.
    pub(crate) fn get_str(&self, key: &str) -> Option<Cow<'_, str>> {
        match self {
            Self::Raw(members) => members.get(key).and_then(read::raw_string),
            Self::Owned(members) => members.get(key)?.as_str().map(Cow::Borrowed),
        }
    }

    /// Moves a member's value out when it is a string, borrowed from the
    /// body unless it has escapes; `None` when absent or not a string.
    pub(crate) fn take_str(&mut self, key: &str) -> Option<Cow<'a, str>> {
        match self {
            Self::Raw(members) => members.get(key).and_then(read::raw_string),
            Self::Owned(members) => match members.get_mut(key)? {
                Value::String(text) => Some(Cow::Owned(std::mem::take(text))),
                _ => None,
            },
        }
    }

    /// Moves a member's value out (from an owned map, leaving `null`).
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        match self {
            Self::Raw(members) => members.get(key).map(member_value),
            Self::Owned(members) => take(members, key),
        }
    }
}

/// A request: it has an id and wants exactly one response.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// A string or an integer, echoed verbatim.
    pub(crate) id: Value,
    pub(crate) method: Cow<'a, str>,
    /// `None` when omitted, which means `{}`.
    pub(crate) params: Option<Params<'a>>,
}

/// What one JSON value in a POST body is.
#[derive(Debug)]
pub(crate) enum Message<'a> {
    Request(Request<'a>),
    /// A method without an id: never answered, not even with an error.
    /// `params` is `None` unless it was an object.
    Notification {
        method: Cow<'a, str>,
        params: Option<Params<'a>>,
    },
    /// A client's response (`result` or `error` with an id): accepted, ignored.
    Response,
    /// Not a valid JSON-RPC message. `id` is the message's id when it was
    /// readable, so the error can echo it.
    Invalid {
        id: Option<Value>,
        error: ErrorObject,
    },
}

/// Moves a member's value out of a map, leaving `null` behind. Cheaper than
/// `remove`, which rebalances the map's tree; the map is dropped soon after.
pub(crate) fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.get_mut(key).map(Value::take)
}

/// Writes `{"jsonrpc":"2.0","id":ID,"result":{`: a response whose result
/// object's members come next. (MCP results are always objects.)
pub(crate) fn open_result(out: &mut Vec<u8>, id: &Value) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"result\":{");
}

/// Closes what [`open_result`] opened, after the result's members.
pub(crate) fn close_result(out: &mut Vec<u8>) {
    out.extend_from_slice(b"}}");
}

/// Writes an error response. An unknown id is written as `null`, as
/// JSON-RPC 2.0 requires for parse errors; MCP clients accept it everywhere.
pub(crate) fn write_error(out: &mut Vec<u8>, id: Option<&Value>, error: &ErrorObject) {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        Some(id) => write_json(out, id),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"error\":{\"code\":");
    out.extend_from_slice(error.code.to_string().as_bytes());
    out.extend_from_slice(b",\"message\":");
    write_json_str(out, &error.message);
    if let Some(data) = &error.data {
        out.extend_from_slice(b",\"data\":");
        write_json(out, data);
    }
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Ids are echoed exactly: `"1"` stays a string, big integers stay whole.
    #[test]
    fn ids_echo_verbatim() {
        for id in [
            json!("1"),
            json!(1),
            json!(u64::MAX),
            json!(i64::MIN),
            json!("é \" x"),
        ] {
            let mut out = Vec::new();
            open_result(&mut out, &id);
            close_result(&mut out);
            let back: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
        }
    }

    /// Error objects carry code, message and optional data; unknown ids are null.
    #[test]
    fn error_framing() {
        let mut out = Vec::new();
        let error =
            ErrorObject::new(code::INVALID_PARAMS, "Unknown tool: x").with_data(json!({"a": 1}));
        write_error(&mut out, None, &error);
        let back: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            back,
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Unknown tool: x","data":{"a":1}}})
        );
    }
}
