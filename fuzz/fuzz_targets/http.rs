//! Arbitrary bytes as a whole HTTP/1.1 connection, served by the host's own
//! connection builder and service over an in-memory pipe: every check of
//! the transport (Host, Origin, path, bearer, method, headers, body limits)
//! and everything after it. No input may panic or hang; every answer is
//! HTTP; and the session's bearer never appears in an answer unless the
//! input itself carried it.
//!
//! So that inputs can get past the Host check and authentication, `@H` in
//! an input stands for the host's `127.0.0.1:PORT` and `@B` for the
//! session's bearer token (the port and the token change every run).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

/// Replaces every `@H` and `@B` in `input`.
fn expand(input: &[u8], host: &[u8], bearer: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(input.len() + 128);
    let mut i = 0;
    while i < input.len() {
        match input.get(i..i + 2) {
            Some(b"@H") => {
                out.extend_from_slice(host);
                i += 2;
            }
            Some(b"@B") => {
                out.extend_from_slice(bearer);
                i += 2;
            }
            _ => {
                out.push(input[i]);
                i += 1;
            }
        }
    }
    out
}

fuzz_target!(|raw: &[u8]| {
    let f = common::fixture();
    let host = f.host.local_addr().to_string();
    let bearer = &f.authorization.as_bytes()["Bearer ".len()..];
    let input = &expand(raw, host.as_bytes(), bearer)[..];
    let output = f
        .runtime
        .block_on(embacle_tool_host::bench_support::serve_raw(&f.host, input));
    assert!(
        output.is_empty() || output.starts_with(b"HTTP/1."),
        "not an HTTP answer: {:?}",
        String::from_utf8_lossy(&output[..output.len().min(64)])
    );
    let secret = &f.authorization.as_bytes()[f.authorization.len() - 64..];
    let contains = |haystack: &[u8]| haystack.windows(secret.len()).any(|w| w == secret);
    assert!(!contains(&output) || contains(input), "the bearer leaked into an answer");
});
