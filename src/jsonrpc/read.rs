//! Reading a POST body into JSON-RPC messages: the usual body by the fast
//! reading of `envelope.rs`, anything else as one [`Value`] (see [`parse`]).

use std::borrow::Cow;

use serde_json::Value;

#[cfg(test)]
use super::envelope::MAX_PARAMS_MEMBERS;
use super::envelope::{self, Envelope, RawMembers};
use super::message::{code, raw_string, take, ErrorObject, Message, Params, Request};

/// What a POST body holds.
#[derive(Debug)]
pub(crate) enum Parsed<'a> {
    /// One JSON value, classified.
    Single(Message<'a>),
    /// A JSON array: a 2025-03-26 batch, its members not yet classified.
    Batch(Vec<Value>),
    /// Not read: not JSON at all, or JSON holding a number beyond a
    /// double's range (`1e309`, an integer of 310 digits), valid JSON that
    /// serde_json, which reads every number that is not an integer of 64
    /// bits as a double, cannot hold. The `-32700` error to answer with
    /// (with no id: nothing of the body is read) says which.
    Unread(ErrorObject),
}

/// Reads a POST body.
///
/// The usual body (one object in the subset `envelope.rs` describes) is
/// read without building it: the envelope's and `params`' members are
/// found as raw JSON text, and a member becomes a [`Value`] only when a
/// method asks for it. Anything else — an array, a scalar, an escaped key,
/// a number that might not fit, bad JSON — is read the general way, as one
/// [`Value`]. Both ways classify every body alike, with the same error
/// codes and the same 128-level nesting limit, because the fast reading
/// accepts only JSON the general one reads without error (the unit tests
/// and the `dispatch` fuzz target check this).
///
/// `params` is where the fast reading puts the members of `params`, which
/// the message then borrows: the caller keeps it in place.
pub(crate) fn parse<'a>(body: &'a [u8], params: &'a mut RawMembers<'a>) -> Parsed<'a> {
    if let Some(envelope) = envelope::read(body, params) {
        if let Some(message) = classify_envelope(envelope, params) {
            return Parsed::Single(message);
        }
    }
    // JSON is UTF-8 throughout, so a body that is not is refused here as
    // serde_json would refuse it.
    let what = match std::str::from_utf8(body).map(str::parse::<Value>) {
        Ok(Ok(Value::Array(batch))) => return Parsed::Batch(batch),
        Ok(Ok(single)) => return Parsed::Single(classify(single)),
        // serde_json's own words for its `NumberOutOfRange`: it reports
        // that error as a syntax error, as it does every other.
        Ok(Err(error)) if error.to_string().starts_with("number out of range") => {
            "Parse error: the body holds a number beyond a double's range \
             (about 1.8e308), which this host cannot read"
        }
        _ => "Parse error: the body is not JSON",
    };
    Parsed::Unread(ErrorObject::new(code::PARSE_ERROR, what))
}

/// The members classification reads, from either way of reading a message.
struct Members<'a> {
    /// The `id` member as given, if present.
    id: Option<Value>,
    /// Whether `jsonrpc` is the string `"2.0"`.
    version_2_0: bool,
    /// The `method` member: `Some(None)` when it is not a string.
    method: Option<Option<Cow<'a, str>>>,
    /// The `params` member: an object, or else the code of the error a
    /// request with it gets (`-32602` for an array, `-32600` otherwise).
    params: Option<Result<Params<'a>, i32>>,
    /// Whether a `result` or `error` member is present.
    answers: bool,
}

/// Classifies one parsed JSON value by its members (JSON-RPC 2.0 §4, §5).
pub(crate) fn classify(value: Value) -> Message<'static> {
    let Value::Object(mut object) = value else {
        return invalid(None, "a JSON-RPC message must be a JSON object");
    };
    let method = take(&mut object, "method").map(|method| match method {
        Value::String(method) => Some(Cow::Owned(method)),
        _ => None,
    });
    classify_members(Members {
        id: take(&mut object, "id"),
        version_2_0: object.get("jsonrpc").and_then(Value::as_str) == Some("2.0"),
        method,
        params: take(&mut object, "params").map(|params| match params {
            Value::Object(params) => Ok(Params::Owned(params)),
            Value::Array(_) => Err(code::INVALID_PARAMS),
            _ => Err(code::INVALID_REQUEST),
        }),
        answers: object.contains_key("result") || object.contains_key("error"),
    })
}

