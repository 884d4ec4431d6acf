//! Reading a POST body into JSON-RPC messages, borrowing from it where it
//! can (see [`parse`]).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

use super::{code, take, ErrorObject, Message, Params, Request};

/// What a POST body holds.
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
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
pub(crate) fn parse(body: &[u8]) -> Parsed<'_> {
    if let Some(message) = classify_borrowed(body) {
        return Parsed::Single(message);
    }
    match serde_json::from_slice(body) {
        Ok(Value::Array(batch)) => Parsed::Batch(batch),
        Ok(single) => Parsed::Single(classify(single)),
        Err(_) => Parsed::NotJson,
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

fn invalid(id: Option<Value>, message: &'static str) -> Message<'static> {
    Message::Invalid {
        id,
        error: ErrorObject::new(code::INVALID_REQUEST, message),
    }
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
        (Parsed::Batch(batch), Value::Array(general)) => batch == general,
        (Parsed::Single(message), general @ Value::Object(_)) => {
            summary(message) == summary(classify(general))
        }
        (Parsed::Single(message), general) => {
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
            Parsed::Single(message) => summary(message),
            Parsed::Batch(_) => ("batch".into(), None, None, None, None),
            Parsed::NotJson => ("not json".into(), None, None, None, None),
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
            Parsed::Single(Message::Request(Request { method, params, .. })) => (
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
}
