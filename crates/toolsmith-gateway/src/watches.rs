//! Clients' subscriptions to upstream resources (`resources/subscribe`, a 2026-07-28
//! `subscriptions/listen` naming resources): each is a [`ResourceWatch`] on the resource's
//! owner, and toolsmith holds one upstream subscription per resource however many clients
//! watch it — subscribed with the first watch, unsubscribed when the last one is dropped.
//! What the upstream then says changed arrives on [`Gateway::resource_updates`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;
use toolsmith_exec::upstream::Event;

use crate::Gateway;
use crate::offers::OfferError;
use crate::view::View;

/// How many clients watch each `(server, uri)`.
#[derive(Debug, Default)]
pub(crate) struct Watchers(Mutex<HashMap<(String, String), usize>>);

/// One client's watch of a resource; dropping it ends the watch.
pub struct ResourceWatch {
    gateway: Arc<Gateway>,
    /// The resource's owner.
    pub server: String,
    pub uri: String,
}

impl Drop for ResourceWatch {
    fn drop(&mut self) {
        let key = (self.server.clone(), self.uri.clone());
        let last = {
            let mut counts = self
                .gateway
                .watchers
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            match counts.get_mut(&key) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    false
                }
                _ => counts.remove(&key).is_some(),
            }
        };
        if last && let Ok(rt) = tokio::runtime::Handle::try_current() {
            let gateway = self.gateway.clone();
            rt.spawn(async move {
                let upstreams = gateway.engine.upstreams();
                if let Err(e) = upstreams.unsubscribe_resource(&key.0, &key.1).await {
                    tracing::debug!(server = %key.0, "unsubscribing from {}: {e:?}", key.1);
                }
            });
        }
    }
}

impl Gateway {
    /// Watches `uri` for a client with `view`: the first watch of a resource subscribes to it
    /// at its owner. A resource outside the view is as missing.
    pub async fn watch_resource(
        self: &Arc<Self>,
        view: &View,
        uri: &str,
    ) -> Result<ResourceWatch, OfferError> {
        let server = self
            .resource_owner(view, uri)
            .await
            .ok_or_else(|| OfferError::NotFound {
                what: "resource",
                name: uri.to_owned(),
            })?;
        let key = (server.clone(), uri.to_owned());
        let first = {
            let mut counts = self.watchers.0.lock().unwrap_or_else(|e| e.into_inner());
            let n = counts.entry(key).or_insert(0);
            *n += 1;
            *n == 1
        };
        let watch = ResourceWatch {
            gateway: self.clone(),
            server: server.clone(),
            uri: uri.to_owned(),
        };
        if first {
            // Dropped on failure, the watch gives its count back.
            self.engine
                .upstreams()
                .subscribe_resource(&server, uri)
                .await?;
        }
        Ok(watch)
    }

    /// What upstreams say changed: `(server, uri)` of each `notifications/resources/updated`.
    pub fn resource_updates(&self) -> ResourceUpdates {
        ResourceUpdates(self.engine.upstreams().subscribe())
    }
}

/// The stream of upstream resource updates.
pub struct ResourceUpdates(broadcast::Receiver<Event>);

impl ResourceUpdates {
    /// The next update `(server, uri)`; `None` when the engine is gone.
    pub async fn next(&mut self) -> Option<(String, String)> {
        loop {
            match self.0.recv().await {
                Ok(Event::ResourceUpdated { server, uri }) => return Some((server, uri)),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}
