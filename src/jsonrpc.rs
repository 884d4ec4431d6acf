//! JSON-RPC 2.0 envelopes: classifying a message, framing replies, and the
//! error-code table. Nothing here knows about HTTP or MCP methods.

use std::borrow::Cow;

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

/// A request: it has an id and wants exactly one response.
#[derive(Debug)]
pub(crate) struct Request {
    /// A string or an integer, echoed verbatim.
    pub(crate) id: Value,
    pub(crate) method: String,
    /// `None` when omitted, which means `{}`.
    pub(crate) params: Option<Map<String, Value>>,
}

/// What one JSON value in a POST body is.
#[derive(Debug)]
pub(crate) enum Message {
    Request(Request),
    /// A method without an id: never answered, not even with an error.
    /// `params` is `None` unless it was an object.
    Notification {
        method: String,
        params: Option<Map<String, Value>>,
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

/// Classifies one JSON value by its members (JSON-RPC 2.0 §4, §5).
pub(crate) fn classify(value: Value) -> Message {
    let Value::Object(mut object) = value else {
        return invalid(None, "a JSON-RPC message must be a JSON object");
    };
    let id = match take(&mut object, "id") {
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
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "the jsonrpc member must be \"2.0\"");
    }
    let method = match take(&mut object, "method") {
        Some(Value::String(method)) => method,
        Some(_) => return invalid(id, "method must be a string"),
        None => {
            return match id {
                Some(_) if object.contains_key("result") || object.contains_key("error") => {
                    Message::Response
                }
                id => invalid(
                    id,
                    "a JSON-RPC message needs a method, or a result or error",
                ),
            };
        }
    };
    let Some(id) = id else {
        let params = match take(&mut object, "params") {
            Some(Value::Object(params)) => Some(params),
            _ => None,
        };
        return Message::Notification { method, params };
    };
    let params = match take(&mut object, "params") {
        None => None,
        Some(Value::Object(params)) => Some(params),
        Some(Value::Array(_)) => {
            return Message::Invalid {
                id: Some(id),
                error: ErrorObject::new(code::INVALID_PARAMS, "params must be an object"),
            }
        }
        Some(_) => return invalid(Some(id), "params must be an object"),
    };
    Message::Request(Request { id, method, params })
}

/// Moves a member's value out of a map, leaving `null` behind. Cheaper than
/// `remove`, which rebalances the map's tree; the map is dropped soon after.
pub(crate) fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.get_mut(key).map(Value::take)
}

fn invalid(id: Option<Value>, message: &'static str) -> Message {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kind(value: Value) -> (String, Option<Value>, Option<i32>) {
        match classify(value) {
            Message::Request(r) => ("request".into(), Some(r.id), None),
            Message::Notification { .. } => ("notification".into(), None, None),
            Message::Response => ("response".into(), None, None),
            Message::Invalid { id, error } => ("invalid".into(), id, Some(error.code)),
        }
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
