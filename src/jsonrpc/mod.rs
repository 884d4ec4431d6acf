//! JSON-RPC 2.0, and JSON text in and out. Nothing here knows about HTTP
//! or MCP methods; the error-code table holds MCP's codes too (`-32001`,
//! `-32020`, `-32022`), since they are JSON-RPC error codes
//! that the framing here writes.
//!
//! - `message.rs`: the messages themselves, their params and error
//!   objects, and the error-code table (the leaf);
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

pub(crate) use json_out::{write_json, write_json_str};
pub(crate) use message::{code, take, ErrorObject, Message, Params, Request};

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
