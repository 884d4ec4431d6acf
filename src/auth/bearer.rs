//! Bearer tokens: what one is made of, its text form, and parsing.
//!
//! A bearer names a slot of the [revocation slab](crate::auth::revocation), the
//! generation that slot had when the session opened, and a 256-bit secret
//! drawn from the operating system (`getrandom`):
//!
//! ```text
//! eth_ SSSSSSSS GGGGGGGGGGGGGGGG XXXXXXXX...(64 hex digits)
//!      slot u32 generation u64   secret [u64; 4]
//! ```
//!
//! written as lower-case hex without the spaces: 92 characters in all. The
//! slot and generation are *addresses*, not secrets — they let the host find
//! the session in O(1) without scanning. Only the secret authenticates, and it
//! is only ever compared in constant time (`subtle`). The `eth_` prefix makes
//! leaked tokens easy for secret scanners to spot.
//!
//! Parsing is strict and rejects anything but the canonical form, so there is
//! exactly one spelling of each bearer. Parsing time depends only on the
//! *presented* text, which the caller already knows; it reveals nothing about
//! the stored secret.

use std::fmt;

use subtle::{Choice, ConstantTimeEq};

/// The text every bearer starts with.
const PREFIX: &str = "eth_";
/// Hex digits of each field.
const SLOT_HEX: usize = 8;
const GENERATION_HEX: usize = 16;
const SECRET_HEX: usize = 64;
/// Length of a bearer's text form.
pub(crate) const TEXT_LEN: usize = PREFIX.len() + SLOT_HEX + GENERATION_HEX + SECRET_HEX;

/// The 256 secret bits of a bearer, as four words: the form the slab
/// stores, and the text form's four last groups of 16 digits.
///
/// No `PartialEq`: the only comparison is [`Secret::ct_eq_words`], in constant
/// time. `Debug` prints `<redacted>`.
#[derive(Clone)]
pub(crate) struct Secret([u64; 4]);

impl Secret {
    /// Draws a fresh secret from the operating system's generator.
    ///
    /// # Panics
    ///
    /// Panics when the OS generator fails. That only happens on a broken
    /// system; minting a guessable bearer instead would be far worse.
    pub(crate) fn generate() -> Self {
        // One draw (one system call on Linux), cut into the four words.
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random generator failed");
        Self(std::array::from_fn(|i| {
            u64::from_le_bytes(bytes[8 * i..8 * i + 8].try_into().expect("8 bytes"))
        }))
    }

    /// The secret's four words, the form the slab stores.
    pub(crate) fn to_words(&self) -> [u64; 4] {
        self.0
    }

    /// Constant-time equality against stored words.
    pub(crate) fn ct_eq_words(&self, words: &[u64; 4]) -> Choice {
        self.0.ct_eq(words)
    }

    #[cfg(test)]
    pub(crate) fn from_words(words: [u64; 4]) -> Self {
        Self(words)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Where an open bearer's session lives: its slot and the generation the
/// slot had when the session opened. What the slab's `open` mints into a
/// bearer and `revoke` takes; an address, not a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SlotRef {
    pub(crate) slot: u32,
    pub(crate) generation: u64,
}

/// A parsed bearer: where its session lives, and its secret (whose
/// `Debug` is redacted).
#[derive(Clone, Debug)]
pub(crate) struct Bearer {
    pub(crate) at: SlotRef,
    pub(crate) secret: Secret,
}

impl Bearer {
    /// Parses the text after `Bearer ` in an `Authorization` header.
    ///
    /// Returns `None` for anything but the canonical form: wrong length or
    /// prefix, upper-case or non-hex digits, or an even generation (a live
    /// generation is always odd, see the slab's state word).
    pub(crate) fn parse(text: &[u8]) -> Option<Self> {
        if text.len() != TEXT_LEN || !text.starts_with(PREFIX.as_bytes()) {
            return None;
        }
        // Eleven groups of eight digits: slot, generation (two), secret
        // (four words of two). Branch-free over the digits: any invalid one
        // is gathered in `bad` and decided once at the end.
        // (The length is checked above, so every group is whole.)
        let digits = &text[PREFIX.len()..];
        let group = |i: usize| hex8(&digits[8 * i..8 * i + 8]);
        // Groups `i` and `i + 1` as one word, the first highest.
        let word = |i: usize| {
            let ((high, high_bad), (low, low_bad)) = (group(i), group(i + 1));
            (u64::from(high) << 32 | u64::from(low), high_bad | low_bad)
        };
        let (slot, slot_bad) = group(0);
        let (generation, generation_bad) = word(1);
        let secret = [word(3), word(5), word(7), word(9)];
        let bad = slot_bad | generation_bad | secret.iter().fold(0, |bad, w| bad | w.1);
        if bad != 0 || generation % 2 == 0 {
            return None;
        }
        Some(Self {
            at: SlotRef { slot, generation },
            secret: Secret(secret.map(|(word, _)| word)),
        })
    }

