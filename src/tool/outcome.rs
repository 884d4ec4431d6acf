//! What a tool call ends in: success, refusal, or failure.

use std::fmt;

use serde_json::Value;

use crate::jsonrpc::JsonWriter;
use crate::protocol::Era;
use crate::tool::content::ContentBlock;

/// How one tool call ended.
///
/// There are three outcomes, because MCP gives a host two different ways to
/// say "no" and they mean different things to the model:
///
/// | outcome | on the wire | who reads it |
/// |---|---|---|
/// | **success** ([`text`](Self::text), [`json`](Self::json), [`image`](Self::image), [`audio`](Self::audio), or [`builder`](Self::builder) for anything else) | a `tools/call` result | the model |
/// | **refused** ([`refused`](Self::refused), or [`builder`](Self::builder) and [`OutcomeBuilder::refused`]) | a result with `isError: true` and the reason as text | the model, which can adapt: fix its arguments, try another tool, tell the user |
/// | **failed** ([`failed`](Self::failed)) | a JSON-RPC error, code `-32603` | the agent, not the model: the host could not run the tool |
///
/// One rule builds them: a result of one block has a shorthand
/// (`text`, `json`, `image`, `audio`, `refused`); anything else is
/// [`builder`](Self::builder).
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
/// client shows to the model, and as `structuredContent` where the revision
/// defines it for the value: from 2025-06-18 when it is a JSON object (the
/// only shape allowed before 2026-07-28), and in 2026-07-28 whatever it is.
/// A value set with [`OutcomeBuilder::structured`] alone, which has no text
/// block of its own, gets one in a revision that cannot carry it, so the
/// model never loses it.
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
    /// A result: a success, or with `is_error` a refusal.
    Result {
        content: Blocks,
        structured: Option<Value>,
        /// Whether a text block already says what `structured` holds.
        mirrored: bool,
        is_error: bool,
    },
    /// A failure, with its message.
    Failed(String),
}

impl ToolOutcome {
    /// Success with a text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::builder().text(text).build()
    }

    /// Success with a JSON result (see "JSON results" above).
    pub fn json(json: Value) -> Self {
        Self::builder().json(json).build()
    }

    /// Success with one image: its bytes and MIME type (`image/png`, …).
    pub fn image(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::builder()
            .block(ContentBlock::image(data, mime_type))
            .build()
    }

    /// Success with one audio block: its bytes and MIME type (`audio/wav`, …).
    pub fn audio(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::builder()
            .block(ContentBlock::audio(data, mime_type))
            .build()
    }

    /// A builder for a result of several blocks, a success or a refusal.
    ///
    /// ```
    /// use embacle_tool_host::ToolOutcome;
    /// use embacle_tool_host::content::{ContentBlock, EmbeddedResource, ResourceLink};
    /// use serde_json::json;
    ///
    /// let report = ToolOutcome::builder()
    ///     .text("3 files changed")
    ///     .block(ContentBlock::resource(EmbeddedResource::text("file:///tmp/diff.patch", "--- a\n+++ b\n")))
    ///     .block(ContentBlock::resource_link(ResourceLink::new("file:///tmp/log.txt", "log.txt")))
    ///     .json(json!({"changed": 3}))
    ///     .build();
    /// assert!(report.is_success());
    ///
    /// let too_big = ToolOutcome::builder()
    ///     .text("the image is over 10 MB; here is a thumbnail")
    ///     .block(ContentBlock::image(vec![0x89, b'P', b'N', b'G'], "image/png"))
    ///     .refused();
    /// assert!(too_big.is_refused());
    /// ```
    pub fn builder() -> OutcomeBuilder {
        OutcomeBuilder::default()
    }

    /// The tool ran and declined; the model reads `reason`.
    pub fn refused(reason: impl Into<String>) -> Self {
        Self::builder().text(reason).refused()
    }

    /// The host could not run the tool. The client receives a JSON-RPC
    /// internal error (`-32603`) whose message carries `message`, and no
    /// content for the model.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            kind: OutcomeKind::Failed(message.into()),
        }
    }

    /// True for a success: every constructor but the refusals and
    /// [`failed`](Self::failed).
    pub fn is_success(&self) -> bool {
        !self.is_refused() && !self.is_failed()
    }

    /// True for [`refused`](Self::refused) and [`OutcomeBuilder::refused`].
    pub fn is_refused(&self) -> bool {
        matches!(self.kind, OutcomeKind::Result { is_error: true, .. })
    }

    /// True for [`failed`](Self::failed).
    pub fn is_failed(&self) -> bool {
        matches!(self.kind, OutcomeKind::Failed(_))
    }

    /// The content blocks of a success or a refusal, in order (empty for a
    /// failure). A JSON value appears here as its compact text block.
    pub fn content(&self) -> &[ContentBlock] {
        match &self.kind {
            OutcomeKind::Result { content, .. } => content.as_slice(),
            OutcomeKind::Failed(_) => &[],
        }
    }

    /// The JSON value of a success or a refusal, if it has one.
    pub fn structured_content(&self) -> Option<&Value> {
        match &self.kind {
            OutcomeKind::Result { structured, .. } => structured.as_ref(),
            OutcomeKind::Failed(_) => None,
        }
    }

    /// The message of a [`failed`](Self::failed) outcome, which the host
    /// answers with a JSON-RPC error instead of a result.
    pub(crate) fn failure_message(&self) -> Option<&str> {
        match &self.kind {
            OutcomeKind::Failed(message) => Some(message),
            OutcomeKind::Result { .. } => None,
        }
    }

    /// Whether this is a success whose result in revision `era`, which
    /// defines `structuredContent`, would carry none.
    pub(crate) fn lacks_structured_content(&self, era: Era) -> bool {
        self.is_success()
            && era.since_2025_06_18()
            && !self
                .structured_content()
                .is_some_and(|json| era.carries_structured(json))
    }

    /// Writes the members of the `tools/call` result object of a success or
    /// a refusal (`"content":[…]`, then `structuredContent` and `isError`
    /// when they apply), without the braces. A failure has no result and
    /// writes nothing: ask [`failure_message`](Self::failure_message) first.
    pub(crate) fn write_members(&self, result: &mut JsonWriter<'_>, era: Era) {
        let OutcomeKind::Result {
            content,
            structured,
            mirrored,
            is_error,
        } = &self.kind
        else {
            debug_assert!(false, "a failure has no result members");
            return;
        };
        let carried = structured
            .as_ref()
            .filter(|json| era.carries_structured(json));
        let mut blocks = result.array_in("content");
        for block in content.as_slice() {
            block.write(blocks.item(), era);
        }
        if let Some(json) = structured
            .as_ref()
            .filter(|_| carried.is_none() && !mirrored)
        {
            // The revision cannot carry the value, and no block says it.
            ContentBlock::text(json.to_string()).write(blocks.item(), era);
        }
        blocks.end();
        if let Some(json) = carried {
            result.value("structuredContent", json);
        }
        if *is_error {
            result.raw("isError", b"true");
        }
    }
}

