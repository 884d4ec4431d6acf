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
//! `Value`, counted per token, including malloc's per-allocation overhead
//! and the slack of a `Vec` that grows by doubling. The charges below are
//! for the default build (maps are std `BTreeMap`s, a `Value` is 32 bytes);
//! they grow with `size_of::<Value>()` when another crate in the build
//! turns on serde_json's `preserve_order` or `arbitrary_precision`, and the
//! latter's heap-allocated numbers are charged too:
//!
//! | token | charged | why |
//! |---|---|---|
//! | a non-empty object | [`OBJECT`] | the map's first B-tree node (an internal node is 728 bytes), plus overhead |
//! | `,` in an object | [`MEMBER`] | a node holds at least 5 entries after a split: 1/5 of a node |
//! | a non-empty array | [`ARRAY`] | the first allocation, of 4 `Value`s |
//! | `,` in an array | [`ELEMENT`] | one 32-byte `Value`, three times over: a `Vec` that doubles holds its old and its new buffer at once while it grows |
//! | a string | its length + [`STRING`] | its heap buffer (escapes only shrink it) |
//! | the longest string with an escape | twice its length, once | serde_json unescapes into a scratch buffer that lives for the whole parse |
//!
//! Numbers, `true`, `false` and `null` live inside their `Value` slot.
//! `tests/parse_budget.rs` checks the bound against serde_json's real
//! allocations for the costliest shapes: it is never below them and stays
//! within 3× of them, and ordinary bodies (mostly strings) are
//! charged about their own size.

/// One `serde_json::Value`: 32 bytes in the default build, more when some
/// crate in the build turns on serde_json's `preserve_order` (which also
/// makes maps `IndexMap`s) or `arbitrary_precision`. Cargo unifies features
/// across the whole tree, so the charges are derived from the sizes this
/// build really has rather than assumed.
const VALUE: usize = std::mem::size_of::<serde_json::Value>();
/// A map entry's key and value (`String` + `Value`).
const ENTRY: usize = std::mem::size_of::<String>() + VALUE;
/// Whether numbers live on the heap (`arbitrary_precision` makes each one
/// a `String`; without it a `Number` is 16 bytes inline).
const NUMBERS_ALLOCATE: bool = std::mem::size_of::<serde_json::Number>() > 16;

/// Charged per non-empty object: a B-tree node of 11 entries and 12 edges
/// (or an `IndexMap`'s first buckets and index table), plus overhead.
pub(crate) const OBJECT: usize = max(760, 11 * ENTRY + 12 * 8 + 48);
/// Charged per object member after the first: a fifth of a B-tree node
/// (nodes stay at least 5 full), or an `IndexMap` bucket three times over
/// (its entries grow by doubling) with its index.
pub(crate) const MEMBER: usize = max(150, 3 * (ENTRY + 8) + 16);
/// Charged per non-empty array: its first allocation, of 4 `Value`s.
pub(crate) const ARRAY: usize = 4 * VALUE + 48;
/// Charged per array element after the first: one `Value`, three times
/// over — a `Vec` that doubles holds its old and new buffers at once.
pub(crate) const ELEMENT: usize = 3 * VALUE;
/// Charged per string, on top of its length (malloc's overhead).
pub(crate) const STRING: usize = 32;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// The most [`parsed_size_bound`] can charge per byte of body: each step of
/// its scan consumes at least one byte and charges at most a first member
/// (an [`OBJECT`], the largest charge), one token's own charge (another
/// `OBJECT`, a [`MEMBER`], an [`ELEMENT`], or a string's length plus
/// [`STRING`] over at least two bytes) and, with heap numbers, `1 +
/// STRING`; the escape scratch adds at most 2 per byte at the end.
pub(crate) const MAX_CHARGE_PER_BYTE: usize = 2 * OBJECT + 2 * STRING + 4;

// `MAX_CHARGE_PER_BYTE` takes `OBJECT` as the largest container charge.
const _: () = assert!(OBJECT >= ARRAY && OBJECT >= MEMBER && OBJECT >= ELEMENT);

/// Whether a body of `len` bytes could be charged more than `limit` at
/// all: a body below `limit / MAX_CHARGE_PER_BYTE` bytes never is, so its
/// scan can be skipped (every ordinary call is that small; the default
/// limit lets bodies up to about 40 KiB skip it).
pub(crate) fn may_exceed(len: usize, limit: usize) -> bool {
    len.saturating_mul(MAX_CHARGE_PER_BYTE) > limit
}

/// Containers deeper than this are not told apart (objects from arrays):
/// serde_json refuses to build `Value`s nested past 128 levels. Deeper
/// containers are still charged, as arrays or objects by the innermost
/// tracked kind, and counted so that their closing brackets keep the
/// tracked depth in step.
const MAX_DEPTH: usize = 128;

