//! The fast reading of a POST body: one pass over its bytes that finds the
//! envelope's members and the members of `params`, as raw JSON text,
//! without building or allocating anything.
//!
//! # What it accepts
//!
//! Only a subset of JSON, chosen so that everything it accepts is JSON
//! that serde_json reads into a [`Value`](serde_json::Value) without error,
//! every part of it too. So a member's text can be parsed later, when a
//! method asks for it, and the answer is the one reading the whole body at
//! once would have given: the fast reading changes no classification and no
//! error code, only what they cost. A body outside the subset is left to
//! the general reading (`None`), which decides it exactly. The subset:
//!
//! - the body is UTF-8 and one JSON object, with whitespace around it;
//! - the keys of the envelope and of `params` have no escapes (they are
//!   compared as written), and `params` has at most
//!   [`MAX_PARAMS_MEMBERS`] members;
//! - strings have only the escapes serde_json can never refuse: `\uXXXX`
//!   outside the surrogates (D800–DFFF, where serde_json refuses lone
//!   halves), and `\" \\ \/ \b \f \n \r \t`;
//! - numbers are at most [`MAX_NUMBER_LEN`] bytes with at most two exponent
//!   digits, so none can overflow an `f64` (below 10^64 × 10^99);
//! - nesting is at most [`MAX_DEPTH`] levels, well inside serde_json's 128.
//!
//! The unit tests below and the `dispatch` fuzz target check the promise:
//! whatever this accepts, serde_json reads, and alike.

/// The most members of `params` the fast reading indexes. Every MCP
/// request the host serves has at most four (`initialize`: protocol
/// version, capabilities, client info, `_meta`); a body with more is read
/// the general way.
pub(crate) const MAX_PARAMS_MEMBERS: usize = 8;

/// The longest number the fast reading accepts, in bytes.
const MAX_NUMBER_LEN: usize = 64;

/// The deepest nesting the fast reading follows, the envelope being level 1.
const MAX_DEPTH: usize = 100;

/// Whether a string may hold `byte` as it is: all but `"`, `\\` and the
/// control characters. (The body is already known to be UTF-8.)
#[inline(always)]
fn is_plain(byte: u8) -> bool {
    byte >= 0x20 && byte != b'"' && byte != b'\\'
}

/// How many [plain](is_plain) bytes `bytes` has from `from` on before one
/// that is not; `None` when it ends first.
///
/// Eight bytes at a time while eight remain, in one word: the strings of a
/// usual body are short, and a word finds the end of most of them in one
/// step where a byte loop takes one per byte (benches/JOURNAL.md, "Fast
/// paths re-judged").
#[inline(always)]
fn plain_run(bytes: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(eight) = bytes.get(at..at + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(eight);
        match first_special(u64::from_le_bytes(word)) {
            8 => at += 8,
            special => return Some(at - from + special),
        }
    }
    let rest = bytes.get(at..)?.iter().position(|&b| !is_plain(b))?;
    Some(at - from + rest)
}

/// The position (0 to 7) of the first byte of `word`, first byte lowest,
/// that is not [plain](is_plain); 8 when all are.
///
/// `below(x, n)` sets the high bit of the bytes of `x` under `n` (n ≤ 0x80):
/// subtracting `n` from each byte borrows out of exactly those, and `!x`
/// clears bytes from 0x80 up. A borrow can also flag a byte *after* a true
/// one, never before, so the lowest flag of each test, and of their union,
/// is a true one.
#[inline(always)]
fn first_special(word: u64) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH_BITS;
    let quote = below(word ^ (ONES * u64::from(b'"')), 1);
    let backslash = below(word ^ (ONES * u64::from(b'\\')), 1);
    let control = below(word, 0x20);
    ((quote | backslash | control).trailing_zeros() / 8) as usize
}

/// The members of a body's envelope the host reads, each as raw JSON text
/// (the last one wins where a key repeats, as in serde_json's maps).
#[derive(Debug, Default)]
pub(crate) struct Envelope<'a> {
    pub(crate) id: Option<&'a str>,
    pub(crate) jsonrpc: Option<&'a str>,
    pub(crate) method: Option<&'a str>,
    /// `params`, whose first byte says what it holds; an object's members
    /// are in the [`RawMembers`] given to [`read`].
    pub(crate) params: Option<&'a str>,
    /// Whether a `result` or `error` member is present.
    pub(crate) answers: bool,
}

