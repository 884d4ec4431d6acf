//! What a tool call ends in: success, refusal, or failure.

use std::fmt;

use serde_json::Value;

use crate::era::Era;
use crate::json_out::{write_json, write_json_str};

/// How one tool call ended.
///
/// There are three outcomes, because MCP gives a host two different ways to
/// say "no" and they mean different things to the model:
///
/// | outcome | on the wire | who reads it |
/// |---|---|---|
/// | **success** ([`text`](Self::text), [`json`](Self::json), [`text_and_json`](Self::text_and_json)) | a `tools/call` result | the model |
/// | **refused** ([`refused`](Self::refused), [`refused_with`](Self::refused_with)) | a result with `isError: true` and the reason as text | the model, which can adapt: fix its arguments, try another tool, tell the user |
/// | **failed** ([`failed`](Self::failed)) | a JSON-RPC error, code `-32603` | the agent, not the model: the host could not run the tool |
///
/// A `Result<Value, E>` cannot say this: its `Err` would have to mean either
/// "the tool ran and declined" (a quota, a guard, a policy — information the
/// model should see) or "the tool could not run" (a fault the model should
/// not reason about). Putting both into one `Err` forces the host to guess.
/// [`StaticSurface`](crate::StaticSurface) makes the common choice for you:
/// its executor's `Err` becomes a refusal.
///
/// # JSON results
///
/// JSON is served twice: as a compact text block in `content`, which every
/// client shows to the model, and as `structuredContent` — in the legacy era
/// only when the value is a JSON object, the only shape `structuredContent`
/// may take before MCP 2026-07-28; in 2026-07-28, always.
///
/// # Examples
///
/// ```
/// use embacle_tool_host::ToolOutcome;
/// use serde_json::json;
///
/// let found = ToolOutcome::json(json!({"matches": 3}));
/// let quota = ToolOutcome::refused("daily search quota reached; try again tomorrow");
/// let broken = ToolOutcome::failed("the notes index is not loaded");
/// assert!(found.is_success() && quota.is_refused() && broken.is_failed());
/// ```
#[derive(Clone, PartialEq)]
pub struct ToolOutcome {
    pub(crate) kind: OutcomeKind,
}

#[derive(Clone, PartialEq)]
pub(crate) enum OutcomeKind {
    Success {
        text: Option<String>,
        json: Option<Value>,
    },
    Refused {
        reason: String,
        details: Option<Value>,
    },
    Failed {
        message: String,
    },
}

impl ToolOutcome {
    /// Success with a text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::success(Some(text.into()), None)
    }

    /// Success with a JSON result (see "JSON results" above).
    pub fn json(json: Value) -> Self {
        Self::success(None, Some(json))
    }

    /// Success with both: the text first, then the JSON.
    pub fn text_and_json(text: impl Into<String>, json: Value) -> Self {
        Self::success(Some(text.into()), Some(json))
    }

    fn success(text: Option<String>, json: Option<Value>) -> Self {
        Self {
            kind: OutcomeKind::Success { text, json },
        }
    }

    /// The tool ran and declined; the model reads `reason`.
    pub fn refused(reason: impl Into<String>) -> Self {
        Self {
            kind: OutcomeKind::Refused {
                reason: reason.into(),
                details: None,
            },
        }
    }

    /// A refusal with a structured payload besides the reason, such as when
    /// a quota resets. An object goes to `structuredContent`; any other
    /// value is added to `content` as compact JSON text.
    pub fn refused_with(reason: impl Into<String>, details: Value) -> Self {
        Self {
            kind: OutcomeKind::Refused {
                reason: reason.into(),
                details: Some(details),
            },
        }
    }

    /// The host could not run the tool. The client receives a JSON-RPC
    /// internal error (`-32603`) whose message carries `message`, and no
    /// content for the model.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            kind: OutcomeKind::Failed {
                message: message.into(),
            },
        }
    }

    /// True for [`text`](Self::text), [`json`](Self::json) and
    /// [`text_and_json`](Self::text_and_json).
    pub fn is_success(&self) -> bool {
        matches!(self.kind, OutcomeKind::Success { .. })
    }

    /// True for [`refused`](Self::refused) and [`refused_with`](Self::refused_with).
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, OutcomeKind::Refused { .. })
    }

    /// True for [`failed`](Self::failed).
    pub fn is_failed(&self) -> bool {
        matches!(self.kind, OutcomeKind::Failed { .. })
    }

    /// The message of a [`failed`](Self::failed) outcome, which the host
    /// answers with a JSON-RPC error instead of a result.
    pub(crate) fn failure_message(&self) -> Option<&str> {
        match &self.kind {
            OutcomeKind::Failed { message } => Some(message),
            OutcomeKind::Success { .. } | OutcomeKind::Refused { .. } => None,
        }
    }

    /// Writes the members of the `tools/call` result object of a success or
    /// a refusal (`"content":[…]`, then `structuredContent` and `isError`
    /// when they apply), without the braces. A failure has no result and
    /// writes nothing: ask [`failure_message`](Self::failure_message) first.
    pub(crate) fn write_members(&self, out: &mut Vec<u8>, era: Era) {
        let (text, json, is_error) = match &self.kind {
            OutcomeKind::Success { text, json } => (text.as_deref(), json.as_ref(), false),
            OutcomeKind::Refused { reason, details } => {
                (Some(reason.as_str()), details.as_ref(), true)
            }
            OutcomeKind::Failed { .. } => {
                debug_assert!(false, "a failure has no result members");
                return;
            }
        };
        out.extend_from_slice(b"\"content\":[");
        let text_block = |out: &mut Vec<u8>, text: &str| {
            out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
            write_json_str(out, text);
            out.push(b'}');
        };
        if let Some(text) = text {
            text_block(out, text);
        }
        if let Some(json) = json {
            if text.is_some() {
                out.push(b',');
            }
            // The text block carries the JSON as a JSON string: render the
            // value compactly, then quote that rendering.
            text_block(out, &json.to_string());
        }
        out.push(b']');
        if let Some(json) = json.filter(|j| j.is_object() || era.any_structured_content()) {
            out.extend_from_slice(b",\"structuredContent\":");
            write_json(out, json);
        }
        if is_error {
            out.extend_from_slice(b",\"isError\":true");
        }
    }
}

