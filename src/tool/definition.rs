//! Tool descriptors: what `tools/list` tells the model about each tool.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{Error, ErrorKind};
use crate::jsonrpc::JsonWriter;
use crate::protocol::{param_headers, Era, HeaderBinding};

/// Longest tool name MCP allows (2025-11-25, "Tool names").
pub(crate) const MAX_NAME_CHARS: usize = 128;

/// One tool as the model sees it in `tools/list`.
///
/// A `Tool` is validated when it is built and immutable afterwards; it is
/// cheap to clone (one reference count), so a surface can hand out its list
/// on every request. Its JSON form is rendered once, when it is built, and
/// `tools/list` only concatenates those renderings.
///
/// # Validation
///
/// - The name must be 1–128 characters of `[A-Za-z0-9_.-]`, the set MCP
///   2025-11-25 gives. [`Tool::new`] refuses anything else with an error
///   ([`ErrorKind::InvalidTool`](crate::ErrorKind::InvalidTool)); a bad name never reaches the wire. Shorter
///   names without dots travel best: many model APIs cap tool names at 64
///   characters of `[A-Za-z0-9_-]`, and agents prefix them with the server
///   name.
/// - `input_schema` and `output_schema` must be JSON objects whose `"type"` is
///   `"object"` (MCP requires an object root before 2026-07-28). A tool
///   without parameters uses `{"type": "object", "additionalProperties": false}`.
/// - An `x-mcp-header` annotation in `input_schema` (MCP 2026-07-28: the
///   argument is mirrored into an `Mcp-Param-{Name}` header, so gateways can
///   route on it) must keep the spec's constraints: a non-empty HTTP token,
///   unique ignoring case; on a property of type `"string"`, `"integer"` or
///   `"boolean"`; reached from the root through `properties` keys alone.
///   Clients silently drop a tool that breaks them, so [`Tool::new`] refuses
///   it instead. The host checks that each such header agrees with its
///   argument on every 2026-07-28 call (400 `-32020` otherwise).
///
/// # Examples
///
/// ```
/// use embacle_tool_host::Tool;
/// use embacle_tool_host::content::ToolAnnotations;
/// use serde_json::json;
///
/// let tool = Tool::new(
///     "search_notes",
///     "Full-text search over the user's notes.",
///     json!({
///         "type": "object",
///         "properties": {"query": {"type": "string"}},
///         "required": ["query"],
///     }),
/// )?
/// .with_title("Search notes")
/// .with_annotations(ToolAnnotations {
///     read_only_hint: Some(true),
///     ..ToolAnnotations::default()
/// });
/// assert_eq!(tool.name(), "search_notes");
/// # Ok::<(), embacle_tool_host::Error>(())
/// ```
#[derive(Clone)]
pub struct Tool {
    inner: Arc<ToolInner>,
}

#[derive(Clone)]
struct ToolInner {
    name: String,
    title: Option<String>,
    description: String,
    input_schema: Value,
    output_schema: Option<Value>,
    annotations: Option<ToolAnnotations>,
    /// The arguments `inputSchema` marks with `x-mcp-header`.
    header_bindings: Box<[HeaderBinding]>,
    /// The tool's `tools/list` entry, kept in step with the fields above.
    rendered: Box<str>,
    /// The entry without `outputSchema`, for revisions that have no
    /// `structuredContent` (2025-03-26); `None` when the tool declares none.
    rendered_without_output: Option<Box<str>>,
}

/// Hints about a tool's behaviour, served as the tool's `annotations`.
///
/// Every field is optional; `None` leaves the client's default (MCP's
/// defaults: not read-only, destructive, not idempotent, open world). These
/// are *hints* for the client's UI and policy: a client must not trust them,
/// and the host does not enforce them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// A human-readable title (clients prefer [`Tool::with_title`]).
    pub title: Option<String>,
    /// The tool does not modify its environment.
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect.
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world of external entities.
    pub open_world_hint: Option<bool>,
}

