//! JSON-RPC 2.0 envelopes: reading a body (borrowing from it where it can,
//! see [`parse`]), classifying a message, framing replies, and the
//! error-code table. Nothing here knows about HTTP or MCP methods.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::outcome::{write_json, write_json_str};

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
/// [`parse`]).
#[derive(Debug)]
pub(crate) enum Params<'a> {
    /// Keys borrowed from the body: the usual case, one allocation for the
    /// map instead of one per key.
    Borrowed(BTreeMap<&'a str, Value>),
    /// A batch member, or an object with a key that needs unescaping.
    Owned(Map<String, Value>),
}

impl Params<'_> {
    /// A member's value, if present.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Self::Borrowed(members) => members.get(key),
            Self::Owned(members) => members.get(key),
        }
    }

    /// Moves a member's value out, leaving `null` behind.
    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        match self {
            Self::Borrowed(members) => members.get_mut(key).map(Value::take),
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

/// What a POST body holds.
#[derive(Debug)]
pub(crate) enum Body<'a> {
    /// One JSON value, classified.
    Single(Message<'a>),
    /// A JSON array: a 2025-03-26 batch, its members not yet classified.
    Batch(Vec<Value>),
    /// Not JSON at all.
    NotJson,
}

/// Reads a POST body.
///
/// The usual body is one object whose keys need no unescaping. It is read
/// with its envelope's members as raw JSON text (one map, keys borrowed from
/// the body), and `params` into a map with borrowed keys: `id`, `method` and
/// the `params` keys cost no allocation. Anything else — an array, a scalar,
/// an escaped key, a member that does not parse — is read the general way,
/// as one [`Value`], which decides every such case exactly as before.
///
/// Two differences follow from reading members separately, both choices
/// made here: an envelope member the host never reads (anything but
/// `jsonrpc`, `id`, `method` and `params`, or an earlier duplicate of one of
/// those) is only checked for JSON syntax, so a number out of `f64` range
/// there does not make the body a parse error; and the 128-level nesting
/// limit counts from `params` rather than from the body. Where reading the
/// whole body as one `Value` succeeds, both ways classify it alike (the
/// unit tests and the `dispatch` fuzz target check this).
pub(crate) fn parse(body: &[u8]) -> Body<'_> {
    if let Some(message) = classify_borrowed(body) {
        return Body::Single(message);
    }
    match serde_json::from_slice(body) {
        Ok(Value::Array(batch)) => Body::Batch(batch),
        Ok(single) => Body::Single(classify(single)),
        Err(_) => Body::NotJson,
    }
}

/// The members classification reads, from either way of reading a message.
struct Members<'a> {
    /// The `id` member as given, if present.
    id: Option<Value>,
    /// Whether `jsonrpc` is the string `"2.0"`.
    version_2_0: bool,
    method: Option<Result<Cow<'a, str>, NotAString>>,
    params: Option<ParamsMember<'a>>,
    /// Whether a `result` or `error` member is present.
    answers: bool,
}

/// A member that should have been a string and is something else.
struct NotAString;

/// What the `params` member holds.
enum ParamsMember<'a> {
    Object(Params<'a>),
    Array,
    Other,
}

impl From<Value> for ParamsMember<'_> {
    fn from(value: Value) -> Self {
        match value {
            Value::Object(params) => Self::Object(Params::Owned(params)),
            Value::Array(_) => Self::Array,
            _ => Self::Other,
        }
    }
}

/// Classifies one parsed JSON value by its members (JSON-RPC 2.0 §4, §5).
pub(crate) fn classify(value: Value) -> Message<'static> {
    let Value::Object(mut object) = value else {
        return invalid(None, "a JSON-RPC message must be a JSON object");
    };
    let method = take(&mut object, "method").map(|method| match method {
        Value::String(method) => Ok(Cow::Owned(method)),
        _ => Err(NotAString),
    });
    classify_members(Members {
        id: take(&mut object, "id"),
        version_2_0: object.get("jsonrpc").and_then(Value::as_str) == Some("2.0"),
        method,
        params: take(&mut object, "params").map(ParamsMember::from),
        answers: object.contains_key("result") || object.contains_key("error"),
    })
}

/// The envelope with its members as raw JSON text, keys borrowed.
type RawObject<'a> = BTreeMap<&'a str, &'a RawValue>;

