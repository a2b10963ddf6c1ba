//! How each executor kind runs, one module per kind — [`command`], [`script`], [`builtin`]
//! (sessions included), [`mcp`] (upstream servers' tools), [`http`] (HTTP APIs) — and [`spawned`], what command and script tools share: one process
//! with the tool's environment, working folder and limits, read by the executor's contract.
//! The engine's `call` dispatches to them, one line per kind.

mod builtin;
mod command;
mod http;
pub(crate) mod mcp;
mod script;
mod spawned;

use super::*;
