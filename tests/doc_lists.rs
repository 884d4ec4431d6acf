//! Lists of names in the docs, checked against the code: a doc that names
//! the fields of a type must name each of them, and only them, so the list
//! cannot drift when the code moves.
//!
//! - README.md's OpenTelemetry table lists every field of `Observation`.
//! - CHANGELOG.md's "public API by module" names every public name of the
//!   crate root and of each public module, as `src/lib.rs` has them.
//! - CHANGELOG.md's `ErrorKind` paragraph names every variant.
//! - README.md's observer section names every `Outcome`.
//! - README.md's Dependencies table names every runtime dependency, with
//!   the features Cargo.toml turns on, and says how many there are.
//! - README.md's agent table has a test behind every row: each row is one
//!   an agent test observes (`support::agents::observe` and its kin), or
//!   one named here with the reason no test can; and every row a test
//!   observes is in the table.
//! - Every name README.md or CHANGELOG.md gives as a `ToolHostConfig`
//!   field (`ToolHostConfig::name`, CHANGELOG.md's list of the fields it
//!   gained, the names in README.md's security model) and every term of
//!   the memory bound in its docs is one of its fields. No doc lists every
//!   field: the struct's own docs are that list.

use std::path::Path;

/// A file of this package, as text.
fn read(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text of the item that starts with `head` in `source`, to its
/// closing brace at the start of a line.
fn item<'a>(source: &'a str, head: &str) -> &'a str {
    let start = source.find(head).unwrap_or_else(|| panic!("no {head}"));
    let body = &source[start..];
    &body[..body.find("\n}\n").expect("the item ends")]
}

