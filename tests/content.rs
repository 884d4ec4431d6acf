//! Every content block a tool result can carry, over real HTTP, in each
//! revision: the exact JSON each one gets, the fallbacks older revisions
//! get, and refusals that carry blocks too.

mod support;

use std::sync::Arc;

use embacle_tool_host::content::{Annotations, ContentBlock, EmbeddedResource, ResourceLink, Role};
use embacle_tool_host::{Tool, ToolHostConfig, ToolOutcome, ToolSurface};
use serde_json::{json, Value};
use support::*;

/// Bytes that exercise every base64 remainder and the high bit.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\xff";
const WAV: &[u8] = b"RIFF\x24\x00\x00\x00WAVE";

/// One tool per kind of result.
struct Blocks(Arc<[Tool]>);

impl Blocks {
    fn new() -> Arc<Self> {
        let schema = json!({"type": "object", "additionalProperties": false});
        let tools = [
            "image",
            "audio",
            "link",
            "resources",
            "mixed",
            "refused_with_image",
        ]
        .map(|name| Tool::new(name, format!("returns {name}"), schema.clone()).unwrap());
        Arc::new(Self(tools.into()))
    }
}

fn link() -> ResourceLink {
    ResourceLink::new("file:///tmp/report.pdf", "report.pdf")
        .title("Report")
        .mime_type("application/pdf")
        .size(2048)
        .description("the quarterly report")
}

impl ToolSurface for Blocks {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.0)
    }

    async fn call(&self, name: &str, _arguments: &Value) -> ToolOutcome {
        match name {
            "image" => ToolOutcome::image(PNG, "image/png"),
            "audio" => ToolOutcome::audio(WAV, "audio/wav"),
            "link" => ToolOutcome::builder()
                .block(ContentBlock::resource_link(link()))
                .build(),
            "resources" => ToolOutcome::builder()
                .block(ContentBlock::resource(
                    EmbeddedResource::text("test://notes.md", "# Notes").mime_type("text/markdown"),
                ))
                .block(ContentBlock::resource(
                    EmbeddedResource::blob("test://blob.bin", PNG)
                        .mime_type("application/octet-stream"),
                ))
                .build(),
            "mixed" => ToolOutcome::builder()
                .text("summary")
                .block(
                    ContentBlock::image(PNG, "image/png").with_annotations(
                        Annotations::new()
                            .audience([Role::User])
                            .priority(0.5)
                            .last_modified("2026-12-03T10:00:00Z"),
                    ),
                )
                .block(ContentBlock::resource_link(ResourceLink::new(
                    "test://r", "r",
                )))
                .json(json!({"rows": 2}))
                .build(),
            "refused_with_image" => ToolOutcome::builder()
                .text("the image is too large; a thumbnail follows")
                .block(ContentBlock::image(PNG, "image/png"))
                .refused(),
            _ => ToolOutcome::failed("unexpected tool"),
        }
    }
}

/// The result of calling `tool` in `version` (a legacy call with the
/// version header, or a 2026-07-28 request).
async fn result(fixture: &Fixture<Blocks>, version: &str, tool: &str) -> Value {
    let response = if version == MODERN {
        fixture.modern(&modern_call(1, tool, json!({}))).await
    } else {
        fixture
            .with_version(version, call_body(1, tool, json!({})))
            .await
    };
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["result"].clone()
}

fn b64(bytes: &[u8]) -> &'static str {
    match bytes {
        PNG => "iVBORw0KGgoA/w==",
        WAV => "UklGRiQAAABXQVZF",
        _ => unreachable!(),
    }
}

/// Image, audio and embedded resources look the same in every revision,
/// their bytes base64-encoded.
#[tokio::test]
async fn media_and_resources_in_every_revision() {
    let fixture = Fixture::serving(ToolHostConfig::default(), Blocks::new()).await;
    for version in ALL_VERSIONS {
        let image = result(&fixture, version, "image").await;
        assert_eq!(
            image["content"],
            json!([{"type": "image", "data": b64(PNG), "mimeType": "image/png"}]),
            "{version}"
        );
        let audio = result(&fixture, version, "audio").await;
        assert_eq!(
            audio["content"],
            json!([{"type": "audio", "data": b64(WAV), "mimeType": "audio/wav"}]),
            "{version}"
        );
        let resources = result(&fixture, version, "resources").await;
        assert_eq!(
            resources["content"],
            json!([
                {"type": "resource", "resource": {"uri": "test://notes.md", "mimeType": "text/markdown", "text": "# Notes"}},
                {"type": "resource", "resource": {"uri": "test://blob.bin", "mimeType": "application/octet-stream", "blob": b64(PNG)}},
            ]),
            "{version}"
        );
        assert!(image.get("isError").is_none() && image.get("structuredContent").is_none());
    }
}

