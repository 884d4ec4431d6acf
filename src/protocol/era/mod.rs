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
//! 3. Otherwise **legacy**, at the header's version; without one, at the
//!    version its MCP session negotiated (`Mcp-Session-Id`, see
//!    `state/mcp_session.rs`), else 2025-03-26; a header naming no version the
//!    host speaks → 400 `-32600`.
//!
//! An MCP header sent twice is never resolved by picking one: it is a 400
//! in either era (`-32020` in the modern one, `-32600` in the legacy one).
//!
//! The tool logic is one code path for both eras; the era decides around
//! it: the methods served and what an unknown one gets (`-32601` with 200
//! or 404), batching (2025-03-26 only), the result's envelope
//! (`resultType`, `ttlMs`, `cacheScope`, serverInfo), how content and
//! `structuredContent` are rendered and whether `outputSchema` is listed,
//! how a call's logging is asked for (`logging/setLevel` or `_meta`), and
//! whether `Mcp-Param-*` headers are checked.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::jsonrpc::{code, ErrorObject, Params};
use crate::util::base64;

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
/// The `_meta` key a modern request names its client under (every
/// request; the host reads it for the observer and the tool, and checks
/// nothing of it).
pub(crate) const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
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
    /// The revision.
    pub(crate) fn version(self) -> &'static str {
        let (Self::Legacy(version) | Self::Modern(version)) = self;
        version
    }

    /// Whether the revision is 2025-06-18 or later: the one that added
    /// the `resource_link` content block, `lastModified` in content
    /// annotations, and `structuredContent`.
    pub(crate) fn since_2025_06_18(self) -> bool {
        // Revisions are dates, so they order as strings do.
        self.version() >= "2025-06-18"
    }

    /// Whether a result may carry `value` as `structuredContent`: from
    /// 2025-06-18, an object; from 2026-07-28, any value.
    pub(crate) fn carries_structured(self, value: &serde_json::Value) -> bool {
        self.since_2025_06_18() && (value.is_object() || matches!(self, Self::Modern(_)))
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

impl<'a> EnvelopeHeaders<'a> {
    /// A request's envelope headers, as the transport read them.
    pub(crate) fn new(
        protocol_version: Header<'a>,
        method: Header<'a>,
        name: Header<'a>,
        params: ParamHeaders<'a>,
    ) -> Self {
        Self {
            protocol_version,
            method,
            name,
            params,
        }
    }
}

/// Classifies one request from its method, params and headers, and the
/// version its MCP session negotiated, if it named one (`Mcp-Session-Id`).
/// An `Err` is the JSON-RPC error to answer with; every one is a client
/// error (400).
pub(crate) fn classify(
    headers: &EnvelopeHeaders<'_>,
    session_version: Option<&'static str>,
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
        return Ok(Era::Legacy(
            session_version.unwrap_or(DEFAULT_LEGACY_VERSION),
        ));
    };
    if let Some(version) = LEGACY_VERSIONS.iter().find(|v| v.as_bytes() == header) {
        return Ok(Era::Legacy(version));
    }
    if is_modern_version(header) {
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
    [&MODERN_VERSIONS[..], &LEGACY_VERSIONS].concat()
}

/// The version `initialize` answers with: the client's when the host speaks
/// it, else the host's newest legacy version. (The modern era is never
/// negotiated through `initialize`; it needs no negotiation.)
pub(crate) fn negotiate(requested: &str) -> &'static str {
    LEGACY_VERSIONS
        .into_iter()
        .find(|v| *v == requested)
        .unwrap_or(LEGACY_VERSIONS[0])
}

/// Whether an `MCP-Protocol-Version` header value names a 2026-07-28+
/// revision the host speaks.
pub(crate) fn is_modern_version(header: &[u8]) -> bool {
    MODERN_VERSIONS.iter().any(|v| v.as_bytes() == header)
}

/// Whether a JSON-RPC batch (a JSON array body) is allowed: only 2025-03-26
/// had batches, so only with that header, or none and no MCP session that
/// negotiated a later version.
pub(crate) fn allows_batch(header: Header<'_>, session_version: Option<&'static str>) -> bool {
    match header {
        Header::Absent => session_version.is_none_or(|v| v == DEFAULT_LEGACY_VERSION),
        Header::One(value) => value == DEFAULT_LEGACY_VERSION.as_bytes(),
        Header::Repeated => false,
    }
}

#[cfg(test)]
mod tests;
