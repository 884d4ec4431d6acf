//! The W3C trace context a request carries in `params._meta`
//! ([`TraceContext`]): `traceparent`, `tracestate` (W3C Trace Context)
//! and `baggage` (W3C Baggage), each passed on only when valid and within
//! the W3C limits, so an observer or a tool can log and propagate it as
//! is. MCP 2026-07-28 reserves the three keys; clients of earlier
//! revisions that trace put them there too.

use serde_json::{Map, Value};

/// The W3C trace context of a request's `params._meta`, each member only
/// when valid: what a tool is given ([`CallRequest::trace`]), and what the
/// observer is ([`Observation`]'s fields of the same names).
///
/// [`CallRequest::trace`]: crate::call::CallRequest::trace
/// [`Observation`]: crate::observe::Observation
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceContext<'a> {
    /// `traceparent`: `00-` 32 hex digits `-` 16 hex digits `-` 2 hex
    /// digits, lowercase, 55 characters, neither id all zeros.
    pub traceparent: Option<&'a str>,
    /// `tracestate`, beside a valid `traceparent` (which it belongs to),
    /// within W3C's limits: at most 32 members and 512 characters.
    pub tracestate: Option<&'a str>,
    /// `baggage`, within W3C's limits: at most 64 members and 8,192
    /// bytes.
    pub baggage: Option<&'a str>,
}

impl<'a> TraceContext<'a> {
    /// The valid members of `meta` (a request's `params._meta`). Not
    /// inlined: the watch and the call share one copy.
    #[inline(never)]
    pub(crate) fn from_meta(meta: &'a Map<String, Value>) -> Self {
        let text = |key: &str| meta.get(key).and_then(Value::as_str);
        let traceparent = text("traceparent").and_then(valid_traceparent);
        Self {
            traceparent,
            tracestate: traceparent
                .and(text("tracestate"))
                .and_then(valid_tracestate),
            baggage: text("baggage").and_then(valid_baggage),
        }
    }
}

/// `value` when it is a well-formed, valid W3C `traceparent` (version
/// `00`): `00-TRACEID-PARENTID-FLAGS`, lowercase hex of 32, 16 and 2
/// digits, neither id all zeros.
pub(crate) fn valid_traceparent(value: &str) -> Option<&str> {
    let bytes = value.as_bytes();
    let hex = |range: std::ops::Range<usize>| all_in(&bytes[range], HEX);
    let shaped = bytes.len() == 55
        && bytes.starts_with(b"00-")
        && bytes[35] == b'-'
        && bytes[52] == b'-'
        && hex(3..35)
        && hex(36..52)
        && hex(53..55);
    let zeros = |range: std::ops::Range<usize>| all_in(&bytes[range], ZERO);
    (shaped && !zeros(3..35) && !zeros(36..52)).then_some(value)
}

/// `value` when it is a `tracestate` within W3C Trace Context's limits:
/// 1 to 32 comma-separated members (empty ones, and spaces and tabs around
/// each, allowed), at most 512 characters in all, each `key=value` with a
/// key of lowercase letters, digits and `_-*/`, at most 256 characters,
/// starting with a letter (or `tenant@system`, whose tenant may start with
/// a digit too), and a value of 1 to 256 printable ASCII characters but
/// `,` and `=`, not ending in a space.
pub(crate) fn valid_tracestate(value: &str) -> Option<&str> {
    let mut members = 0;
    for member in value.as_bytes().split(|&b| b == b',').map(ows) {
        if member.is_empty() {
            continue;
        }
        members += 1;
        let at = member.iter().position(|&b| b == b'=')?;
        let (key, v) = (&member[..at], &member[at + 1..]);
        let key_ok = match key.iter().position(|&b| b == b'@') {
            Some(at) => key_part(&key[..at], false) && key_part(&key[at + 1..], true),
            None => key_part(key, true),
        };
        // Trimmed of spaces, a value never ends in one.
        let value_ok = (1..=256).contains(&v.len()) && all_in(v, STATE_VALUE);
        if !(key_ok && value_ok) {
            return None;
        }
    }
    (value.len() <= 512 && (1..=32).contains(&members)).then_some(value)
}