/// A resource link is a block from 2025-06-18 on, and a text fallback
/// carrying every field before.
#[tokio::test]
async fn resource_link_per_revision() {
    let fixture = Fixture::serving(ToolHostConfig::default(), Blocks::new()).await;
    let block = json!({"type": "resource_link", "uri": "file:///tmp/report.pdf", "name": "report.pdf",
        "title": "Report", "description": "the quarterly report", "mimeType": "application/pdf", "size": 2048});
    for version in [MODERN, "2025-11-25", "2025-06-18"] {
        assert_eq!(
            result(&fixture, version, "link").await["content"],
            json!([block]),
            "{version}"
        );
    }
    assert_eq!(
        result(&fixture, "2025-03-26", "link").await["content"],
        json!([{"type": "text", "text": "Resource link: report.pdf <file:///tmp/report.pdf>\nTitle: Report\nMIME type: application/pdf\nSize: 2048 bytes\nthe quarterly report"}])
    );
}

/// Mixed blocks keep their order and annotations; `lastModified`, resource
/// links and `structuredContent` fall back in 2025-03-26; the JSON is
/// served twice where the revision has `structuredContent`.
#[tokio::test]
async fn mixed_blocks_keep_order_and_annotations() {
    let fixture = Fixture::serving(ToolHostConfig::default(), Blocks::new()).await;
    let expected = |annotations: Value, link: Value| {
        json!({
            "content": [
                {"type": "text", "text": "summary"},
                {"type": "image", "data": b64(PNG), "mimeType": "image/png", "annotations": annotations},
                link,
                {"type": "text", "text": "{\"rows\":2}"},
            ],
            "structuredContent": {"rows": 2},
        })
    };
    let full =
        json!({"audience": ["user"], "priority": 0.5, "lastModified": "2026-12-03T10:00:00Z"});
    let link = json!({"type": "resource_link", "uri": "test://r", "name": "r"});
    for version in ["2025-11-25", "2025-06-18"] {
        assert_eq!(
            result(&fixture, version, "mixed").await,
            expected(full.clone(), link.clone())
        );
    }
    let mut modern = result(&fixture, MODERN, "mixed").await;
    for key in ["resultType", "_meta"] {
        modern.as_object_mut().unwrap().remove(key).expect(key);
    }
    assert_eq!(modern, expected(full, link));
    // 2025-03-26 defines no structuredContent: the JSON's text block says it.
    let mut oldest = expected(
        json!({"audience": ["user"], "priority": 0.5}),
        json!({"type": "text", "text": "Resource link: r <test://r>"}),
    );
    oldest.as_object_mut().unwrap().remove("structuredContent");
    assert_eq!(result(&fixture, "2025-03-26", "mixed").await, oldest);
    // A 2025-03-26 client sends no version header at all: the same answer.
    let headerless = fixture.call(1, "mixed", json!({})).await.json()["result"].clone();
    assert_eq!(headerless, oldest);
}

/// A refusal carries its blocks too, flagged `isError`, and counts as served.
#[tokio::test]
async fn refusal_with_blocks() {
    let fixture = Fixture::serving(ToolHostConfig::default(), Blocks::new()).await;
    for version in ALL_VERSIONS {
        let refused = result(&fixture, version, "refused_with_image").await;
        assert_eq!(refused["isError"], true, "{version}");
        assert_eq!(
            refused["content"],
            json!([
                {"type": "text", "text": "the image is too large; a thumbnail follows"},
                {"type": "image", "data": b64(PNG), "mimeType": "image/png"},
            ])
        );
    }
    assert_eq!(fixture.session().calls_served(), 4);
}