impl fmt::Debug for ToolOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            OutcomeKind::Success { text, json } => f
                .debug_struct("Success")
                .field("text", text)
                .field("json", json)
                .finish(),
            OutcomeKind::Refused { reason, details } => f
                .debug_struct("Refused")
                .field("reason", reason)
                .field("details", details)
                .finish(),
            OutcomeKind::Failed { message } => {
                f.debug_struct("Failed").field("message", message).finish()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LEGACY: Era = Era::Legacy("2025-11-25");
    const MODERN: Era = Era::Modern("2026-07-28");

    /// The result object `outcome` renders to in `era`.
    fn result(outcome: &ToolOutcome, era: Era) -> Value {
        assert_eq!(outcome.failure_message(), None);
        let mut out = vec![b'{'];
        outcome.write_members(&mut out, era);
        out.push(b'}');
        serde_json::from_slice(&out).expect("valid JSON")
    }

    /// Each outcome renders to the MCP result shape the crate documents.
    #[test]
    fn result_shapes() {
        let cases = [
            (
                ToolOutcome::text("hi \"there\""),
                json!({"content": [{"type": "text", "text": "hi \"there\""}]}),
            ),
            (
                ToolOutcome::json(json!({"a": [1, 2]})),
                json!({
                    "content": [{"type": "text", "text": "{\"a\":[1,2]}"}],
                    "structuredContent": {"a": [1, 2]},
                }),
            ),
            (
                ToolOutcome::json(json!([1, 2])),
                json!({"content": [{"type": "text", "text": "[1,2]"}]}),
            ),
            (
                ToolOutcome::text_and_json("two", json!({"n": 2})),
                json!({
                    "content": [
                        {"type": "text", "text": "two"},
                        {"type": "text", "text": "{\"n\":2}"},
                    ],
                    "structuredContent": {"n": 2},
                }),
            ),
            (
                ToolOutcome::refused("quota"),
                json!({"content": [{"type": "text", "text": "quota"}], "isError": true}),
            ),
            (
                ToolOutcome::refused_with("quota", json!({"resetsIn": 60})),
                json!({
                    "content": [
                        {"type": "text", "text": "quota"},
                        {"type": "text", "text": "{\"resetsIn\":60}"},
                    ],
                    "structuredContent": {"resetsIn": 60},
                    "isError": true,
                }),
            ),
        ];
        for (outcome, expected) in cases {
            assert_eq!(result(&outcome, LEGACY), expected, "{outcome:?}");
        }
    }

    /// In 2026-07-28 a non-object JSON result is structuredContent too.
    #[test]
    fn modern_structured_content_may_be_any_value() {
        let v = result(&ToolOutcome::json(json!([1, 2])), MODERN);
        assert_eq!(v["structuredContent"], json!([1, 2]));
    }

    /// A failure has no result; its message goes to the JSON-RPC error.
    #[test]
    fn failure_has_no_result() {
        assert_eq!(
            ToolOutcome::failed("db down").failure_message(),
            Some("db down")
        );
        assert_eq!(ToolOutcome::text("fine").failure_message(), None);
        assert_eq!(ToolOutcome::refused("no").failure_message(), None);
    }
}
