//! `x-mcp-header`: tool arguments mirrored into `Mcp-Param-{Name}` headers
//! (MCP 2026-07-28, Streamable HTTP, "Custom Headers from Tool Parameters").
//!
//! A tool's `inputSchema` may mark a property with `"x-mcp-header": "Name"`.
//! A modern client then sends that argument's value a second time, as the
//! header `Mcp-Param-Name`, so that load balancers and gateways can route on
//! it without parsing the body. A server that does read the body **must**
//! check that the two agree; otherwise a gateway and the tool would act on
//! different values. This module does both halves:
//!
//! - [`bindings`], at [`Tool::new`](crate::Tool::new): finds every
//!   annotation and refuses a schema that breaks the spec's constraints.
//!   Clients *must* drop such a tool silently from the model's view, so a
//!   host that served it would see its tool vanish; refusing it at build
//!   time turns that into an error the embedder sees.
//! - [`check`], on every modern `tools/call`: each bound argument present
//!   (and not `null`) in `arguments` needs exactly one header whose decoded
//!   value spells it; an absent argument needs no header, and must have
//!   none. Any failure is 400 `-32020`.
//!
//! The constraints, as the spec gives them: the name is a non-empty HTTP
//! token (RFC 9110 §5.6.2), unique ignoring case within the schema; the
//! property's `type` is `"string"`, `"integer"` or `"boolean"` (never
//! `"number"`, nor a list of types); and the property is reached from the
//! root through `properties` keys alone — an annotation under `items`,
//! `oneOf`, `$defs` or any other keyword makes the tool invalid.
//!
//! Values compare in their string forms: a string as is, a boolean as
//! `true`/`false`, and a number numerically (`42` and `42.0` agree, as the
//! spec suggests). The `=?base64?…?=` form is decoded first, exactly as for
//! `Mcp-Name`.

use serde_json::{Map, Value};

use crate::jsonrpc::ErrorObject;
use crate::protocol::era::{decode_header_value, header_mismatch, ParamHeaders};
use crate::trace_context::is_token;

/// How deep a schema may nest before [`bindings`] gives up on it, so a
/// schema built in code cannot exhaust the stack (serde_json's parser
/// stops at the same depth).
const MAX_SCHEMA_DEPTH: usize = 128;

/// One annotated argument: its header and where its value lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderBinding {
    /// The `{Name}` of `Mcp-Param-{Name}`, as the schema spells it.
    name: Box<str>,
    /// The chain of `properties` keys from the schema root to the argument.
    path: Box<[Box<str>]>,
}

/// Finds the `x-mcp-header` annotations of an `inputSchema`, or says which
/// constraint one of them breaks.
pub(crate) fn bindings(schema: &Value) -> Result<Box<[HeaderBinding]>, String> {
    let mut found: Vec<HeaderBinding> = Vec::new();
    walk(schema, &mut Vec::new(), true, 0, &mut found)?;
    for (i, binding) in found.iter().enumerate() {
        if found[..i]
            .iter()
            .any(|earlier| earlier.name.eq_ignore_ascii_case(&binding.name))
        {
            return Err(format!(
                "x-mcp-header {:?} is used twice (names are compared ignoring case)",
                binding.name
            ));
        }
    }
    Ok(found.into_boxed_slice())
}

/// Visits `node`; `reachable` says whether it was reached from the root
/// through `properties` keys alone, and `path` is that chain.
fn walk(
    node: &Value,
    path: &mut Vec<Box<str>>,
    reachable: bool,
    depth: usize,
    found: &mut Vec<HeaderBinding>,
) -> Result<(), String> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "inputSchema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    let Value::Object(keywords) = node else {
        return Ok(());
    };
    if let Some(annotation) = keywords.get("x-mcp-header") {
        found.push(binding(annotation, keywords, path, reachable)?);
    }
    for (keyword, child) in keywords {
        if keyword == "properties" {
            for (name, property) in child.as_object().into_iter().flatten() {
                path.push(name.as_str().into());
                let walked = walk(property, path, reachable, depth + 1, found);
                path.pop();
                walked?;
            }
        } else {
            for schema in subschemas(keyword, child) {
                walk(schema, path, false, depth + 1, found)?;
            }
        }
    }
    Ok(())
}

/// The schemas that `child`, the value of `keyword` (anything but
/// `properties`), holds. Only `properties` keeps a node reachable.
fn subschemas<'a>(keyword: &str, child: &'a Value) -> Vec<&'a Value> {
    match keyword {
        // Maps from names (or patterns) to schemas.
        "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => child
            .as_object()
            .into_iter()
            .flat_map(Map::values)
            .collect(),
        // A schema, or a list of schemas.
        "items" | "prefixItems" | "additionalItems" | "allOf" | "anyOf" | "oneOf" => match child {
            Value::Array(schemas) => schemas.iter().collect(),
            schema => vec![schema],
        },
        "additionalProperties"
        | "unevaluatedProperties"
        | "unevaluatedItems"
        | "contains"
        | "propertyNames"
        | "not"
        | "if"
        | "then"
        | "else"
        | "contentSchema" => vec![child],
        // Data (`const`, `enum`, `default`, `examples`) and keywords that
        // hold no schema: an "x-mcp-header" key there is data.
        _ => Vec::new(),
    }
}