/// Classifies a body that is one JSON object, reading only the members
/// classification needs; `None` sends the body down the general path (see
/// [`parse`]).
fn classify_borrowed(body: &[u8]) -> Option<Message<'_>> {
    if body.trim_ascii_start().first() != Some(&b'{') {
        return None;
    }
    let object: RawObject<'_> = serde_json::from_slice(body).ok()?;
    let id = match object.get("id") {
        Some(raw) => Some(serde_json::from_str(raw.get()).ok()?),
        None => None,
    };
    let version_2_0 = match object.get("jsonrpc") {
        Some(raw) if raw.get() == "\"2.0\"" => true,
        // Escapes spell the same string in other bytes.
        Some(raw) => serde_json::from_str::<Value>(raw.get()).ok()?.as_str() == Some("2.0"),
        None => false,
    };
    let method = match object.get("method") {
        Some(raw) => Some(match serde_json::from_str::<&str>(raw.get()) {
            Ok(method) => Ok(Cow::Borrowed(method)),
            Err(_) => match serde_json::from_str::<Value>(raw.get()).ok()? {
                Value::String(method) => Ok(Cow::Owned(method)),
                _ => Err(NotAString),
            },
        }),
        None => None,
    };
    let params = match object.get("params") {
        Some(raw) if raw.get().starts_with('{') => Some(ParamsMember::Object(
            match serde_json::from_str(raw.get()) {
                Ok(members) => Params::Borrowed(members),
                Err(_) => Params::Owned(serde_json::from_str(raw.get()).ok()?),
            },
        )),
        Some(raw) => Some(ParamsMember::from(
            serde_json::from_str::<Value>(raw.get()).ok()?,
        )),
        None => None,
    };
    Some(classify_members(Members {
        id,
        version_2_0,
        method,
        params,
        answers: object.contains_key("result") || object.contains_key("error"),
    }))
}

/// The classification rules, whichever way the members were read.
fn classify_members(members: Members<'_>) -> Message<'_> {
    let id = match members.id {
        None => None,
        Some(id @ Value::String(_)) => Some(id),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n)),
        Some(Value::Null) => {
            return invalid(
                None,
                "a request id must be a string or an integer, not null",
            )
        }
        Some(_) => return invalid(None, "a request id must be a string or an integer"),
    };
    if !members.version_2_0 {
        return invalid(id, "the jsonrpc member must be \"2.0\"");
    }
    let method = match members.method {
        Some(Ok(method)) => method,
        Some(Err(NotAString)) => return invalid(id, "method must be a string"),
        None => {
            return match id {
                Some(_) if members.answers => Message::Response,
                id => invalid(
                    id,
                    "a JSON-RPC message needs a method, or a result or error",
                ),
            };
        }
    };
    let Some(id) = id else {
        let params = match members.params {
            Some(ParamsMember::Object(params)) => Some(params),
            _ => None,
        };
        return Message::Notification { method, params };
    };
    let params = match members.params {
        None => None,
        Some(ParamsMember::Object(params)) => Some(params),
        Some(ParamsMember::Array) => {
            return Message::Invalid {
                id: Some(id),
                error: ErrorObject::new(code::INVALID_PARAMS, "params must be an object"),
            }
        }
        Some(ParamsMember::Other) => return invalid(Some(id), "params must be an object"),
    };
    Message::Request(Request { id, method, params })
}

/// Moves a member's value out of a map, leaving `null` behind. Cheaper than
/// `remove`, which rebalances the map's tree; the map is dropped soon after.
pub(crate) fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.get_mut(key).map(Value::take)
}

