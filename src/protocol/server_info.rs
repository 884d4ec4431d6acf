//! What the server says about itself, rendered once per host: its name and
//! instructions, and the members every 2026-07-28 result ends with.

use crate::protocol::era::META_SERVER_INFO;

/// How long a modern client may cache a `tools/list` or `server/discover`
/// result: not at all, because a surface may withdraw a tool at any moment.
const TTL_MS: u64 = 0;

/// The server's self-description, shared by every session of a host.
#[derive(Debug, Clone)]
pub(crate) struct ServerInfo {
    /// `serverInfo.name` and the ACP `mcpServers[].name`.
    pub(crate) name: String,
    /// Served at `initialize` and `server/discover`.
    pub(crate) instructions: Option<String>,
    /// `{"name":…,"version":…}`.
    pub(crate) implementation: String,
    /// What closes a modern listing result (`tools/list`,
    /// `server/discover`): `resultType`, `ttlMs`, `cacheScope` and the
    /// serverInfo `_meta`, each after a comma. The scope is private because
    /// the list depends on the bearer.
    pub(crate) modern_listing_members: String,
    /// What closes any other modern result: `resultType` and `_meta`.
    pub(crate) modern_result_members: String,
}

impl ServerInfo {
    pub(crate) fn new(name: String, instructions: Option<String>) -> Self {
        let implementation =
            serde_json::json!({"name": name, "version": env!("CARGO_PKG_VERSION")}).to_string();
        let meta = format!(",\"_meta\":{{\"{META_SERVER_INFO}\":{implementation}}}");
        let modern_result_members = format!(",\"resultType\":\"complete\"{meta}");
        let modern_listing_members = format!(
            ",\"resultType\":\"complete\",\"ttlMs\":{TTL_MS},\"cacheScope\":\"private\"{meta}"
        );
        Self {
            name,
            instructions,
            implementation,
            modern_listing_members,
            modern_result_members,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// The pre-rendered members parse as the JSON object members they stand
    /// for: `resultType` and `_meta`, and on listings `ttlMs` and
    /// `cacheScope` too.
    #[test]
    fn modern_members_render_once_and_parse() {
        let info = ServerInfo::new("dravr".to_owned(), None);
        let object = |members: &str| -> Value {
            serde_json::from_str(&format!("{{\"content\":[]{members}}}")).unwrap()
        };
        let server = json!({"name": "dravr", "version": env!("CARGO_PKG_VERSION")});
        assert_eq!(
            object(&info.modern_result_members),
            json!({"content": [], "resultType": "complete", "_meta": {META_SERVER_INFO: server}})
        );
        assert_eq!(
            object(&info.modern_listing_members),
            json!({"content": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                   "_meta": {META_SERVER_INFO: server}})
        );
    }
}
