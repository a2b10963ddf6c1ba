//! What could not be served of each upstream's tools (name collisions, definitions the loader
//! refuses), by server: found by [`crate::federation`] each time it applies a listing, shown
//! with the server's status.

use std::collections::HashMap;
use std::sync::Mutex;

/// Problems found while turning a server's listing into tools (name collisions, definitions
/// the loader refuses), by server: shown with its status.
#[derive(Default)]
pub struct Problems(Mutex<HashMap<String, Vec<String>>>);

impl Problems {
    pub fn of(&self, server: &str) -> Vec<String> {
        lock(&self.0).get(server).cloned().unwrap_or_default()
    }
    /// Whether a listing of `server` was applied to the registry since this process started.
    pub fn applied(&self, server: &str) -> bool {
        lock(&self.0).contains_key(server)
    }

    pub(crate) fn set(&self, server: &str, list: Vec<String>) {
        lock(&self.0).insert(server.to_owned(), list);
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
