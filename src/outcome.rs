//! What a tool call ends in: success, refusal, or failure.

use std::fmt;

use serde_json::Value;

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

    /// Writes the `tools/call` result object for a success or a refusal.
    /// `any_structured` allows a non-object `structuredContent` (2026-07-28).
    /// Returns `Err(message)` for a failure, which the caller turns into a
    /// JSON-RPC error.
    pub(crate) fn write_result(&self, out: &mut Vec<u8>, any_structured: bool) -> Result<(), &str> {
        let (text, json, is_error) = match &self.kind {
            OutcomeKind::Success { text, json } => (text.as_deref(), json.as_ref(), false),
            OutcomeKind::Refused { reason, details } => {
                (Some(reason.as_str()), details.as_ref(), true)
            }
            OutcomeKind::Failed { message } => return Err(message),
        };
        out.extend_from_slice(b"{\"content\":[");
        let mut first = true;
        let mut block = |out: &mut Vec<u8>, text: &dyn Fn(&mut Vec<u8>)| {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
            text(out);
            out.push(b'}');
        };
        if let Some(text) = text {
            block(out, &|out| write_json_str(out, text));
        }
        if let Some(json) = json {
            // The text block carries the JSON as a JSON string: render the
            // value compactly, then quote that rendering.
            let compact = json.to_string();
            block(out, &|out| write_json_str(out, &compact));
        }
        out.push(b']');
        if let Some(json) = json.filter(|j| any_structured || j.is_object()) {
            out.extend_from_slice(b",\"structuredContent\":");
            write_json(out, json);
        }
        if is_error {
            out.extend_from_slice(b",\"isError\":true");
        }
        out.push(b'}');
        Ok(())
    }
}

/// Appends a value as compact JSON; writing a `Value` to a `Vec` cannot fail.
pub(crate) fn write_json(out: &mut Vec<u8>, value: &Value) {
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Appends a string as a JSON string literal, without copying it into a
/// `Value` first.
pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *out, text);
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

    fn result(outcome: &ToolOutcome) -> Value {
        let mut out = Vec::new();
        outcome
            .write_result(&mut out, false)
            .expect("not a failure");
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
            assert_eq!(result(&outcome), expected, "{outcome:?}");
        }
    }

    /// In 2026-07-28 a non-object JSON result is structuredContent too.
    #[test]
    fn modern_structured_content_may_be_any_value() {
        let mut out = Vec::new();
        ToolOutcome::json(json!([1, 2]))
            .write_result(&mut out, true)
            .unwrap();
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["structuredContent"], json!([1, 2]));
    }

    /// A failure renders no result; its message goes to the JSON-RPC error.
    #[test]
    fn failure_has_no_result() {
        let mut out = Vec::new();
        assert_eq!(
            ToolOutcome::failed("db down").write_result(&mut out, true),
            Err("db down")
        );
        assert!(out.is_empty());
    }
}
