//! Arbitrary bytes as a program that builds a `ToolOutcome` — text, image,
//! audio, resource-link and embedded-resource blocks with annotations, a
//! JSON value, structured content, a refusal — rendered as the dispatcher
//! renders a call's result (`JsonWriter`) in every revision, and parsed
//! back: always one valid JSON value, the result's `isError` is the
//! refusal, each text block's text and each JSON value (`structuredContent`
//! where the revision has it) come back the very values that went in.
#![no_main]

use embacle_tool_host::bench_support::render_outcome;
use embacle_tool_host::content::{Annotations, ContentBlock, EmbeddedResource, ResourceLink, Role};
use embacle_tool_host::ToolOutcome;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const VERSIONS: [&str; 4] = ["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The input, read front to back; an exhausted input reads as zeros and
/// empty strings.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (first, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        *first
    }

    fn bytes(&mut self) -> Vec<u8> {
        let len = usize::from(self.byte()).min(self.0.len());
        let (taken, rest) = self.0.split_at(len);
        self.0 = rest;
        taken.to_vec()
    }

    fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }

    fn float(&mut self) -> f64 {
        let mut eight = [0u8; 8];
        eight.iter_mut().for_each(|b| *b = self.byte());
        f64::from_le_bytes(eight)
    }

    /// A JSON value: the next bytes' text when it is JSON, else that text
    /// as a string.
    fn json(&mut self) -> Value {
        let text = self.text();
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }

    fn annotations(&mut self) -> Annotations {
        let roles = [Role::User, Role::Assistant];
        let audience = (0..self.byte() % 3).map(|n| roles[usize::from(n) % 2]);
        let annotations = Annotations::new().audience(audience).priority(self.float());
        match self.byte() % 2 {
            0 => annotations,
            _ => annotations.last_modified(self.text()),
        }
    }

    fn block(&mut self) -> ContentBlock {
        let block = match self.byte() % 6 {
            0 => ContentBlock::text(self.text()),
            1 => ContentBlock::image(self.bytes(), self.text()),
            2 => ContentBlock::audio(self.bytes(), self.text()),
            3 => ContentBlock::resource_link(
                ResourceLink::new(self.text(), self.text())
                    .title(self.text())
                    .description(self.text())
                    .mime_type(self.text())
                    .size(u64::from(self.byte())),
            ),
            4 => ContentBlock::resource(EmbeddedResource::text(self.text(), self.text())),
            _ => ContentBlock::resource(EmbeddedResource::blob(self.text(), self.bytes()).mime_type(self.text())),
        };
        match self.byte() % 2 {
            0 => block,
            _ => block.with_annotations(self.annotations()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mut builder = ToolOutcome::builder();
    for _ in 0..input.byte() % 8 {
        builder = match input.byte() % 4 {
            0 => builder.text(input.text()),
            1 => builder.json(input.json()),
            2 => builder.structured(input.json()),
            _ => builder.block(input.block()),
        };
    }
    let outcome = match input.byte() % 2 {
        0 => builder.build(),
        _ => builder.refused(),
    };
    for version in VERSIONS {
        let rendered = render_outcome(&outcome, version).expect("a revision the host speaks");
        let response: Value = serde_json::from_slice(&rendered).unwrap_or_else(|e| {
            panic!("{version}: invalid JSON ({e}): {}", String::from_utf8_lossy(&rendered))
        });
        let result = &response["result"];
        assert_eq!(result["isError"] == Value::Bool(true), outcome.is_refused(), "{version}: {result}");
        let blocks = result["content"].as_array().expect("content is an array");
        for (sent, block) in outcome.content().iter().zip(blocks) {
            if let Some(text) = sent.as_text() {
                assert_eq!(block["text"].as_str(), Some(text), "{version}: {block}");
            }
        }
        let structured = result.get("structuredContent");
        if let Some(structured) = structured {
            assert_eq!(Some(structured), outcome.structured_content(), "{version}: {result}");
        }
        // A value the revision cannot carry, and no block of the outcome's
        // says, is one more text block: its JSON.
        match blocks.len() - outcome.content().len() {
            0 => {}
            1 => {
                assert!(structured.is_none(), "{version}: {result}");
                let text = blocks[blocks.len() - 1]["text"].as_str().expect("a text block");
                let said: Value = serde_json::from_str(text).expect("the value's JSON");
                assert_eq!(Some(&said), outcome.structured_content(), "{version}: {result}");
            }
            _ => panic!("{version}: blocks added to {result}"),
        }
        if version >= "2025-06-18" && outcome.structured_content().is_some_and(Value::is_object) {
            assert!(structured.is_some(), "{version}: structured content left out of {result}");
        }
    }
});
