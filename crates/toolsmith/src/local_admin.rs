//! The local admin token (SPEC §14): what `serve` asks of every request when it has no
//! `--token`, `--tokens-file` or JWT issuer. Before, "no token" meant "whoever connects on
//! loopback is the admin" — including every tool toolsmith itself starts, which can reach
//! the port. Now the no-token mode asks for a random secret kept in toolsmith's data folder
//! (`local-admin.token`, 0600, made the first time; no sandboxed process can read that
//! folder). `serve` prints the web UI's address with it (`/#token=…`, as Jupyter does: one
//! click, and the page keeps it in the tab); the CLI's commands that talk to a running
//! server read it from the file.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// `<data folder>/local-admin.token`.
pub fn file() -> PathBuf {
    toolsmith_exec::runtime::data_dir().join("local-admin.token")
}

/// The token, read from [`file`] or made there (64 hex digits).
pub fn load_or_create() -> Result<String> {
    let path = file();
    if let Some(token) = read() {
        return Ok(token);
    }
    let token = toolsmith_store::secrets::SecretKey::generate().to_text();
    match crate::secret_key::write_new(&path, &token) {
        Ok(()) => Ok(token),
        // Another server made it first: that one is the token.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read().with_context(|| format!("reading {}", path.display()))
        }
        Err(e) => {
            Err(e).with_context(|| format!("making the local admin token {}", path.display()))
        }
    }
}

/// The token in [`file`], if there is one this user can read.
pub fn read() -> Option<String> {
    std::fs::read_to_string(file())
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| t.len() >= 32)
}
