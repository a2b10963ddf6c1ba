//! Rate-limit buckets shared by replicas: kept in the registry when it is PostgreSQL, so a
//! caller's limit holds across every replica behind a load balancer; with SQLite they stay in
//! this process (the engine's own buckets).

use std::sync::Arc;
use std::time::Duration;

use toolsmith_store::Registry;

use crate::Gateway;

impl Gateway {
    /// Keeps rate-limit buckets in the registry when it is shared by replicas (PostgreSQL),
    /// so a limit holds across them; with SQLite they stay in this process.
    pub fn share_rate_limits(&self) {
        if matches!(self.store, Registry::Postgres(_)) {
            self.engine
                .rates()
                .share(Arc::new(RegistryBuckets(self.store.clone())));
        }
    }
}

/// Rate-limit buckets in the registry ([`Registry::take_rate`]).
struct RegistryBuckets(Registry);

impl toolsmith_exec::rate::SharedBuckets for RegistryBuckets {
    fn take<'a>(
        &'a self,
        scope: &'a str,
        limit: toolsmith_core::rate::RateLimit,
        key: &'a str,
    ) -> std::pin::Pin<
        Box<dyn Future<Output = Result<Option<Duration>, toolsmith_exec::BoxError>> + Send + 'a>,
    > {
        Box::pin(async move {
            match self.0.take_rate(scope, key, limit).await {
                Some(Ok(wait)) => Ok(wait.map(Duration::from_millis)),
                Some(Err(e)) => Err(e.into()),
                None => Err(NoSharedRates.into()),
            }
        })
    }
}

/// A registry that keeps no rate buckets (SQLite: one process, whose own buckets hold).
#[derive(Debug, thiserror::Error)]
#[error("this registry keeps no rate limits")]
struct NoSharedRates;