/// The backticked spans of `text`, in order.
fn backticked(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// The `pub` fields of the struct `name` in `source`, in order.
fn pub_fields(source: &str, name: &str) -> Vec<String> {
    item(source, &format!("pub struct {name}"))
        .lines()
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
            backticked(cell).map(str::to_owned).collect::<Vec<_>>()
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

/// The names `src/lib.rs` makes public: at the root (`pub use` outside a
/// module) and in each `pub mod NAME { pub use … }`, by module (`""` for
/// the root), each list sorted.
fn public_names(lib: &str) -> Vec<(String, Vec<String>)> {
    let mut modules: Vec<(String, Vec<String>)> = vec![(String::new(), Vec::new())];
    let mut statement = String::new();
    for line in lib.lines() {
        let trimmed = line.trim();
        if let Some(name) = trimmed
            .strip_prefix("pub mod ")
            .and_then(|r| r.strip_suffix(" {"))
        {
            modules.push((name.to_owned(), Vec::new()));
            continue;
        }
        if trimmed == "}" && !line.starts_with(' ') {
            modules.push((String::new(), Vec::new()));
            continue;
        }
        if trimmed.starts_with("pub use ") || !statement.is_empty() {
            statement.push_str(trimmed);
            if !trimmed.ends_with(';') {
                continue;
            }
            let body = statement
                .trim_start_matches("pub use ")
                .trim_end_matches(';');
            let names = match body.split_once('{') {
                Some((_, inner)) => inner.trim_end_matches('}'),
                None => body.rsplit("::").next().unwrap_or_default(),
            };
            let names = names
                .split(',')
                .map(|name| name.trim().to_owned())
                .filter(|name| !name.is_empty());
            modules.last_mut().unwrap().1.extend(names);
            statement.clear();
        }
    }
    let mut merged: Vec<(String, Vec<String>)> = Vec::new();
    for (module, names) in modules {
        match merged.iter_mut().find(|(m, _)| *m == module) {
            Some((_, all)) => all.extend(names),
            None => merged.push((module, names)),
        }
    }
    for (_, names) in &mut merged {
        names.sort();
    }
    merged.sort();
    merged
}

/// The same, as CHANGELOG.md's "public API by module" lists them.
fn changelog_names(changelog: &str) -> Vec<(String, Vec<String>)> {
    let start = changelog
        .find("**The public API by module.**")
        .expect("the public API paragraph");
    let paragraph = &changelog[start..];
    let paragraph = &paragraph[..paragraph.find("\n- ").unwrap_or(paragraph.len())];
    let ticked = |text: &str| -> Vec<String> { backticked(text).map(str::to_owned).collect() };
    let root_start = paragraph.find("needs:").expect("the root's list") + "needs:".len();
    let root_end = paragraph.find("The rest moved").expect("the modules' list");
    let mut lists = vec![(String::new(), ticked(&paragraph[root_start..root_end]))];
    let modules = &paragraph[root_end..paragraph.find("Change the `use`").unwrap()];
    for part in modules.split(')').filter(|part| part.contains('(')) {
        let (head, inner) = part.split_once('(').unwrap();
        let module = ticked(head).pop().expect("a module's name before its list");
        let names = ticked(inner.split_once(':').map_or(inner, |(_, names)| names));
        lists.push((module, names));
    }
    for (_, names) in &mut lists {
        names.sort();
    }
    lists.sort();
    lists
}

#[test]
fn the_changelog_names_every_public_name() {
    let code = public_names(&read("src/lib.rs"));
    assert!(code.len() >= 5 && code[0].1.len() >= 10, "{code:?}");
    assert_eq!(changelog_names(&read("CHANGELOG.md")), code);
}

/// The variants of the enum `name` in `source`: its lines that are a
/// capitalized name, alone or opening fields.
fn variants(source: &str, name: &str) -> Vec<String> {
    let mut found: Vec<String> = item(source, &format!("pub enum {name} {{"))
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|line| line.starts_with(|c: char| c.is_ascii_uppercase()))
        .filter_map(|line| line.split([',', ' ', '{']).next().map(str::to_owned))
        .collect();
    found.sort();
    found
}

/// The backticked words of `text` that are a capitalized name, or that
/// name one as `Type::Name`.
fn capitalized_names(text: &str) -> Vec<String> {
    let mut found: Vec<String> = backticked(text)
        .flat_map(|ticked| ticked.rsplit("::").next())
        .map(|name| name.split([' ', '{']).next().unwrap_or_default().to_owned())
        .filter(|name| {
            name.starts_with(|c: char| c.is_ascii_uppercase())
                && name.chars().all(|c| c.is_ascii_alphanumeric())
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The text of `markdown` from `start` to the next line that begins with
/// `until`.
fn section<'a>(markdown: &'a str, start: &str, until: &str) -> &'a str {
    let from = markdown
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?}"));
    let rest = &markdown[from + start.len()..];
    &rest[..rest.find(until).unwrap_or(rest.len())]
}

#[test]
fn the_changelog_names_every_error_kind() {
    let code = variants(&read("src/error.rs"), "ErrorKind");
    assert!(code.len() >= 9, "{code:?}");
    let changelog = read("CHANGELOG.md");
    let paragraph = section(&changelog, "**`Error::kind()` and `ErrorKind`**", "\n- ");
    let mut listed = capitalized_names(paragraph);
    listed.retain(|name| name != "ErrorKind");
    assert_eq!(listed, code);
}

#[test]
fn the_readme_names_every_outcome() {
    let code = variants(&read("src/observer.rs"), "Outcome");
    assert!(code.len() >= 9, "{code:?}");
    let readme = read("README.md");
    // What an answered request came to, then what a refused one is.
    let answered = section(&readme, "and what it came to:", "A W3C");
    let refused = section(&readme, "- **Refusals too.**", ":");
    let mut listed = capitalized_names(&format!("{answered} {refused}"));
    listed.sort();
    assert_eq!(listed, code);
}

#[test]
fn the_readme_names_every_runtime_dependency_and_its_features() {
    let manifest = read("Cargo.toml");
    let dependencies = section(&manifest, "[dependencies]\n", "\n[");
    let mut code: Vec<(String, Vec<String>)> = dependencies
        .lines()
        .filter_map(|line| {
            let (name, spec) = line.split_once(" = ")?;
            let features = spec
                .split_once("features = [")
                .map(|(_, list)| list.split(']').next().unwrap_or_default())
                .unwrap_or_default();
            let features = features
                .split(',')
                .map(|f| f.trim().trim_matches('"').to_owned())
                .filter(|f| !f.is_empty())
                .collect();
            Some((name.trim().to_owned(), features))
        })
        .collect();
    code.sort();
    let readme = read("README.md");
    let table = section(&readme, "## Dependencies\n", "\nNo proc-macro");
    let mut listed: Vec<(String, Vec<String>)> = table
        .lines()
        .filter(|row| row.starts_with("| `"))
        .map(|row| {
            let cell = row.split('|').nth(1).unwrap_or_default();
            let mut ticked = backticked(cell).map(str::to_owned);
            let name = ticked.next().unwrap_or_default();
            (name, ticked.collect())
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed, code,
        "README's Dependencies table against Cargo.toml"
    );
    let words = [
        "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine",
    ];
    let count = format!("{} runtime dependencies", words[code.len() - 1]);
    assert!(table.contains(&count), "README says {count:?}");
}

/// The agent table's rows no test observes, and why: what each agent test
/// gives its agent, which fails the test when wrong.
const ROWS_GIVEN_NOT_OBSERVED: [(&str, &str); 1] = [(
    "command",
    "the command line each agent test starts its agent with",
)];

/// The first cells of README.md's agent table.
fn agent_rows(readme: &str) -> Vec<String> {
    readme
        .lines()
        .skip_while(|line| !line.starts_with("| | Copilot CLI |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|row| {
            row.split(" | ")
                .next()
                .unwrap()
                .trim_start_matches("| ")
                .to_owned()
        })
        .collect()
}

/// The rows the tests observe: the second argument of every `observe(`,
/// `readme_cell(` and `observe_…(` call whose first argument is not a
/// literal row, and every `let row = "…"`, in `tests/` and
/// `tests/support/`.
fn observed_rows() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut rows = Vec::new();
    for dir in [root.clone(), root.join("support")] {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("doc_lists.rs") {
                continue;
            }
            let source = std::fs::read_to_string(&path).unwrap();
            for head in ["observe(", "readme_cell(", "let row = "] {
                for (at, _) in source.match_indices(head) {
                    let rest = &source[at + head.len()..];
                    // `observe(AGENT, "ROW", …)`: the literal after the first comma.
                    let rest = match head {
                        "let row = " => rest,
                        _ => match rest.split_once(',') {
                            Some((_, after)) => after,
                            None => continue,
                        },
                    };
                    let rest = rest.trim_start();
                    if let Some(literal) = rest.strip_prefix('"') {
                        let row = &literal[..literal.find('"').unwrap()];
                        rows.push(row.to_owned());
                    }
                }
            }
        }
    }
    rows.sort();
    rows.dedup();
    rows
}

