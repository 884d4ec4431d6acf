//! Every header the transport reads, gathered in one pass over a request's
//! headers: no name is hashed and looked up on its own, and a header sent
//! twice is seen as such (see `transport.rs` for why that matters).

use hyper::header::{self, HeaderMap};

use crate::protocol::Header;

/// `Mcp-Param-{Name}` headers start with this (lower case, as hyper keeps
/// header names).
const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// What the transport and the dispatcher read from a request's headers.
#[derive(Debug, Default)]
pub(crate) struct RequestHeaders<'a> {
    pub(crate) host: Header<'a>,
    pub(crate) origin: Header<'a>,
    pub(crate) authorization: Header<'a>,
    pub(crate) content_type: Header<'a>,
    /// What `Accept` admits, over every `Accept` header.
    pub(crate) accepts: Accepts,
    pub(crate) protocol_version: Header<'a>,
    pub(crate) method: Header<'a>,
    pub(crate) name: Header<'a>,
    /// `Mcp-Session-Id` (legacy era).
    pub(crate) session_id: Header<'a>,
    /// Whether any `Mcp-Param-{Name}` header came: they are gathered by
    /// [`params`] once the bearer is accepted, so a client without one
    /// makes the host build nothing per header.
    pub(crate) has_params: bool,
}

impl<'a> RequestHeaders<'a> {
    pub(crate) fn read(headers: &'a HeaderMap) -> Self {
        let mut found = Self::default();
        let mut accept_seen = false;
        for (name, value) in headers {
            let value = value.as_bytes();
            // Standard names compare as hyper's own tags, without touching
            // their text; only the others are compared as strings.
            let slot = match name {
                name if name == header::HOST => &mut found.host,
                name if name == header::ORIGIN => &mut found.origin,
                name if name == header::AUTHORIZATION => &mut found.authorization,
                name if name == header::CONTENT_TYPE => &mut found.content_type,
                name if name == header::ACCEPT => {
                    accept_seen = true;
                    found.accepts.admit(value);
                    continue;
                }
                name => match name.as_str() {
                    "mcp-protocol-version" => &mut found.protocol_version,
                    "mcp-method" => &mut found.method,
                    "mcp-name" => &mut found.name,
                    "mcp-session-id" => &mut found.session_id,
                    other => {
                        found.has_params |= other.starts_with(MCP_PARAM_PREFIX);
                        continue;
                    }
                },
            };
            *slot = match *slot {
                Header::Absent => Header::One(value),
                Header::One(_) | Header::Repeated => Header::Repeated,
            };
        }
        // No `Accept` at all admits anything.
        found.accepts.json |= !accept_seen;
        found
    }
}

/// Every `Mcp-Param-{Name}` header: `{Name}` (lower case) and the raw
/// value, in order.
pub(crate) fn params(headers: &HeaderMap) -> Vec<(&str, &[u8])> {
    headers
        .iter()
        .filter_map(|(name, value)| {
            let suffix = name.as_str().strip_prefix(MCP_PARAM_PREFIX)?;
            Some((suffix, value.as_bytes()))
        })
        .collect()
}

/// What the `Accept` header admits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Accepts {
    /// Absent, or an entry admits `application/json` (lenient: `*/*` and
    /// `application/*` count).
    pub(crate) json: bool,
    /// An entry names `text/event-stream` explicitly: only then may a call's
    /// response be a stream (a wildcard is not taken as a promise to parse
    /// SSE).
    pub(crate) event_stream: bool,
}

impl Accepts {
    /// Folds in one `Accept` value's entries.
    fn admit(&mut self, value: &[u8]) {
        // What MCP clients send, read without splitting it.
        if value == b"application/json, text/event-stream" {
            self.json = true;
            self.event_stream = true;
            return;
        }
        for entry in value.split(|&b| b == b',') {
            let range = essence(entry);
            if range.eq_ignore_ascii_case(b"text/event-stream") {
                self.event_stream = true;
            } else if range.eq_ignore_ascii_case(b"application/json")
                || range.eq_ignore_ascii_case(b"application/*")
                || range == b"*/*"
            {
                self.json = true;
            }
        }
    }
}

/// `application/json`, any case, optionally with parameters (`; charset=utf-8`).
pub(crate) fn is_json_media_type(value: &[u8]) -> bool {
    value == b"application/json" || essence(value).eq_ignore_ascii_case(b"application/json")
}

/// A media type or range without its parameters and surrounding spaces.
fn essence(value: &[u8]) -> &[u8] {
    let end = value.iter().position(|&b| b == b';');
    value[..end.unwrap_or(value.len())].trim_ascii()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_static(v));
        }
        map
    }

    /// Content-Type matching: the media type only, any case, any parameters.
    #[test]
    fn content_type() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ",
        ] {
            assert!(is_json_media_type(ok.as_bytes()), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/jsonx",
            "application/json-seq",
            "",
            "json",
        ] {
            assert!(!is_json_media_type(bad.as_bytes()), "{bad}");
        }
    }

    fn accepts(pairs: &[(&'static str, &'static str)]) -> Accepts {
        RequestHeaders::read(&headers(pairs)).accepts
    }

    /// Accept: lenient, but a client that rules JSON out gets 406.
    #[test]
    fn accept() {
        assert!(accepts(&[]).json);
        assert!(accepts(&[("accept", "application/json, text/event-stream")]).json);
        assert!(accepts(&[("accept", "*/*")]).json);
        assert!(accepts(&[("accept", "text/html"), ("accept", "application/*;q=0.5")]).json);
        assert!(!accepts(&[("accept", "text/event-stream")]).json);
        assert!(!accepts(&[("accept", "text/html")]).json);
        // Streaming needs SSE named explicitly.
        let both = accepts(&[("accept", "application/json, Text/Event-Stream;q=1")]);
        assert_eq!(
            both,
            Accepts {
                json: true,
                event_stream: true
            }
        );
        assert!(!accepts(&[("accept", "*/*")]).event_stream);
        assert!(!accepts(&[]).event_stream);
    }

    /// Each header lands in its slot; twice is `Repeated`, whatever the
    /// name's case on the wire; params keep their suffix and order.
    #[test]
    fn one_pass() {
        let map = headers(&[
            ("host", "127.0.0.1:1"),
            ("authorization", "Bearer a"),
            ("Authorization", "Bearer b"),
            ("mcp-method", "tools/call"),
            ("Mcp-Param-Region", "eu"),
            ("mcp-param-rows", "3"),
            ("x-other", "ignored"),
        ]);
        let read = RequestHeaders::read(&map);
        assert_eq!(read.host, Header::One(b"127.0.0.1:1"));
        assert_eq!(read.authorization, Header::Repeated);
        assert_eq!(read.method, Header::One(b"tools/call"));
        assert_eq!(read.origin, Header::Absent);
        assert_eq!(read.name, Header::Absent);
        assert!(read.has_params);
        assert_eq!(params(&map), [("region", &b"eu"[..]), ("rows", &b"3"[..])]);
    }
}