/// Builds a [`ToolOutcome`] of several content blocks; see
/// [`ToolOutcome::builder`]. Blocks are served in the order they were
/// added.
#[derive(Debug, Default)]
#[must_use = "a builder does nothing until `build` or `refused`"]
pub struct OutcomeBuilder {
    content: Blocks,
    structured: Option<Value>,
    mirrored: bool,
}

/// A result's blocks. Most results have exactly one, kept inline, so a
/// plain `ToolOutcome::text` allocates nothing beyond its `String`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Blocks {
    #[default]
    None,
    One(ContentBlock),
    /// Two or more, in order.
    Many(Vec<ContentBlock>),
}

impl Blocks {
    fn push(&mut self, block: ContentBlock) {
        *self = match std::mem::take(self) {
            Self::None => Self::One(block),
            Self::One(first) => Self::Many(vec![first, block]),
            Self::Many(mut blocks) => {
                blocks.push(block);
                Self::Many(blocks)
            }
        };
    }

    fn as_slice(&self) -> &[ContentBlock] {
        match self {
            Self::None => &[],
            Self::One(block) => std::slice::from_ref(block),
            Self::Many(blocks) => blocks,
        }
    }
}

impl OutcomeBuilder {
    /// Adds a text block.
    pub fn text(self, text: impl Into<String>) -> Self {
        self.block(ContentBlock::text(text))
    }

