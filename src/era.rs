//! Protocol revisions, and deciding which era each POSTed request belongs to.
//!
//! MCP has two eras. The **legacy** era (2025-03-26, 2025-06-18, 2025-11-25)
//! negotiates a version once, in `initialize`, and then names it in the
//! `MCP-Protocol-Version` header. The **modern** era (2026-07-28) has no
//! handshake: every request carries its version and the client's
//! capabilities in `params._meta`, and repeats its method (and, for
//! `tools/call`, the tool name) in headers. One endpoint serves both, so each
//! request is classified on its own (the spec digest's "dual-era
//! classification"), in this order:
//!
//! 1. `params._meta["io.modelcontextprotocol/protocolVersion"]` is present →
//!    **modern**, checked in this order, each failure a 400:
//!    1. `MCP-Protocol-Version`, `Mcp-Method` and (for `tools/call`)
//!       `Mcp-Name` are each present once and equal to the body's values —
//!       after decoding the `=?base64?…?=` form — else `-32020`. This comes
//!       first, so a body version that the header does not mirror is a
//!       mismatch even when that version is also unsupported (the official
//!       conformance suite's `sep-2575-http-server-header-mismatch-400`
//!       sends body `v999.0.0` under header `2026-07-28` and wants `-32020`);
//!    2. the version is one the host speaks, else `-32022` with
//!       `data: {supported, requested}` (header and body agree on it);
//!    3. `_meta["io.modelcontextprotocol/clientCapabilities"]` is an object,
//!       else `-32602`.
//!
//!    The `Mcp-Param-*` headers of a tool's `x-mcp-header` arguments are
//!    checked later, once the tool is known (see `param_headers.rs`).
//! 2. No such key, but the header names a modern version → 400 `-32602`:
//!    a modern request that lost its envelope.
//! 3. Otherwise **legacy**, at the header's version, or 2025-03-26 without
//!    one; a header naming no version the host speaks → 400 `-32600`.
//!
//! An MCP header sent twice is never resolved by picking one: it is a 400
//! in either era (`-32020` in the modern one, `-32600` in the legacy one).
//!
//! Nothing else about a request depends on its era: the tool logic is one
//! code path, and the era only decides the result's envelope.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::base64;
use crate::jsonrpc::{code, ErrorObject, Params};

/// Legacy revisions this host speaks, newest first; `initialize`
/// counter-offers the first.
pub(crate) const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The legacy version assumed when a request names none (MCP 2025-06-18,
/// "Protocol Version Header": the server SHOULD assume 2025-03-26).
pub(crate) const DEFAULT_LEGACY_VERSION: &str = "2025-03-26";

/// Modern revisions this host speaks, newest first.
pub(crate) const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The `_meta` key that marks a modern request.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key a modern request declares its capabilities under.
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key a modern request asks for log messages with.
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key modern results name the server under.
pub(crate) const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The `_meta` key that ties a notification to its `subscriptions/listen`.
pub(crate) const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The era a request belongs to, with its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    Legacy(&'static str),
    Modern(&'static str),
}

impl Era {
    /// Whether a tool result's `structuredContent` may be any JSON value
    /// (2026-07-28), rather than only an object (every earlier revision).
    pub(crate) fn any_structured_content(self) -> bool {
        matches!(self, Self::Modern(_))
    }

    /// Whether the revision is 2025-06-18 or later: the one that added
    /// resource links, `lastModified` annotations and `structuredContent`.
    fn since_2025_06_18(self) -> bool {
        self.version() >= "2025-06-18"
    }

    /// Whether the revision defines the `resource_link` content block.
    pub(crate) fn has_resource_links(self) -> bool {
        self.since_2025_06_18()
    }

    /// Whether content annotations may carry `lastModified`.
    pub(crate) fn has_last_modified(self) -> bool {
        self.since_2025_06_18()
    }

    /// Whether a result may carry `value` as `structuredContent`: from
    /// 2025-06-18, an object; from 2026-07-28, any value.
    pub(crate) fn carries_structured(self, value: &serde_json::Value) -> bool {
        self.since_2025_06_18() && (value.is_object() || self.any_structured_content())
    }

    /// The revision's version string; revisions are dates, so they order
    /// as strings do.
    pub(crate) fn version(self) -> &'static str {
        match self {
            Self::Legacy(version) | Self::Modern(version) => version,
        }
    }
}

/// One request header as the request carried it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Header<'a> {
    /// Not sent.
    #[default]
    Absent,
    /// Sent once, with this raw value.
    One(&'a [u8]),
    /// Sent more than once: ambiguous, so never read.
    Repeated,
}

impl<'a> Header<'a> {
    /// The header's one value, if it was sent exactly once.
    pub(crate) fn value(self) -> Option<&'a [u8]> {
        match self {
            Self::One(value) => Some(value),
            Self::Absent | Self::Repeated => None,
        }
    }
}

