//! Which tools a session's latest listing showed with an `outputSchema`.
//!
//! A client that listed a tool with an `outputSchema` checks each of that
//! tool's results against it, and treats a result without
//! `structuredContent` as an error (the TypeScript SDK's `callTool`, so
//! Claude and Gemini CLI). What it checks against is the schema *it
//! listed*, so the host keeps the names from the latest listing: a call's
//! result is judged by the listing the client holds, not by the live list.
//! Surfaces that declare no `outputSchema` never take the lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::protocol::Era;
use crate::tool::Tool;

/// One session's tools listed with an `outputSchema`.
#[derive(Debug, Default)]
pub(crate) struct OutputSchemas {
    /// Whether `with_output_schema` may be non-empty; read without the lock.
    any_output_schema: AtomicBool,
    /// The tools the latest listing showed with an `outputSchema`.
    with_output_schema: Mutex<Vec<Box<str>>>,
}

impl OutputSchemas {
    /// A `tools/list` in revision `era` was answered with `tools`.
    pub(crate) fn record(&self, tools: &[Tool], era: Era) {
        let declaring =
            |tool: &&Tool| era.has_structured_content() && tool.output_schema().is_some();
        let any = tools.iter().any(|tool| declaring(&tool));
        if any || self.any_output_schema.load(Ordering::Acquire) {
            let names = tools
                .iter()
                .filter(declaring)
                .map(|t| t.name().into())
                .collect();
            *self.names() = names;
            self.any_output_schema.store(any, Ordering::Release);
        }
    }

    /// Whether the latest listing showed `name` with an `outputSchema`.
    pub(crate) fn declared(&self, name: &str) -> bool {
        self.any_output_schema.load(Ordering::Acquire)
            && self.names().iter().any(|declared| &**declared == name)
    }

    fn names(&self) -> MutexGuard<'_, Vec<Box<str>>> {
        // Nothing panics while holding it; a poisoned lock's data is whole.
        self.with_output_schema
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MODERN: Era = Era::Modern("2026-07-28");

    #[test]
    fn the_latest_listing_decides_which_tools_declared_an_output_schema() {
        let schema = json!({"type": "object"});
        let typed = Tool::new("typed", "", schema.clone())
            .unwrap()
            .with_output_schema(schema.clone())
            .unwrap();
        let plain = Tool::new("plain", "", schema).unwrap();
        let schemas = OutputSchemas::default();
        assert!(!schemas.declared("typed"), "nothing listed");
        schemas.record(&[typed.clone(), plain.clone()], MODERN);
        assert!(schemas.declared("typed"));
        assert!(!schemas.declared("plain"));
        // 2025-03-26 has no outputSchema: that listing declared none.
        schemas.record(&[typed.clone(), plain.clone()], Era::Legacy("2025-03-26"));
        assert!(!schemas.declared("typed"));
        schemas.record(&[typed], Era::Legacy("2025-06-18"));
        assert!(schemas.declared("typed"));
        schemas.record(&[plain], MODERN);
        assert!(!schemas.declared("typed"), "withdrawn");
    }
}
