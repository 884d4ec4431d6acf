//! Reading a body's JSON *shape* without parsing it: what parsing would
//! cost in memory, and how long a batch is. Both run before serde_json
//! builds anything, so a hostile body is refused before it costs anything
//! but one pass over its bytes.
//!
//! # Why memory needs its own bound
//!
//! A `serde_json::Value` can take far more memory than the text it came
//! from: every non-empty object is a B-tree with at least one ~700-byte
//! node, so a 4 MiB body of `[{"":[]},{"":[]},…]` becomes ~350 MB of
//! values (measured: 83× its size). `max_body_bytes` alone does not bound
//! what a bearer holder can make the host allocate; [`parsed_size_bound`]
//! does, and the transport refuses a body whose bound exceeds
//! `max_parsed_bytes` with 413.
//!
//! The bound is an *upper* bound of what serde_json 1.x allocates for a
//! `Value` (no `arbitrary_precision`, no `preserve_order`: maps are std
//! `BTreeMap`s), counted per token, including malloc's per-allocation
//! overhead and the slack of a `Vec` that grows by doubling:
//!
//! | token | charged | why |
//! |---|---|---|
//! | a non-empty object | [`OBJECT`] | the map's first B-tree node (an internal node is 728 bytes), plus overhead |
//! | `,` in an object | [`MEMBER`] | a node holds at least 5 entries after a split: 1/5 of a node |
//! | a non-empty array | [`ARRAY`] | the first allocation, of 4 `Value`s |
//! | `,` in an array | [`ELEMENT`] | one 32-byte `Value`, three times over: a `Vec` that doubles holds its old and its new buffer at once while it grows |
//! | a string | its length + [`STRING`] | its heap buffer (escapes only shrink it) |
//!
//! Numbers, `true`, `false` and `null` live inside their `Value` slot.
//! `tests/parse_budget.rs` checks the bound against serde_json's real
//! allocations for the costliest shapes: it is never below them and stays
//! within 3× of them, and ordinary bodies (mostly strings) are
//! charged about their own size.

/// Charged per non-empty object.
pub(crate) const OBJECT: usize = 760;
/// Charged per object member after the first.
pub(crate) const MEMBER: usize = 150;
/// Charged per non-empty array.
pub(crate) const ARRAY: usize = 176;
/// Charged per array element after the first.
pub(crate) const ELEMENT: usize = 96;
/// Charged per string, on top of its length.
pub(crate) const STRING: usize = 32;

/// Containers deeper than this are not tracked: serde_json refuses nesting
/// past 128 levels, so such a body never parses.
const MAX_DEPTH: usize = 128;

/// An upper bound, in bytes, of the memory serde_json takes to hold `body`
/// as `Value`s (see the module doc). Saturates instead of overflowing.
pub(crate) fn parsed_size_bound(body: &[u8]) -> usize {
    // Each open container, innermost last: whether it is an object, and
    // whether it has a member yet (an empty one allocates nothing). A fixed
    // array, as nesting is bounded.
    let mut open = [(false, false); MAX_DEPTH + 1];
    let mut depth = 0usize;
    let mut cost = 0usize;
    let mut i = 0;
    while i < body.len() {
        let byte = body[i];
        let mut charge = 0;
        let (object, started) = &mut open[depth];
        if depth > 0 && !*started && !matches!(byte, b']' | b'}') && !byte.is_ascii_whitespace() {
            // The container's first member: its first allocation.
            *started = true;
            charge = if *object { OBJECT } else { ARRAY };
        }
        match byte {
            b'"' => {
                let start = i;
                i += 1;
                while i < body.len() && body[i] != b'"' {
                    // An escape hides the next byte, quote or not.
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
                charge += (i - start).saturating_add(STRING);
            }
            b'{' | b'[' if depth < MAX_DEPTH => {
                depth += 1;
                open[depth] = (byte == b'{', false);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if open[depth].0 => charge += MEMBER,
            b',' => charge += ELEMENT,
            _ => {}
        }
        cost = cost.saturating_add(charge);
        i += 1;
    }
    cost
}

/// How many members a JSON array body has, counting at most `limit + 1`:
/// `Some(n)` for `n <= limit`, `None` beyond. The count is of top-level
/// commas plus one, so it is exact for well-formed arrays; a malformed body
/// may be miscounted, but serde_json refuses it afterwards anyway.
pub(crate) fn array_len_within(body: &[u8], limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut members = 0usize;
    let mut i = 0;
    while i < body.len() {
        let byte = body[i];
        // The first member starts at the first byte inside the array that
        // is neither blank nor its end; each top-level comma starts another.
        if depth == 1 && members == 0 && !byte.is_ascii_whitespace() && byte != b']' {
            members = 1;
        }
        match byte {
            b'"' => {
                i += 1;
                while i < body.len() && body[i] != b'"' {
                    i += if body[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => members += 1,
            _ => {}
        }
        if members > limit {
            return None;
        }
        i += 1;
    }
    Some(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(open: &str, item: &str, close: &str, bytes: usize) -> String {
        let mut body = String::from(open);
        while body.len() + item.len() + close.len() < bytes {
            if body.len() > open.len() {
                body.push(',');
            }
            body.push_str(item);
        }
        body.push_str(close);
        body
    }

    /// Strings hide their brackets and commas, escaped quotes included.
    #[test]
    fn strings_are_opaque() {
        let plain = parsed_size_bound(br#"{"a":"x"}"#);
        let tricky = parsed_size_bound(br#"{"a":"[{,\"]}"}"#);
        assert_eq!(tricky - plain, 6, "only the longer string is charged");
        assert_eq!(
            array_len_within(br#"["a,b", "c\"],[" , {"d":[1,2]}]"#, 10),
            Some(3)
        );
    }

    /// Batch lengths: exact up to the limit, `None` past it.
    #[test]
    fn array_lengths() {
        assert_eq!(array_len_within(b"[]", 4), Some(0));
        assert_eq!(array_len_within(b" [ ] ", 4), Some(0));
        assert_eq!(array_len_within(b"[1]", 4), Some(1));
        assert_eq!(array_len_within(b"[1,[2,3],{\"a\":4,\"b\":5}]", 4), Some(3));
        assert_eq!(array_len_within(b"[1,2,3,4]", 4), Some(4));
        assert_eq!(array_len_within(b"[1,2,3,4,5]", 4), None);
        assert_eq!(
            array_len_within(&repeat("[", "1", "]", 1 << 20).into_bytes(), 32),
            None
        );
    }
}
