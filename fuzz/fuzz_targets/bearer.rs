//! Arbitrary bytes as an `Authorization` value: parsing must never panic,
//! and only the live session's exact bearer (scheme in any case) may pass.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|value: &[u8]| {
    let f = common::fixture();
    let accepted = embacle_tool_host::bench_support::validate(&f.host, value);
    let token = &f.authorization.as_bytes()["Bearer ".len()..];
    let exact = value.len() == "Bearer ".len() + token.len()
        && value[..7].eq_ignore_ascii_case(b"bearer ")
        && &value[7..] == token;
    assert_eq!(accepted, exact, "validate({:?})", String::from_utf8_lossy(value));
});
