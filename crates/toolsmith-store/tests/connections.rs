//! OAuth connections to upstreams in the registry: kept per server and subject, sealed with
//! the registry's key (never in the clear in the file), listed without what they hold,
//! re-sealed when the key rotates, forgotten — on SQLite and PostgreSQL. (A test binary of
//! its own: the key is the process's, so the tests here take turns.)

use toolsmith_store::UpstreamStore;
use toolsmith_store::secrets::{self, SecretKey};

const CREDENTIALS: &str = r#"{"client_id":"c1","token_response":{"access_token":"at-very-secret-42","token_type":"Bearer"}}"#;

/// The process's key is one: the tests take turns.
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Without a key nothing is kept; with one, kept, read, listed. The key used.
async fn keep_and_list(store: &impl UpstreamStore) -> SecretKey {
    secrets::use_key(None);
    let refused = store.put_connection("gh", "", CREDENTIALS).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("no registry key")),
        "{refused:?}"
    );
    let key = SecretKey::generate();
    secrets::use_key(Some(key.clone()));
    store
        .put_connection("gh", "", CREDENTIALS)
        .await
        .expect("put");
    store
        .put_connection("gh", "alice", "{}")
        .await
        .expect("put");
    store.put_connection("linear", "", "{}").await.expect("put");
    assert_eq!(
        store.connection("gh", "").await.expect("read").as_deref(),
        Some(CREDENTIALS)
    );
    assert_eq!(store.connection("gh", "bob").await.expect("read"), None);
    let listed: Vec<(String, String)> = store
        .connections(Some("gh"))
        .await
        .expect("list")
        .into_iter()
        .map(|c| (c.server, c.subject))
        .collect();
    assert_eq!(
        listed,
        [("gh".into(), "".into()), ("gh".into(), "alice".into())]
    );
    assert_eq!(store.connections(None).await.expect("list").len(), 3);
    key
}

/// After a reseal from `old` to `new`: the new key opens them, the old no longer does; then
/// they are forgotten one by one.
async fn resealed_and_forgotten(store: &impl UpstreamStore, old: SecretKey, new: SecretKey) {
    secrets::use_key(Some(new));
    assert_eq!(
        store.connection("gh", "").await.expect("read").as_deref(),
        Some(CREDENTIALS)
    );
    secrets::use_key(Some(old));
    assert!(
        store.connection("gh", "").await.is_err(),
        "the old key opens them"
    );
    assert!(store.drop_connection("gh", "alice").await.expect("drop"));
    assert!(!store.drop_connection("gh", "alice").await.expect("drop"));
}

#[tokio::test]
async fn sqlite_connections_are_sealed_listed_resealed_and_forgotten() {
    let _turn = TURN.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("registry.db");
    let store = toolsmith_store::sqlite::SqliteStore::open(&path)
        .await
        .expect("open");
    let first = keep_and_list(&store).await;
    // Sealed at rest: the token is nowhere in the database's files.
    let mut raw = std::fs::read(&path).expect("read the file");
    raw.extend(std::fs::read(dir.path().join("registry.db-wal")).unwrap_or_default());
    assert!(
        !raw.windows(17).any(|w| w == b"at-very-secret-42"),
        "the token is in the registry in the clear"
    );
    let second = SecretKey::generate();
    store.reseal(Some(&first), &second).await.expect("reseal");
    resealed_and_forgotten(&store, first, second).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL (TOOLSMITH_TEST_POSTGRES)"]
async fn postgres_connections_are_sealed_listed_resealed_and_forgotten() {
    let _turn = TURN.lock().await;
    let url = std::env::var("TOOLSMITH_TEST_POSTGRES")
        .expect("TOOLSMITH_TEST_POSTGRES must name a PostgreSQL database (.ci/run sets one up)");
    let schema = format!("ts_connections_{}", std::process::id());
    let store = toolsmith_store::postgres::PgStore::open_in_schema(&url, Some(&schema))
        .await
        .expect("postgres");
    let first = keep_and_list(&store).await;
    let second = SecretKey::generate();
    store.reseal(Some(&first), &second).await.expect("reseal");
    resealed_and_forgotten(&store, first, second).await;
}