/// Every `Mcp-Param-{Name}` header in arrival order: `{Name}` in lower case,
/// and the raw value.
pub(crate) type ParamHeaders<'a> = &'a [(&'a str, &'a [u8])];

/// The request headers classification reads, raw.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EnvelopeHeaders<'a> {
    pub(crate) protocol_version: Header<'a>,
    pub(crate) method: Header<'a>,
    pub(crate) name: Header<'a>,
    /// Usually empty.
    pub(crate) params: ParamHeaders<'a>,
}

/// Classifies one request from its method, params and headers. An `Err` is
/// the JSON-RPC error to answer with; every one is a client error (400).
pub(crate) fn classify(
    headers: &EnvelopeHeaders<'_>,
    method: &str,
    params: Option<&Params<'_>>,
) -> Result<Era, ErrorObject> {
    let meta = params.and_then(|p| p.get("_meta"));
    let meta = meta.as_deref().and_then(Value::as_object);
    if let Some(requested) = meta.and_then(|m| m.get(META_PROTOCOL_VERSION)) {
        return classify_modern(headers, method, params, meta, requested);
    }
    for (header, name) in [
        (headers.protocol_version, "MCP-Protocol-Version"),
        (headers.method, "Mcp-Method"),
        (headers.name, "Mcp-Name"),
    ] {
        if header == Header::Repeated {
            return Err(ErrorObject::new(
                code::INVALID_REQUEST,
                format!("Bad request: the {name} header appears more than once"),
            ));
        }
    }
    let Some(header) = headers.protocol_version.value() else {
        return Ok(Era::Legacy(DEFAULT_LEGACY_VERSION));
    };
    if let Some(version) = LEGACY_VERSIONS.iter().find(|v| v.as_bytes() == header) {
        return Ok(Era::Legacy(version));
    }
    if MODERN_VERSIONS.iter().any(|v| v.as_bytes() == header) {
        return Err(ErrorObject::new(
            code::INVALID_PARAMS,
            "MCP-Protocol-Version names a 2026-07-28+ revision but params._meta has no protocolVersion",
        ));
    }
    Err(ErrorObject::new(
        code::INVALID_REQUEST,
        "Unsupported MCP-Protocol-Version header",
    )
    .with_data(json!({
        "supported": supported_versions(),
        "requested": String::from_utf8_lossy(header),
    })))
}

fn classify_modern(
    headers: &EnvelopeHeaders<'_>,
    method: &str,
    params: Option<&Params<'_>>,
    meta: Option<&Map<String, Value>>,
    requested: &Value,
) -> Result<Era, ErrorObject> {
    // 1. The headers mirror the body. A version that is not a string has
    // no header spelling, so no header can mirror it.
    header_matches(
        headers.protocol_version,
        requested.as_str(),
        "MCP-Protocol-Version",
    )?;
    header_matches(headers.method, Some(method), "Mcp-Method")?;
    if method == "tools/call" {
        // A missing or non-string name fails here as a mismatch, before the
        // call's own shape check could say -32602.
        let name = params.and_then(|p| p.get_str("name"));
        header_matches(
            headers.name,
            Some(name.as_deref().unwrap_or_default()),
            "Mcp-Name",
        )?;
    }
    // 2. The version, which header and body now agree on.
    let Some(version) = requested
        .as_str()
        .and_then(|r| MODERN_VERSIONS.iter().find(|v| **v == r))
    else {
        return Err(ErrorObject::new(
            code::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({"supported": supported_versions(), "requested": requested})));
    };
    // 3. The other required `_meta` keys.
    if !meta
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .is_some_and(Value::is_object)
    {
        return Err(ErrorObject::new(
            code::INVALID_PARAMS,
            "params._meta needs io.modelcontextprotocol/clientCapabilities, an object",
        ));
    }
    Ok(Era::Modern(version))
}

