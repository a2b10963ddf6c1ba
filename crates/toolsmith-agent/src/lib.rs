//! toolsmith-agent: the driver of `toolsmith chat` (SPEC §7, seed 004). The pure half — the
//! state machine, the conversation, the stream readers — is `toolsmith_core::agent`; this
//! crate does what that half asks for: it talks to the model ([`provider`]: OpenAI-compatible
//! Chat Completions and Anthropic Messages, streamed, with retries), runs tools through the
//! gateway's one call path and asks the user ([`driver`]), and keeps each conversation as JSONL
//! ([`transcript`]).
//!
//! **Invariant:** the loop never sends the model a request in which a tool call it made is
//! unanswered (the machine guarantees it; the driver checks it before every request).

pub mod driver;
pub mod provider;
pub mod transcript;

pub use driver::{Agent, Answer, Approval, Asker, CodeMode, Interrupt, Outcome, Tools, Ui};
pub use provider::{Kind, Provider, ProviderError};
