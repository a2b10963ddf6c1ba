//! What the long-running commands (`serve`, `mcp`, `chat`) share about running tools.

use clap::Args;
use toolsmith_exec::EngineConfig;

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
}

impl RunArgs {
    /// The engine's configuration for tools confined to `workspace`.
    pub fn engine_config(&self, workspace: &std::path::Path) -> EngineConfig {
        let mut config = EngineConfig::new(workspace);
        config.use_cgroups = !self.no_cgroups;
        config.warm_python = !self.cold_python;
        config
    }
}
