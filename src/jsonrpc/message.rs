//! A JSON-RPC message as the dispatcher reads it: requests, notifications,
//! their params (read lazily from the body's raw members), error objects
//! and the error-code table. Built on `envelope.rs`'s raw members alone:
//! `read.rs` builds these, `mod.rs` frames replies from them.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::envelope::RawMembers;

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
            Self::Raw(members) => members.get(key).and_then(raw_string),
            Self::Owned(members) => members.get(key)?.as_str().map(Cow::Borrowed),
        }
    }

    /// Moves a member's value out when it is a string, borrowed from the
    /// body unless it has escapes; `None` when absent or not a string.
    pub(crate) fn take_str(&mut self, key: &str) -> Option<Cow<'a, str>> {
        match self {
            Self::Raw(members) => members.get(key).and_then(raw_string),
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

/// Equal when their members are, a raw one as serde_json reads it: the
/// two readings of a body agree on its params whatever form each gives.
#[cfg(any(test, feature = "bench-internals"))]
impl PartialEq for Params<'_> {
    fn eq(&self, other: &Self) -> bool {
        let members = |params: &Self| match params {
            Self::Raw(members) => members
                .iter()
                .map(|(key, raw)| (key.to_owned(), member_value(raw)))
                .collect(),
            Self::Owned(members) => members.clone(),
        };
        members(self) == members(other)
    }
}

/// A request: it has an id and wants exactly one response.
#[derive(Debug)]
#[cfg_attr(any(test, feature = "bench-internals"), derive(PartialEq))]
pub(crate) struct Request<'a> {
    /// A string or an integer, echoed verbatim.
    pub(crate) id: Value,
    pub(crate) method: Cow<'a, str>,
    /// `None` when omitted, which means `{}`.
    pub(crate) params: Option<Params<'a>>,
}

/// What one JSON value in a POST body is. (Comparable for
/// `read::reads_agree`, which checks that both readings agree.)
#[derive(Debug)]
#[cfg_attr(any(test, feature = "bench-internals"), derive(PartialEq))]
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

/// A member's raw text, which the fast reading accepted, as a [`Value`],
/// read by serde_json. serde_json cannot refuse it (the subset of
/// `envelope.rs` rules that out, and the fuzz target checks it); were it
/// ever to, the member would read as `null` rather than take the host down.
///
/// Read through `str::parse`, as everywhere the host reads JSON: serde_json's
/// `FromStr for Value` is not generic, so its parser is compiled once, in
/// serde_json, rather than in this crate (on the embedder's critical path:
/// see benches/JOURNAL.md, "What embedding costs").
fn member_value(raw: &str) -> Value {
    let value = raw.parse::<Value>();
    debug_assert!(value.is_ok(), "the fast reading accepted {raw:?}");
    value.unwrap_or(Value::Null)
}

/// A member's raw text as a string, borrowed unless it has escapes; `None`
/// when it is not a string.
pub(super) fn raw_string(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    // Read as a `Value`, the one type the host ever deserializes: reading a
    // `String` would compile a second parser, with serde's error messages
    // for every other type (and its float formatting).
    match raw.parse::<Value>() {
        Ok(Value::String(text)) => Some(Cow::Owned(text)),
        _ => None,
    }
}
