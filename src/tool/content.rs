//! Content blocks: what a tool result shows the model, block by block.

use std::fmt;

use crate::jsonrpc::{write_json_str, JsonWriter};
use crate::protocol::Era;
use crate::util::base64;

/// One block of a tool result's `content`: text, an image, audio, a link to
/// a resource, or an embedded resource; each may carry [`Annotations`].
///
/// Image, audio and blob bytes are held raw and base64-encoded by the host
/// when the result is written. Every string is escaped on the way out, so
/// nothing a tool puts in a block can break the JSON around it.
///
/// # Revisions
///
/// Each MCP revision gets only the blocks it defines, and an older peer gets
/// a faithful text fallback instead of a block it cannot parse:
///
/// | block | 2025-03-26 | 2025-06-18 and later |
/// |---|---|---|
/// | text, image, audio, embedded resource | as is | as is |
/// | resource link | a text block: `Resource link: NAME <URI>`, then the MIME type, size and description when set, one per line | as is |
/// | annotation `lastModified` | left out (`audience` and `priority` kept) | as is |
///
/// Audio blocks exist since 2025-03-26, the oldest revision the host
/// serves, so they never need a fallback.
///
/// # Examples
///
/// ```
/// use embacle_tool_host::ToolOutcome;
/// use embacle_tool_host::content::{Annotations, ContentBlock, Role};
///
/// let png = vec![0x89, b'P', b'N', b'G'];
/// let chart = ContentBlock::image(png, "image/png")
///     .with_annotations(Annotations::new().audience([Role::User]).priority(0.8));
/// let outcome = ToolOutcome::builder().text("sales by month:").block(chart).build();
/// assert!(outcome.is_success());
/// ```
#[derive(Clone, PartialEq)]
pub struct ContentBlock {
    kind: BlockKind,
    // Boxed, like the large kinds below, so a plain text block stays small:
    // every result carries at least one block inline.
    annotations: Option<Box<Annotations>>,
}

#[derive(Clone, PartialEq)]
enum BlockKind {
    Text(String),
    Image { data: Vec<u8>, mime_type: String },
    Audio { data: Vec<u8>, mime_type: String },
    ResourceLink(Box<ResourceLink>),
    Resource(Box<EmbeddedResource>),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(BlockKind::Text(text.into()))
    }

    /// An image block: the image's bytes and MIME type (`image/png`, …).
    pub fn image(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::of(BlockKind::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// An audio block: the recording's bytes and MIME type (`audio/wav`, …).
    pub fn audio(data: impl Into<Vec<u8>>, mime_type: impl Into<String>) -> Self {
        Self::of(BlockKind::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        })
    }

    /// A link to a resource the client may fetch or show.
    pub fn resource_link(link: ResourceLink) -> Self {
        Self::of(BlockKind::ResourceLink(Box::new(link)))
    }

    /// A resource carried inside the result.
    pub fn resource(resource: EmbeddedResource) -> Self {
        Self::of(BlockKind::Resource(Box::new(resource)))
    }

    fn of(kind: BlockKind) -> Self {
        Self {
            kind,
            annotations: None,
        }
    }

    /// Sets the block's annotations (replacing any set before).
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(Box::new(annotations));
        self
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match &self.kind {
            BlockKind::Text(text) => Some(text),
            _ => None,
        }
    }

    /// Appends the block as JSON, in the shape `era` defines.
    pub(crate) fn write(&self, out: &mut Vec<u8>, era: Era) {
        // A text block (what nearly every result carries, and what a link
        // falls back to) opens with its type already rendered.
        let mut block = match &self.kind {
            BlockKind::Text(_) => JsonWriter::object_starting(out, TEXT_TYPE),
            BlockKind::ResourceLink(_) if !era.since_2025_06_18() => {
                JsonWriter::object_starting(out, TEXT_TYPE)
            }
            _ => JsonWriter::object(out),
        };
        match &self.kind {
            BlockKind::Text(text) => {
                block.str("text", text);
            }
            BlockKind::Image { data, mime_type } => {
                write_media(&mut block, "image", data, mime_type);
            }
            BlockKind::Audio { data, mime_type } => {
                write_media(&mut block, "audio", data, mime_type);
            }
            BlockKind::ResourceLink(link) if era.since_2025_06_18() => link.write(&mut block),
            BlockKind::ResourceLink(link) => {
                block.str("text", &link.fallback_text());
            }
            BlockKind::Resource(resource) => resource.write(&mut block),
        }
        if let Some(annotations) = &self.annotations {
            annotations.write(&mut block, era);
        }
        block.end();
    }
}