/// `-32020` unless the header was sent once and, once decoded, equals
/// `body` (`None`: the body has no value a header could spell).
fn header_matches(header: Header<'_>, body: Option<&str>, name: &str) -> Result<(), ErrorObject> {
    let problem = match header {
        Header::Absent => "is missing",
        Header::Repeated => "appears more than once",
        Header::One(raw) => match decode_header_value(raw) {
            None => "is not a valid header value",
            Some(value) if Some(&*value) == body.map(str::as_bytes) => return Ok(()),
            Some(_) => "differs from the request body",
        },
    };
    Err(header_mismatch(name, problem))
}

/// The `-32020` error for header `name`, saying what is wrong with it.
pub(crate) fn header_mismatch(name: &str, problem: &str) -> ErrorObject {
    ErrorObject::new(
        code::HEADER_MISMATCH,
        format!("Header mismatch: {name} {problem}"),
    )
}

/// A modern header value: plain visible ASCII as is, or the
/// `=?base64?<base64 of UTF-8>?=` form decoded. Anything else (raw bytes
/// outside ASCII, bad base64, decoded bytes that are not UTF-8) is `None`.
pub(crate) fn decode_header_value(raw: &[u8]) -> Option<Cow<'_, [u8]>> {
    if let Some(encoded) = raw
        .strip_prefix(b"=?base64?")
        .and_then(|rest| rest.strip_suffix(b"?="))
    {
        let decoded = base64::decode(encoded)?;
        return std::str::from_utf8(&decoded)
            .is_ok()
            .then_some(Cow::Owned(decoded));
    }
    raw.iter()
        .all(|b| (0x20..0x7f).contains(b))
        .then_some(Cow::Borrowed(raw))
}

/// Every version this host speaks, newest first.
pub(crate) fn supported_versions() -> Vec<&'static str> {
    MODERN_VERSIONS
        .iter()
        .chain(&LEGACY_VERSIONS)
        .copied()
        .collect()
}

/// The version `initialize` answers with: the client's when the host speaks
/// it, else the host's newest legacy version. (The modern era is never
/// negotiated through `initialize`; it needs no negotiation.)
pub(crate) fn negotiate(requested: &str) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .copied()
        .unwrap_or(LEGACY_VERSIONS[0])
}

/// Whether a JSON-RPC batch (a JSON array body) is allowed: only 2025-03-26
/// had batches, so only with that header or none.
pub(crate) fn allows_batch(header: Header<'_>) -> bool {
    match header {
        Header::Absent => true,
        Header::One(value) => value == DEFAULT_LEGACY_VERSION.as_bytes(),
        Header::Repeated => false,
    }
}

#[cfg(test)]
mod tests {
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
        super::classify(headers, method, params.cloned().map(Params::Owned).as_ref())
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

    fn headers<'a>(
        version: &'a str,
        method: &'a str,
        name: Option<&'a str>,
    ) -> EnvelopeHeaders<'a> {
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
            // unpadded base64 is refused (see base64.rs)
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
        assert!(allows_batch(Header::Absent));
        assert!(allows_batch(one("2025-03-26")));
        assert!(!allows_batch(one("2025-06-18")));
        assert!(!allows_batch(one("2026-07-28")));
        assert!(!allows_batch(Header::Repeated));
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
}
