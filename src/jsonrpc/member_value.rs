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
//!   than `-0` (which serde_json reads as a float).
//!
//! Anything else — an escape, a float, a deeper value — is read by
//! serde_json whole. The unit tests below compare the two readings, and
//! so does `read::reads_agree`, the oracle of the mutation test and of the
//! `dispatch` fuzz target, for every `params` member.

use serde_json::{Map, Value};

use super::envelope::plain_run;

/// The deepest nesting built directly; deeper values go to serde_json.
const MAX_DEPTH: usize = 16;

/// `raw`, one JSON value the fast reading accepted, as a [`Value`].
/// serde_json cannot refuse it (the subset of `envelope.rs` rules that
/// out, and the fuzz target checks it); were it ever to, the member would
/// read as `null` rather than take the host down.
pub(super) fn member_value(raw: &str) -> Value {
    let mut cursor = Cursor {
        bytes: raw.as_bytes(),
        text: raw,
        pos: 0,
    };
    if let Some(value) = cursor.value(MAX_DEPTH) {
        cursor.whitespace();
        if cursor.pos == raw.len() {
            return value;
        }
    }
    let value = serde_json::from_str(raw);
    debug_assert!(value.is_ok(), "the fast reading accepted {raw:?}");
    value.unwrap_or(Value::Null)
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
    /// and not `-0`.
    fn integer(&mut self) -> Option<Value> {
        let negative = self.peek() == Some(b'-');
        let start = self.pos + usize::from(negative);
        let digits = self.bytes.get(start..)?;
        let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
        let leading_zero = digits.first() == Some(&b'0');
        if len == 0 || len > 18 || (leading_zero && (len > 1 || negative)) {
            return None;
        }
        self.pos = start + len;
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        // At most 18 digits: fits an i64 and a u64, so neither parse fails.
        let magnitude: u64 = self.text[start..self.pos].parse().ok()?;
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

    /// Built directly or by serde_json, every value is serde_json's.
    #[test]
    fn agrees_with_serde_json() {
        let nested = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        let (deep, deeper) = (nested(MAX_DEPTH), nested(MAX_DEPTH + 1));
        let cases = [
            deep.as_str(),
            deeper.as_str(),
            r#"{"text":"hi"}"#,
            r#"{}"#,
            r#"[]"#,
            r#" { "a" : [ 1 , -2 , 0 , true , false , null ] , "b" : { } } "#,
            r#"{"a":1,"a":2}"#,
            r#"{"é":"ü"}"#,
            r#""plain""#,
            r#""esc\naped""#,
            r#"{"k":"a\"b"}"#,
            r#"{"n\u0061me":1}"#,
            "0",
            "-0",
            "-7",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "18446744073709551615",
            "1.5",
            "-2e3",
            "1E2",
            r#"{"a":{"b":{"c":[{"d":"e"}]}}}"#,
            "true",
            "null",
        ];
        for raw in cases {
            let expected: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(member_value(raw), expected, "{raw}");
            // The same numbers, not only equal ones: `-0` stays a float.
            assert_eq!(member_value(raw).to_string(), expected.to_string(), "{raw}");
        }
    }

    /// What the subset leaves to serde_json is left whole, not half built.
    #[test]
    fn the_subset() {
        let built = |raw: &str| {
            let mut cursor = Cursor {
                bytes: raw.as_bytes(),
                text: raw,
                pos: 0,
            };
            cursor.value(MAX_DEPTH).is_some()
        };
        assert!(built(r#"{"a":[1,"b",{"c":null}]}"#));
        for outside in [
            r#""a\"b""#,
            "1.5",
            "1e3",
            "-0",
            "0123",
            "1234567890123456789",
            "\"\u{1}\"",
        ] {
            assert!(!built(outside), "{outside}");
        }
        let nested = |depth: usize| format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
        assert!(built(&nested(MAX_DEPTH)));
        assert!(!built(&nested(MAX_DEPTH + 1)));
    }
}