/// An image or audio block's members.
fn write_media(block: &mut JsonWriter<'_>, kind: &str, data: &[u8], mime_type: &str) {
    block.str("type", kind);
    write_base64(block.name("data"), data);
    block.str("mimeType", mime_type);
}

/// The first member of a text block.
const TEXT_TYPE: &str = r#""type":"text""#;

/// `data` as a JSON string of its standard base64.
fn write_base64(out: &mut Vec<u8>, data: &[u8]) {
    out.push(b'"');
    base64::encode_into(out, data);
    out.push(b'"');
}

/// A link to a resource: its URI and name, and what else the client may
/// want before fetching it. Since MCP 2025-06-18; see [`ContentBlock`] for
/// the fallback older peers get.
///
/// # Examples
///
/// ```
/// use embacle_tool_host::content::{ContentBlock, ResourceLink};
///
/// let report = ResourceLink::new("file:///tmp/report.pdf", "report.pdf")
///     .mime_type("application/pdf")
///     .description("the quarterly report, 12 pages");
/// let block = ContentBlock::resource_link(report);
/// # drop(block);
/// ```
#[derive(Clone, PartialEq)]
pub struct ResourceLink {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
    size: Option<u64>,
}

impl ResourceLink {
    /// A link to `uri`, named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }

    /// A display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the resource is.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The resource's MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The resource's size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    fn write(&self, block: &mut JsonWriter<'_>) {
        block
            .raw("type", b"\"resource_link\"")
            .str("uri", &self.uri)
            .str("name", &self.name)
            .opt_str("title", self.title.as_deref())
            .opt_str("description", self.description.as_deref())
            .opt_str("mimeType", self.mime_type.as_deref());
        if let Some(size) = self.size {
            block.raw("size", size.to_string().as_bytes());
        }
    }

    /// What a peer without resource links reads instead: every field the
    /// link has, as text, so the model loses nothing but the block type.
    fn fallback_text(&self) -> String {
        let mut text = format!("Resource link: {} <{}>", self.name, self.uri);
        if let Some(title) = &self.title {
            text.push_str(&format!("\nTitle: {title}"));
        }
        if let Some(mime_type) = &self.mime_type {
            text.push_str(&format!("\nMIME type: {mime_type}"));
        }
        if let Some(size) = self.size {
            text.push_str(&format!("\nSize: {size} bytes"));
        }
        if let Some(description) = &self.description {
            text.push_str(&format!("\n{description}"));
        }
        text
    }
}

impl fmt::Debug for ResourceLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceLink")
            .field("uri", &self.uri)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A resource carried inside a tool result: its URI, optional MIME type,
/// and its contents as text or as bytes (sent base64-encoded as `blob`).
///
/// # Examples
///
/// ```
/// use embacle_tool_host::content::{ContentBlock, EmbeddedResource};
///
/// let csv = EmbeddedResource::text("file:///tmp/sales.csv", "month,total\njan,12\n")
///     .mime_type("text/csv");
/// let block = ContentBlock::resource(csv);
/// # drop(block);
/// ```
#[derive(Clone, PartialEq)]
pub struct EmbeddedResource {
    uri: String,
    mime_type: Option<String>,
    contents: ResourceContents,
}

#[derive(Clone, PartialEq)]
enum ResourceContents {
    Text(String),
    Blob(Vec<u8>),
}

