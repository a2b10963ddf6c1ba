//! MCP with a real client: the official Python SDK (`mcp` from PyPI, run by
//! `tests/mcp_client.py`) against `toolsmith mcp` over stdio and `toolsmith serve` over
//! Streamable HTTP, on a registry of the example catalog plus 1000 more tools. Two `serve`
//! replicas on one PostgreSQL check that an edit on one reaches an MCP client of the other.
//!
//! The Python client comes from `TOOLSMITH_TEST_PYTHON` (a virtual environment with
//! `.ci/requirements.txt`; `.ci/run` creates it and sets the variable); PostgreSQL from
//! `TOOLSMITH_TEST_POSTGRES`. The tests are `#[ignore]`d so that a plain `cargo test` lists
//! them as ignored instead of passing them silently; `.ci/run` sets both variables and runs
//! them with `--include-ignored` (where a missing variable fails the test, naming it).

mod common;

use std::path::Path;

use common::{BIN, mcp_client as client, python, repo, serve};

/// A registry (`db`: a file path or URL) holding the example catalog and 1000 tools more.
fn fill(db: &str, dir: &Path) {
    let bulk = dir.join("bulk.yaml");
    // Two slow tools for progress and cancellation, then 1000 without parameters.
    let mut text = String::from(
        "tools:\n  - {name: slow, description: Sleeps 2.5 s., command: [sleep, '2.5']}\n  - {name: hang, description: Sleeps long., command: [sleep, '37.25'], timeout_ms: 60000}\n",
    );
    for i in 0..1000 {
        text.push_str(&format!(
            "  - {{name: bulk_{i:04}, description: Bulk tool {i}., command: [true]}}\n"
        ));
    }
    std::fs::write(&bulk, text).expect("write bulk catalog");
    common::import_all(db, &[repo().join("examples/catalog.yaml"), bulk]);
}

fn stdio(mode: &str) {
    let python = python();
    let dir = tempfile::tempdir().expect("tempdir");
    // The registry apart from the workspace: a sandboxed tool may create and remove files
    // there (Landlock cannot allow a folder but one file of it).
    let registry = tempfile::tempdir().expect("tempdir");
    let db = registry.path().join("registry.db").display().to_string();
    fill(&db, dir.path());
    let workspace = dir.path().display().to_string();
    client(&python, &["stdio", BIN, &workspace, &db, mode]);
}

#[test]
#[ignore = "needs the MCP Python client (TOOLSMITH_TEST_PYTHON)"]
fn python_client_over_stdio_modern_protocol() {
    stdio("auto");
}

#[test]
#[ignore = "needs the MCP Python client (TOOLSMITH_TEST_PYTHON)"]
fn python_client_over_stdio_initialize_handshake() {
    stdio("legacy");
}

#[test]
#[ignore = "needs the MCP Python client (TOOLSMITH_TEST_PYTHON)"]
fn python_client_over_streamable_http() {
    let python = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = tempfile::tempdir().expect("tempdir");
    let db = registry.path().join("registry.db").display().to_string();
    fill(&db, dir.path());
    let (_server, rest, mcp) = serve(&db, dir.path(), &["--no-catalog"]);
    let workspace = dir.path().display().to_string();
    client(&python, &["http", &mcp, &rest, &workspace]);
}

#[test]
#[ignore = "needs the MCP Python client (TOOLSMITH_TEST_PYTHON) and PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
fn an_edit_on_one_replica_reaches_an_mcp_client_of_another() {
    let python = python();
    // A schema of its own, created and migrated first; both replicas use it.
    let db = common::postgres_registry("ts_replicas");
    let dir = tempfile::tempdir().expect("tempdir");
    fill(&db, dir.path());
    let (_a, rest_a, mcp_a) = serve(&db, dir.path(), &["--no-catalog"]);
    let (_b, _, mcp_b) = serve(&db, dir.path(), &["--no-catalog"]);
    client(&python, &["replicas", &mcp_a, &rest_a, &mcp_b]);
}

#[test]
#[ignore = "needs the MCP Python client (TOOLSMITH_TEST_PYTHON)"]
fn python_client_drives_sessions_over_stdio_and_http() {
    let python = python();
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().display().to_string();
    let catalog = repo().join("examples/sessions.yaml").display().to_string();
    client(&python, &["sessions-stdio", BIN, &workspace, &catalog]);
    let db = dir.path().join("registry.db").display().to_string();
    let (_server, rest, mcp) = serve(
        &db,
        dir.path(),
        &["--catalog", &catalog, "--allow-dangerous"],
    );
    client(&python, &["sessions-http", &mcp, &rest, &workspace]);
}
