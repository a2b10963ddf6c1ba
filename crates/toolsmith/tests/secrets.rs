//! Secrets at rest (SPEC §13): a registry written with plain secret values (as every release
//! before this one wrote them) is sealed when first opened with a key, with no plain byte
//! left in the file or its WAL; calls still get the secrets; a copy without the key, or with
//! another key, yields none and says why; `secrets rotate-key` re-seals with a new key.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;
use toolsmith_core::catalog::{self, TextSource};
use toolsmith_store::{Change, Registry, Store};

fn run(args: &[&str], data: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(common::BIN)
        .args(args)
        .env("XDG_DATA_HOME", data)
        .env_remove("TOOLSMITH_SECRET_KEY")
        .envs(env.iter().copied())
        .output()
        .expect("run toolsmith")
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The bytes of the registry and whatever sits beside it (WAL, shared memory).
fn raw(db: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        out.extend(std::fs::read(name).unwrap_or_default());
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// A registry as releases before sealing wrote it: the tool's secret in plain text, in two
/// versions, and an MCP server's secret too.
fn plain_registry(db: &Path, secret: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        toolsmith_store::secrets::use_key(None);
        let store = Registry::open(&db.display().to_string())
            .await
            .expect("open");
        let catalog = |version: &str| {
            format!(
                "tools:
  - name: reveal
    description: says its key backwards ({version})
    command: [sh, -c, 'printf %s \"$API_KEY\" | rev']
    config_schema: [{{name: key, secret: true, env_name: API_KEY}}]
    config: {{key: {secret}}}
mcp_servers:
  - name: up
    command: [python3, server.py]
    config_schema: [{{name: token, secret: true, env_name: UP_TOKEN}}]
    config: {{token: {secret}-server}}
"
            )
        };
        let change = Change {
            author: "test",
            summary: "",
        };
        for version in ["one", "two"] {
            let c = catalog::load("c.yaml", &TextSource(catalog(version))).expect("catalog");
            store.sync(&c.tools, change.clone()).await.expect("sync");
            toolsmith_store::import_servers(&store, &c.servers, "test")
                .await
                .expect("servers");
        }
    });
}

#[test]
fn a_plain_registry_is_sealed_in_place_and_its_secrets_need_its_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (data, db) = (dir.path().join("data"), dir.path().join("registry.db"));
    let secret = format!("plain-secret-{}", std::process::id());
    plain_registry(&db, &secret);
    assert!(
        contains(&raw(&db), &secret),
        "the old registry holds the secret in plain text"
    );
    let dbs = db.display().to_string();

    // First open with toolsmith: a key is made, every secret sealed, nothing plain left.
    let o = run(&["history", "reveal", "--db", &dbs], &data, &[]);
    assert!(o.status.success(), "{}", err(&o));
    let said = err(&o);
    assert!(said.contains("made the secret key"), "{said}");
    assert!(said.contains("sealed 5 secret value(s)"), "{said}");
    let key_file = data.join("toolsmith/secret.key");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key_file)
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let bytes = raw(&db);
    assert!(
        !contains(&bytes, &secret),
        "a plain secret is left in the registry's files"
    );
    assert!(contains(&bytes, toolsmith_store::secrets::MARK));
    // A second open seals nothing more.
    let o = run(&["history", "reveal", "--db", &dbs], &data, &[]);
    assert!(
        o.status.success() && !err(&o).contains("sealed"),
        "{}",
        err(&o)
    );

    // The tool still gets its secret when it runs.
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    let reveal = |data: &Path| -> serde_json::Value {
        let mut child = Command::new(common::BIN)
            .args([
                "serve",
                "--no-cgroups",
                "--no-catalog",
                "--addr",
                "127.0.0.1:0",
                "--db",
                &dbs,
            ])
            .arg("--workspace")
            .arg(&ws)
            .env("XDG_DATA_HOME", data)
            .env_remove("TOOLSMITH_SECRET_KEY")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("serve");
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
        let (rest, _) = common::read_addresses(&mut lines);
        std::thread::spawn(move || lines.for_each(drop));
        let r = common::call(&rest, "reveal", json!({}));
        let _ = child.kill();
        let _ = child.wait();
        r
    };
    let r = reveal(&data);
    let backwards: String = secret.chars().rev().collect();
    assert_eq!(r["data"]["stdout"], backwards, "{r}");

    // A copy without its key yields nothing, and says what is missing.
    let other = dir.path().join("elsewhere");
    let o = run(&["history", "reveal", "--db", &dbs], &other, &[]);
    assert!(!o.status.success());
    assert!(err(&o).contains("no key was found"), "{}", err(&o));
    assert!(
        !other.join("toolsmith/secret.key").exists(),
        "no key is made for a sealed registry"
    );
    // Another key is refused, changing nothing.
    let wrong = toolsmith_store::secrets::SecretKey::generate().to_text();
    let o = run(
        &["history", "reveal", "--db", &dbs],
        &other,
        &[("TOOLSMITH_SECRET_KEY", &wrong)],
    );
    assert!(!o.status.success());
    assert!(err(&o).contains("sealed with another key"), "{}", err(&o));

    // Rotation: a new key in the file, the old one opens nothing, calls still work.
    let old = std::fs::read_to_string(&key_file).expect("key");
    let o = run(
        &["secrets", "rotate-key", "--db", &dbs, "--json"],
        &data,
        &[],
    );
    assert!(o.status.success(), "{}", err(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(report["resealed"], 5, "{report}");
    let new = std::fs::read_to_string(&key_file).expect("key");
    assert_ne!(old.trim(), new.trim());
    assert_eq!(
        std::fs::metadata(&key_file)
            .expect("key")
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let o = run(
        &["history", "reveal", "--db", &dbs],
        &other,
        &[("TOOLSMITH_SECRET_KEY", old.trim())],
    );
    assert!(
        !o.status.success() && err(&o).contains("another key"),
        "{}",
        err(&o)
    );
    assert!(!contains(&raw(&db), &secret));
    let r = reveal(&data);
    assert_eq!(r["data"]["stdout"], backwards, "{r}");
}
