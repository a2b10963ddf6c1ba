//! Helpers shared by the engine's test binaries.

#![allow(dead_code)]

use std::time::Duration;

use toolsmith_core::catalog::CatalogSource;

/// A catalog held in memory.
pub struct Text(pub String);

impl CatalogSource for Text {
    fn read(&self, _: &str) -> Result<String, toolsmith_core::catalog::ReadError> {
        Ok(self.0.clone())
    }
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// Processes whose environment holds `marker` (a unique string set for one test).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(env) = std::fs::read(entry.path().join("environ"))
            && env.split(|b| *b == 0).any(|v| v == marker.as_bytes())
        {
            out.push(pid);
        }
    }
    out
}

pub async fn wait_until_gone(marker: &str) -> Vec<u32> {
    for _ in 0..100 {
        let left = processes_with(marker);
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    processes_with(marker)
}

/// What is left in the engine's cgroups once it settles (killed processes leave a cgroup
/// only when their memory is released): polled for up to 2 s.
pub async fn contained_after_settling(engine: &toolsmith_exec::Engine) -> Vec<i32> {
    for _ in 0..100 {
        let left = engine.contained_processes();
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    engine.contained_processes()
}