/// A `tracestate` key, or one half of a `tenant@system` key: 1 to 256
/// lowercase letters, digits and `_-*/`, the first a letter (or a digit,
/// unless `letter_first`).
fn key_part(part: &[u8], letter_first: bool) -> bool {
    let first_ok = part
        .first()
        .is_some_and(|b| b.is_ascii_lowercase() || (!letter_first && b.is_ascii_digit()));
    first_ok && part.len() <= 256 && all_in(part, KEY)
}

/// `text` without the spaces and tabs around it (W3C's optional white
/// space).
fn ows(text: &[u8]) -> &[u8] {
    let blank = |b: &&u8| matches!(b, b' ' | b'\t');
    let start = text.iter().take_while(blank).count();
    let end = text.len() - text[start..].iter().rev().take_while(blank).count();
    &text[start..end]
}

/// `value` when it is a `baggage` within W3C Baggage's limits: 1 to 64
/// comma-separated members, at most 8,192 bytes in all, each `key=value`
/// followed by any `;`-separated properties (`key` or `key=value`), with
/// spaces and tabs allowed around each part; a key is an HTTP token, a
/// value printable ASCII but space, `"`, `,`, `;` and `\`.
pub(crate) fn valid_baggage(value: &str) -> Option<&str> {
    if value.len() > 8192 {
        return None;
    }
    let mut members = 0;
    for member in value.as_bytes().split(|&b| b == b',') {
        members += 1;
        let mut parts = member.split(|&b| b == b';');
        let pair_ok = parts.next().is_some_and(|pair| baggage_part(pair, true));
        if !pair_ok || !parts.all(|property| baggage_part(property, false)) {
            return None;
        }
    }
    (members <= 64).then_some(value)
}

/// A baggage member's `key=value`, or one of its properties (`key` or
/// `key=value`, when not `value_needed`).
fn baggage_part(part: &[u8], value_needed: bool) -> bool {
    let part = ows(part);
    match part.iter().position(|&b| b == b'=') {
        Some(at) => is_token(ows(&part[..at])) && all_in(ows(&part[at + 1..]), BAGGAGE_VALUE),
        None => !value_needed && is_token(part),
    }
}

/// Whether `text` is an HTTP token (RFC 9110 §5.6.2: `token = 1*tchar`): a
/// baggage key, and the name of an `x-mcp-header` (`protocol/`).
pub(crate) fn is_token(text: &[u8]) -> bool {
    !text.is_empty() && all_in(text, TOKEN)
}

/// The byte classes of the checks above, one bit each, in one table: a
/// walk of it is a loop of a few instructions, where a chain of
/// comparisons per byte unrolls into kilobytes of code the host carries
/// for its observer and its tools.
const HEX: u8 = 1;
/// A `tracestate` key's characters: lowercase letters, digits, `_-*/`.
const KEY: u8 = 2;
/// A `tracestate` value's: printable ASCII (space too) but `,` and `=`.
const STATE_VALUE: u8 = 4;
/// An HTTP token's (RFC 9110 `tchar`): a baggage key's.
const TOKEN: u8 = 8;
/// A baggage value's: printable ASCII but space, `"`, `,`, `;` and `\`.
const BAGGAGE_VALUE: u8 = 16;
/// `0`: an all-zero id is invalid.
const ZERO: u8 = 32;

const CLASSES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0u8;
    while b < 0x80 {
        let (digit, lower) = (b.is_ascii_digit(), b.is_ascii_lowercase());
        let hex = digit || matches!(b, b'a'..=b'f');
        let key = digit || lower || matches!(b, b'_' | b'-' | b'*' | b'/');
        let state = matches!(b, b' '..=b'~') && !matches!(b, b',' | b'=');
        let baggage = b.is_ascii_graphic() && !matches!(b, b'"' | b',' | b';' | b'\\');
        table[b as usize] = member(hex, HEX)
            | member(key, KEY)
            | member(state, STATE_VALUE)
            | member(b.is_ascii_alphanumeric(), TOKEN)
            | member(baggage, BAGGAGE_VALUE)
            | member(b == b'0', ZERO);
        b += 1;
    }
    // RFC 9110's `tchar` punctuation, by a loop: `contains` cannot run in
    // a `const`.
    let punctuation = b"!#$%&'*+-.^_`|~";
    let mut i = 0;
    while i < punctuation.len() {
        table[punctuation[i] as usize] |= TOKEN;
        i += 1;
    }
    table
};