impl EmbeddedResource {
    /// A text resource.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self::of(uri.into(), ResourceContents::Text(text.into()))
    }

    /// A binary resource.
    pub fn blob(uri: impl Into<String>, data: impl Into<Vec<u8>>) -> Self {
        Self::of(uri.into(), ResourceContents::Blob(data.into()))
    }

    fn of(uri: String, contents: ResourceContents) -> Self {
        Self {
            uri,
            mime_type: None,
            contents,
        }
    }

    /// The resource's MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    fn write(&self, block: &mut JsonWriter<'_>) {
        block.raw("type", b"\"resource\"");
        let mut resource = block.object_in("resource");
        resource
            .str("uri", &self.uri)
            .opt_str("mimeType", self.mime_type.as_deref());
        match &self.contents {
            ResourceContents::Text(text) => resource.str("text", text),
            ResourceContents::Blob(data) => {
                write_base64(resource.name("blob"), data);
                &mut resource
            }
        };
        resource.end();
    }
}

impl fmt::Debug for EmbeddedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (kind, len) = match &self.contents {
            ResourceContents::Text(text) => ("text", text.len()),
            ResourceContents::Blob(data) => ("blob", data.len()),
        };
        f.debug_struct("EmbeddedResource")
            .field("uri", &self.uri)
            .field("mime_type", &self.mime_type)
            .field(kind, &format_args!("{len} bytes"))
            .finish()
    }
}

/// Who a block is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The human using the agent.
    User,
    /// The model.
    Assistant,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// Hints about a content block for the client: who it is for, how much it
/// matters, when it last changed. Clients may ignore them.
///
/// # Examples
///
/// ```
/// use embacle_tool_host::content::{Annotations, Role};
///
/// let for_the_user = Annotations::new()
///     .audience([Role::User])
///     .priority(0.9)
///     .last_modified("2026-12-03T10:00:00Z");
/// # drop(for_the_user);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotations {
    audience: Vec<Role>,
    priority: Option<f64>,
    last_modified: Option<String>,
}

impl Annotations {
    /// No hints.
    pub fn new() -> Self {
        Self::default()
    }

    /// Who the block is for (an empty list sends no `audience`).
    pub fn audience(mut self, audience: impl IntoIterator<Item = Role>) -> Self {
        self.audience = audience.into_iter().collect();
        self
    }

    /// How important the block is, from 0 (optional) to 1 (required).
    /// A value outside that range is clamped into it; NaN sends no
    /// priority.
    pub fn priority(mut self, priority: f64) -> Self {
        self.priority = (!priority.is_nan()).then(|| priority.clamp(0.0, 1.0));
        self
    }

    /// When the block's content last changed, as an ISO 8601 timestamp
    /// (`2026-12-03T10:00:00Z`). Sent as given; not in 2025-03-26.
    pub fn last_modified(mut self, timestamp: impl Into<String>) -> Self {
        self.last_modified = Some(timestamp.into());
        self
    }

    /// Writes the member `annotations` (nothing when no hint applies in
    /// `era`).
    fn write(&self, block: &mut JsonWriter<'_>, era: Era) {
        let last_modified = self
            .last_modified
            .as_deref()
            .filter(|_| era.since_2025_06_18());
        if self.audience.is_empty() && self.priority.is_none() && last_modified.is_none() {
            return;
        }
        let mut annotations = block.object_in("annotations");
        if !self.audience.is_empty() {
            let mut audience = annotations.array_in("audience");
            for role in &self.audience {
                write_json_str(audience.item(), role.as_str());
            }
            audience.end();
        }
        if let Some(priority) = self.priority {
            // Finite by construction, so serde_json renders a number.
            let _ = serde_json::to_writer(annotations.name("priority"), &priority);
        }
        annotations.opt_str("lastModified", last_modified);
        annotations.end();
    }
}

