//! The memory bound the host computes before parsing a body
//! (`json_scan::parsed_size_bound`) against what serde_json really
//! allocates, for the costliest shapes of JSON. One test in its own binary,
//! so the counting allocator sees nothing else.

mod support;

use support::counting_alloc;

use embacle_tool_host::bench_support::{call_arguments, parsed_size_bound};

#[global_allocator]
static GLOBAL: counting_alloc::Counting = counting_alloc::Counting;

/// Peak heap bytes serde_json takes to parse `body` into a `Value`.
fn measured(body: &str) -> usize {
    peak_of(|| serde_json::from_str::<serde_json::Value>(body).unwrap())
}

/// Peak heap bytes `read` takes, counting what it returns.
fn peak_of<T>(read: impl FnOnce() -> T) -> usize {
    counting_alloc::reset_peak();
    let before = counting_alloc::live_bytes();
    let value = read();
    let peak = counting_alloc::peak_bytes() - before;
    drop(value);
    usize::try_from(peak).unwrap()
}

/// `item` repeated, comma-separated, inside `open`…`close`, to about `bytes`.
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

/// The costliest shapes of JSON, and an ordinary string-heavy one.
fn shapes() -> Vec<String> {
    let keys = (0..6000).fold(String::from("{"), |s, i| {
        format!("{s}{}\"{i:x}\":0", if i == 0 { "" } else { "," })
    }) + "}";
    vec![
        repeat("[", "0", "]", 1 << 16),
        repeat("[", "[]", "]", 1 << 16),
        repeat("[", "{}", "]", 1 << 16),
        repeat("[", "[0]", "]", 1 << 16),
        repeat("[", "[[]]", "]", 1 << 16),
        repeat("[", r#"{"":[]}"#, "]", 1 << 16),
        repeat("[", r#"{"a":0,"b":0}"#, "]", 1 << 16),
        repeat("[", r#""ab""#, "]", 1 << 16),
        keys,
        format!("[{}]", "[".repeat(126) + &"]".repeat(126)),
        format!(r#"{{"text":"{}"}}"#, "x".repeat(1 << 16)),
        // An escape at the end: unescaped through a scratch buffer that
        // doubles as it grows.
        format!(r#"{{"text":"{}\n"}}"#, "x".repeat(1 << 16)),
        format!(r#"["\"{}", "\t"]"#, "y".repeat(1 << 15)),
    ]
}

/// The bound is never below serde_json's real peak, and within 3x of
/// it, for every shape that makes `Value`s expensive (a body of empty
/// objects costs 80x its size) and for an ordinary string-heavy body; nor
/// below the host's own reading of those shapes. One test, so that the
/// counting allocator never sees two at once.
#[test]
fn bound_covers_serde_json() {
    bound_covers_the_hosts_reading();
    for body in &shapes() {
        let real = measured(body);
        let bound = parsed_size_bound(body.as_bytes());
        let shape = &body[..40.min(body.len())];
        assert!(bound >= real, "{shape}: bound {bound} < real {real}");
        assert!(
            bound <= 3 * real + 1024,
            "{shape}: bound {bound} is far above real {real}"
        );
    }
}

/// The host's own reading of a call's `arguments` — the fast reading,
/// which builds the usual members itself, or one `Value` — takes no more
/// than the bound of the body it came in, for every shape above.
fn bound_covers_the_hosts_reading() {
    for shape in &shapes() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"t","arguments":{{"x":{shape}}}}}}}"#
        );
        let Ok(whole) = serde_json::from_str::<serde_json::Value>(&body) else {
            // Nested past serde_json's 128 levels once wrapped: no
            // arguments are read at all.
            assert_eq!(call_arguments(body.as_bytes()), None);
            continue;
        };
        let expected = whole["params"]["arguments"].clone();
        let real = peak_of(|| call_arguments(body.as_bytes()).unwrap());
        let bound = parsed_size_bound(body.as_bytes());
        let head = &shape[..40.min(shape.len())];
        assert!(bound >= real, "{head}: bound {bound} < real {real}");
        assert_eq!(call_arguments(body.as_bytes()), Some(expected), "{head}");
    }
}
