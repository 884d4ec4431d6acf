//! Standard base64 decoding (RFC 4648 §4), for the `=?base64?…?=` form that
//! MCP 2026-07-28 uses for header values that are not plain ASCII.
//!
//! Decode only: the host never has to encode. Only the canonical padded
//! form is accepted: a length that is not a multiple of four (`aGk` for
//! `hi`), characters outside the alphabet, misplaced padding and non-zero
//! leftover bits are all refused. MCP 2026-07-28 names "invalid Base64
//! padding" as a reason to reject a header, and the official conformance
//! suite (`sep-2243-server-reject-invalid-param-chars`) sends exactly an
//! unpadded value and expects 400; every real encoder pads.

/// Decodes `text`, or `None` if it is not canonical, padded base64.
pub(crate) fn decode(text: &[u8]) -> Option<Vec<u8>> {
    if text.len() % 4 != 0 {
        return None;
    }
    let unpadded = match text {
        [rest @ .., b'=', b'='] => rest,
        [rest @ .., b'='] => rest,
        all => all,
    };
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
            let bare = encoded.trim_end_matches('=');
            if bare.len() != encoded.len() {
                assert_eq!(decode(bare.as_bytes()), None, "{bare}");
            }
        }
        assert_eq!(decode("w6k=".as_bytes()).as_deref(), Some("é".as_bytes()));
        assert_eq!(decode(b"+/+/").as_deref(), Some(&[0xfb, 0xff, 0xbf][..]));
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