/// An object's members as written: keys without escapes, values as raw
/// JSON text the fast reading accepted. Held inline, so reading `params`
/// allocates nothing; the caller keeps it in place and messages borrow it,
/// so it is never moved with them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RawMembers<'a> {
    members: [(&'a str, &'a str); MAX_PARAMS_MEMBERS],
    len: usize,
}

impl<'a> RawMembers<'a> {
    /// The raw text of the member named `key`: the last one of that name,
    /// as serde_json keeps the last of a repeated key.
    pub(crate) fn get(&self, key: &str) -> Option<&'a str> {
        self.members[..self.len]
            .iter()
            .rev()
            .find(|(name, _)| *name == key)
            .map(|(_, raw)| *raw)
    }

    /// Every member in body order, repeats included.
    #[cfg(any(test, feature = "bench-internals"))]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + '_ {
        self.members[..self.len].iter().copied()
    }

    /// Adds a member; `None` when full.
    fn push(&mut self, key: &'a str, raw: &'a str) -> Option<()> {
        *self.members.get_mut(self.len)? = (key, raw);
        self.len += 1;
        Some(())
    }
}

/// Reads `body` the fast way, the members of an object `params` into
/// `params`; `None` leaves it to the general reading.
pub(crate) fn read<'a>(body: &'a [u8], params: &mut RawMembers<'a>) -> Option<Envelope<'a>> {
    let text = std::str::from_utf8(body).ok()?;
    let mut scan = Scanner { text, pos: 0 };
    scan.whitespace();
    let mut envelope = Envelope::default();
    scan.object(|scan, key| {
        match key {
            "params" => envelope.params = Some(scan.params(params)?),
            "id" => envelope.id = Some(scan.value(1)?),
            "jsonrpc" => envelope.jsonrpc = Some(scan.value(1)?),
            "method" => envelope.method = Some(scan.value(1)?),
            _ => {
                envelope.answers |= matches!(key, "result" | "error");
                scan.value(1)?;
            }
        }
        Some(())
    })?;
    scan.whitespace();
    (scan.pos == body.len()).then_some(envelope)
}