    /// Adds a block: `ContentBlock::image`, `::audio`, `::resource`,
    /// `::resource_link`, or one with annotations. (An image alone is
    /// [`ToolOutcome::image`]; text and JSON have the shorthands
    /// [`text`](Self::text) and [`json`](Self::json).)
    pub fn block(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Adds `json` as a compact JSON text block, and makes it the result's
    /// `structuredContent` (see "JSON results" on [`ToolOutcome`]); a
    /// later call replaces the structured value, not the text.
    pub fn json(mut self, json: Value) -> Self {
        self.content.push(ContentBlock::text(json.to_string()));
        self.structured = Some(json);
        self.mirrored = true;
        self
    }

    /// Sets `structuredContent` alone, with no text block, for when a block
    /// already says the same in words. MCP asks for the JSON as text too,
    /// for clients that read only `content`: prefer [`json`](Self::json)
    /// otherwise. Where the revision cannot carry the value (see "JSON
    /// results" on [`ToolOutcome`]) it is sent as a compact JSON text block
    /// after the others instead.
    pub fn structured(mut self, json: Value) -> Self {
        self.structured = Some(json);
        self.mirrored = false;
        self
    }

    /// A success.
    pub fn build(self) -> ToolOutcome {
        self.finish(false)
    }

    /// A refusal (`isError: true`): the tool ran and declined, and the
    /// blocks say why.
    pub fn refused(self) -> ToolOutcome {
        self.finish(true)
    }

    fn finish(self, is_error: bool) -> ToolOutcome {
        ToolOutcome {
            kind: OutcomeKind::Result {
                content: self.content,
                structured: self.structured,
                mirrored: self.mirrored,
                is_error,
            },
        }
    }
}

impl fmt::Debug for ToolOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            OutcomeKind::Result {
                content,
                structured,
                is_error,
                ..
            } => f
                .debug_struct(if *is_error { "Refused" } else { "Success" })
                .field("content", &content.as_slice())
                .field("structured", structured)
                .finish(),
            OutcomeKind::Failed(message) => {
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
        let mut out = Vec::new();
        let mut result = JsonWriter::object(&mut out);
        outcome.write_members(&mut result, era);
        result.end();
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
                ToolOutcome::builder()
                    .text("two")
                    .json(json!({"n": 2}))
                    .build(),
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
                ToolOutcome::builder()
                    .text("quota")
                    .json(json!({"resetsIn": 60}))
                    .refused(),
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

    /// A builder's blocks keep their order, a refusal carries them all, and
    /// the accessors show what will be served.
    #[test]
    fn builder_results() {
        let mixed = ToolOutcome::builder()
            .text("t")
            .block(ContentBlock::image(vec![1u8, 2, 3], "image/png"))
            .json(json!({"k": 1}))
            .block(ContentBlock::audio(vec![4u8], "audio/wav"))
            .build();
        assert_eq!(
            result(&mixed, LEGACY),
            json!({
                "content": [
                    {"type": "text", "text": "t"},
                    {"type": "image", "data": "AQID", "mimeType": "image/png"},
                    {"type": "text", "text": "{\"k\":1}"},
                    {"type": "audio", "data": "BA==", "mimeType": "audio/wav"},
                ],
                "structuredContent": {"k": 1},
            })
        );
        assert_eq!(mixed.content().len(), 4);
        assert_eq!(mixed.content()[0].as_text(), Some("t"));
        assert_eq!(mixed.structured_content(), Some(&json!({"k": 1})));
        let refused = ToolOutcome::builder()
            .text("too big")
            .block(ContentBlock::image(vec![0u8], "image/png"))
            .refused();
        assert!(refused.is_refused() && !refused.is_success());
        assert_eq!(
            result(&refused, MODERN),
            json!({
                "content": [
                    {"type": "text", "text": "too big"},
                    {"type": "image", "data": "AA==", "mimeType": "image/png"},
                ],
                "isError": true,
            })
        );
        let empty = ToolOutcome::builder().build();
        assert_eq!(result(&empty, LEGACY), json!({"content": []}));
        // A value no block mirrors: carried where the revision can, else
        // sent as text, never lost.
        let structured_only = ToolOutcome::builder().structured(json!([1])).build();
        assert_eq!(
            result(&structured_only, LEGACY),
            json!({"content": [{"type": "text", "text": "[1]"}]})
        );
        assert_eq!(
            result(&structured_only, MODERN),
            json!({"content": [], "structuredContent": [1]})
        );
        let described = ToolOutcome::builder()
            .text("one row")
            .structured(json!({"rows": 1}))
            .build();
        assert_eq!(
            result(&described, LEGACY),
            json!({"content": [{"type": "text", "text": "one row"}], "structuredContent": {"rows": 1}})
        );
        assert_eq!(
            result(&described, Era::Legacy("2025-03-26")),
            json!({"content": [{"type": "text", "text": "one row"}, {"type": "text", "text": "{\"rows\":1}"}]})
        );
        // A mirrored value is not repeated where it cannot be carried.
        assert_eq!(
            result(
                &ToolOutcome::json(json!({"a": 1})),
                Era::Legacy("2025-03-26")
            ),
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}]})
        );
        assert!(ToolOutcome::failed("x").content().is_empty());
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