/// `class` when `is`, else none: one class of a byte's entry in [`CLASSES`].
const fn member(is: bool, class: u8) -> u8 {
    class * is as u8
}

/// Whether every byte of `bytes` is of `class`. Never inlined: called on
/// ranges of known length, it would be unrolled for each.
#[inline(never)]
fn all_in(bytes: &[u8], class: u8) -> bool {
    bytes.iter().all(|&b| CLASSES[usize::from(b)] & class != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only the W3C form passes: every malformed variant is dropped.
    #[test]
    fn traceparent_is_checked() {
        let good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert_eq!(valid_traceparent(good), Some(good));
        for bad in [
            "",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-011",
            "00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0\n",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-00000000000000000000000000000000-0000000000000000-00",
        ] {
            assert_eq!(valid_traceparent(bad), None, "{bad:?}");
        }
    }

    /// `tracestate` and `baggage` pass only within W3C's limits.
    #[test]
    fn tracestate_and_baggage_are_checked() {
        for good in [
            "rojo=00f067aa0ba902b7",
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
            " rojo=1 ,, congo=2\t",
            "fw529a3039@dt=1,a*b/c_d-e=x y",
        ] {
            assert_eq!(valid_tracestate(good), Some(good), "{good:?}");
        }
        let list = |n: usize, value: &str| {
            (0..n)
                .map(|i| format!("k{i}={value}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let long = format!("k={}", "v".repeat(257));
        for bad in [
            "",
            "Rojo=1",
            "rojo",
            "rojo=",
            "rojo=a=b",
            "rojo=a\u{7f}",
            "@x=1",
            "a@=1",
            "a@1x=1",
            "1rojo=1",
            "rojo=\u{e9}",
            "rojo=1\n",
            &list(33, "v"),
            &long,
            &list(3, &"v".repeat(200)),
        ] {
            assert_eq!(
                valid_tracestate(bad),
                None,
                "{:?}",
                &bad[..bad.len().min(40)]
            );
        }
        for good in [
            "userId=alice",
            "userId=alice,serverNode=DF%2028,isProduction=false",
            "key1=value1;property1;property2, key2 = value2",
            "k=",
        ] {
            assert_eq!(valid_baggage(good), Some(good), "{good:?}");
        }
        for bad in [
            "",
            "novalue",
            "a b=1",
            "k=\"quoted\"",
            "k=a b",
            "k=1;",
            "k=\\",
            "=v",
            "k=1,,j=2",
            "k=\u{e9}",
            &list(65, "v"),
            &format!("k={}", "v".repeat(8191)),
        ] {
            assert_eq!(valid_baggage(bad), None, "{:?}", &bad[..bad.len().min(40)]);
        }
    }

    /// A trace context's members pass one by one; `tracestate` only beside
    /// a valid `traceparent`.
    #[test]
    fn a_trace_context_keeps_only_what_is_valid() {
        let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let meta = |value: serde_json::Value| value.as_object().unwrap().clone();
        let all =
            meta(serde_json::json!({"traceparent": parent, "tracestate": "a=1", "baggage": "b=2"}));
        let context = TraceContext::from_meta(&all);
        assert_eq!(
            (context.traceparent, context.tracestate, context.baggage),
            (Some(parent), Some("a=1"), Some("b=2"))
        );
        let orphan = meta(serde_json::json!({"tracestate": "a=1", "baggage": 7}));
        assert_eq!(TraceContext::from_meta(&orphan), TraceContext::default());
    }
}
