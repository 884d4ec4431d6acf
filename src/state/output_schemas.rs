//! Which tools a session's latest listing declared an `outputSchema` for,
//! so a call's result is judged by the listing its client holds.

use std::sync::atomic::Ordering;

use crate::protocol::Era;
use crate::state::shared::SessionState;
use crate::tool::Tool;
use crate::util::lock;

impl SessionState {
    /// A `tools/list` in `era` was answered with `tools`: which of them
    /// it showed with an `outputSchema` is recorded, and the listing
    /// counted.
    pub(crate) fn listed(&self, tools: &[Tool], era: Era) {
        let declaring = |tool: &&Tool| era.since_2025_06_18() && tool.output_schema().is_some();
        let any = tools.iter().any(|tool| declaring(&tool));
        if any || self.any_output_schema.load(Ordering::Acquire) {
            let names = tools
                .iter()
                .filter(declaring)
                .map(|t| t.name().into())
                .collect();
            *lock(&self.with_output_schema) = names;
            self.any_output_schema.store(any, Ordering::Release);
        }
        self.list_changes.listed();
    }

    /// Whether the latest listing showed `name` with an `outputSchema`.
    ///
    /// A client that listed a tool with an `outputSchema` checks each of
    /// that tool's results against it, and treats a result without
    /// `structuredContent` as an error (the TypeScript SDK's `callTool`, so
    /// Claude and Gemini CLI). What it checks against is the schema *it
    /// listed*, so the host keeps the names from the latest listing: a
    /// call's result is judged by the listing the client holds, not by the
    /// live list.
    pub(crate) fn declared_output_schema(&self, name: &str) -> bool {
        self.any_output_schema.load(Ordering::Acquire)
            && lock(&self.with_output_schema)
                .iter()
                .any(|declared| &**declared == name)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::shared::tests::session;

    #[test]
    fn the_latest_listing_decides_which_tools_declared_an_output_schema() {
        let schema = json!({"type": "object"});
        let typed = Tool::new("typed", "", schema.clone())
            .unwrap()
            .with_output_schema(schema.clone())
            .unwrap();
        let plain = Tool::new("plain", "", schema).unwrap();
        let session = session();
        let modern = Era::Modern("2026-07-28");
        assert!(!session.declared_output_schema("typed"), "nothing listed");
        session.listed(&[typed.clone(), plain.clone()], modern);
        assert!(session.declared_output_schema("typed"));
        assert!(!session.declared_output_schema("plain"));
        // 2025-03-26 has no outputSchema: that listing declared none.
        session.listed(&[typed.clone(), plain.clone()], Era::Legacy("2025-03-26"));
        assert!(!session.declared_output_schema("typed"));
        session.listed(&[typed], Era::Legacy("2025-06-18"));
        assert!(session.declared_output_schema("typed"));
        session.listed(&[plain], modern);
        assert!(!session.declared_output_schema("typed"), "withdrawn");
        assert_eq!(session.list_changes().listings(), 4);
    }
}
