//! `StaticSurface`: a fixed tool list plus one executor.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::tool_surface::ToolSurface;
use crate::error::{Error, ErrorKind};
use crate::tool::{Tool, ToolOutcome};

/// Runs the tools of a [`StaticSurface`].
///
/// Any closure `Fn(String, Value) -> impl Future<Output = Result<Value, E>>`
/// is an executor: it receives the tool name and the arguments by value, so
/// its future may own them. Implement the trait yourself to borrow them
/// instead and skip those two copies.
///
/// The answer maps to a [`ToolOutcome`]:
/// - `Ok(Value::String(s))` → success with text `s`;
/// - `Ok(other)` → success with JSON [`ToolOutcome::json`];
/// - `Err(e)` → a refusal whose reason is `e.to_string()`.
///
/// To fail a call (JSON-RPC `-32603`) or to refuse with structured details,
/// implement [`ToolSurface`] directly.
pub trait ToolExecutor: Send + Sync + 'static {
    /// What a refusal carries; its `Display` text is the reason the model reads.
    type Error: fmt::Display;

    /// Runs tool `name`. The host only passes names in the surface's list.
    fn execute(
        &self,
        name: &str,
        arguments: &Value,
    ) -> impl Future<Output = Result<Value, Self::Error>> + Send;
}

impl<F, Fut, E> ToolExecutor for F
where
    F: Fn(String, Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, E>> + Send,
    E: fmt::Display,
{
    type Error = E;

    fn execute(
        &self,
        name: &str,
        arguments: &Value,
    ) -> impl Future<Output = Result<Value, Self::Error>> + Send {
        self(name.to_owned(), arguments.clone())
    }
}

/// A surface with a fixed list of tools and one executor for all of them.
///
/// The list never changes, so [`is_visible`](ToolSurface::is_visible) is a
/// lookup in it rather than a listing. For tools that come and go during a
/// session, implement [`ToolSurface`] yourself.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use embacle_tool_host::{StaticSurface, Tool};
/// use serde_json::{json, Value};
///
/// let echo = Tool::new(
///     "echo",
///     "Returns its text.",
///     json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
/// )?;
/// let surface = StaticSurface::new(vec![echo], |_name: String, args: Value| async move {
///     match args.get("text") {
///         Some(Value::String(text)) => Ok(Value::String(text.clone())),
///         _ => Err("`text` must be a string"),
///     }
/// })?;
/// let surface = Arc::new(surface); // ready for ToolHost::open_session
/// # drop(surface);
/// # Ok::<(), embacle_tool_host::Error>(())
/// ```
pub struct StaticSurface<X> {
    tools: Arc<[Tool]>,
    executor: X,
}

impl<X: ToolExecutor> StaticSurface<X> {
    /// A surface serving `tools`, in this order, run by `executor`.
    ///
    /// # Errors
    ///
    /// Fails ([`ErrorKind::InvalidTool`](crate::ErrorKind::InvalidTool)) when two tools share a name: the
    /// host could not tell which one a call means.
    pub fn new(tools: Vec<Tool>, executor: X) -> Result<Self, Error> {
        for (i, tool) in tools.iter().enumerate() {
            let name = tool.name();
            if tools[..i].iter().any(|t| t.name() == name) {
                return Err(ErrorKind::InvalidTool.error(format!("two tools are named {name:?}")));
            }
        }
        Ok(Self {
            tools: tools.into(),
            executor,
        })
    }
}

impl<X: ToolExecutor> ToolSurface for StaticSurface<X> {
    async fn list_tools(&self) -> Arc<[Tool]> {
        Arc::clone(&self.tools)
    }

    async fn call(&self, name: &str, arguments: &Value) -> ToolOutcome {
        match self.executor.execute(name, arguments).await {
            Ok(Value::String(text)) => ToolOutcome::text(text),
            Ok(json) => ToolOutcome::json(json),
            Err(reason) => ToolOutcome::refused(reason.to_string()),
        }
    }

    /// A fixed list never changes: no `listChanged`, no streams.
    fn list_can_change(&self) -> bool {
        false
    }

    async fn is_visible(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name() == name)
    }
}

impl<X> fmt::Debug for StaticSurface<X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticSurface")
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    /// Duplicate names are refused at construction.
    #[test]
    fn duplicate_names_refused() {
        let t = || Tool::new("same", "", json!({"type": "object"})).unwrap();
        let err = StaticSurface::new(vec![t(), t()], |_: String, _: Value| async {
            Ok::<_, String>(Value::Null)
        })
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidTool);
        assert!(err.to_string().contains("\"same\""));
    }
}
