//! JSON-RPC 2.0, and JSON text in and out. Nothing here knows about HTTP
//! or MCP methods; the error-code table holds MCP's codes too (`-32001`,
//! `-32020`, `-32022`), since they are JSON-RPC error codes
//! that the framing here writes.
//!
//! - `envelope.rs`: the allocation-free first pass over a body, and the
//!   raw members it leaves (the leaf: it imports nothing of this folder);
//! - `message.rs`: the messages themselves, their params (over
//!   `envelope.rs`'s raw members) and error objects, and the error-code
//!   table;
//! - this file: framing replies;
//! - `read.rs`: reading a body, the usual one by the allocation-free pass
//!   of `envelope.rs`, whose members serde_json reads into `Value`s when a
//!   method asks;
//! - `json_scan.rs`: a body's JSON shape before parsing (the memory its
//!   parse would take, a batch's length), used as a namespace;
//! - `json_out.rs`: appending JSON to a response buffer.

mod envelope;
mod json_out;
pub(crate) mod json_scan;
mod message;
mod read;

use serde_json::Value;

#[cfg(any(test, feature = "bench-internals"))]
pub(crate) use read::reads_agree;
pub(crate) use read::{classify, parse, Parsed};

pub(crate) use envelope::RawMembers;

pub(crate) use json_out::{write_json_str, JsonWriter};
pub(crate) use message::{code, ErrorObject, Message, Params, Request};

/// The first member of every message the host writes.
const JSONRPC_VERSION: &str = r#""jsonrpc":"2.0""#;

/// Writes a result response, `{"jsonrpc":"2.0","id":ID,"result":{…}}`, whose
/// result object's members `members` writes. (MCP results are always
/// objects.)
///
/// Generic only in this one line: the framing below is compiled once, not
/// once per caller's closure.
pub(crate) fn write_result(
    out: &mut Vec<u8>,
    id: &Value,
    members: impl FnOnce(&mut JsonWriter<'_>),
) {
    let mut members = Some(members);
    write_result_with(out, id, &mut |result| {
        members.take().map_or((), |m| m(result))
    });
}

fn write_result_with(out: &mut Vec<u8>, id: &Value, members: &mut dyn FnMut(&mut JsonWriter<'_>)) {
    let mut response = JsonWriter::object_starting(out, JSONRPC_VERSION);
    response.value("id", id);
    let mut result = response.object_in("result");
    members(&mut result);
    result.end();
    response.end();
}

/// A notification, `{"jsonrpc":"2.0","method":METHOD,"params":{…}}`, whose
/// params' members `params` writes, in a buffer of its own.
/// (Generic only in its first line, as [`write_result`] is.)
pub(crate) fn notification(
    capacity: usize,
    method: &str,
    params: impl FnOnce(&mut JsonWriter<'_>),
) -> Vec<u8> {
    let mut params = Some(params);
    notification_with(capacity, method, &mut |members| {
        params.take().map_or((), |p| p(members))
    })
}

fn notification_with(
    capacity: usize,
    method: &str,
    params: &mut dyn FnMut(&mut JsonWriter<'_>),
) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    let mut message = JsonWriter::object_starting(&mut out, JSONRPC_VERSION);
    message.str("method", method);
    let mut members = message.object_in("params");
    params(&mut members);
    members.end();
    message.end();
    out
}

/// Writes an error response. An unknown id is written as `null`, as
/// JSON-RPC 2.0 requires for parse errors; MCP clients accept it everywhere.
pub(crate) fn write_error(out: &mut Vec<u8>, id: Option<&Value>, error: &ErrorObject) {
    let mut response = JsonWriter::object_starting(out, JSONRPC_VERSION);
    response.value("id", id.unwrap_or(&Value::Null));
    let mut object = response.object_in("error");
    object
        .raw("code", error.code.to_string().as_bytes())
        .str("message", &error.message);
    if let Some(data) = &error.data {
        object.value("data", data);
    }
    object.end();
    response.end();
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
            write_result(&mut out, &id, |_| {});
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
        // Compact, in this member order, byte for byte.
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Unknown tool: x","data":{"a":1}}}"#
        );
    }
}
