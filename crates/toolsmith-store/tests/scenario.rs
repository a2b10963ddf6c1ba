//! One scenario suite for every backend: each test is generic over `Store` and run here
//! against SQLite (a real file). PostgreSQL joins when its implementation lands.

use std::sync::Arc;

use serde_json::json;
use toolsmith_core::Tool;
use toolsmith_core::catalog::{self, CatalogSource};
use toolsmith_store::sqlite::SqliteStore;
use toolsmith_store::{Change, Query, Store, StoreError, StoreExt, same_definition};

struct Text(String);

impl CatalogSource for Text {
    fn read(&self, path: &str) -> Result<String, toolsmith_core::catalog::ReadError> {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        if path == "c.yaml" {
            Ok(self.0.clone())
        } else {
            std::fs::read_to_string(examples.join(path)).map_err(|e| {
                toolsmith_core::catalog::ReadError::Io {
                    path: path.to_owned(),
                    error: e.to_string(),
                }
            })
        }
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

fn tool(name: &str, description: &str) -> Tool {
    let yaml = format!(
        "tools: [{{name: {name}, description: {description:?}, tags: [t{}], command: [echo], parameters: [{{name: x, required: false}}]}}]",
        name.len() % 3
    );
    catalog::load("c.yaml", &Text(yaml))
        .unwrap_or_else(|e| panic!("{e}"))
        .tools
        .remove(0)
}

fn examples() -> Vec<Tool> {
    catalog::load("catalog.yaml", &Text(String::new()))
        .unwrap_or_else(|e| panic!("{e}"))
        .tools
}

const ALICE: Change<'static> = Change {
    author: "alice",
    summary: "",
};

async fn sqlite() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("registry.db"))
        .await
        .expect("open");
    (dir, store)
}

async fn versions_history_and_restore(s: &impl Store) {
    let v1 = s
        .create(
            &tool("greet", "Say hello."),
            Change {
                author: "alice",
                summary: "first",
            },
        )
        .await
        .expect("create");
    assert_eq!(v1.version, 1);
    assert!(matches!(
        s.create(&tool("greet", "again"), ALICE).await,
        Err(StoreError::Exists { .. })
    ));
    let v2 = s
        .update(
            &tool("greet", "Say hello, loudly."),
            1,
            Change {
                author: "bob",
                summary: "louder",
            },
        )
        .await
        .expect("update");
    assert_eq!(v2.version, 2);
    // A stale update is refused and writes nothing.
    match s.update(&tool("greet", "lost update"), 1, ALICE).await {
        Err(StoreError::Conflict {
            current_version: 2,
            based_on: 1,
            ..
        }) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        s.get("greet").await.expect("get").tool.description,
        "Say hello, loudly."
    );
    let history = s.history("greet").await.expect("history");
    let summary: Vec<(u64, &str, &str)> = history
        .iter()
        .map(|v| (v.version, v.author.as_str(), v.summary.as_str()))
        .collect();
    assert_eq!(summary, [(1, "alice", "first"), (2, "bob", "louder")]);
    assert_eq!(
        s.version("greet", 1).await.expect("v1").definition["description"],
        "Say hello."
    );
    // Restoring makes a new version equal to the old one.
    let v3 = s.restore("greet", 1, ALICE).await.expect("restore");
    assert_eq!(v3.version, 3);
    assert!(same_definition(&v3.tool, &v1.tool));
    assert_eq!(
        s.history("greet").await.expect("history")[2].summary,
        "restored version 1"
    );
    assert!(matches!(
        s.version("greet", 9).await,
        Err(StoreError::NotFound(_))
    ));
    assert!(matches!(s.get("nope").await, Err(StoreError::NotFound(_))));
}