#[test]
fn every_row_of_the_agent_table_is_observed_or_given() {
    let table = agent_rows(&read("README.md"));
    assert!(table.len() >= 15, "{table:?}");
    let observed = observed_rows();
    for row in &table {
        let seen = observed.iter().any(|o| row.starts_with(o.as_str()));
        let given = ROWS_GIVEN_NOT_OBSERVED.iter().any(|(g, _)| row == g);
        assert!(
            seen != given,
            "README's agent table row {row:?}: observed by a test: {seen}; named as given: {given} (exactly one must hold)"
        );
    }
    for row in &observed {
        assert!(
            table.iter().any(|t| t.starts_with(row.as_str())),
            "a test observes the row {row:?}, which README's agent table lacks: {table:?}"
        );
    }
}

/// Whether `word` is a snake_case name (`max_batch_len`, not
/// `tests/memory.rs`, `Error` or `the`).
fn is_snake_name(word: &str) -> bool {
    word.contains('_') && word.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

/// The backticked snake_case names in `text`, in order.
fn snake_names(text: &str) -> Vec<String> {
    backticked(text)
        .filter(|name| is_snake_name(name))
        .map(str::to_owned)
        .collect()
}

/// Every name the docs give as a `ToolHostConfig` field is one (see the
/// module doc), so renaming a field fails here until the docs follow.
#[test]
fn the_docs_name_only_real_config_fields() {
    let config = read("src/config.rs");
    let fields = pub_fields(&config, "ToolHostConfig");
    assert!(fields.len() >= 20, "{fields:?}");
    let (readme, changelog) = (read("README.md"), read("CHANGELOG.md"));
    let mut named = Vec::new();
    // `ToolHostConfig::name` in either file (rustdoc checks src/'s links).
    for text in [&readme, &changelog] {
        let paths = backticked(text).filter_map(|span| span.strip_prefix("ToolHostConfig::"));
        named.extend(paths.map(str::to_owned));
    }
    // CHANGELOG.md's list of the fields a pre-release checkout lacked.
    let gained = section(&changelog, "`ToolHostConfig` gained public fields (", ")");
    named.extend(snake_names(gained));
    // The memory bound's terms in `ToolHostConfig`'s docs.
    let bound = section(&config, "/// ```text", "/// ```");
    named.extend(
        bound
            .split_whitespace()
            .filter(|w| is_snake_name(w))
            .map(str::to_owned),
    );
    assert!(named.len() >= 15, "the lists were not found: {named:?}");
    let unknown: Vec<_> = named.iter().filter(|name| !fields.contains(name)).collect();
    assert!(
        unknown.is_empty(),
        "not fields of ToolHostConfig: {unknown:?}"
    );
    // README's security model names each limit it relies on: every
    // snake_case name there is a config field or a function of the crate.
    let model = section(&readme, "## Security model", "\n## ");
    let sources: String = ["src/session/agent_config.rs", "src/session/mcp_servers.rs"]
        .map(read)
        .concat();
    let not_code: Vec<_> = snake_names(model)
        .into_iter()
        .filter(|name| name != "inet_diag") // Linux's socket-diagnostics interface
        .filter(|name| !fields.contains(name) && !sources.contains(&format!("fn {name}(")))
        .collect();
    assert!(
        not_code.is_empty(),
        "README's security model names {not_code:?}"
    );
}
