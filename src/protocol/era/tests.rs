//! Classification, negotiation and batching, table by table.

use super::*;

fn params(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// The classifier, on params given as a map.
fn classify(
    headers: &EnvelopeHeaders<'_>,
    method: &str,
    params: Option<&Map<String, Value>>,
) -> Result<Era, ErrorObject> {
    super::classify(
        headers,
        None,
        method,
        params.cloned().map(Params::Owned).as_ref(),
    )
}

fn modern_params(name: Option<&str>) -> Map<String, Value> {
    let mut p = params(json!({"_meta": {
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: {},
    }}));
    if let Some(name) = name {
        p.insert("name".into(), name.into());
    }
    p
}

fn one(value: &str) -> Header<'_> {
    Header::One(value.as_bytes())
}

fn headers<'a>(version: &'a str, method: &'a str, name: Option<&'a str>) -> EnvelopeHeaders<'a> {
    EnvelopeHeaders {
        protocol_version: one(version),
        method: one(method),
        name: name.map_or(Header::Absent, one),
        params: &[],
    }
}

/// The legacy rows of the classification table.
#[test]
fn legacy_classification() {
    let none = EnvelopeHeaders::default();
    let empty = params(json!({}));
    assert_eq!(classify(&none, "ping", None), Ok(Era::Legacy("2025-03-26")));
    let h = EnvelopeHeaders {
        protocol_version: one("2025-06-18"),
        ..none
    };
    assert_eq!(
        classify(&h, "ping", Some(&empty)),
        Ok(Era::Legacy("2025-06-18"))
    );
    let h = EnvelopeHeaders {
        protocol_version: one("2026-07-28"),
        ..none
    };
    assert_eq!(
        classify(&h, "ping", Some(&empty)).unwrap_err().code,
        code::INVALID_PARAMS
    );
    for bad in [&b"2024-11-05"[..], b"", b"2025-11-25 ", b"\xff"] {
        let h = EnvelopeHeaders {
            protocol_version: Header::One(bad),
            ..none
        };
        assert_eq!(
            classify(&h, "ping", None).unwrap_err().code,
            code::INVALID_REQUEST,
            "{bad:?}"
        );
    }
}

