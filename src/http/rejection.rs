//! Every way the transport turns a request away before dispatch, and the
//! HTTP status table for them, in one place.

use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use crate::http::response_body::{json, ResponseBody};
use crate::jsonrpc::{self, code, ErrorObject};
use crate::mcp;

/// Every way a request is turned away before dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rejection {
    Forbidden(&'static str),
    /// A live bearer whose session holds its share of connections.
    SessionFull,
    /// `Authorization`, live or not, on a connection another local user
    /// opened.
    OtherUser,
    /// A header that must appear at most once appeared twice.
    Ambiguous(&'static str),
    NotFound,
    Unauthorized,
    /// `get`: whether this session serves GET streams (for `Allow`).
    MethodNotAllowed {
        get: bool,
    },
    /// A GET stream beyond the session's limit.
    TooManyStreams(usize),
    /// A GET or DELETE whose `Mcp-Session-Id` names no open MCP session of
    /// the bearer's (`-32001`).
    UnknownSession,

    UnsupportedMediaType,
    NotAcceptable,
    PayloadTooLarge,
    /// The body fits, but its parsed JSON would not fit `max_parsed_bytes`.
    ParsedTooLarge,
    BadBody,
    BodyTimeout,
}

/// The connection is closed after the rejection (`Connection: close`).
const CLOSES: bool = true;
/// The connection is kept open after the rejection.
const KEEPS: bool = false;

impl Rejection {
    /// The HTTP status table for rejections, in one place, and whether the
    /// connection is closed after each: it is after a rejection made before
    /// the bearer was accepted, and after a framing ambiguity.
    fn status(self) -> (StatusCode, bool) {
        match self {
            Self::Forbidden(_) | Self::OtherUser => (StatusCode::FORBIDDEN, CLOSES),
            Self::Ambiguous(_) => (StatusCode::BAD_REQUEST, CLOSES),
            Self::BadBody => (StatusCode::BAD_REQUEST, KEEPS),
            Self::NotFound => (StatusCode::NOT_FOUND, CLOSES),
            Self::UnknownSession => (StatusCode::NOT_FOUND, KEEPS),
            Self::SessionFull => (StatusCode::TOO_MANY_REQUESTS, CLOSES),
            Self::Unauthorized => (StatusCode::UNAUTHORIZED, CLOSES),
            Self::MethodNotAllowed { .. } => (StatusCode::METHOD_NOT_ALLOWED, KEEPS),
            Self::TooManyStreams(_) => (StatusCode::CONFLICT, KEEPS),
            Self::UnsupportedMediaType => (StatusCode::UNSUPPORTED_MEDIA_TYPE, KEEPS),
            Self::NotAcceptable => (StatusCode::NOT_ACCEPTABLE, KEEPS),
            Self::PayloadTooLarge | Self::ParsedTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, KEEPS),
            Self::BodyTimeout => (StatusCode::REQUEST_TIMEOUT, KEEPS),
        }
    }

    /// The JSON-RPC error the body carries: `-32600` with the rejection's
    /// message, but for an unknown session (`-32001`) and a stream past the
    /// limit (the same error a listen past the limit gets, with its data).
    fn error(self) -> ErrorObject {
        let message = match self {
            Self::Forbidden(why) | Self::Ambiguous(why) => why,
            Self::NotFound => "Not found: the MCP endpoint is /mcp",
            Self::OtherUser => {
                "Forbidden: this connection comes from another local user than the host's"
            }
            Self::SessionFull => {
                "Too many connections: this session holds its share of the host's connections; reuse one, or close one first"
            }
            Self::Unauthorized => "Unauthorized: a valid bearer token is required",
            Self::MethodNotAllowed { get: false } => {
                "Method not allowed: this endpoint takes POST, and DELETE with an Mcp-Session-Id to end that MCP session"
            }
            Self::MethodNotAllowed { get: true } => {
                "Method not allowed: this endpoint takes POST, GET with Accept: text/event-stream, and DELETE with an Mcp-Session-Id to end that MCP session"
            }
            Self::UnknownSession => return mcp::session_not_found(),
            Self::TooManyStreams(limit) => return mcp::too_many_streams(limit),
            Self::UnsupportedMediaType => {
                "Unsupported media type: Content-Type must be application/json"
            }
            Self::NotAcceptable => "Not acceptable: the response is application/json",
            Self::PayloadTooLarge => "Payload too large: the body exceeds the host's limit",
            Self::ParsedTooLarge => {
                "Payload too large: the body's JSON would take more memory to hold than the host allows"
            }
            Self::BodyTimeout => "Request timeout: the body did not arrive in time",
            Self::BadBody => "Bad request: the body could not be read",
        };
        ErrorObject::new(code::INVALID_REQUEST, message)
    }

    pub(crate) fn into_response(self) -> Response<ResponseBody> {
        let mut body = Vec::with_capacity(128);
        jsonrpc::write_error(&mut body, None, &self.error());
        let (status, closes) = self.status();
        let mut response = json(status, body);
        if closes {
            let close = HeaderValue::from_static("close");
            response.headers_mut().insert(header::CONNECTION, close);
        }
        let (name, value) = match self {
            Self::Unauthorized => (header::WWW_AUTHENTICATE, "Bearer error=\"invalid_token\""),
            Self::MethodNotAllowed { get: true } => (header::ALLOW, "GET, POST, DELETE"),
            Self::MethodNotAllowed { get: false } => (header::ALLOW, "POST, DELETE"),
            _ => return response,
        };
        let value = HeaderValue::from_static(value);
        response.headers_mut().insert(name, value);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rejection has its status and closes the connection or not, and
    /// 401/405 have their extra headers.
    #[test]
    fn rejection_table() {
        // The rejection, its status, and whether it closes the connection.
        let rows = [
            (Rejection::Forbidden("x"), 403, true),
            (Rejection::OtherUser, 403, true),
            (Rejection::SessionFull, 429, true),
            (Rejection::Ambiguous("x"), 400, true),
            (Rejection::NotFound, 404, true),
            (Rejection::Unauthorized, 401, true),
            (Rejection::MethodNotAllowed { get: false }, 405, false),
            (Rejection::MethodNotAllowed { get: true }, 405, false),
            (Rejection::TooManyStreams(4), 409, false),
            (Rejection::UnknownSession, 404, false),
            (Rejection::UnsupportedMediaType, 415, false),
            (Rejection::NotAcceptable, 406, false),
            (Rejection::PayloadTooLarge, 413, false),
            (Rejection::ParsedTooLarge, 413, false),
            (Rejection::BadBody, 400, false),
            (Rejection::BodyTimeout, 408, false),
        ];
        for (rejection, status, closes) in rows {
            let response = rejection.into_response();
            assert_eq!(response.status().as_u16(), status, "{rejection:?}");
            assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
            let close = response.headers().get(header::CONNECTION);
            assert_eq!(close.is_some(), closes, "{rejection:?}");
            assert!(close.is_none_or(|value| value == "close"));
        }
        let r = Rejection::Unauthorized.into_response();
        assert_eq!(
            r.headers()[header::WWW_AUTHENTICATE],
            "Bearer error=\"invalid_token\""
        );
        let r = Rejection::MethodNotAllowed { get: false }.into_response();
        assert_eq!(r.headers()[header::ALLOW], "POST, DELETE");
        let r = Rejection::MethodNotAllowed { get: true }.into_response();
        assert_eq!(r.headers()[header::ALLOW], "GET, POST, DELETE");
    }
}
