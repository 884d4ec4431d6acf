//! What a tool *is* and what it answers, independent of any session:
//! [`Tool`] descriptors (`definition.rs`, rendered once for every listing),
//! [`ToolOutcome`] — success, refusal or failure — with its
//! [`OutcomeBuilder`] (`outcome.rs`), and [`ContentBlock`]s with their
//! per-revision rendering (`content.rs`). All public API: [`Tool`] and
//! [`ToolOutcome`] at the crate root, the rest in its `content` module.

mod content;
mod definition;
mod outcome;

pub use content::{Annotations, ContentBlock, EmbeddedResource, ResourceLink, Role};
pub use definition::{Tool, ToolAnnotations};
pub use outcome::{OutcomeBuilder, ToolOutcome};

pub(crate) use definition::is_valid_name;