/// Checks one annotation against the spec's constraints.
fn binding(
    annotation: &Value,
    keywords: &Map<String, Value>,
    path: &[Box<str>],
    reachable: bool,
) -> Result<HeaderBinding, String> {
    let Some(name) = annotation.as_str().filter(|name| is_token(name.as_bytes())) else {
        return Err(format!(
            "x-mcp-header must be a non-empty HTTP token (letters, digits and !#$%&'*+-.^_`|~), not {annotation}"
        ));
    };
    if !reachable || path.is_empty() {
        return Err(format!(
            "x-mcp-header {name:?} must be on a property reached from the schema root through `properties` alone"
        ));
    }
    let primitive = keywords
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| matches!(t, "string" | "integer" | "boolean"));
    if !primitive {
        return Err(format!(
            "x-mcp-header {name:?} is on property {}, whose type must be \"string\", \"integer\" or \"boolean\"",
            path.join(".")
        ));
    }
    Ok(HeaderBinding {
        name: name.into(),
        path: path.into(),
    })
}

/// Checks a modern `tools/call`'s `Mcp-Param-*` headers against its
/// `arguments` (see the module doc).
pub(crate) fn check(
    bindings: &[HeaderBinding],
    arguments: &Value,
    headers: ParamHeaders<'_>,
) -> Result<(), ErrorObject> {
    for binding in bindings {
        let value = binding
            .path
            .iter()
            .try_fold(arguments, |node, key| node.get(&**key))
            .filter(|value| !value.is_null());
        let mut sent = headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(&binding.name))
            .map(|(_, raw)| *raw);
        let problem = match (value, sent.next(), sent.next()) {
            (None, None, _) => continue,
            (_, Some(_), Some(_)) => "appears more than once",
            (None, Some(_), None) => "is present but its argument is not",
            (Some(_), None, _) => "is missing",
            (Some(value), Some(raw), None) => match decode_header_value(raw) {
                None => "is not a valid header value",
                Some(decoded) if spells(&decoded, value) => continue,
                Some(_) => "differs from the request body",
            },
        };
        return Err(header_mismatch(
            &format!("Mcp-Param-{}", binding.name),
            problem,
        ));
    }
    Ok(())
}

