//! The curated Python runtime for script tools (SPEC §5.3): a virtual environment with
//! requests, httpx and jsonschema (pandas and numpy on request), made by
//! `toolsmith runtime setup` and used by python3/python script tools when it exists.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages every runtime gets.
pub const BASE_PACKAGES: [&str; 3] = ["requests", "httpx", "jsonschema"];

/// toolsmith's data folder: `$XDG_DATA_HOME/toolsmith`, else `~/.local/share/toolsmith`.
pub fn data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
                .join(".local/share")
        })
        .join("toolsmith")
}

/// A runtime folder (a Python virtual environment).
#[derive(Debug, Clone)]
pub struct Runtime {
    pub dir: PathBuf,
}

impl Runtime {
    /// `$TOOLSMITH_RUNTIME`, else `$XDG_DATA_HOME/toolsmith/runtime`, else
    /// `~/.local/share/toolsmith/runtime`.
    pub fn default_location() -> Self {
        let dir = std::env::var_os("TOOLSMITH_RUNTIME")
            .map(PathBuf::from)
            .unwrap_or_else(|| data_dir().join("runtime"));
        Self { dir }
    }

    /// The runtime's Python, if the folder holds one.
    pub fn python(&self) -> Option<PathBuf> {
        let p = self.dir.join("bin/python3");
        p.exists().then_some(p)
    }

    /// Creates the virtual environment with `python` and installs the base packages plus
    /// `extra`. `progress` receives a line per step.
    pub fn setup(
        &self,
        python: &str,
        extra: &[String],
        progress: &mut dyn FnMut(&str),
    ) -> Result<(), RuntimeError> {
        progress(&format!(
            "creating a virtual environment in {} with {python}",
            self.dir.display()
        ));
        run(Command::new(python)
            .args(["-m", "venv", "--clear"])
            .arg(&self.dir))?;
        let pip = self.dir.join("bin/pip");
        let mut packages: Vec<String> = BASE_PACKAGES.iter().map(|s| s.to_string()).collect();
        packages.extend(extra.iter().cloned());
        progress(&format!("installing {}", packages.join(", ")));
        run(Command::new(&pip)
            .args(["install", "--disable-pip-version-check", "--quiet"])
            .args(&packages))?;
        progress("done");
        Ok(())
    }

    /// `(name, version)` of every installed package, or why not.
    pub fn packages(&self) -> Result<Vec<(String, String)>, RuntimeError> {
        let Some(python) = self.python() else {
            return Err(RuntimeError::Missing(self.dir.display().to_string()));
        };
        let mut pip = Command::new(python);
        pip.args([
            "-m",
            "pip",
            "list",
            "--format",
            "json",
            "--disable-pip-version-check",
        ]);
        let out = pip.output().map_err(|e| RuntimeError::Start {
            command: format!("{pip:?}"),
            error: e.to_string(),
        })?;
        if !out.status.success() {
            return Err(RuntimeError::Failed {
                command: format!("{pip:?}"),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        let list: serde_json::Value = serde_json::from_slice(&out.stdout)
            .map_err(|e| RuntimeError::Listing(e.to_string()))?;
        Ok(list
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| {
                (
                    p["name"].as_str().unwrap_or_default().to_owned(),
                    p["version"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect())
    }

    pub fn exists(&self) -> bool {
        self.python().is_some() && Path::new(&self.dir).join("pyvenv.cfg").exists()
    }
}

fn run(cmd: &mut Command) -> Result<(), RuntimeError> {
    let out = cmd.output().map_err(|e| RuntimeError::Start {
        command: format!("{cmd:?}"),
        error: e.to_string(),
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(RuntimeError::Failed {
            command: format!("{cmd:?}"),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// What went wrong making or reading the runtime.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    #[error("no runtime in {0} (run `toolsmith runtime setup`)")]
    Missing(String),
    /// A command (`python -m venv`, `pip install`) that could not start.
    #[error("{command}: {error}")]
    Start { command: String, error: String },
    /// A command that failed, with the end of what it said.
    #[error("{command} failed: {stderr}")]
    Failed { command: String, stderr: String },
    /// `pip list` answered with something other than its JSON.
    #[error("pip list: {0}")]
    Listing(String),
}
