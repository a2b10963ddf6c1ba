//! The pure half of `toolsmith chat` (seed 004): the state machine ([`machine`]), the
//! conversation and its encoding for each provider ([`history`]), and the readers of streamed
//! answers ([`sse`], [`stream`]). No IO: the driver in `toolsmith-agent` talks to the model,
//! the user and the engine, and feeds what happens back as events.

pub mod history;
pub mod machine;
pub mod sse;
pub mod stream;

pub use history::{Item, ToolCall};
pub use machine::{Effect, Event, EventKind, Machine, Refused, State};
