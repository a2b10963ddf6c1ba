//! OAuth connections to upstreams in the registry: kept per server and subject, sealed with
//! the registry's key (never in the clear in the file), listed without what they hold,
//! re-sealed when the key rotates, forgotten. (A test binary of its own:
//! the key is the process's.)

use toolsmith_store::UpstreamStore;
use toolsmith_store::secrets::{self, SecretKey};
use toolsmith_store::sqlite::SqliteStore;

const CREDENTIALS: &str = r#"{"client_id":"c1","token_response":{"access_token":"at-very-secret-42","token_type":"Bearer"}}"#;

#[tokio::test]
async fn connections_are_sealed_listed_resealed_and_forgotten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("registry.db");
    // Without a key, nothing is kept in the clear: the write is refused.
    secrets::use_key(None);
    let store = SqliteStore::open(&path).await.expect("open");
    let refused = store.put_connection("gh", "", CREDENTIALS).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("no registry key")),
        "{refused:?}"
    );

    let first = SecretKey::generate();
    secrets::use_key(Some(first.clone()));
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

    // Sealed at rest: the token is nowhere in the database's files.
    let mut raw = std::fs::read(&path).expect("read the file");
    raw.extend(std::fs::read(dir.path().join("registry.db-wal")).unwrap_or_default());
    assert!(
        !raw.windows(17).any(|w| w == b"at-very-secret-42"),
        "the token is in the registry in the clear"
    );

    // A rotated key re-seals them: the new key opens them, the old no longer does.
    let second = SecretKey::generate();
    store.reseal(Some(&first), &second).await.expect("reseal");
    secrets::use_key(Some(second));
    assert_eq!(
        store.connection("gh", "").await.expect("read").as_deref(),
        Some(CREDENTIALS)
    );
    secrets::use_key(Some(first));
    assert!(
        store.connection("gh", "").await.is_err(),
        "the old key opens them"
    );

    // Forgotten one by one, and with their server.
    assert!(store.drop_connection("gh", "alice").await.expect("drop"));
    assert!(!store.drop_connection("gh", "alice").await.expect("drop"));
}
