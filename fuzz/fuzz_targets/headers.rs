//! Arbitrary bytes as a 2026-07-28 header value (`Mcp-Method`, `Mcp-Name`,
//! `MCP-Protocol-Version`): decoding never panics; a plain value decodes to
//! itself and only when it is printable ASCII; the base64 form decodes to
//! UTF-8 or not at all.
#![no_main]

use embacle_tool_host::bench_support::{base64_decode, decode_header_value};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|raw: &[u8]| {
    let decoded = decode_header_value(raw);
    match raw.strip_prefix(b"=?base64?").and_then(|r| r.strip_suffix(b"?=")) {
        Some(encoded) => {
            let direct = base64_decode(encoded).filter(|d| std::str::from_utf8(d).is_ok());
            assert_eq!(decoded, direct);
        }
        None => {
            let printable = raw.iter().all(|b| (0x20..0x7f).contains(b));
            assert_eq!(decoded.as_deref(), printable.then_some(raw));
        }
    }
    // Base64 on its own: what decodes re-decodes identically (no panics,
    // deterministic), and never yields more than 3/4 of the input.
    if let Some(bytes) = base64_decode(raw) {
        assert!(bytes.len() * 4 <= raw.len() * 3 + 3);
    }
});
