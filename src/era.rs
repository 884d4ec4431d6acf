//! Protocol revisions, and deciding which era each POSTed message belongs to.
//!
//! MCP has two eras. The **legacy** era (2025-03-26, 2025-06-18, 2025-11-25)
//! negotiates a version once, in `initialize`, and then names it in the
//! `MCP-Protocol-Version` header. The **modern** era (2026-07-28) has no
//! handshake: every request carries its version in
//! `params._meta["io.modelcontextprotocol/protocolVersion"]`. One endpoint
//! serves both, so each message is classified on its own (the spec digest's
//! "dual-era classification"):
//!
//! 1. the `_meta` key is present → modern;
//! 2. absent, but the header names a modern version → 400 `-32602` (the
//!    envelope is missing);
//! 3. otherwise legacy, at the header's version, or 2025-03-26 without one;
//!    a header naming no version the host speaks → 400.
//!
//! This host does not serve the modern era yet: a modern request is answered
//! with `-32022` (unsupported protocol version) listing the versions it does
//! speak. That is a JSON-RPC error, which is what dual-era clients (Copilot
//! CLI, the MCP SDKs) take as the signal to fall back to `initialize`.

use serde_json::{json, Map, Value};

use crate::jsonrpc::{code, ErrorObject};

/// Legacy revisions this host speaks, newest first; `initialize`
/// counter-offers the first.
pub(crate) const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The legacy version assumed when a request names none (MCP 2025-06-18,
/// "Protocol Version Header": the server SHOULD assume 2025-03-26).
pub(crate) const DEFAULT_LEGACY_VERSION: &str = "2025-03-26";

/// Modern revisions known to exist; the header naming one of these without
/// the `_meta` envelope is a malformed modern request, not a legacy one.
pub(crate) const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];

/// The `_meta` key that marks a modern request.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The era a message belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// Legacy, at this version.
    Legacy(&'static str),
}

/// Classifies one message from its params and the request's
/// `MCP-Protocol-Version` header (raw bytes, `None` when absent). An `Err`
/// is the JSON-RPC error to answer with; the message is a client error.
pub(crate) fn classify(
    header: Option<&[u8]>,
    params: Option<&Map<String, Value>>,
) -> Result<Era, ErrorObject> {
    let meta_version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION));
    if let Some(requested) = meta_version {
        return Err(ErrorObject::new(
            code::UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({"supported": supported_versions(), "requested": requested})));
    }
    let Some(header) = header else {
        return Ok(Era::Legacy(DEFAULT_LEGACY_VERSION));
    };
    if let Some(version) = LEGACY_VERSIONS.iter().find(|v| v.as_bytes() == header) {
        return Ok(Era::Legacy(version));
    }
    if MODERN_VERSIONS.iter().any(|v| v.as_bytes() == header) {
        return Err(ErrorObject::new(
            code::INVALID_PARAMS,
            "MCP-Protocol-Version names 2026-07-28 but params._meta has no protocolVersion",
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

/// Every version this host speaks, newest first.
pub(crate) fn supported_versions() -> Vec<&'static str> {
    LEGACY_VERSIONS.to_vec()
}

/// The version `initialize` answers with: the client's when the host speaks
/// it, else the host's newest (MCP lifecycle: a counter-offer, not an error).
pub(crate) fn negotiate(requested: &str) -> &'static str {
    LEGACY_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .copied()
        .unwrap_or(LEGACY_VERSIONS[0])
}

/// Whether a JSON-RPC batch (a JSON array body) is allowed: only 2025-03-26
/// had batches, so only with that header or none.
pub(crate) fn allows_batch(header: Option<&[u8]>) -> bool {
    header.is_none_or(|h| h == DEFAULT_LEGACY_VERSION.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    /// The classification table, rule by rule.
    #[test]
    fn classification() {
        let empty = params(json!({}));
        let modern = params(json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}));
        assert_eq!(classify(None, None), Ok(Era::Legacy("2025-03-26")));
        assert_eq!(
            classify(Some(b"2025-06-18"), Some(&empty)),
            Ok(Era::Legacy("2025-06-18"))
        );
        assert_eq!(
            classify(Some(b"2025-11-25"), None),
            Ok(Era::Legacy("2025-11-25"))
        );
        let e = classify(Some(b"2026-07-28"), Some(&modern)).unwrap_err();
        assert_eq!(e.code, code::UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.as_ref().unwrap()["requested"], "2026-07-28");
        let e = classify(Some(b"2026-07-28"), Some(&empty)).unwrap_err();
        assert_eq!(e.code, code::INVALID_PARAMS);
        for bad in [&b"2024-11-05"[..], b"", b"2025-11-25 ", b"\xff"] {
            let e = classify(Some(bad), None).unwrap_err();
            assert_eq!(e.code, code::INVALID_REQUEST, "{bad:?}");
        }
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
        assert!(allows_batch(None));
        assert!(allows_batch(Some(b"2025-03-26")));
        assert!(!allows_batch(Some(b"2025-06-18")));
        assert!(!allows_batch(Some(b"2025-11-25")));
    }
}