async fn enable_disable_delete(s: &impl Store) {
    s.create(&tool("svc", "A service."), ALICE)
        .await
        .expect("create");
    let off = s.set_enabled("svc", false, ALICE).await.expect("disable");
    assert_eq!((off.version, off.tool.enabled), (2, false));
    assert_eq!(
        s.set_enabled("svc", false, ALICE)
            .await
            .expect("again")
            .version,
        2,
        "no change, no version"
    );
    assert!(
        s.search(&Query::default())
            .await
            .expect("search")
            .items
            .is_empty(),
        "disabled tools are not listed"
    );
    assert_eq!(
        s.search(&Query {
            include_disabled: true,
            ..Query::default()
        })
        .await
        .expect("search")
        .items
        .len(),
        1
    );
    s.delete("svc", ALICE).await.expect("delete");
    assert!(matches!(s.get("svc").await, Err(StoreError::NotFound(_))));
    assert!(matches!(
        s.delete("svc", ALICE).await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(s.history("svc").await.expect("history kept").len(), 2);
    // The name can be used again; its history continues.
    assert_eq!(
        s.create(&tool("svc", "Back."), ALICE)
            .await
            .expect("recreate")
            .version,
        3
    );
}

/// Search answers exactly what a scan of every tool would, through creates, edits (which
/// must reach the search index) and deletes, for short and long, odd and unicode queries.
async fn search_matches_a_scan(s: &impl Store) {
    let words = [
        "weather",
        "report",
        "größe",
        "naïve",
        "50%_off",
        "say \"hi\"",
        "grep",
        "logs",
        "fetch",
        "ab",
    ];
    let description = |i: usize, round: usize| {
        format!(
            "{} {} {}.",
            words[(i + round) % words.len()],
            words[(i * 7 + 3) % words.len()],
            i
        )
    };
    let mut current: std::collections::BTreeMap<String, String> = Default::default();
    for i in 0..60 {
        let name = format!("t{i:02}");
        s.create(&tool(&name, &description(i, 0)), ALICE)
            .await
            .expect("create");
        current.insert(name, description(i, 0));
    }
    for i in (0..60).step_by(3) {
        let name = format!("t{i:02}");
        let r = s.get(&name).await.expect("get");
        s.update(&tool(&name, &description(i, 1)), r.version, ALICE)
            .await
            .expect("update");
        current.insert(name, description(i, 1));
    }
    for i in (0..60).step_by(7) {
        let name = format!("t{i:02}");
        s.delete(&name, ALICE).await.expect("delete");
        current.remove(&name);
    }
    for q in [
        "weather",
        "WEATHER",
        "eath",
        "ea",
        "größe",
        "ÖSS",
        "ïve",
        "50%",
        "%_o",
        "\"hi\"",
        "t1",
        "t05",
        "rep",
        "gre",
        "ab",
        "a",
        "zzz",
        ". ",
        "fetch logs",
    ] {
        let found: Vec<String> = s
            .search(&Query {
                text: Some(q.into()),
                limit: 1000,
                ..Query::default()
            })
            .await
            .expect("search")
            .items
            .iter()
            .map(|r| r.tool.name.to_string())
            .collect();
        let needle = q.to_lowercase();
        let expected: Vec<String> = current
            .iter()
            .filter(|(name, d)| {
                let tags = format!(" t{} ", name.len() % 3);
                name.contains(&needle)
                    || d.to_lowercase().contains(&needle)
                    || tags.contains(&needle)
            })
            .map(|(n, _)| n.clone())
            .collect();
        assert_eq!(found, expected, "search {q:?}");
    }
}

/// The generation moves with every kind of write (what replicas poll to follow changes),
/// and not with reads or unchanged imports.
async fn generation_follows_writes(s: &impl Store) {
    let mut last = s.generation().await.expect("generation");
    let mut moved = async |what: &str| {
        let g = s.generation().await.expect("generation");
        assert!(
            g > last,
            "{what} did not move the generation ({last} → {g})"
        );
        last = g;
    };
    let r = s.create(&tool("gen", "One."), ALICE).await.expect("create");
    moved("create").await;
    s.update(&tool("gen", "Two."), r.version, ALICE)
        .await
        .expect("update");
    moved("update").await;
    s.set_enabled("gen", false, ALICE).await.expect("disable");
    moved("disable").await;
    s.delete("gen", ALICE).await.expect("delete");
    moved("delete").await;
    s.import(&[tool("gen", "Three.")], false, "alice")
        .await
        .expect("import");
    moved("import").await;
    let before = s.generation().await.expect("generation");
    s.get("gen").await.expect("get");
    s.import(&[tool("gen", "Three.")], false, "alice")
        .await
        .expect("import");
    assert_eq!(
        s.generation().await.expect("generation"),
        before,
        "reads and unchanged imports do not count"
    );
}

async fn search_and_pagination(s: &impl Store) {
    for i in 0..120 {
        let name = format!("tool_{i:03}");
        let description = if i % 10 == 0 {
            "Fetches WEATHER data."
        } else {
            "Does things."
        };
        s.create(&tool(&name, description), ALICE)
            .await
            .expect("create");
    }
    let mut seen = Vec::new();
    let mut cursor = None;
    loop {
        let page = s
            .search(&Query {
                limit: 25,
                cursor: cursor.clone(),
                ..Query::default()
            })
            .await
            .expect("page");
        assert!(page.items.len() <= 25);
        seen.extend(page.items.iter().map(|r| r.tool.name.to_string()));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    let expected: Vec<String> = (0..120).map(|i| format!("tool_{i:03}")).collect();
    assert_eq!(seen, expected, "every tool once, in a stable order");
    let weather = s
        .search(&Query {
            text: Some("weather".into()),
            ..Query::default()
        })
        .await
        .expect("search");
    assert_eq!(weather.items.len(), 12);
    let by_name = s
        .search(&Query {
            text: Some("TOOL_11".into()),
            ..Query::default()
        })
        .await
        .expect("search");
    assert_eq!(
        by_name
            .items
            .iter()
            .map(|r| r.tool.name.to_string())
            .collect::<Vec<_>>(),
        [
            "tool_110", "tool_111", "tool_112", "tool_113", "tool_114", "tool_115", "tool_116",
            "tool_117", "tool_118", "tool_119"
        ]
    );
    let wild = s
        .search(&Query {
            text: Some("%".into()),
            ..Query::default()
        })
        .await
        .expect("search");
    assert!(wild.items.is_empty(), "% is a character, not a wildcard");
    let tagged = s
        .search(&Query {
            tag: Some("t2".into()),
            limit: 1000,
            ..Query::default()
        })
        .await
        .expect("search");
    assert_eq!(
        tagged.items.len(),
        120,
        "every name tool_NNN has 8 characters: tag t2"
    );
    assert!(matches!(
        s.search(&Query {
            cursor: Some("zz".into()),
            ..Query::default()
        })
        .await,
        Err(StoreError::Invalid(_))
    ));
}

async fn catalog_sync(s: &impl Store) {
    let tools = examples();
    let first = s.import(&tools, false, "ci").await.expect("import");
    assert_eq!(first.created.len(), tools.len());
    let again = s.import(&tools, false, "ci").await.expect("import");
    assert_eq!(
        again.unchanged.len(),
        tools.len(),
        "an unchanged tool keeps its version"
    );
    assert!(again.created.is_empty() && again.updated.is_empty());
    assert_eq!(s.get("git_log").await.expect("get").version, 1);
    // Change one, drop one, keep the rest.
    let mut changed: Vec<Tool> = tools
        .iter()
        .filter(|t| t.name.as_str() != "current_time")
        .cloned()
        .collect();
    changed
        .iter_mut()
        .find(|t| t.name.as_str() == "git_log")
        .expect("git_log")
        .description = "Changed.".into();
    let without_prune = s.import(&changed, false, "ci").await.expect("import");
    assert_eq!(without_prune.updated, ["git_log"]);
    assert!(without_prune.deleted.is_empty());
    assert!(
        s.get("current_time").await.is_ok(),
        "left alone without --prune"
    );
    let pruned = s.import(&changed, true, "ci").await.expect("import");
    assert_eq!(pruned.deleted, ["current_time"]);
    assert!(matches!(
        s.get("current_time").await,
        Err(StoreError::NotFound(_))
    ));
    assert_eq!(s.get("git_log").await.expect("get").version, 2);
    // Secrets are kept by the store (views redact them).
    assert_eq!(
        s.version("http_get", 1).await.expect("v1").definition["config"],
        json!({"timeout_ms": 5000, "max_bytes": 1048576})
    );
    // A catalog written from what a view showed carries `***` for a secret: importing it
    // keeps the stored value; `***` where nothing is stored is refused, naming the field.
    let secret = |value: &str| {
        let yaml = format!(
            "tools: [{{name: keyed, description: d, command: [env], config_schema: [{{name: key, secret: true, env_name: KEY}}], config: {{key: {value:?}}}}}]"
        );
        catalog::load("c.yaml", &Text(yaml))
            .unwrap_or_else(|e| panic!("{e}"))
            .tools
    };
    s.import(&secret("the-stored-key"), false, "ci")
        .await
        .expect("import");
    let again = s.import(&secret("***"), false, "ci").await.expect("import");
    assert_eq!(again.unchanged, ["keyed"], "*** keeps the stored secret");
    assert_eq!(
        s.get("keyed").await.expect("get").tool.config["key"],
        "the-stored-key"
    );
    let mut fresh = secret("***");
    fresh[0].name =
        toolsmith_core::model::ToolName::new("fresh", Default::default()).expect("name");
    match s.import(&fresh, false, "ci").await {
        Err(StoreError::Invalid(m)) => assert!(m.contains("fresh: config.key"), "{m}"),
        other => panic!("expected an error, got {other:?}"),
    }
    assert!(matches!(s.get("fresh").await, Err(StoreError::NotFound(_))));
}

/// Two writers, 100 read-modify-write updates each, retrying on conflict: none lost, no
/// version number twice.
async fn racing_writers(s: Arc<impl Store + 'static>) {
    s.create(&tool("counter", "0"), ALICE)
        .await
        .expect("create");
    let writer = |who: &'static str| {
        let s = s.clone();
        tokio::spawn(async move {
            let mut done = 0;
            while done < 100 {
                let current = s.get("counter").await.expect("get");
                let n: u64 = current.tool.description.parse().expect("a number");
                match s
                    .update(
                        &tool("counter", &(n + 1).to_string()),
                        current.version,
                        Change {
                            author: who,
                            summary: "+1",
                        },
                    )
                    .await
                {
                    Ok(_) => done += 1,
                    Err(StoreError::Conflict { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        })
    };
    let (a, b) = (writer("a"), writer("b"));
    a.await.expect("a");
    b.await.expect("b");
    let last = s.get("counter").await.expect("get");
    assert_eq!((last.version, last.tool.description.as_str()), (201, "200"));
    let history = s.history("counter").await.expect("history");
    let versions: Vec<u64> = history.iter().map(|v| v.version).collect();
    assert_eq!(versions, (1..=201).collect::<Vec<_>>());
    assert_eq!(history.iter().filter(|v| v.author == "a").count(), 100);
}

async fn execution_log(s: &impl Store) {
    use toolsmith_core::result::{ErrorKind, Meta, ToolResult};
    use toolsmith_store::{RunQuery, RunRecord};
    let mut batch = Vec::new();
    for i in 0..200u64 {
        let meta = Meta {
            tool: format!("t{}", i % 2),
            version: 1,
            duration_ms: Some(i as f64),
            ..Meta::default()
        };
        let result = if i % 5 == 0 {
            ToolResult::err(ErrorKind::Timeout, "slow", Vec::new(), meta)
        } else {
            ToolResult::ok(json!({}), meta)
        };
        let mut run = RunRecord::of(
            &result,
            &json!({"i": i}),
            if i < 100 { "alice" } else { "bob" },
        );
        // Calls of upstream MCP tools name their server.
        run.upstream = (i % 3 == 0).then(|| "github".to_owned());
        batch.push(run);
        // Written in batches of various sizes, as the server's log writer does.
        if batch.len() as u64 == 1 + i % 7 {
            s.record_runs(&batch, 150).await.expect("record");
            batch.clear();
        }
    }
    s.record_runs(&batch, 150).await.expect("record");
    let newest = s
        .runs(&RunQuery {
            limit: 3,
            ..RunQuery::default()
        })
        .await
        .expect("runs");
    let ids: Vec<i64> = newest.items.iter().map(|r| r.id).collect();
    assert_eq!(ids, [200, 199, 198], "newest first");
    assert_eq!(newest.items[0].arguments, json!({"i": 199}));
    let upstreams: Vec<Option<&str>> = newest.items.iter().map(|r| r.upstream.as_deref()).collect();
    assert_eq!(upstreams, [None, Some("github"), None], "199, 198, 197");
    let timeouts = s
        .runs(&RunQuery {
            kind: Some("timeout".into()),
            tool: Some("t0".into()),
            limit: 1000,
            ..RunQuery::default()
        })
        .await
        .expect("runs");
    assert!(
        timeouts
            .items
            .iter()
            .all(|r| r.kind == "timeout" && r.tool == "t0")
    );
    // Retention (150) is applied with every batch: the newest 150 are kept.
    let mut all = Vec::new();
    let mut cursor = None;
    loop {
        let page = s
            .runs(&RunQuery {
                limit: 40,
                cursor,
                ..RunQuery::default()
            })
            .await
            .expect("runs");
        all.extend(page.items.iter().map(|r| r.id));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(all, (51..=200).rev().collect::<Vec<_>>());
    let big = RunRecord::of(
        &ToolResult::ok(json!({}), Meta::default()),
        &json!({"x": "y".repeat(10_000)}),
        "c",
    );
    assert!(
        big.arguments
            .as_str()
            .is_some_and(|s| s.ends_with("… (cut)") && s.len() < 4200)
    );
}

/// Where sessions live: started, heartbeats, ended, and old rows pruned.
async fn session_directory(s: &impl Store) {
    use toolsmith_store::{SESSION_ROWS_KEPT_MS, SessionNote};
    let started = |id: &str, replica: &str, at_ms| SessionNote::Started {
        id: id.into(),
        replica: replica.into(),
        place: "host:1".into(),
        owner: "alice".into(),
        command: "bash".into(),
        at_ms,
        url: format!("http://{replica}.test:7700"),
    };
    s.note_session(&started("s-a-1", "a", 1000))
        .await
        .expect("start");
    s.note_session(&started("s-b-1", "b", 1000))
        .await
        .expect("start");
    let row = s.find_session("s-a-1").await.expect("find").expect("row");
    assert_eq!(
        (
            row.replica.as_str(),
            row.place.as_str(),
            row.owner.as_str(),
            row.status.as_str()
        ),
        ("a", "host:1", "alice", "running")
    );
    assert_eq!(row.url, "http://a.test:7700");
    assert_eq!((row.created_ms, row.last_seen_ms), (1000, 1000));
    // A heartbeat moves only its replica's running sessions.
    s.note_session(&SessionNote::Alive {
        replica: "a".into(),
        at_ms: 5000,
    })
    .await
    .expect("alive");
    assert_eq!(
        s.find_session("s-a-1")
            .await
            .expect("find")
            .expect("row")
            .last_seen_ms,
        5000
    );
    assert_eq!(
        s.find_session("s-b-1")
            .await
            .expect("find")
            .expect("row")
            .last_seen_ms,
        1000
    );
    s.note_session(&SessionNote::Ended {
        id: "s-a-1".into(),
        status: "expired".into(),
        at_ms: 6000,
    })
    .await
    .expect("end");
    s.note_session(&SessionNote::Alive {
        replica: "a".into(),
        at_ms: 7000,
    })
    .await
    .expect("alive");
    let row = s.find_session("s-a-1").await.expect("find").expect("row");
    assert_eq!((row.status.as_str(), row.last_seen_ms), ("expired", 6000));
    assert_eq!(s.find_session("s-none").await.expect("find"), None);
    // A start a day later removes rows not seen since.
    s.note_session(&started("s-a-2", "a", 6000 + SESSION_ROWS_KEPT_MS + 1))
        .await
        .expect("start");
    assert_eq!(s.find_session("s-a-1").await.expect("find"), None);
    assert!(s.find_session("s-a-2").await.expect("find").is_some());

    // A forward's nonce is taken once; an old one is forgotten after `keep_ms`.
    assert!(s.claim_nonce("n1", 10_000, 60_000).await.expect("claim"));
    assert!(!s.claim_nonce("n1", 10_001, 60_000).await.expect("claim"));
    assert!(s.claim_nonce("n2", 10_002, 60_000).await.expect("claim"));
    assert!(s.claim_nonce("n1", 80_000, 60_000).await.expect("claim"));

    // An MCP session: its initialize state, the log level its client set (kept when the
    // state is written again), forgotten when it ends.
    s.put_mcp_session("m-1", r#"{"init":1}"#, 1000, 60_000)
        .await
        .expect("put");
    assert_eq!(s.mcp_session_level("m-1").await.expect("level"), None);
    s.set_mcp_session_level("m-1", "warning")
        .await
        .expect("set");
    s.set_mcp_session_level("m-unknown", "debug")
        .await
        .expect("set");
    s.put_mcp_session("m-1", r#"{"init":2}"#, 2000, 60_000)
        .await
        .expect("put again");
    assert_eq!(
        s.mcp_session_level("m-1").await.expect("level").as_deref(),
        Some("warning")
    );
    assert_eq!(
        s.mcp_session("m-1", 0).await.expect("state").as_deref(),
        Some(r#"{"init":2}"#)
    );
    assert_eq!(s.mcp_session_level("m-unknown").await.expect("level"), None);
    s.drop_mcp_session("m-1").await.expect("drop");
    assert_eq!(s.mcp_session_level("m-1").await.expect("level"), None);
}

#[tokio::test]
async fn sqlite_session_directory() {
    let (_d, s) = sqlite().await;
    session_directory(&s).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_session_directory() {
    let s = postgres("sessions").await;
    session_directory(&s).await;
}

/// Replicas started together on a fresh registry file: every one opens it (each migration
/// applied once, under the write lock), none fails with "already exists".
#[test]
fn replicas_opening_a_fresh_sqlite_file_at_once_all_open_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("registry.db");
    let start = Arc::new(std::sync::Barrier::new(4));
    let openers: Vec<_> = (0..4)
        .map(|_| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                start.wait();
                rt.block_on(SqliteStore::open(&path)).map(|_| ())
            })
        })
        .collect();
    for opener in openers {
        opener
            .join()
            .expect("thread")
            .expect("opening the registry");
    }
}

#[tokio::test]
async fn sqlite_execution_log() {
    let (_d, s) = sqlite().await;
    execution_log(&s).await;
}

#[tokio::test]
async fn sqlite_versions_history_and_restore() {
    let (_d, s) = sqlite().await;
    versions_history_and_restore(&s).await;
}

#[tokio::test]
async fn sqlite_enable_disable_delete() {
    let (_d, s) = sqlite().await;
    enable_disable_delete(&s).await;
}

#[tokio::test]
async fn sqlite_search_and_pagination() {
    let (_d, s) = sqlite().await;
    search_and_pagination(&s).await;
}

#[tokio::test]
async fn sqlite_search_matches_a_scan() {
    let (_d, s) = sqlite().await;
    search_matches_a_scan(&s).await;
}

#[tokio::test]
async fn sqlite_generation_follows_writes() {
    let (_d, s) = sqlite().await;
    generation_follows_writes(&s).await;
}

#[tokio::test]
async fn sqlite_catalog_sync() {
    let (_d, s) = sqlite().await;
    catalog_sync(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_racing_writers() {
    let (_d, s) = sqlite().await;
    racing_writers(Arc::new(s)).await;
}

#[tokio::test]
async fn sqlite_reopens_with_its_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nested/registry.db");
    {
        let s = SqliteStore::open(&path).await.expect("open");
        s.create(&tool("kept", "Kept."), ALICE)
            .await
            .expect("create");
    }
    let s = SqliteStore::open(&path).await.expect("reopen");
    assert_eq!(s.get("kept").await.expect("get").tool.description, "Kept.");
}

/// The PostgreSQL runs are `#[ignore]`d, so a plain `cargo test` lists them as ignored
/// rather than passing them silently; `.ci/run` starts PostgreSQL, sets
/// `TOOLSMITH_TEST_POSTGRES` and runs them with `--include-ignored`.
const NEEDS_PG: &str = "TOOLSMITH_TEST_POSTGRES=postgres://user:pass@host/db is needed for the PostgreSQL tests (.ci/run sets it)";

/// PostgreSQL at `TOOLSMITH_TEST_POSTGRES`: each test gets a schema of its own.
async fn postgres(test: &str) -> toolsmith_store::postgres::PgStore {
    let url = std::env::var("TOOLSMITH_TEST_POSTGRES").expect(NEEDS_PG);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let schema = format!("ts_{test}_{}_{nanos}", std::process::id());
    toolsmith_store::postgres::PgStore::open_in_schema(&url, Some(&schema))
        .await
        .expect("postgres")
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_versions_history_and_restore() {
    let s = postgres("versions").await;
    versions_history_and_restore(&s).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_enable_disable_delete() {
    let s = postgres("enable").await;
    enable_disable_delete(&s).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_search_and_pagination() {
    let s = postgres("search").await;
    search_and_pagination(&s).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_search_matches_a_scan() {
    let s = postgres("scan").await;
    search_matches_a_scan(&s).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_generation_follows_writes() {
    let s = postgres("generation").await;
    generation_follows_writes(&s).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_catalog_sync() {
    let s = postgres("sync").await;
    catalog_sync(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_racing_writers() {
    let s = postgres("race").await;
    racing_writers(Arc::new(s)).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_execution_log() {
    let s = postgres("runs").await;
    execution_log(&s).await;
}

#[tokio::test]
async fn registry_opens_either_backend_by_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.db");
    let r = toolsmith_store::Registry::open(&format!("sqlite://{}", path.display()))
        .await
        .expect("sqlite");
    assert_eq!(r.backend(), "sqlite");
    r.create(&tool("x", "d"), ALICE).await.expect("create");
    assert!(path.exists());
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn registry_opens_postgres_by_address() {
    let url = std::env::var("TOOLSMITH_TEST_POSTGRES").expect(NEEDS_PG);
    let r = toolsmith_store::Registry::open(&url)
        .await
        .expect("postgres");
    assert_eq!(r.backend(), "postgres");
}

/// No files and no variables: what a test server definition needs.
struct Plain;

impl CatalogSource for Plain {
    fn read(&self, path: &str) -> Result<String, toolsmith_core::catalog::ReadError> {
        Err(toolsmith_core::catalog::ReadError::NoFiles {
            path: path.to_owned(),
            why: "no files",
        })
    }
    fn var(&self, _: &str) -> Option<String> {
        None
    }
}

/// A catalog's MCP servers replace only servers an import wrote last, and never change a
/// server's transport: one saved through REST or the UI, or running a command where the
/// catalog gives a URL, is skipped with why.
#[tokio::test]
async fn an_import_replaces_only_the_servers_imports_wrote() {
    use toolsmith_store::documents::Documents;
    use toolsmith_store::{UpstreamStore, import_servers};
    let (_d, s) = sqlite().await;
    let server = |v: serde_json::Value| catalog::parse_server(&v, &Plain).expect("server");
    let by_hand = server(json!({"name": "made", "command": ["node", "a.js"]}));
    s.create_doc(
        &by_hand,
        Change {
            author: "ui",
            summary: "created",
        },
    )
    .await
    .expect("create");
    let r = import_servers(
        &s,
        &[server(json!({"name": "made", "command": ["node", "b.js"]}))],
        "catalog",
    )
    .await
    .expect("import");
    assert!(r.updated.is_empty(), "{r:?}");
    assert!(r.skipped[0].contains("not by an import"), "{r:?}");
    assert_eq!(s.get_server("made").await.expect("get").server, by_hand);
    // A server the import made: updated by the next import, unless it turns into a URL.
    let first = server(json!({"name": "cat", "command": ["node", "a.js"]}));
    import_servers(&s, std::slice::from_ref(&first), "catalog")
        .await
        .expect("import");
    let r = import_servers(
        &s,
        &[server(json!({"name": "cat", "command": ["node", "b.js"]}))],
        "catalog",
    )
    .await
    .expect("import");
    assert_eq!(r.updated, ["cat"], "{r:?}");
    let r = import_servers(
        &s,
        &[server(
            json!({"name": "cat", "url": "https://mcp.example.com/mcp"}),
        )],
        "catalog",
    )
    .await
    .expect("import");
    assert!(
        r.updated.is_empty() && r.skipped[0].contains("never turns it into a URL"),
        "{r:?}"
    );
}