impl Tool {
    /// Builds a tool from its name, description and input schema.
    ///
    /// # Errors
    ///
    /// Fails ([`ErrorKind::InvalidTool`](crate::ErrorKind::InvalidTool)) when the name is not 1–128
    /// characters of `[A-Za-z0-9_.-]`, the schema is not an object with
    /// `"type": "object"`, or an `x-mcp-header` annotation in it breaks a
    /// constraint (see "Validation" above).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Result<Self, Error> {
        let name = name.into();
        if !is_valid_name(&name) {
            return Err(
                ErrorKind::InvalidTool.error("name must be 1-128 characters of [A-Za-z0-9_.-]")
            );
        }
        check_object_schema(&input_schema, "inputSchema")?;
        let header_bindings = param_headers::bindings(&input_schema)
            .map_err(|why| ErrorKind::InvalidTool.error(format!("inputSchema: {why}")))?;
        let mut inner = ToolInner {
            name,
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: None,
            header_bindings,
            rendered: Box::from(""),
            rendered_without_output: None,
        };
        inner.render();
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Sets the display title (MCP 2025-06-18 and later; older clients
    /// ignore it).
    pub fn with_title(self, title: impl Into<String>) -> Self {
        self.modify(|inner| inner.title = Some(title.into()))
    }

    /// Declares the shape of the tool's structured result. A tool with an
    /// output schema should answer with JSON that conforms to it
    /// ([`ToolOutcome::json`](crate::ToolOutcome::json)); the host does not
    /// validate results against it.
    ///
    /// # Errors
    ///
    /// Fails ([`ErrorKind::InvalidTool`](crate::ErrorKind::InvalidTool)) unless the schema is an object with
    /// `"type": "object"`.
    pub fn with_output_schema(self, output_schema: Value) -> Result<Self, Error> {
        check_object_schema(&output_schema, "outputSchema")?;
        Ok(self.modify(|inner| inner.output_schema = Some(output_schema)))
    }

    /// Sets the behaviour hints.
    pub fn with_annotations(self, annotations: ToolAnnotations) -> Self {
        self.modify(|inner| inner.annotations = Some(annotations))
    }

    /// The tool's name, as `tools/call` must spell it.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The display title, if one was set.
    pub fn title(&self) -> Option<&str> {
        self.inner.title.as_deref()
    }

    /// The description the model reads.
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// The JSON Schema of the arguments.
    pub fn input_schema(&self) -> &Value {
        &self.inner.input_schema
    }

    /// The JSON Schema of the structured result, if one was set.
    pub fn output_schema(&self) -> Option<&Value> {
        self.inner.output_schema.as_ref()
    }

    /// The behaviour hints, if any were set.
    pub fn annotations(&self) -> Option<&ToolAnnotations> {
        self.inner.annotations.as_ref()
    }

    /// The tool's entry in a `tools/list` result, as JSON text.
    #[cfg(test)]
    pub(crate) fn rendered(&self) -> &str {
        &self.inner.rendered
    }

    /// The `tools/list` entry in revision `era`: without `outputSchema`
    /// where the revision cannot carry the `structuredContent` it promises
    /// (2025-03-26), so a client never sees a schema that the same
    /// session's results do not honour.
    pub(crate) fn rendered_for(&self, era: Era) -> &str {
        match &self.inner.rendered_without_output {
            Some(plain) if !era.since_2025_06_18() => plain,
            _ => &self.inner.rendered,
        }
    }

    /// The arguments mirrored into `Mcp-Param-*` headers.
    pub(crate) fn header_bindings(&self) -> &[HeaderBinding] {
        &self.inner.header_bindings
    }

    fn modify(self, change: impl FnOnce(&mut ToolInner)) -> Self {
        let mut inner = Arc::unwrap_or_clone(self.inner);
        change(&mut inner);
        inner.render();
        Self {
            inner: Arc::new(inner),
        }
    }
}

impl ToolInner {
    fn render(&mut self) {
        self.rendered = self.render_entry(true);
        self.rendered_without_output = self
            .output_schema
            .is_some()
            .then(|| self.render_entry(false));
    }

    fn render_entry(&self, with_output_schema: bool) -> Box<str> {
        let mut out = Vec::with_capacity(128);
        let mut entry = JsonWriter::object(&mut out);
        entry
            .str("name", &self.name)
            .opt_str("title", self.title.as_deref())
            .str("description", &self.description)
            .value("inputSchema", &self.input_schema);
        if let Some(schema) = self.output_schema.as_ref().filter(|_| with_output_schema) {
            entry.value("outputSchema", schema);
        }
        if let Some(a) = &self.annotations {
            // Inserted one by one: collecting the map from an iterator
            // compiles BTreeMap's sort-and-build, about 10 KB in a consumer.
            let mut map = serde_json::Map::new();
            let mut put = |key: &str, value: Option<Value>| {
                if let Some(value) = value {
                    map.insert(key.to_owned(), value);
                }
            };
            put("title", a.title.clone().map(Value::from));
            put("readOnlyHint", a.read_only_hint.map(Value::from));
            put("destructiveHint", a.destructive_hint.map(Value::from));
            put("idempotentHint", a.idempotent_hint.map(Value::from));
            put("openWorldHint", a.open_world_hint.map(Value::from));
            entry.value("annotations", &Value::Object(map));
        }
        entry.end();
        String::from_utf8(out)
            .expect("JSON is UTF-8")
            .into_boxed_str()
    }
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.inner.name)
            .field("title", &self.inner.title)
            .finish_non_exhaustive()
    }
}

