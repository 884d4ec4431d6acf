//! Arbitrary bytes as a POST body through the real request path minus the
//! socket (authenticated: JSON-RPC parsing, era classification, dispatch,
//! the tool, rendering). No input may panic or hang, every answer is empty
//! (202) or one JSON value, and the JSON-RPC reader classifies every body
//! as reading it whole into a `Value` does: its fast reading accepts only
//! what serde_json reads, member by member.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|body: &[u8]| {
    assert!(embacle_tool_host::bench_support::reads_agree(body), "the two JSON-RPC readers disagree");
    let f = common::fixture();
    let out = f
        .runtime
        .block_on(embacle_tool_host::bench_support::dispatch(&f.host, f.authorization.as_bytes(), body));
    if !out.is_empty() {
        let parsed: Result<serde_json::Value, _> = serde_json::from_slice(&out);
        assert!(parsed.is_ok(), "the host wrote invalid JSON: {:?}", String::from_utf8_lossy(&out));
    }
});
