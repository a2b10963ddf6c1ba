//! Where sessions live, kept in the registry so replicas sharing it can tell a caller where
//! a session is (SPEC §5.4).
//!
//! A session is processes of one server. Its id names the replica that holds it; the engine
//! reports starts, ends and a heartbeat of its live sessions here, and this writes them to
//! the registry's `sessions` table in order, off the call path. A replica that gets a call
//! for a session it does not hold asks [`Directory::locate`]: a session whose replica
//! reported it lately is `session_elsewhere`, one whose replica went silent (or, on this
//! host, whose server process is gone) is `session_lost`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;
use toolsmith_exec::session::{Directory, DirectoryEvent, HEARTBEAT, Located};
use toolsmith_store::{Registry, SessionNote, Store};

/// A replica whose heartbeat is older than this is taken for gone with its sessions.
pub const STALE_AFTER_MS: u64 = 3 * HEARTBEAT.as_millis() as u64;

/// The registry as the engine's session directory.
pub struct RegistryDirectory {
    store: Registry,
    /// `host:pid` of this server.
    place: String,
    notes: mpsc::UnboundedSender<SessionNote>,
}

impl RegistryDirectory {
    /// Starts the writer task (inside a Tokio runtime).
    pub fn start(store: Registry) -> Arc<Self> {
        let (notes, mut queue) = mpsc::unbounded_channel::<SessionNote>();
        let writer = store.clone();
        tokio::spawn(async move {
            while let Some(note) = queue.recv().await {
                if let Err(e) = writer.note_session(&note).await {
                    tracing::warn!("recording a session in the registry: {e}");
                }
            }
        });
        Arc::new(Self {
            store,
            place: format!("{}:{}", hostname(), std::process::id()),
            notes,
        })
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Whether `place` (`host:pid`) names a process of this host that is gone.
fn gone_from_this_host(place: &str) -> bool {
    match place.rsplit_once(':') {
        Some((host, pid)) if host == hostname() => {
            !std::path::Path::new(&format!("/proc/{pid}")).exists()
        }
        _ => false,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Directory for RegistryDirectory {
    fn note(&self, event: DirectoryEvent) {
        let at_ms = now_ms();
        let note = match event {
            DirectoryEvent::Started {
                id,
                replica,
                owner,
                command,
            } => SessionNote::Started {
                id,
                replica,
                place: self.place.clone(),
                owner,
                command,
                at_ms,
            },
            DirectoryEvent::Ended { id, status } => SessionNote::Ended { id, status, at_ms },
            DirectoryEvent::Alive { replica, .. } => SessionNote::Alive { replica, at_ms },
        };
        let _ = self.notes.send(note);
    }

    fn locate<'a>(
        &'a self,
        id: &'a str,
    ) -> Pin<Box<dyn Future<Output = Option<Located>> + Send + 'a>> {
        Box::pin(async move {
            let row = match self.store.find_session(id).await {
                Ok(row) => row?,
                Err(e) => {
                    tracing::warn!("looking up session {id} in the registry: {e}");
                    return None;
                }
            };
            let last_seen_ms = row.last_seen_ms.max(0) as u64;
            let fresh = (now_ms().max(0) as u64).saturating_sub(last_seen_ms) < STALE_AFTER_MS;
            Some(Located {
                alive: row.status == "running" && fresh && !gone_from_this_host(&row.place),
                replica: format!("{} ({})", row.replica, row.place),
                status: row.status,
                last_seen_ms,
            })
        })
    }
}
