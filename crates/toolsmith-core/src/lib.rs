//! toolsmith-core: the tool model and everything about tools that is pure logic.
//!
//! - [`agent`] is the pure half of `toolsmith chat`: the state machine, the conversation in
//!   each provider's form, and the readers of streamed answers.
//! - `form` reads the catalog form (fields and parameters) recording every problem with its
//!   path; the catalog and the built-ins' interfaces are both written in it.
//! - [`catalog`] loads YAML/JSON catalogs into checked [`model::Tool`]s, reporting every
//!   problem at once with its path.
//! - [`pipeline`] runs what a model sent through parse → coerce → defaults → validate, with a
//!   JSON Schema compiled once per tool version ([`pipeline::CompiledTool`]).
//! - [`http`] is the `http` executor's declaration and its pure rules (URL templates, header
//!   names, refused addresses); `openapi` turns an OpenAPI document into `http` tools.
//! - [`json_text`] reads JSON text exactly: duplicate keys and numbers that would change
//!   are refused, with their JSON pointer.
//! - [`plan`] turns validated arguments into the exact argv, stdin and environment of a
//!   command.
//! - [`rate`] is rate limits: their forms and reading (enforced by the engine).
//! - [`render`] shows tools to every provider (OpenAI, Anthropic, Gemini, MCP, XML).
//! - [`result`] is the `ToolResult` contract every execution returns.
//! - [`upstream`] is upstream MCP servers: their declaration, and how what they list becomes
//!   tools (names, danger, filters, overrides, the pinned part).
//! - [`toolset`] is named subsets of the registry chosen by selectors, and why a tool is in.
//! - [`secrets`] is what `***` in a draft may stand for, and the scrub of stored secret values.
//!
//! **Invariant:** this crate does no IO: no files, no network, no processes, no clocks.
//! Files and environment variables reach the loader through [`catalog::CatalogSource`].

pub mod agent;
pub mod builtin;
pub mod catalog;
pub mod command;
mod form;
pub mod guard;
pub mod http;
pub mod json_text;
pub mod model;
pub mod openapi;
pub mod pipeline;
pub mod place;
pub mod plan;
pub mod rate;
pub mod render;
pub mod result;
pub mod sandbox;
pub mod schema;
pub mod secrets;
pub mod toolset;
pub mod upstream;

pub use catalog::{Catalog, CatalogError, CatalogErrors, CatalogSource};
pub use model::{Format, Tool};
pub use pipeline::CompiledTool;
pub use result::{ErrorKind, ToolResult};
