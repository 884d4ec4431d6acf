//! A member's raw text, which the fast reading of `envelope.rs` accepted,
//! as a [`Value`]: the usual shapes built directly, anything else by
//! serde_json.
//!
//! A tool's `arguments` must reach the surface as a `Value`, so every call
//! builds one. Built by serde_json, a small object such as
//! `{"text":"hi"}` costs a deserializer, a visitor and a second pass over
//! bytes the fast reading has already checked: about 1,000 instructions,
//! of which the map and its strings are less than half. Here the same map
//! is built in one pass, inserting in body order as serde_json does (so a
//! repeated key keeps its last value).
//!
//! # What is built directly
//!
//! A strict subset of JSON, checked here on its own account (not only
//! because the fast reading checked it first), so that whatever this
//! accepts is JSON that serde_json reads to the very same value:
//!
//! - objects and arrays, nested at most [`MAX_DEPTH`] levels;
//! - strings without escapes or control characters;
//! - `true`, `false`, `null`;
//! - integers of at most 18 digits without a fraction or exponent, other
//!   than `-0` (which serde_json reads as a float);
//! - no key starting with `$serde_json::private::`, which serde_json reads
//!   as one of its own types when another crate in the tree turns on its
//!   `raw_value` or `arbitrary_precision` feature.
//!
//! Anything else — an escape, a float, a deeper value — is read by
//! serde_json whole. A value that leaves the subset late (a float at the
//! end of a large object) is thus read twice, at most twice the work of
//! one reading, but never held twice: what was built is dropped before
//! serde_json starts. The unit tests below compare the two readings, and
//! so does `read::reads_agree`, the oracle of the mutation test and of the
//! `dispatch` fuzz target, for every `params` member.

use serde_json::{Map, Value};

use super::envelope::plain_run;

/// The deepest nesting built directly; deeper values go to serde_json.
const MAX_DEPTH: usize = 16;

/// What the keys serde_json reserves for its own types start with
/// (`$serde_json::private::RawValue`, `…::Number`).
const SERDE_JSON_PRIVATE: &str = "$serde_json::private::";

/// `raw`, one JSON value the fast reading accepted, as a [`Value`].
/// serde_json cannot refuse it (the subset of `envelope.rs` rules that
/// out, and the fuzz target checks it); were it ever to, the member would
/// read as `null` rather than take the host down.
pub(super) fn member_value(raw: &str) -> Value {
    let value = read(raw);
    debug_assert!(value.is_some(), "the fast reading accepted {raw:?}");
    value.unwrap_or(Value::Null)
}

/// `raw` as a [`Value`], built directly or by serde_json; `None` where
/// serde_json refuses it. The envelope's `id` is read this way, and a
/// refusal sends its body down the general path.
pub(super) fn read(raw: &str) -> Option<Value> {
    built(raw).or_else(|| serde_json::from_str(raw).ok())
}

/// `raw` built directly, if it is one value of the subset with nothing
/// but whitespace after it.
fn built(raw: &str) -> Option<Value> {
    let mut cursor = Cursor {
        bytes: raw.as_bytes(),
        text: raw,
        pos: 0,
    };
    let value = cursor.value(MAX_DEPTH)?;
    cursor.whitespace();
    (cursor.pos == raw.len()).then_some(value)
}