impl fmt::Debug for ContentBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match &self.kind {
            BlockKind::Text(_) => "Text",
            BlockKind::Image { .. } => "Image",
            BlockKind::Audio { .. } => "Audio",
            BlockKind::ResourceLink(_) => "ResourceLink",
            BlockKind::Resource(_) => "Resource",
        };
        let mut d = f.debug_struct(name);
        match &self.kind {
            BlockKind::Text(text) => d.field("text", text),
            BlockKind::Image { data, mime_type } | BlockKind::Audio { data, mime_type } => d
                .field("mime_type", mime_type)
                .field("data", &format_args!("{} bytes", data.len())),
            BlockKind::ResourceLink(link) => d.field("link", link),
            BlockKind::Resource(resource) => d.field("resource", resource),
        };
        if let Some(annotations) = &self.annotations {
            d.field("annotations", annotations);
        }
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const OLDEST: Era = Era::Legacy("2025-03-26");
    const JUNE: Era = Era::Legacy("2025-06-18");
    const MODERN: Era = Era::Modern("2026-07-28");

    fn rendered(block: &ContentBlock, era: Era) -> Value {
        let mut out = Vec::new();
        block.write(&mut out, era);
        serde_json::from_slice(&out).expect("valid JSON")
    }

    /// Every block renders to the shape the MCP schema gives it.
    #[test]
    fn block_shapes() {
        let cases = [
            (
                ContentBlock::text("a\"b"),
                json!({"type": "text", "text": "a\"b"}),
            ),
            (
                ContentBlock::image(&b"\x89PNG"[..], "image/png"),
                json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"}),
            ),
            (
                ContentBlock::audio(&b"RIFF!"[..], "audio/wav"),
                json!({"type": "audio", "data": "UklGRiE=", "mimeType": "audio/wav"}),
            ),
            (
                ContentBlock::resource_link(
                    ResourceLink::new("file:///r.pdf", "r.pdf")
                        .title("R")
                        .description("d")
                        .mime_type("application/pdf")
                        .size(12),
                ),
                json!({"type": "resource_link", "uri": "file:///r.pdf", "name": "r.pdf",
                       "title": "R", "description": "d", "mimeType": "application/pdf", "size": 12}),
            ),
            (
                ContentBlock::resource(
                    EmbeddedResource::text("test://t", "hi").mime_type("text/plain"),
                ),
                json!({"type": "resource", "resource": {"uri": "test://t", "mimeType": "text/plain", "text": "hi"}}),
            ),
            (
                ContentBlock::resource(EmbeddedResource::blob("test://b", vec![0u8, 255])),
                json!({"type": "resource", "resource": {"uri": "test://b", "blob": "AP8="}}),
            ),
        ];
        for (block, expected) in cases {
            assert_eq!(rendered(&block, JUNE), expected, "{block:?}");
            assert_eq!(rendered(&block, MODERN), expected, "{block:?}");
        }
    }

    /// 2025-03-26 reads a resource link as text, and no `lastModified`.
    #[test]
    fn oldest_revision_fallbacks() {
        let link = ContentBlock::resource_link(
            ResourceLink::new("file:///r.pdf", "r.pdf")
                .mime_type("application/pdf")
                .size(12)
                .description("the report"),
        );
        assert_eq!(
            rendered(&link, OLDEST),
            json!({"type": "text", "text":
                "Resource link: r.pdf <file:///r.pdf>\nMIME type: application/pdf\nSize: 12 bytes\nthe report"})
        );
        let annotated = ContentBlock::text("t").with_annotations(
            Annotations::new()
                .audience([Role::User, Role::Assistant])
                .priority(2.0)
                .last_modified("2026-12-03T10:00:00Z"),
        );
        assert_eq!(
            rendered(&annotated, JUNE)["annotations"],
            json!({"audience": ["user", "assistant"], "priority": 1.0, "lastModified": "2026-12-03T10:00:00Z"})
        );
        assert_eq!(
            rendered(&annotated, OLDEST)["annotations"],
            json!({"audience": ["user", "assistant"], "priority": 1.0})
        );
        // Only a lastModified: in 2025-03-26 nothing is left to annotate.
        let dated = ContentBlock::text("t").with_annotations(Annotations::new().last_modified("x"));
        assert_eq!(
            rendered(&dated, OLDEST),
            json!({"type": "text", "text": "t"})
        );
        let nan = ContentBlock::text("t").with_annotations(Annotations::new().priority(f64::NAN));
        assert_eq!(rendered(&nan, MODERN), json!({"type": "text", "text": "t"}));
    }
}