/// The modern checks, in the spec's order.
#[test]
fn modern_classification() {
    let p = modern_params(None);
    assert_eq!(
        classify(
            &headers("2026-07-28", "tools/list", None),
            "tools/list",
            Some(&p)
        ),
        Ok(Era::Modern("2026-07-28"))
    );
    // 1. header mismatches come first: even an unsupported body version
    // is a mismatch when the header does not mirror it (the suite's
    // sep-2575-http-server-header-mismatch-400)
    let mut old = p.clone();
    old["_meta"][META_PROTOCOL_VERSION] = json!("v999.0.0");
    let e = classify(
        &headers("2026-07-28", "server/discover", None),
        "server/discover",
        Some(&old),
    )
    .unwrap_err();
    assert_eq!(e.code, code::HEADER_MISMATCH);
    let e = classify(&EnvelopeHeaders::default(), "x", Some(&old)).unwrap_err();
    assert_eq!(e.code, code::HEADER_MISMATCH);
    // 2. an unsupported version that header and body agree on
    old["_meta"][META_PROTOCOL_VERSION] = json!("2027-01-01");
    let e = classify(&headers("2027-01-01", "x", None), "x", Some(&old)).unwrap_err();
    assert_eq!(e.code, code::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(
        e.data.unwrap(),
        json!({"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], "requested": "2027-01-01"})
    );
    // a version that is not a string cannot be mirrored
    old["_meta"][META_PROTOCOL_VERSION] = json!(20260728);
    let e = classify(&headers("20260728", "x", None), "x", Some(&old)).unwrap_err();
    assert_eq!(e.code, code::HEADER_MISMATCH);
    // more header mismatches, each with its own message
    for (h, problem) in [
        (
            EnvelopeHeaders::default(),
            "MCP-Protocol-Version is missing",
        ),
        (
            headers("2025-11-25", "tools/list", None),
            "MCP-Protocol-Version differs",
        ),
        (
            headers("2026-07-28", "tools/call", None),
            "Mcp-Method differs",
        ),
        (
            EnvelopeHeaders {
                method: Header::Absent,
                ..headers("2026-07-28", "tools/list", None)
            },
            "Mcp-Method is missing",
        ),
        (
            EnvelopeHeaders {
                method: Header::Repeated,
                ..headers("2026-07-28", "tools/list", None)
            },
            "Mcp-Method appears more than once",
        ),
        (
            EnvelopeHeaders {
                protocol_version: Header::Repeated,
                ..headers("2026-07-28", "tools/list", None)
            },
            "MCP-Protocol-Version appears more than once",
        ),
    ] {
        let e = classify(&h, "tools/list", Some(&p)).unwrap_err();
        assert_eq!(e.code, code::HEADER_MISMATCH, "{h:?}");
        assert!(e.message.contains(problem), "{}: {problem}", e.message);
    }
    // 3. missing capabilities, once the headers agree
    let mut bare = p.clone();
    bare["_meta"]
        .as_object_mut()
        .unwrap()
        .remove(META_CLIENT_CAPABILITIES);
    let e = classify(
        &headers("2026-07-28", "tools/list", None),
        "tools/list",
        Some(&bare),
    )
    .unwrap_err();
    assert_eq!(e.code, code::INVALID_PARAMS);
}

/// Mcp-Name: required for tools/call, equal to params.name, base64 form
/// decoded; table of mismatches.
#[test]
fn mcp_name_table() {
    let rows: [(&str, Option<&str>, bool); 9] = [
        ("echo", Some("echo"), true),
        ("echo", Some("=?base64?ZWNobw==?="), true),
        // unpadded base64 is refused (see util/base64.rs)
        ("echo", Some("=?base64?ZWNobw?="), false),
        ("héllo", Some("=?base64?aMOpbGxv?="), true),
        ("echo", None, false),
        ("echo", Some("Echo"), false),
        ("echo", Some("=?base64?ZWNobw=?="), false),
        ("echo", Some("=?base64?!!!!?="), false),
        ("héllo", Some("h\u{e9}llo"), false),
    ];
    for (body, header, ok) in rows {
        let p = modern_params(Some(body));
        let h = headers("2026-07-28", "tools/call", header);
        let result = classify(&h, "tools/call", Some(&p));
        assert_eq!(result.is_ok(), ok, "{body} vs {header:?}: {result:?}");
        if !ok {
            assert_eq!(result.unwrap_err().code, code::HEADER_MISMATCH);
        }
    }
}

/// Header decoding: ASCII passes, the base64 form decodes to UTF-8 only.
#[test]
fn header_decoding() {
    assert_eq!(
        decode_header_value(b"tools/call").as_deref(),
        Some(&b"tools/call"[..])
    );
    assert_eq!(
        decode_header_value(b"=?base64?dG9vbHMvY2FsbA==?=").as_deref(),
        Some(&b"tools/call"[..])
    );
    assert!(decode_header_value(b"caf\xc3\xa9").is_none());
    assert!(
        decode_header_value(b"=?base64?/w==?=").is_none(),
        "0xff is not UTF-8"
    );
    assert!(decode_header_value(b"tab\there").is_none());
}

/// A legacy request without the header is at its MCP session's version
/// (else 2025-03-26); the header, when sent, wins; a modern request
/// ignores the session.
#[test]
fn the_session_version_fills_in_for_a_missing_header() {
    let none = EnvelopeHeaders::default();
    let with = |h: &EnvelopeHeaders<'_>, session, method, p: Option<&Map<String, Value>>| {
        super::classify(h, session, method, p.cloned().map(Params::Owned).as_ref())
    };
    assert_eq!(
        with(&none, Some("2025-06-18"), "tools/list", None),
        Ok(Era::Legacy("2025-06-18"))
    );
    assert_eq!(
        with(&none, None, "tools/list", None),
        Ok(Era::Legacy("2025-03-26"))
    );
    let h = EnvelopeHeaders {
        protocol_version: one("2025-11-25"),
        ..EnvelopeHeaders::default()
    };
    assert_eq!(
        with(&h, Some("2025-06-18"), "tools/list", None),
        Ok(Era::Legacy("2025-11-25"))
    );
    let modern = modern_params(None);
    let h = headers("2026-07-28", "tools/list", None);
    assert_eq!(
        with(&h, Some("2025-06-18"), "tools/list", Some(&modern)),
        Ok(Era::Modern("2026-07-28"))
    );
}

/// Negotiation echoes what it speaks and counter-offers the newest otherwise.
#[test]
fn negotiation() {
    for v in LEGACY_VERSIONS {
        assert_eq!(negotiate(v), v);
    }
    for other in ["2024-11-05", "2026-07-28", "", "garbage"] {
        assert_eq!(negotiate(other), "2025-11-25");
    }
}

/// Batches only where 2025-03-26 applies.
#[test]
fn batches() {
    assert!(allows_batch(Header::Absent, None));
    assert!(allows_batch(Header::Absent, Some("2025-03-26")));
    assert!(!allows_batch(Header::Absent, Some("2025-06-18")));
    assert!(allows_batch(one("2025-03-26"), None));
    assert!(!allows_batch(one("2025-06-18"), None));
    assert!(!allows_batch(one("2026-07-28"), None));
    assert!(!allows_batch(Header::Repeated, None));
    assert!(
        allows_batch(one("2025-03-26"), Some("2025-11-25")),
        "the header wins"
    );
}

/// A legacy request with any MCP header sent twice is a 400 `-32600`.
#[test]
fn legacy_repeated_headers() {
    for h in [
        EnvelopeHeaders {
            protocol_version: Header::Repeated,
            ..EnvelopeHeaders::default()
        },
        EnvelopeHeaders {
            method: Header::Repeated,
            ..EnvelopeHeaders::default()
        },
        EnvelopeHeaders {
            name: Header::Repeated,
            ..EnvelopeHeaders::default()
        },
    ] {
        let e = classify(&h, "ping", None).unwrap_err();
        assert_eq!(e.code, code::INVALID_REQUEST, "{h:?}");
        assert!(e.message.contains("more than once"), "{}", e.message);
    }
}
