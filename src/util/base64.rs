//! Standard base64 (RFC 4648 §4): decoding for the `=?base64?…?=` form that
//! MCP 2026-07-28 uses for header values that are not plain ASCII, and
//! encoding for the bytes of image, audio and blob content blocks.
//!
//! Decoding accepts only the canonical padded form: a length that is not a multiple of four (`aGk` for
//! `hi`), characters outside the alphabet, misplaced padding and non-zero
//! leftover bits are all refused. MCP 2026-07-28 names "invalid Base64
//! padding" as a reason to reject a header, and the official conformance
//! suite (`sep-2243-server-reject-invalid-param-chars`) sends exactly an
//! unpadded value and expects 400; every real encoder pads.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Appends the padded encoding of `data` to `out`.
pub(crate) fn encode_into(out: &mut Vec<u8>, data: &[u8]) {
    out.reserve(data.len().div_ceil(3) * 4);
    let mut chunks = data.chunks_exact(3);
    for chunk in &mut chunks {
        let n = u32::from(chunk[0]) << 16 | u32::from(chunk[1]) << 8 | u32::from(chunk[2]);
        out.extend_from_slice(&quad(n));
    }
    // One or two bytes left: two or three characters, then padding.
    if let [a, rest @ ..] = chunks.remainder() {
        let b = rest.first().map_or(0, |&b| u32::from(b));
        let mut last = quad(u32::from(*a) << 16 | b << 8);
        last[2 + rest.len()..].fill(b'=');
        out.extend_from_slice(&last);
    }
}

/// The four characters that encode the 24 bits of `n`.
fn quad(n: u32) -> [u8; 4] {
    [18u32, 12, 6, 0].map(|shift| ALPHABET[(n >> shift) as usize & 63])
}

/// Decodes `text`, or `None` if it is not canonical, padded base64.
pub(crate) fn decode(text: &[u8]) -> Option<Vec<u8>> {
    if text.len() % 4 != 0 {
        return None;
    }
    let unpadded = text.strip_suffix(b"==").or_else(|| text.strip_suffix(b"="));
    let unpadded = unpadded.unwrap_or(text);
    let mut out = Vec::with_capacity(unpadded.len() * 3 / 4);
    let mut buffer = 0u32;
    let mut bits = 0u32;
    for &c in unpadded {
        buffer = (buffer << 6) | u32::from(sextet(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be zero, so each byte string has one encoding.
    (buffer == 0).then_some(out)
}

fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648 §10 test vectors; their unpadded forms are refused.
    #[test]
    fn rfc_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(
                decode(encoded.as_bytes()).as_deref(),
                Some(plain.as_bytes()),
                "{encoded}"
            );
            let mut out = Vec::new();
            encode_into(&mut out, plain.as_bytes());
            assert_eq!(out, encoded.as_bytes(), "{plain}");
            let bare = encoded.trim_end_matches('=');
            if bare.len() != encoded.len() {
                assert_eq!(decode(bare.as_bytes()), None, "{bare}");
            }
        }
        assert_eq!(decode("w6k=".as_bytes()).as_deref(), Some("é".as_bytes()));
        assert_eq!(decode(b"+/+/").as_deref(), Some(&[0xfb, 0xff, 0xbf][..]));
    }

    /// Every byte string of every remainder length decodes back to itself.
    #[test]
    fn encode_round_trips() {
        let bytes: Vec<u8> = (0..=255).collect();
        for len in 0..bytes.len() {
            let mut out = Vec::new();
            encode_into(&mut out, &bytes[..len]);
            assert_eq!(decode(&out).as_deref(), Some(&bytes[..len]), "{len}");
        }
    }

    /// Invalid alphabet, impossible lengths, bad padding and non-zero
    /// leftover bits are refused.
    #[test]
    fn refuses_invalid() {
        for bad in [
            "Z", "Zg=", "Zm9v=", "Zm9-", "Zm 9", "Zh==", "====", "Zg===", "-_", "Zm8=Zm8=", "Zg",
            "SGVsbG8",
        ] {
            assert!(decode(bad.as_bytes()).is_none(), "{bad}");
        }
    }
}
