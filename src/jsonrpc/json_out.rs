//! Appending JSON to a response buffer. Every response the host writes is
//! built into one `Vec<u8>`: objects and arrays through [`JsonWriter`],
//! which owns their punctuation (but for a batch's array, framed by
//! `mcp/batch.rs`, and the modern `_meta` fragments `protocol/server_info.rs`
//! renders once at bind), and values either as the crate's own constant
//! fragments or rendered by serde_json ([`JsonWriter::value`],
//! [`write_json_str`]).

use serde_json::Value;

/// Appends a string as a JSON string literal, without copying it into a
/// `Value` first.
#[inline]
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *out, text);
}

/// One JSON object or array being appended to a buffer: it writes the
/// opening bracket, the comma before every member but the first, each
/// member's quoted name and colon, and the closing bracket at
/// [`end`](Self::end). What it writes is compact JSON, byte for byte what
/// the hand-written fragments it replaced wrote.
///
/// Names are written as given: they are the crate's own constants, which
/// need no escaping. Values go through the helpers, or straight into the
/// buffer that [`name`](Self::name) and [`item`](Self::item) return.
#[must_use = "an object or array is closed by `end`"]
pub(crate) struct JsonWriter<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
    close: u8,
}

impl<'a> JsonWriter<'a> {
    /// Opens an object: `{`.
    #[inline]
    pub(crate) fn object(out: &'a mut Vec<u8>) -> Self {
        Self::open(out, *b"{}")
    }

    /// Opens an object or an array, given its opening and closing bytes.
    #[inline]
    fn open(out: &'a mut Vec<u8>, [open, close]: [u8; 2]) -> Self {
        out.push(open);
        Self {
            out,
            empty: true,
            close,
        }
    }

    /// Opens an object whose first members are `members`, constant and
    /// already rendered (`"jsonrpc":"2.0"`, a block's `"type":"text"`):
    /// one copy where the hot paths would otherwise write each piece.
    #[inline]
    pub(crate) fn object_starting(out: &'a mut Vec<u8>, members: &str) -> Self {
        let mut object = Self::object(out);
        object.out.extend_from_slice(members.as_bytes());
        object.empty = false;
        object
    }

    /// Starts the member `name` (`"name":`, after a comma when it is not
    /// the first); its value is written into the buffer returned.
    #[inline]
    pub(crate) fn name(&mut self, name: &str) -> &mut Vec<u8> {
        let out = self.item();
        // Bytes pushed one by one around the name: cheaper than copying
        // two-byte slices.
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.push(b'"');
        out.push(b':');
        out
    }

    /// Starts the next element of an array (a comma when it is not the
    /// first); the element is written into the buffer returned.
    #[inline]
    pub(crate) fn item(&mut self) -> &mut Vec<u8> {
        if !std::mem::take(&mut self.empty) {
            self.out.push(b',');
        }
        self.out
    }

    /// The member `name` with `json`, already-rendered JSON, as its value.
    #[inline]
    pub(crate) fn raw(&mut self, name: &str, json: &[u8]) -> &mut Self {
        self.name(name).extend_from_slice(json);
        self
    }

    /// The member `name` with the string `text`.
    #[inline]
    pub(crate) fn str(&mut self, name: &str, text: &str) -> &mut Self {
        write_json_str(self.name(name), text);
        self
    }

    /// The member `name` with the string `text`, when there is one.
    #[inline]
    pub(crate) fn opt_str(&mut self, name: &str, text: Option<&str>) -> &mut Self {
        if let Some(text) = text {
            self.str(name, text);
        }
        self
    }

    /// The member `name` with `value`, as compact JSON (writing a `Value`
    /// to a `Vec` cannot fail).
    #[inline]
    pub(crate) fn value(&mut self, name: &str, value: &Value) -> &mut Self {
        let _ = serde_json::to_writer(self.name(name), value);
        self
    }

    /// The member `name`, an object whose members the writer returned
    /// takes.
    #[inline]
    pub(crate) fn object_in(&mut self, name: &str) -> JsonWriter<'_> {
        JsonWriter::object(self.name(name))
    }

    /// The member `name`, an array whose elements the writer returned
    /// takes.
    #[inline]
    pub(crate) fn array_in(&mut self, name: &str) -> JsonWriter<'_> {
        JsonWriter::open(self.name(name), *b"[]")
    }

    /// Appends `text`, members already rendered with their leading comma
    /// (the host's constant result envelope), after at least one member.
    #[inline]
    pub(crate) fn members_text(&mut self, text: &str) {
        debug_assert!(!self.empty && text.starts_with(','), "follows a member");
        self.out.extend_from_slice(text.as_bytes());
    }

    /// Closes it: `}` or `]`.
    #[inline]
    pub(crate) fn end(self) {
        self.out.push(self.close);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commas go between members only, nested values close in order, and
    /// the bytes are serde_json's compact form of the same value.
    #[test]
    fn punctuation_is_written_once_and_in_order() {
        let mut out = Vec::new();
        let mut object = JsonWriter::object(&mut out);
        object.str("a", "x\"y").opt_str("skipped", None);
        let mut list = object.array_in("list");
        for n in [1, 2] {
            list.item().extend_from_slice(n.to_string().as_bytes());
        }
        JsonWriter::object(list.item()).end();
        list.end();
        object.object_in("empty").end();
        object
            .value("v", &serde_json::json!({"k": null}))
            .raw("t", b"true");
        object.end();
        let expected = r#"{"a":"x\"y","list":[1,2,{}],"empty":{},"v":{"k":null},"t":true}"#;
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }
}
