//! The web UI in a real browser: Playwright (`ui/e2e/`, pinned in `ui/package-lock.json`)
//! drives Debian's Chromium against real `serve` processes — one without tokens, one with —
//! on SQLite with the example catalog, and the FastAPI test application whose OpenAPI
//! document the import page reads.
//!
//! Needs Chromium (`TOOLSMITH_TEST_CHROMIUM`, e.g. /usr/bin/chromium) and the UI's npm
//! packages (`npm ci` in `ui/`): `#[ignore]`d so that a plain `cargo test` lists it instead
//! of passing it silently; `.ci/run` installs both and runs it with `--include-ignored`.

mod common;

use std::process::Command;

use common::{repo, serve};

#[test]
#[ignore = "needs Chromium (TOOLSMITH_TEST_CHROMIUM), the UI's npm packages (npm ci in ui/) and FastAPI (TOOLSMITH_TEST_PYTHON)"]
fn the_web_ui_in_a_real_browser() {
    let chromium = std::env::var("TOOLSMITH_TEST_CHROMIUM").expect(
        "TOOLSMITH_TEST_CHROMIUM must name a Chromium binary, e.g. /usr/bin/chromium (.ci/run installs Debian's)",
    );
    let ui = repo().join("ui");
    assert!(
        ui.join("node_modules/@playwright/test").exists(),
        "run `npm ci` in ui/ first (.ci/run does)"
    );
    let catalog = repo().join("examples/catalog.yaml");
    let catalog = catalog.to_str().expect("utf-8 path");
    let open = tempfile::tempdir().expect("tempdir");
    std::fs::write(open.path().join("notes.txt"), "keep me\n").expect("write");
    std::fs::write(open.path().join("doomed.txt"), "remove me\n").expect("write");
    // The registry apart from the workspace, so that sandboxed tools may make and remove
    // files there (`remove_files` removes doomed.txt).
    let registries = tempfile::tempdir().expect("tempdir");
    let db = registries.path().join("open.db").display().to_string();
    let (_a, rest, _) = serve(&db, open.path(), &["--catalog", catalog]);
    let locked = tempfile::tempdir().expect("tempdir");
    let db = locked.path().join("registry.db").display().to_string();
    let (_b, rest_locked, _) = serve(
        &db,
        locked.path(),
        &[
            "--catalog",
            catalog,
            "--token",
            "reader:read=read-token-123",
            "--token",
            "boss:admin=admin-token-123",
        ],
    );
    // The FastAPI test application, whose OpenAPI document the import page reads.
    let python = std::env::var("TOOLSMITH_TEST_PYTHON").expect(
        "TOOLSMITH_TEST_PYTHON must name the python of a virtual environment with FastAPI (.ci/run sets it)",
    );
    let mut fastapi = Command::new(&python)
        .arg(repo().join("crates/toolsmith/tests/upstream/http_api.py"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the FastAPI application");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(fastapi.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("its port");
    let fastapi_url = format!(
        "http://127.0.0.1:{}",
        line.strip_prefix("PORT ")
            .map(str::trim)
            .unwrap_or_else(|| panic!("FastAPI did not start: {line:?}"))
    );
    let _fastapi = common::Serve(fastapi);
    let shots = repo().join("target/ui-screenshots");
    std::fs::create_dir_all(&shots).expect("screenshots folder");
    let status = Command::new("npx")
        .args(["playwright", "test"])
        .current_dir(&ui)
        .env("TOOLSMITH_TEST_CHROMIUM", &chromium)
        .env("TOOLSMITH_UI_URL", rest.trim_end_matches("/v1"))
        .env(
            "TOOLSMITH_UI_LOCAL_TOKEN",
            common::local_token(&rest).expect("the open server's local admin token"),
        )
        .env(
            "TOOLSMITH_UI_LOCKED_URL",
            rest_locked.trim_end_matches("/v1"),
        )
        .env("TOOLSMITH_UI_READ_TOKEN", "read-token-123")
        .env("TOOLSMITH_UI_ADMIN_TOKEN", "admin-token-123")
        .env("TOOLSMITH_UI_WORKSPACE", open.path())
        .env(
            "TOOLSMITH_UI_TINY_SERVER",
            repo().join("crates/toolsmith/tests/upstream/tiny_server.py"),
        )
        .env("TOOLSMITH_UI_SHOTS", &shots)
        .env("TOOLSMITH_UI_FASTAPI_URL", &fastapi_url)
        .env("TOOLSMITH_UI_PYTHON", &python)
        .env(
            "TOOLSMITH_UI_FASTMCP_SERVER",
            repo().join("crates/toolsmith/tests/upstream/fastmcp_server.py"),
        )
        .status()
        .expect("run npx playwright test");
    assert!(
        status.success(),
        "the browser tests failed (their report is above)"
    );
}