/// An upper bound, in bytes, of the memory serde_json takes to hold `body`
/// as `Value`s (see the module doc). Saturates instead of overflowing.
pub(crate) fn parsed_size_bound(body: &[u8]) -> usize {
    // Each open container, innermost last: whether it is an object, and
    // whether it has a member yet (an empty one allocates nothing). A fixed
    // array, as tracked nesting is bounded; `untracked` counts the opens
    // past it.
    let mut open = [(false, false); MAX_DEPTH + 1];
    let mut depth = 0usize;
    let mut untracked = 0usize;
    let mut cost = 0usize;
    let mut longest_escaped = 0usize;
    let mut in_number = false;
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
        let number_byte = matches!(byte, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E');
        if NUMBERS_ALLOCATE && number_byte {
            // `arbitrary_precision`: each number is a `String` of its text.
            charge += if in_number { 1 } else { 1 + STRING };
        }
        in_number = number_byte;
        match byte {
            b'"' => {
                let (end, escaped) = string_end(body, i);
                let len = end - i;
                if escaped {
                    longest_escaped = longest_escaped.max(len);
                }
                charge += len.saturating_add(STRING);
                i = end;
            }
            b'{' | b'[' if depth < MAX_DEPTH => {
                depth += 1;
                open[depth] = (byte == b'{', false);
            }
            b'{' | b'[' => {
                untracked += 1;
                charge += if byte == b'{' { OBJECT } else { ARRAY };
            }
            b'}' | b']' if untracked > 0 => untracked -= 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if open[depth].0 => charge += MEMBER,
            b',' => charge += ELEMENT,
            _ => {}
        }
        cost = cost.saturating_add(charge);
        i += 1;
    }
    cost.saturating_add(longest_escaped.saturating_mul(2))
}

/// Where the string whose opening quote is at `start` ends (the index of
/// its closing quote, or the body's length if it has none), and whether it
/// holds an escape.
fn string_end(body: &[u8], start: usize) -> (usize, bool) {
    let mut i = start + 1;
    let mut escaped = false;
    while i < body.len() && body[i] != b'"' {
        // An escape hides the next byte, quote or not.
        escaped |= body[i] == b'\\';
        i += if body[i] == b'\\' { 2 } else { 1 };
    }
    (i.min(body.len()), escaped)
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
            b'"' => i = string_end(body, i).0,
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

    /// Strings hide their brackets and commas, escaped quotes included.
    #[test]
    fn strings_are_opaque() {
        let plain = parsed_size_bound(br#"{"a":"x"}"#);
        let tricky = parsed_size_bound(br#"{"a":"[{,\"]}"}"#);
        // 6 more bytes of string, and twice the escaped string's 8 once, for
        // serde_json's unescaping scratch buffer.
        assert_eq!(tricky - plain, 6 + 2 * 8);
        assert_eq!(
            array_len_within(br#"["a,b", "c\"],[" , {"d":[1,2]}]"#, 10),
            Some(3)
        );
    }

    /// No body is charged more than `MAX_CHARGE_PER_BYTE` per byte, so a
    /// body short enough for `may_exceed` to say no may skip the scan: the
    /// costliest shapes known, and a property over generated bodies.
    #[test]
    fn charge_per_byte_is_bounded() {
        let shapes: Vec<Vec<u8>> = vec![
            b"{\"\":{\"\":{\"\":{\"\":1}}}}".to_vec(),
            b"[[[[[[[[1]]]]]]]]".to_vec(),
            b"[{\"\":[]},{\"\":[]},{\"\":[]}]".to_vec(),
            b"[1,1,1,1,1,1,1,1,1,1,1]".to_vec(),
            b"{\"\":1,\"\":1,\"\":1,\"\":1}".to_vec(),
            b"[\"\",\"\",\"\",\"\"]".to_vec(),
            b"[\"\\n\",\"\\n\"]".to_vec(),
            "{".repeat(300).into_bytes(),
            "[".repeat(300).into_bytes(),
            "[{".repeat(150).into_bytes(),
            b"\"".to_vec(),
            b"[\"".to_vec(),
        ];
        // And every body of a property run: 20,000 of 1 to 256 bytes drawn
        // from the bytes the scan tells apart (a fixed seed, so a failure
        // can be replayed), valid JSON or not.
        let alphabet = b"{}[]\",:\\ 1an";
        let mut state = 0x5eed_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let generated = (0..20_000).map(|_| {
            let len = 1 + (next() % 256) as usize;
            (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect::<Vec<u8>>()
        });
        let shapes: Vec<Vec<u8>> = shapes.into_iter().chain(generated).collect();
        for body in &shapes {
            let bound = parsed_size_bound(body);
            assert!(
                bound <= body.len() * MAX_CHARGE_PER_BYTE,
                "{:?}: {bound} over {} bytes",
                String::from_utf8_lossy(body),
                body.len()
            );
            assert!(!may_exceed(body.len(), body.len() * MAX_CHARGE_PER_BYTE));
        }
        assert!(may_exceed(42 * 1024, 64 * 1024 * 1024));
        assert!(!may_exceed(41 * 1024, 64 * 1024 * 1024));
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
            array_len_within(format!("[{}1]", "1,".repeat(1 << 19)).as_bytes(), 32),
            None
        );
    }
}
