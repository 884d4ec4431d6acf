//! Appending JSON to a response buffer. Every response the host writes is
//! built by hand into one `Vec<u8>`; these are the two places where a value
//! is rendered by serde_json instead.

use serde_json::Value;

/// Appends a value as compact JSON; writing a `Value` to a `Vec` cannot fail.
pub(crate) fn write_json(out: &mut Vec<u8>, value: &Value) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Appends a string as a JSON string literal, without copying it into a
/// `Value` first.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *out, text);
}
