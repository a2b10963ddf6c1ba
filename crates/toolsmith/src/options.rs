//! What the long-running commands (`serve`, `mcp`, `chat`) share about running tools.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use toolsmith_exec::EngineConfig;

/// Whether processes run in the kernel sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum SandboxSwitch {
    /// Every process in its tool's policy (`workspace` when it gives none).
    #[default]
    On,
    /// No sandbox at all (for debugging): tools reach all this user can.
    Off,
}

/// How a long-running command (serve, mcp, chat) runs tool processes.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Do not put each call in its own pids cgroup.
    #[arg(long)]
    pub no_cgroups: bool,
    /// Start a fresh interpreter for every call of a Python script tool, except tools that
    /// say `warm: true`. By default those that do not say `warm: false` are forked from a
    /// resident interpreter (the warm runtime: a few ms instead of tens).
    #[arg(long)]
    pub cold_python: bool,
    /// The kernel sandbox (Landlock, seccomp) of tool processes, sessions and stdio
    /// upstreams; `off` only for debugging.
    #[arg(long, value_enum, default_value_t = SandboxSwitch::On)]
    pub sandbox: SandboxSwitch,
}

impl RunArgs {
    /// The engine's configuration for tools confined to `workspace`, with `protected` (and
    /// toolsmith's data folder) out of every sandboxed process's reach.
    pub fn engine_config(&self, workspace: &Path, protected: Vec<PathBuf>) -> EngineConfig {
        let mut config = EngineConfig::new(workspace);
        config.use_cgroups = !self.no_cgroups;
        config.warm_python = !self.cold_python;
        config.sandbox.enabled = self.sandbox == SandboxSwitch::On;
        config.sandbox.protected = protected_paths(protected);
        config
    }
}

/// What no sandboxed process may reach: toolsmith's data folder (registry, key, transcripts,
/// chat history; its runtime environment stays reachable) and `more`.
pub fn protected_paths(more: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out = vec![toolsmith_exec::runtime::data_dir()];
    out.extend(more);
    out
}

/// An SQLite registry's files (the database, its WAL, shared memory and journal); nothing
/// for a PostgreSQL address.
pub fn registry_files(address: &str) -> Vec<PathBuf> {
    if address.starts_with("postgres://") || address.starts_with("postgresql://") {
        return Vec::new();
    }
    let db = PathBuf::from(address);
    let mut out = vec![db.clone()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        out.push(PathBuf::from(name));
    }
    out
}

/// Says at start what the sandbox is on this kernel — loudly when it is off.
pub fn say_sandbox(engine: &toolsmith_exec::Engine) {
    let sandbox = engine.sandbox();
    if !sandbox.enabled() {
        eprintln!(
            "toolsmith: WARNING: --sandbox off: tools, sessions and stdio upstreams run with everything this user can reach (the registry, tokens, other calls' folders)"
        );
        return;
    }
    eprintln!("toolsmith: {}", sandbox.kernel().describe());
    for note in sandbox.notes() {
        eprintln!("toolsmith: note: {note}");
    }
}