    /// Parses a whole `Authorization` header value: the scheme `Bearer`
    /// (case-insensitive, RFC 9110 §11.1), one space, then the token.
    pub(crate) fn parse_header(value: &[u8]) -> Option<Self> {
        const SCHEME: &[u8] = b"bearer ";
        if value.len() <= SCHEME.len() || !value[..SCHEME.len()].eq_ignore_ascii_case(SCHEME) {
            return None;
        }
        Self::parse(&value[SCHEME.len()..])
    }

    /// Writes the canonical text form. The only caller is
    /// [`ToolSession::mcp_servers`](crate::ToolSession::mcp_servers).
    pub(crate) fn to_text(&self) -> String {
        let [a, b, c, d] = self.secret.0;
        format!(
            "{PREFIX}{:08x}{:016x}{a:016x}{b:016x}{c:016x}{d:016x}",
            self.at.slot, self.at.generation
        )
    }
}

/// Eight lower-case hex digits, most significant first, as a `u32`, eight
/// at a time in one word (no table, no branch). The second value is
/// nonzero when any of the eight is not a lower-case hex digit; the first
/// is then meaningless.
fn hex8(digits: &[u8]) -> (u32, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    let x = u64::from_le_bytes(digits.try_into().expect("eight digits"));
    // For a byte below 0x80, adding `0x80 - floor` sets its high bit
    // exactly when it is at least `floor`, and never carries into the next
    // byte. (Bytes from 0x80 up are refused below, whatever this gives.)
    let at_least = |floor: u8| x.wrapping_add(ONES * u64::from(0x80 - floor)) & HIGH_BITS;
    let digit = at_least(b'0') & !at_least(b'9' + 1);
    let letter = at_least(b'a') & !at_least(b'f' + 1);
    let invalid = (x & HIGH_BITS) | (HIGH_BITS & !(digit | letter));
    // Each byte's value: its low nibble, plus 9 for a letter ('a' is 0x61).
    let nibbles = (x & (ONES * 0x0f)) + (letter >> 7) * 9;
    // Pack, first digit highest: nibble pairs into bytes, bytes into pairs.
    let bytes = ((nibbles & 0x000f_000f_000f_000f) << 4) | ((nibbles >> 8) & 0x000f_000f_000f_000f);
    let halves = ((bytes & 0x0000_00ff_0000_00ff) << 8) | ((bytes >> 16) & 0x0000_00ff_0000_00ff);
    let value = ((halves & 0xffff) << 16) | ((halves >> 32) & 0xffff);
    (value as u32, invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value in every position of a group decodes as a plain
    /// digit-by-digit reading says: lower-case hex digits give their
    /// value, anything else makes the group invalid.
    #[test]
    fn hex8_agrees_with_a_digit_by_digit_reading() {
        let reference = |digits: &[u8]| -> Option<u32> {
            digits.iter().try_fold(0u32, |value, &d| {
                let v = match d {
                    b'0'..=b'9' => d - b'0',
                    b'a'..=b'f' => d - b'a' + 10,
                    _ => return None,
                };
                Some(value << 4 | u32::from(v))
            })
        };
        let bases: [&[u8; 8]; 4] = [b"01234567", b"89abcdef", b"ffffffff", b"00000000"];
        for base in bases {
            for at in 0..8 {
                for byte in 0..=255u8 {
                    let mut digits = *base;
                    digits[at] = byte;
                    let (value, invalid) = hex8(&digits);
                    match reference(&digits) {
                        Some(expected) => assert_eq!((value, invalid), (expected, 0)),
                        None => assert_ne!(invalid, 0, "{digits:?}"),
                    }
                }
            }
        }
    }

    fn sample(slot: u32, generation: u64) -> Bearer {
        let secret = [0x0123_4567_89ab_cdef, 0, u64::MAX, 0xa5a5_0000_ffff_5a5a];
        Bearer {
            at: SlotRef { slot, generation },
            secret: Secret::from_words(secret),
        }
    }

    /// Text form and parser agree on edge values of every field.
    #[test]
    fn text_round_trips() {
        for (slot, generation) in [(0, 1), (1, 3), (u32::MAX, u64::MAX), (0x1234_5678, 0xff)] {
            let bearer = sample(slot, generation);
            let text = bearer.to_text();
            assert_eq!(text.len(), TEXT_LEN);
            assert!(text.starts_with("eth_"));
            let back = Bearer::parse(text.as_bytes()).expect("parses");
            assert_eq!(back.at, SlotRef { slot, generation });
            assert!(bool::from(
                back.secret.ct_eq_words(&bearer.secret.to_words())
            ));
            assert_eq!(back.to_text(), text);
        }
    }

    /// Every non-canonical spelling is refused.
    #[test]
    fn parse_refuses_non_canonical_text() {
        let good = sample(7, 9).to_text();
        let mut cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            good.as_bytes()[..TEXT_LEN - 1].to_vec(),
            [good.as_bytes(), b"0"].concat(),
            good.replacen("eth_", "ETH_", 1).into_bytes(),
            good.to_uppercase().into_bytes(),
            // an even generation is never live
            sample(7, 8).to_text().into_bytes(),
        ];
        let mut non_hex = good.clone().into_bytes();
        non_hex[TEXT_LEN - 1] = b'g';
        cases.push(non_hex);
        let mut utf8 = good.clone().into_bytes();
        utf8[10] = 0xc3;
        cases.push(utf8);
        for case in cases {
            assert!(
                Bearer::parse(&case).is_none(),
                "{:?}",
                String::from_utf8_lossy(&case)
            );
        }
    }

    /// The scheme is case-insensitive; anything else about the header is not.
    #[test]
    fn header_scheme() {
        let token = sample(1, 1).to_text();
        for ok in ["Bearer ", "bearer ", "BEARER "] {
            assert!(
                Bearer::parse_header(format!("{ok}{token}").as_bytes()).is_some(),
                "{ok}"
            );
        }
        for bad in ["Bearer  ", "Bearer\t", "Basic ", "Bearer", ""] {
            assert!(
                Bearer::parse_header(format!("{bad}{token}").as_bytes()).is_none(),
                "{bad:?}"
            );
        }
        assert!(Bearer::parse_header(format!("Bearer {token} ").as_bytes()).is_none());
    }

    /// Neither `Debug` form shows the secret.
    #[test]
    fn debug_is_redacted() {
        let bearer = sample(2, 5);
        let text = bearer.to_text();
        let debug = format!("{bearer:?}");
        assert!(debug.contains("<redacted>"));
        assert!(!debug.contains(&text[PREFIX.len() + SLOT_HEX + GENERATION_HEX..]));
    }

    /// Fresh secrets differ (a broken generator would repeat).
    #[test]
    fn secrets_are_fresh() {
        let a = Secret::generate();
        let b = Secret::generate();
        assert!(!bool::from(a.ct_eq_words(&b.to_words())));
    }
}