/// Classifies a body the fast reading found the members of. `None` (a
/// member the fast reading accepted but serde_json refused, which its
/// subset rules out) sends the body down the general path.
fn classify_envelope<'a>(
    envelope: Envelope<'a>,
    members: &'a RawMembers<'a>,
) -> Option<Message<'a>> {
    Some(classify_members(Members {
        id: envelope.id.map(str::parse::<Value>).transpose().ok()?,
        version_2_0: envelope.jsonrpc.and_then(raw_string).as_deref() == Some("2.0"),
        method: envelope.method.map(raw_string),
        params: envelope.params.map(|raw| match raw.as_bytes().first() {
            Some(b'{') => Ok(Params::Raw(members)),
            Some(b'[') => Err(code::INVALID_PARAMS),
            _ => Err(code::INVALID_REQUEST),
        }),
        answers: envelope.answers,
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
        Some(Some(method)) => method,
        Some(None) => return invalid(id, "method must be a string"),
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
    let params = members.params.transpose();
    let Some(id) = id else {
        // A notification is never answered: params that are not an object
        // are dropped rather than refused.
        let params = params.ok().flatten();
        return Message::Notification { method, params };
    };
    match params {
        Ok(params) => Message::Request(Request { id, method, params }),
        Err(code) => Message::Invalid {
            id: Some(id),
            error: ErrorObject::new(code, "params must be an object"),
        },
    }
}

fn invalid(id: Option<Value>, message: &'static str) -> Message<'static> {
    Message::Invalid {
        id,
        error: ErrorObject::new(code::INVALID_REQUEST, message),
    }
}

/// Whether [`parse`] reads `body` as reading it whole into one [`Value`]
/// through [`classify`] does: the same message, or `Unread` exactly when
/// serde_json refuses the body. And whether the fast reading kept its
/// promise: what it accepts, serde_json reads, every member too. The
/// tests' and the fuzz target's oracle.
#[cfg(any(test, feature = "bench-internals"))]
pub(crate) fn reads_agree(body: &[u8]) -> bool {
    let general = serde_json::from_slice::<Value>(body);
    let mut members = RawMembers::default();
    if let Some(fast) = envelope::read(body, &mut members) {
        let envelope = [fast.id, fast.jsonrpc, fast.method, fast.params];
        let members = members.iter().map(|(_, raw)| raw);
        let mut raw = envelope.into_iter().flatten().chain(members);
        if general.is_err() || !raw.all(|raw| serde_json::from_str::<Value>(raw).is_ok()) {
            return false;
        }
    }
    match (parse(body, &mut RawMembers::default()), general) {
        (Parsed::Unread(_), Err(_)) => true,
        (Parsed::Batch(batch), Ok(Value::Array(general))) => batch == general,
        (Parsed::Single(message), Ok(general)) => {
            !general.is_array() && message == classify(general)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads a body both ways and checks they agree.
    fn both_ways(body: &[u8]) {
        assert!(reads_agree(body), "{}", String::from_utf8_lossy(body));
    }

    /// What a body of `value` is: its kind, id and error code.
    fn kind(value: Value) -> (String, Option<Value>, Option<i32>) {
        let body = value.to_string();
        both_ways(body.as_bytes());
        let mut members = RawMembers::default();
        let parsed = parse(body.as_bytes(), &mut members);
        let (kind, id, code) = match parsed {
            Parsed::Single(Message::Request(request)) => ("request", Some(request.id), None),
            Parsed::Single(Message::Notification { .. }) => ("notification", None, None),
            Parsed::Single(Message::Response) => ("response", None, None),
            Parsed::Single(Message::Invalid { id, error }) => ("invalid", id, Some(error.code)),
            other => panic!("{other:?}"),
        };
        (kind.to_owned(), id, code)
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

    /// Bodies on both sides of every edge of the fast reading's subset
    /// (escapes, numbers, nesting, the members limit, bad JSON) are read
    /// as the general path reads them.
    #[test]
    fn fast_reading_agrees_with_the_general_path() {
        let nested = |levels: usize| {
            let mut body = r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"#.to_owned();
            body += &"[".repeat(levels);
            body += &"]".repeat(levels);
            body + "}}"
        };
        let members = |n: usize| {
            let params: Vec<String> = (0..n).map(|i| format!("\"k{i}\":{i}")).collect();
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{{}}}}}"#,
                params.join(",")
            )
        };
        let mut bodies: Vec<Vec<u8>> = [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1,{"b":null}]}}}"#[..],
            br#" {"jsonrpc" : "2.0", "id" : "x", "method" : "ping"} "#,
            b"\t{\"jsonrpc\":\"2.0\",\r\n\"id\":\"x\",\"method\":\"ping\"}\n",
            br#"{"jsonrpc":"2.0","id":1,"me\u0074hod":"ping"}"#,
            br#"{"jsonrpc":"\u0032.0","id":1,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools\/list"}"#,
            br#"{"jsonrpc":"2.0","id":"\u00e9","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":"a\"b","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud83d\ude00"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\ud800"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\udc00x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\u00"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\u+123"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"s":"\u0000\b\f\n\r\t\/\\"}}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"s\":\"a\x01\"}}",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"s\":\"\x7f \xc3\xa9\"}}",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"t"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","id":2}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"k":1,"k":2}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","params":{"k":1},"params":7}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"a","params":7,"params":{"k":1}}"#,
            br#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"big":1e400}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":[0,-0,0.5,-1.25e-7,1E+99,1e99,9e-99]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e100}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e308}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":18446744073709551616}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":01}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1.}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":.5}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":-}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":1e}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":[1,]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":{"a":1,}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":{"a" 1}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":[1}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":[tru]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":[true,false,null,{},[]]}}"#,
            br#"{"jsonrpc":"2.0","id":-9223372036854775808,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":123456789012345678,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":-0,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":"","method":"ping"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":null}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping""#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}x"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"} {}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"ping",}"#,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
            br#"{"jsonrpc":2,"id":1,"method":"ping"}"#,
            br#"{}"#,
            br#"{ }"#,
            br#"null"#,
            br#""{}""#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            b"",
        ]
        .iter()
        .map(|b| b.to_vec())
        .collect();
        for levels in [97, 98, 99, 100, 126, 127, 128, 200] {
            bodies.push(nested(levels).into_bytes());
        }
        for n in [0, 1, MAX_PARAMS_MEMBERS, MAX_PARAMS_MEMBERS + 1] {
            bodies.push(members(n).into_bytes());
        }
        for body in &bodies {
            both_ways(body);
        }
        // The usual bodies take the fast reading, and borrow.
        let fast = |body: &[u8]| match parse(body, &mut RawMembers::default()) {
            Parsed::Single(Message::Request(Request { method, params, .. })) => (
                matches!(method, Cow::Borrowed(_)),
                matches!(params, Some(Params::Raw(_))),
            ),
            other => panic!("{other:?}"),
        };
        assert_eq!(fast(&bodies[0]), (true, true));
        assert_eq!(fast(members(MAX_PARAMS_MEMBERS).as_bytes()), (true, true));
        assert_eq!(fast(nested(98).as_bytes()), (true, true));
        // Past the subset: the general path, owned.
        assert_eq!(
            fast(members(MAX_PARAMS_MEMBERS + 1).as_bytes()),
            (false, false)
        );
        assert_eq!(fast(nested(99).as_bytes()), (false, false));
        let escaped_key = br#"{"jsonrpc":"2.0","id":1,"method":"t","params":{"n\u0061me":"t"}}"#;
        assert_eq!(fast(escaped_key), (false, false));
    }

    /// Thousands of bodies mutated from usual ones (bytes flipped, cut,
    /// repeated, swapped for JSON's structural bytes) are read alike both
    /// ways: the property the `dispatch` fuzz target checks at length.
    #[test]
    fn mutated_bodies_are_read_alike() {
        let seeds: [&[u8]; 4] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":[1.5,-2e3,{"b":null}],"s":"\u00e9\n"}}}"#,
            br#"{"jsonrpc":"2.0","id":"x","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"r"}}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[true,false]}}"#,
        ];
        let alphabet = b"{}[]\":,\\ 0123456789-+.eEtrufalsn\xc3\xa9\x01u";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut random = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let mut fast = 0;
        for round in 0..20_000 {
            let mut body = seeds[round % seeds.len()].to_vec();
            for _ in 0..1 + random(3) {
                let at = random(body.len());
                match random(4) {
                    0 => body[at] = alphabet[random(alphabet.len())],
                    1 => {
                        body.remove(at);
                    }
                    2 => body.insert(at, alphabet[random(alphabet.len())]),
                    _ => {
                        let end = (at + random(8)).min(body.len());
                        let copy = body[at..end].to_vec();
                        body.splice(at..at, copy);
                    }
                }
            }
            assert!(reads_agree(&body), "{}", String::from_utf8_lossy(&body));
            fast += usize::from(envelope::read(&body, &mut RawMembers::default()).is_some());
        }
        // Both readings get their share.
        assert!((2_000..18_000).contains(&fast), "{fast} of 20000 read fast");
    }
}