fn invalid(id: Option<Value>, message: &'static str) -> Message<'static> {
    Message::Invalid {
        id,
        error: ErrorObject::new(code::INVALID_REQUEST, message),
    }
}

/// Writes `{"jsonrpc":"2.0","id":ID,"result":` and returns where the
/// response started, so a failing handler can [`truncate`](Vec::truncate)
/// back to it.
pub(crate) fn open_result(out: &mut Vec<u8>, id: &Value) -> usize {
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(out, id);
    out.extend_from_slice(b",\"result\":");
    start
}

/// Closes what [`open_result`] opened, after the result value.
pub(crate) fn close_result(out: &mut Vec<u8>) {
    out.push(b'}');
}

/// Writes a whole result response.
#[cfg(test)]
pub(crate) fn write_result(out: &mut Vec<u8>, id: &Value, result: &Value) {
    open_result(out, id);
    write_json(out, result);
    close_result(out);
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

/// A message's kind, id, error code, method and params, comparable.
#[cfg(any(test, feature = "bench-internals"))]
type Summary = (
    String,
    Option<Value>,
    Option<i32>,
    Option<String>,
    Option<Value>,
);

#[cfg(any(test, feature = "bench-internals"))]
fn summary(message: Message<'_>) -> Summary {
    let params = |p: Option<Params<'_>>| {
        p.map(|p| match p {
            Params::Borrowed(m) => m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            Params::Owned(m) => Value::Object(m),
        })
    };
    match message {
        Message::Request(r) => (
            "request".into(),
            Some(r.id),
            None,
            Some(r.method.into_owned()),
            params(r.params),
        ),
        Message::Notification { method, params: p } => (
            "notification".into(),
            None,
            None,
            Some(method.into_owned()),
            params(p),
        ),
        Message::Response => ("response".into(), None, None, None, None),
        Message::Invalid { id, error } => ("invalid".into(), id, Some(error.code), None, None),
    }
}

/// Whether [`parse`] reads `body` as one [`Value`] through [`classify`]
/// would, wherever that general path can read it (see `parse` for where it
/// cannot and `parse` is more lenient). The tests' and the fuzz target's
/// oracle for the borrowing reader.
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn reads_agree(body: &[u8]) -> bool {
    let Ok(general) = serde_json::from_slice::<Value>(body) else {
        return true;
    };
    match (parse(body), general) {
        (Body::Batch(batch), Value::Array(general)) => batch == general,
        (Body::Single(message), general @ Value::Object(_)) => {
            summary(message) == summary(classify(general))
        }
        (Body::Single(message), general) => {
            !general.is_array() && summary(message) == summary(classify(general))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads a body both ways and checks they agree; returns its summary.
    fn both_ways(body: &[u8]) -> Summary {
        assert!(reads_agree(body), "{}", String::from_utf8_lossy(body));
        match parse(body) {
            Body::Single(message) => summary(message),
            Body::Batch(_) => ("batch".into(), None, None, None, None),
            Body::NotJson => ("not json".into(), None, None, None, None),
        }
    }

    fn kind(value: Value) -> (String, Option<Value>, Option<i32>) {
        let (kind, id, code, _, _) = both_ways(value.to_string().as_bytes());
        (kind, id, code)
    }

    /// The classification table of the spec digest (§5), row by row.
    #[test]
    fn classification_table() {
        let rows = [
            (
                json!({"jsonrpc":"2.0","id":1,"method":"ping"}),
                "request",
                Some(json!(1)),
                None,
            ),
            (
                json!({"jsonrpc":"2.0","id":"1","method":"ping"}),
                "request",
                Some(json!("1")),
                None,
            ),
            (
                json!({"jsonrpc":"2.0","id":-7,"method":"x","params":{}}),
                "request",
                Some(json!(-7)),
                None,
            ),
            (
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                "notification",
                None,
                None,
            ),
            (
                json!({"jsonrpc":"2.0","id":3,"result":{}}),
                "response",
                None,
                None,
            ),
            (
                json!({"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"m"}}),
                "response",
                None,
                None,
            ),
            (
                json!({"jsonrpc":"2.0","id":null,"method":"ping"}),
                "invalid",
                None,
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}),
                "invalid",
                None,
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"2.0","id":[1],"method":"ping"}),
                "invalid",
                None,
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"1.0","id":4,"method":"ping"}),
                "invalid",
                Some(json!(4)),
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"id":4,"method":"ping"}),
                "invalid",
                Some(json!(4)),
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"2.0","id":5,"method":7}),
                "invalid",
                Some(json!(5)),
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"2.0","id":5,"method":"x","params":[1]}),
                "invalid",
                Some(json!(5)),
                Some(code::INVALID_PARAMS),
            ),
            (
                json!({"jsonrpc":"2.0","id":5,"method":"x","params":"s"}),
                "invalid",
                Some(json!(5)),
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"2.0","id":5,"method":"x","params":null}),
                "invalid",
                Some(json!(5)),
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"2.0","id":6}),
                "invalid",
                Some(json!(6)),
                Some(code::INVALID_REQUEST),
            ),
            (
                json!({"jsonrpc":"2.0","result":{}}),
                "invalid",
                None,
                Some(code::INVALID_REQUEST),
            ),
            (json!("ping"), "invalid", None, Some(code::INVALID_REQUEST)),
            (json!(42), "invalid", None, Some(code::INVALID_REQUEST)),
        ];
        for (input, want_kind, want_id, want_code) in rows {
            let text = input.to_string();
            assert_eq!(
                kind(input),
                (want_kind.to_owned(), want_id, want_code),
                "{text}"
            );
        }
    }

    /// Bodies the borrowing reader hands to the general path (escaped keys,
    /// escaped values, scalars, bad JSON), and ones it reads itself, get the
    /// same classification either way; only usual bodies borrow.
    #[test]
    fn borrowing_reader_agrees_with_the_general_path() {
        let bodies: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":null}]}}}"#,
            br#" {"jsonrpc" : "2.0", "id" : "x", "method" : "ping"} "#,
            br#"{"jsonrpc":"2.0","id":1,"me\u0074hod":"ping"}"#,
            br#"{"jsonrpc":"\u0032.0","id":1,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#,
            br#"{"jsonrpc":"2.0","id":"\u00e9","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"t"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","id":2}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"k":1,"k":2}}"#,
            br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"big":1e400}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
            br#"{"jsonrpc":2,"id":1,"method":"ping"}"#,
            br#"{}"#,
            br#"null"#,
            br#""{}""#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            b"",
        ];
        for body in bodies {
            both_ways(body);
        }
        let borrowed = |body: &'static [u8]| match parse(body) {
            Body::Single(Message::Request(Request { method, params, .. })) => (
                matches!(method, Cow::Borrowed(_)),
                matches!(params, Some(Params::Borrowed(_))),
            ),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            borrowed(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#),
            (true, true)
        );
        assert_eq!(
            borrowed(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"n\u0061me":"t"}}"#
            ),
            (false, false)
        );
    }

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
            write_result(&mut out, &id, &json!({}));
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