/// Whether a decoded header value is the string form of `value`.
fn spells(header: &[u8], value: &Value) -> bool {
    match value {
        Value::String(text) => header == text.as_bytes(),
        Value::Bool(true) => header == b"true",
        Value::Bool(false) => header == b"false",
        Value::Number(number) => {
            let Some(text) = std::str::from_utf8(header).ok() else {
                return false;
            };
            if let (Some(a), Ok(b)) = (number.as_i64(), text.parse::<i64>()) {
                return a == b;
            }
            if let (Some(a), Ok(b)) = (number.as_u64(), text.parse::<u64>()) {
                return a == b;
            }
            matches!(
                (number.as_f64(), text.parse::<f64>()),
                (Some(a), Ok(b)) if a.is_finite() && a == b
            )
        }
        Value::Null | Value::Array(_) | Value::Object(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::code;
    use serde_json::json;

    fn schema(region: Value) -> Value {
        json!({"type": "object", "properties": {"region": region, "query": {"type": "string"}}})
    }

    /// Valid annotations are found, with their property paths, nested too.
    #[test]
    fn finds_annotations() {
        let found = bindings(&json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "limits": {"type": "object", "properties": {
                    "rows": {"type": "integer", "x-mcp-header": "Rows"},
                }},
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
                "x-mcp-header": {"type": "string"},
            },
            "default": {"x-mcp-header": "not an annotation"},
        }))
        .unwrap();
        let found: Vec<(&str, String)> =
            found.iter().map(|b| (&*b.name, b.path.join("."))).collect();
        assert_eq!(
            found,
            [
                ("Dry-Run", "dry".to_owned()),
                ("Rows", "limits.rows".to_owned()),
                ("Region", "region".to_owned()),
            ]
        );
        assert!(bindings(&json!({"type": "object"})).unwrap().is_empty());
    }

    /// Every constraint of the spec, broken once: each is refused, naming
    /// what is wrong.
    #[test]
    fn refuses_what_clients_would_drop() {
        let rows = [
            (
                schema(json!({"type": "string", "x-mcp-header": ""})),
                "token",
            ),
            (
                schema(json!({"type": "string", "x-mcp-header": "Re gion"})),
                "token",
            ),
            (
                schema(json!({"type": "string", "x-mcp-header": "Región"})),
                "token",
            ),
            (
                schema(json!({"type": "string", "x-mcp-header": "a\r\nb"})),
                "token",
            ),
            (
                schema(json!({"type": "string", "x-mcp-header": 7})),
                "token",
            ),
            (
                schema(json!({"type": "number", "x-mcp-header": "Region"})),
                "type",
            ),
            (
                schema(json!({"type": "object", "x-mcp-header": "Region"})),
                "type",
            ),
            (
                schema(json!({"type": ["string", "null"], "x-mcp-header": "Region"})),
                "type",
            ),
            (schema(json!({"x-mcp-header": "Region"})), "type"),
            (
                json!({"type": "object", "properties": {
                    "a": {"type": "string", "x-mcp-header": "Same"},
                    "b": {"type": "string", "x-mcp-header": "sAME"},
                }}),
                "twice",
            ),
            (
                json!({"type": "object", "properties": {"list": {"type": "array",
                    "items": {"type": "string", "x-mcp-header": "Item"}}}}),
                "reached",
            ),
            (
                json!({"type": "object", "oneOf": [{"properties": {
                    "a": {"type": "string", "x-mcp-header": "A"}}}]}),
                "reached",
            ),
            (
                json!({"type": "object", "$defs": {"a": {"type": "string", "x-mcp-header": "A"}},
                    "properties": {"a": {"$ref": "#/$defs/a"}}}),
                "reached",
            ),
            (json!({"type": "object", "x-mcp-header": "Root"}), "reached"),
        ];
        for (schema, why) in rows {
            let error = bindings(&schema).unwrap_err();
            assert!(error.contains(why), "{schema}: {error}");
        }
        let mut deep = json!({"type": "string", "x-mcp-header": "Deep"});
        for _ in 0..200 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        assert!(bindings(&deep).unwrap_err().contains("deeper"));
    }

    fn bound() -> Box<[HeaderBinding]> {
        bindings(&json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "rows": {"type": "integer", "x-mcp-header": "Rows"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        }}))
        .unwrap()
    }

    /// The request table: what must match, what may be absent, and every
    /// way a header can fail (each a -32020 naming the header).
    #[test]
    fn request_table() {
        let b = bound();
        let ok: [(Value, ParamHeaders<'_>); 9] = [
            (json!({}), &[]),
            (json!({"region": null}), &[]),
            (json!({"region": "us-west1"}), &[("region", b"us-west1")]),
            (
                json!({"region": "Hello"}),
                &[("region", b"=?base64?SGVsbG8=?=")],
            ),
            (
                json!({"region": "Hello, 世界"}),
                &[("region", b"=?base64?SGVsbG8sIOS4lueVjA==?=")],
            ),
            // without the full sentinel a value is literal
            (
                json!({"region": "=?base64?SGVsbG8="}),
                &[("region", b"=?base64?SGVsbG8=")],
            ),
            (json!({"rows": 42}), &[("rows", b"42")]),
            (json!({"rows": 42}), &[("rows", b"42.0")]),
            (
                json!({"dry": false, "region": "x"}),
                &[("dry", b"false"), ("region", b"x"), ("other", b"ignored")],
            ),
        ];
        for (arguments, headers) in ok {
            assert_eq!(check(&b, &arguments, headers), Ok(()), "{arguments}");
        }
        let bad: [(Value, ParamHeaders<'_>, &str); 9] = [
            (json!({"region": "x"}), &[], "Mcp-Param-Region is missing"),
            (json!({}), &[("region", b"x")], "present but its argument"),
            (json!({"region": "x"}), &[("region", b"y")], "differs"),
            (
                json!({"region": "x"}),
                &[("region", b"x"), ("region", b"x")],
                "more than once",
            ),
            (
                json!({"region": "Hello"}),
                &[("region", b"=?base64?SGVsbG8?=")],
                "not a valid",
            ),
            (
                json!({"region": "Hello"}),
                &[("region", b"=?base64?SGVs!!!bG8=?=")],
                "not a valid",
            ),
            (
                json!({"region": "é"}),
                &[("region", "é".as_bytes())],
                "not a valid",
            ),
            (json!({"dry": true}), &[("dry", b"True")], "differs"),
            (json!({"region": ["x"]}), &[("region", b"x")], "differs"),
        ];
        for (arguments, headers, problem) in bad {
            let error = check(&b, &arguments, headers).unwrap_err();
            assert_eq!(error.code, code::HEADER_MISMATCH);
            assert!(
                error.message.contains(problem),
                "{arguments}: {}",
                error.message
            );
        }
    }
}