/// The MCP 2025-11-25 tool-name rule: 1–128 characters of `[A-Za-z0-9_.-]`.
pub(crate) fn is_valid_name(name: &str) -> bool {
    (1..=MAX_NAME_CHARS).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn check_object_schema(schema: &Value, field: &str) -> Result<(), Error> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" && schema.is_object() => Ok(()),
        _ => Err(ErrorKind::InvalidTool.error(format!(
            "{field} must be a JSON object with \"type\": \"object\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object"})
    }

    /// The name rule accepts exactly the MCP character set and length.
    #[test]
    fn name_rule() {
        let long = "a".repeat(MAX_NAME_CHARS);
        for ok in ["a", "echo", "A-Z_0.9", long.as_str()] {
            assert!(Tool::new(ok, "", schema()).is_ok(), "{ok}");
        }
        let too_long = "a".repeat(MAX_NAME_CHARS + 1);
        for bad in [
            "",
            "has space",
            "comma,",
            "slash/",
            "é",
            "tab\t",
            too_long.as_str(),
        ] {
            let err = Tool::new(bad, "", schema()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidTool, "{bad}");
        }
    }

    /// An `x-mcp-header` that clients would drop is refused at build time,
    /// with the reason; a valid one is kept.
    #[test]
    fn header_annotations() {
        let bad = json!({"type": "object", "properties": {
            "n": {"type": "number", "x-mcp-header": "N"}}});
        let err = Tool::new("t", "", bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidTool);
        assert!(err.to_string().contains("x-mcp-header"), "{err}");
        let good = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"}}});
        assert_eq!(Tool::new("t", "", good).unwrap().header_bindings().len(), 1);
    }

    /// Schemas must be object-rooted.
    #[test]
    fn schema_rule() {
        for bad in [json!(null), json!({}), json!({"type": "string"}), json!([])] {
            assert_eq!(
                Tool::new("t", "", bad.clone()).unwrap_err().kind(),
                ErrorKind::InvalidTool
            );
            let tool = Tool::new("t", "", schema()).unwrap();
            assert_eq!(
                tool.with_output_schema(bad).unwrap_err().kind(),
                ErrorKind::InvalidTool
            );
        }
    }

    /// The rendering carries every set field, with MCP's member names, and
    /// stays in step with later `with_*` calls.
    #[test]
    fn rendering() {
        let tool = Tool::new("t", "d \"quoted\"", schema()).unwrap();
        let plain: Value = serde_json::from_str(tool.rendered()).unwrap();
        assert_eq!(
            plain,
            json!({"name": "t", "description": "d \"quoted\"", "inputSchema": {"type": "object"}})
        );
        let full = tool
            .clone()
            .with_title("T")
            .with_output_schema(json!({"type": "object", "properties": {}}))
            .unwrap()
            .with_annotations(ToolAnnotations {
                read_only_hint: Some(true),
                open_world_hint: Some(false),
                ..ToolAnnotations::default()
            });
        let old = Era::Legacy("2025-03-26");
        let without: Value = serde_json::from_str(full.rendered_for(old)).unwrap();
        for era in [
            Era::Legacy("2025-06-18"),
            Era::Legacy("2025-11-25"),
            Era::Modern("2026-07-28"),
        ] {
            assert_eq!(full.rendered_for(era), full.rendered());
        }
        assert_eq!(tool.rendered_for(old), tool.rendered());
        let full: Value = serde_json::from_str(full.rendered()).unwrap();
        let mut expected_without = full.clone();
        expected_without
            .as_object_mut()
            .unwrap()
            .remove("outputSchema");
        assert_eq!(
            without, expected_without,
            "2025-03-26 has no structured output"
        );
        assert_eq!(
            full,
            json!({
                "name": "t",
                "title": "T",
                "description": "d \"quoted\"",
                "inputSchema": {"type": "object"},
                "outputSchema": {"type": "object", "properties": {}},
                "annotations": {"readOnlyHint": true, "openWorldHint": false},
            })
        );
        // the original is untouched
        assert_eq!(
            serde_json::from_str::<Value>(tool.rendered()).unwrap(),
            plain
        );
    }
}