/// A cursor over one value's text. Every method returns `None` for text
/// outside the subset, which sends the whole value to serde_json.
struct Cursor<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// The byte at the cursor, after whitespace, consumed if it is `byte`.
    fn eat(&mut self, byte: u8) -> bool {
        self.whitespace();
        let found = self.peek() == Some(byte);
        self.pos += usize::from(found);
        found
    }

    /// One value at the cursor, `room` levels of nesting still allowed.
    fn value(&mut self, room: usize) -> Option<Value> {
        self.whitespace();
        match self.peek()? {
            b'"' => self.string().map(Value::String),
            b'{' => self.object(room.checked_sub(1)?).map(Value::Object),
            b'[' => self.array(room.checked_sub(1)?).map(Value::Array),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    /// A string without escapes or control characters, at its opening quote.
    fn string(&mut self) -> Option<String> {
        let start = self.pos + 1;
        let end = start + plain_run(self.bytes, start)?;
        if self.bytes[end] != b'"' {
            return None;
        }
        self.pos = end + 1;
        // Quotes are ASCII, so both ends are character boundaries.
        self.text.get(start..end).map(str::to_owned)
    }

    /// An object at its `{`, its members inserted in order.
    fn object(&mut self, room: usize) -> Option<Map<String, Value>> {
        self.pos += 1;
        let mut map = Map::new();
        if self.eat(b'}') {
            return Some(map);
        }
        loop {
            self.whitespace();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            // serde_json reads an object whose first key is one of its
            // private names as something else when a crate elsewhere in the
            // tree turns on `raw_value` or `arbitrary_precision`.
            if key.starts_with(SERDE_JSON_PRIVATE) {
                return None;
            }
            if !self.eat(b':') {
                return None;
            }
            let value = self.value(room)?;
            map.insert(key, value);
            if !self.eat(b',') {
                return self.eat(b'}').then_some(map);
            }
        }
    }

    /// An array at its `[`.
    fn array(&mut self, room: usize) -> Option<Vec<Value>> {
        self.pos += 1;
        let mut items = Vec::new();
        if self.eat(b']') {
            return Some(items);
        }
        loop {
            items.push(self.value(room)?);
            if !self.eat(b',') {
                return self.eat(b']').then_some(items);
            }
        }
    }

    fn literal(&mut self, word: &str, value: Value) -> Option<Value> {
        if !self.bytes[self.pos..].starts_with(word.as_bytes()) {
            return None;
        }
        self.pos += word.len();
        Some(value)
    }

    /// `-?(0|[1-9][0-9]{0,17})` not followed by a fraction or an exponent,
    /// and not `-0`. The value is gathered digit by digit: at most 19
    /// digits are ever gathered, which cannot overflow a `u64`.
    fn integer(&mut self) -> Option<Value> {
        let negative = self.peek() == Some(b'-');
        let start = self.pos + usize::from(negative);
        self.pos = start;
        let mut magnitude: u64 = 0;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            magnitude = magnitude * 10 + u64::from(digit - b'0');
            self.pos += 1;
            if self.pos - start > 18 {
                return None;
            }
        }
        let len = self.pos - start;
        let leading_zero = self.bytes.get(start) == Some(&b'0');
        if len == 0 || (leading_zero && (len > 1 || negative)) {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        Some(match negative {
            // `magnitude` < 10^18, so its negation fits.
            true => Value::from(-(magnitude as i64)),
            false => Value::from(magnitude),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, depth: usize) -> String {
        format!("{}1{}", open.repeat(depth), close.repeat(depth))
    }

    /// Built directly or by serde_json, every value is serde_json's, the
    /// same numbers included (`-0` stays a float, 19 digits a `u64`).
    #[test]
    fn agrees_with_serde_json() {
        let deep = [
            nested("[", "]", MAX_DEPTH),
            nested("[", "]", MAX_DEPTH + 1),
            nested(r#"{"a":"#, "}", MAX_DEPTH),
            nested(r#"{"a":"#, "}", MAX_DEPTH + 1),
        ];
        let cases = [
            r#"{"text":"hi"}"#,
            "{}",
            "[]",
            r#""""#,
            r#"{"":1}"#,
            " \t\r\n{ \"a\" : [ 1 , -2 , 0 , true , false , null ] , \"b\" : { } } \n",
            r#"{"a":1,"a":2}"#,
            r#"{"o":{"k":1,"k":[2]}}"#,
            r#"{"é":"ü"}"#,
            "\"\u{7f}\"",
            r#""a long string of more than eight bytes, with é and ü inside""#,
            r#""plain""#,
            r#""esc\naped""#,
            r#"{"k":"a\"b"}"#,
            r#"{"n\u0061me":1}"#,
            "0",
            "-0",
            "-7",
            "999999999999999999",
            "-999999999999999999",
            "1234567890123456789",
            "-1234567890123456789",
            "-9223372036854775808",
            "18446744073709551615",
            "1.5",
            "0.0",
            "-0.0",
            "0e0",
            "-2e3",
            "1E2",
            r#"{"a":{"b":{"c":[{"d":"e"}]}}}"#,
            r#"{"$serde_json::private::RawValue":"[1]"}"#,
            r#"{"$serde_json::private::Number":"5"}"#,
            "true",
            "null",
        ];
        for raw in cases.into_iter().chain(deep.iter().map(String::as_str)) {
            let expected: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(member_value(raw), expected, "{raw}");
            assert_eq!(member_value(raw).to_string(), expected.to_string(), "{raw}");
        }
    }

    /// What the subset leaves to serde_json is left whole, not half
    /// built; and what is not JSON is never built.
    #[test]
    fn the_subset() {
        assert!(built(r#" {"a":[1,"b",{"c":null}],"":""} "#).is_some());
        assert!(built(&nested("[", "]", MAX_DEPTH)).is_some());
        assert!(built(&nested(r#"{"a":"#, "}", MAX_DEPTH)).is_some());
        let outside = [
            r#""a\"b""#,
            "1.5",
            "1e3",
            "-0",
            "1234567890123456789",
            "\"\u{1}\"",
            "\"a long string with a control character \u{1f} late\"",
            r#"{"$serde_json::private::RawValue":"[1]"}"#,
            r#"[{"$serde_json::private::Number":"5"}]"#,
        ];
        let not_json = [
            "",
            " ",
            "tru",
            "nullx",
            "1 2",
            "-",
            "00",
            "01",
            "-01",
            "- 1",
            "+1",
            "[1,]",
            r#"{"a":1,}"#,
            "[1 2]",
            r#"{"a" 1}"#,
            r#"{"a":}"#,
            "{,}",
            "[truefalse]",
            "{",
            "[",
            r#"{"a""#,
            r#""abc"#,
        ];
        for raw in outside.into_iter().chain(not_json) {
            assert!(built(raw).is_none(), "{raw}");
        }
        assert!(built(&nested("[", "]", MAX_DEPTH + 1)).is_none());
        assert!(built(&nested(r#"{"a":"#, "}", MAX_DEPTH + 1)).is_none());
    }
}
