//! The caller's side of a session: [`ToolSession`], the guard whose drop
//! revokes the bearer (`tool_session.rs`); what it hands an agent, the ACP
//! `mcpServers` list [`McpServers`], its entries and headers, and the
//! bearer kept in the agent's environment (`mcp_servers.rs`); each kind of
//! agent's config — the ACP array checked against the agent's
//! capabilities, and config files (`agent_config.rs`), written only into
//! private directories, on Linux checked by descriptor as they are walked
//! (`private_file.rs`), on Windows with an owner-only access list
//! (`owner_only_file.rs`); and [`Runner`], the four agents whose config
//! files or tool names the crate knows, and how each names tools to its
//! model (`runner.rs`).

mod agent_config;
mod mcp_servers;
#[cfg(windows)]
mod owner_only_file;
mod private_file;
mod runner;
mod tool_session;

pub use mcp_servers::{BearerEnv, HttpHeader, McpServer, McpServers};
pub use runner::{Runner, MISTRAL_VIBE, MODEL_TOOL_NAME_LIMIT};
pub use tool_session::ToolSession;