/// A cursor over the body. Every method returns `None` for a byte outside
/// the accepted subset, which ends the fast reading. The small, hot ones
/// are `#[inline(always)]`: each is shorter than a call to it.
struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(byte)
    }

    #[inline(always)]
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    /// Moves past the byte at the cursor when `wanted` accepts it; whether
    /// it did.
    #[inline(always)]
    fn eat(&mut self, wanted: impl Fn(u8) -> bool) -> bool {
        let hit = self.peek().is_some_and(wanted);
        self.pos += usize::from(hit);
        hit
    }

    #[inline(always)]
    fn whitespace(&mut self) {
        while self.eat(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {}
    }

    /// An object at the cursor, whose keys have no escapes: `member` gets
    /// each key with the cursor at its value, and must read the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.expect(b'{')?;
        self.whitespace();
        if self.eat(|b| b == b'}') {
            return Some(());
        }
        loop {
            let start = self.pos + 1;
            if self.string()? {
                return None; // an escaped key: compared as written, it could be missed
            }
            let key = self.text.get(start..self.pos - 1)?;
            self.colon()?;
            member(self, key)?;
            self.whitespace();
            match self.next()? {
                b',' => self.whitespace(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// `params`, as raw text; its members, at level 2, indexed when it is
    /// an object.
    fn params(&mut self, members: &mut RawMembers<'a>) -> Option<&'a str> {
        if self.peek()? != b'{' {
            return self.value(1);
        }
        let start = self.pos;
        // A repeated `params`: the last one counts.
        members.len = 0;
        self.object(|scan, key| members.push(key, scan.value(2)?))?;
        self.text.get(start..self.pos)
    }

    /// After a key: whitespace, `:`, whitespace.
    #[inline(always)]
    fn colon(&mut self) -> Option<()> {
        self.whitespace();
        self.expect(b':')?;
        self.whitespace();
        Some(())
    }

    /// One value at the cursor, inside `depth` levels already, as raw text.
    fn value(&mut self, depth: usize) -> Option<&'a str> {
        let start = self.pos;
        // Most members are strings: skipped without the container loop.
        if self.peek()? == b'"' {
            self.string()?;
        } else {
            self.skip_value(MAX_DEPTH.checked_sub(depth)?)?;
        }
        self.text.get(start..self.pos)
    }

    /// Moves past one value nested at most `room` levels deep. Iterative:
    /// `open` holds a bit per open container, innermost lowest, 1 for an
    /// object, so the closing bracket must match.
    fn skip_value(&mut self, room: usize) -> Option<()> {
        let mut open: u128 = 0;
        let mut depth = 0;
        loop {
            // At a value.
            match self.peek()? {
                bracket @ (b'{' | b'[') => {
                    depth += 1;
                    if depth > room {
                        return None;
                    }
                    self.pos += 1;
                    let object = bracket == b'{';
                    open = open << 1 | u128::from(object);
                    self.whitespace();
                    if self.peek() != Some(if object { b'}' } else { b']' }) {
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                    // Empty: its closing bracket is read below, as any
                    // container's is.
                }
                b'"' => _ = self.string()?,
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal("true")?,
                b'f' => self.literal("false")?,
                b'n' => self.literal("null")?,
                _ => return None,
            }
            // After a value: close what ends here, or go on to the next.
            loop {
                if depth == 0 {
                    return Some(());
                }
                self.whitespace();
                let object = open & 1 == 1;
                match self.next()? {
                    b',' => {
                        self.whitespace();
                        if object {
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                depth -= 1;
                open >>= 1;
            }
        }
    }

    /// A member's key and colon, inside a container being skipped.
    #[inline(always)]
    fn key(&mut self) -> Option<()> {
        self.string()?;
        self.colon()
    }

    /// A string at the cursor; whether it has escapes.
    #[inline(always)]
    fn string(&mut self) -> Option<bool> {
        self.expect(b'"')?;
        let bytes = self.text.as_bytes();
        let mut escaped = false;
        loop {
            // Runs of plain bytes are the bulk of any string: skip them,
            // then look at the byte that ended the run.
            self.pos += plain_run(bytes, self.pos)? + 1;
            match bytes[self.pos - 1] {
                b'"' => return Some(escaped),
                b'\\' => {
                    escaped = true;
                    match self.next()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    }
                }
                // A control character, which JSON strings may not hold.
                _ => return None,
            }
        }
    }

    /// The four hex digits of `\uXXXX`, outside the surrogates.
    fn unicode_escape(&mut self) -> Option<()> {
        let digits = self.text.get(self.pos..self.pos + 4)?;
        let unit = u16::from_str_radix(digits, 16).ok()?;
        // `from_str_radix` takes a leading `+` too, which JSON does not.
        let valid = !digits.starts_with('+') && !(0xD800..=0xDFFF).contains(&unit);
        valid.then(|| self.pos += 4)
    }

    /// A number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]{1,2})?`.
    fn number(&mut self) -> Option<()> {
        let start = self.pos;
        self.eat(|b| b == b'-');
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => _ = self.digits(),
            _ => return None,
        }
        if self.eat(|b| b == b'.') && self.digits() == 0 {
            return None;
        }
        if self.eat(|b| matches!(b, b'e' | b'E')) {
            self.eat(|b| matches!(b, b'+' | b'-'));
            if !(1..=2).contains(&self.digits()) {
                return None;
            }
        }
        (self.pos - start <= MAX_NUMBER_LEN).then_some(())
    }

    /// Moves past a run of digits; how many there were.
    fn digits(&mut self) -> usize {
        let start = self.pos;
        while self.eat(|b| b.is_ascii_digit()) {}
        self.pos - start
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        let found = self.text.as_bytes()[self.pos..].starts_with(word.as_bytes());
        found.then(|| self.pos += word.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word test finds what a byte-by-byte reading of [`is_plain`] finds,
    /// for every byte value in every position of a word, behind plain
    /// bytes and behind other special ones, and across the tail that is
    /// read byte by byte.
    #[test]
    fn plain_runs_agree_with_the_table() {
        let reference =
            |bytes: &[u8], from: usize| bytes[from..].iter().position(|&b| !is_plain(b));
        let bases: [&[u8]; 6] = [
            b"abcdefghijklmnopq",
            b"\xe9\xe9\xe9\xe9\xe9\xe9\xe9\xe9\xe9",
            b"ab\"cdefghijklmnop",
            b"abcdefghijk\\mnopq",
            // Several specials in one word, and bytes one above what is
            // tested for, where a borrow could flag the wrong byte.
            b"a\"\\\x01\"efghijklmnop",
            b"#] !^#] abcdefghij",
        ];
        for base in bases {
            for at in 0..base.len() {
                for byte in 0..=255u8 {
                    let mut bytes = base.to_vec();
                    bytes[at] = byte;
                    for from in [0, 1, 7, 9] {
                        assert_eq!(
                            plain_run(&bytes, from),
                            reference(&bytes, from),
                            "{bytes:?} from {from}"
                        );
                    }
                }
            }
        }
    }
}
