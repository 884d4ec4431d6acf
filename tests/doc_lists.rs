//! Lists of names in the docs, checked against the code: a doc that names
//! the fields of a type must name each of them, and only them, so the list
//! cannot drift when the code moves.
//!
//! - README.md's OpenTelemetry table lists every field of `Observation`.

use std::path::Path;

/// A file of this package, as text.
fn read(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `pub` fields of the struct `name` in `source`, in order.
fn pub_fields(source: &str, name: &str) -> Vec<String> {
    let start = source
        .find(&format!("pub struct {name}"))
        .unwrap_or_else(|| panic!("no pub struct {name}"));
    let body = &source[start..];
    let body = &body[..body.find("\n}\n").expect("the struct ends")];
    body.lines()
        .filter_map(|line| line.trim().strip_prefix("pub "))
        .filter_map(|field| {
            field
                .split_once(':')
                .map(|(name, _)| name.trim().to_owned())
        })
        .collect()
}

/// The backticked names in the first column of the table that follows
/// `heading` in `markdown`, in order.
fn first_column(markdown: &str, heading: &str) -> Vec<String> {
    let start = markdown
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"));
    markdown[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2) // the header and its rule
        .flat_map(|row| {
            let cell = row.split('|').nth(1).unwrap_or_default();
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn the_opentelemetry_table_names_every_observation_field() {
    let mut fields = pub_fields(&read("src/observer.rs"), "Observation<'a>");
    let mut listed = first_column(
        &read("README.md"),
        "### Observability: the OpenTelemetry shape",
    );
    assert!(fields.len() >= 12, "{fields:?}");
    fields.sort();
    listed.sort();
    assert_eq!(
        listed, fields,
        "README's table against Observation's fields"
    );
}

/// The readers themselves: a field list and a table column.
#[test]
fn the_readers_read_what_they_should() {
    let source = "/// doc\npub struct Thing<'a> {\n    /// a\n    pub one: u8,\n    two: u8,\n    pub three: Option<&'a str>,\n}\n";
    assert_eq!(pub_fields(source, "Thing<'a>"), ["one", "three"]);
    let markdown = "## Table\n\ntext\n\n| Field | Meaning |\n|---|---|\n| `a` | x |\n| `b`, `c` | `not this` |\n\nafter\n";
    assert_eq!(first_column(markdown, "## Table"), ["a", "b", "c"]);
}
