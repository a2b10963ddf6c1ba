//! Rate limits enforced (SPEC §15), in this process: a GCRA bucket per caller and scope (a
//! tool, or the caller's own limit across tools), from `governor`. A call over its limit is
//! told how long to wait; it is never queued.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use toolsmith_core::rate::RateLimit;

/// Checks between two sweeps of buckets that have refilled (so idle callers cost nothing).
const SWEEP_EVERY: u64 = 4096;

/// Where buckets are kept when not in this process: the registry shared by replicas.
pub trait SharedBuckets: Send + Sync {
    /// Takes one call of `key` from the bucket of `scope` under `limit`: `Ok(None)` when it
    /// passes, `Ok(Some(wait))` when not, `Err` when the store could not be asked.
    fn take<'a>(
        &'a self,
        scope: &'a str,
        limit: RateLimit,
        key: &'a str,
    ) -> std::pin::Pin<
        Box<dyn Future<Output = Result<Option<Duration>, crate::BoxError>> + Send + 'a>,
    >;
}

/// One scope's limit and its buckets by caller.
type Scope = (RateLimit, std::sync::Arc<DefaultKeyedRateLimiter<String>>);

/// Every bucket of one process, or the shared store's when one is set.
#[derive(Default)]
pub struct RateLimiter {
    /// The replicas' shared buckets (PostgreSQL), when the registry has them.
    shared: std::sync::OnceLock<std::sync::Arc<dyn SharedBuckets>>,
    /// By scope: the limit it was made for and its buckets by caller.
    scopes: Mutex<HashMap<String, Scope>>,
    checks: AtomicU64,
}

impl std::fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RateLimiter")
    }
}

fn quota(limit: RateLimit) -> Quota {
    let every = Duration::from_millis((limit.per_ms / u64::from(limit.calls)).max(1));
    let burst = NonZeroU32::new(limit.burst).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(every)
        .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
        .allow_burst(burst)
}

impl RateLimiter {
    /// Keeps buckets in `shared` from now on (set once, at start).
    pub fn share(&self, shared: std::sync::Arc<dyn SharedBuckets>) {
        let _ = self.shared.set(shared);
    }

    /// [`Self::check`], in the shared buckets when there are some; if the store cannot be
    /// asked, the call is judged by this process's bucket (and the failure logged).
    pub async fn take(&self, scope: &str, limit: RateLimit, key: &str) -> Result<(), Duration> {
        let Some(shared) = self.shared.get() else {
            return self.check(scope, limit, key);
        };
        match shared.take(scope, limit, key).await {
            Ok(None) => Ok(()),
            Ok(Some(wait)) => Err(wait),
            Err(e) => {
                tracing::warn!(
                    "the shared rate limits could not be read ({e}); judging by this process's"
                );
                self.check(scope, limit, key)
            }
        }
    }

    /// Takes one call of `key` from the bucket of `scope` under `limit`; `Err` with the wait
    /// when the bucket is empty. A scope whose limit changed starts afresh.
    pub fn check(&self, scope: &str, limit: RateLimit, key: &str) -> Result<(), Duration> {
        let limiter = {
            let mut scopes = self.scopes.lock().unwrap_or_else(|e| e.into_inner());
            match scopes.get(scope) {
                Some((l, limiter)) if *l == limit => limiter.clone(),
                _ => {
                    let limiter = std::sync::Arc::new(DefaultKeyedRateLimiter::keyed(quota(limit)));
                    scopes.insert(scope.to_owned(), (limit, limiter.clone()));
                    limiter
                }
            }
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.sweep();
        }
        limiter
            .check_key(&key.to_owned())
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Forgets buckets that have refilled.
    fn sweep(&self) {
        let scopes = self.scopes.lock().unwrap_or_else(|e| e.into_inner());
        for (_, limiter) in scopes.values() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_per_caller_refills_at_the_rate() {
        let r = RateLimiter::default();
        let limit = RateLimit::parse("2/1s").expect("limit");
        assert!(r.check("t", limit, "a").is_ok());
        assert!(r.check("t", limit, "a").is_ok());
        let wait = r
            .check("t", limit, "a")
            .expect_err("a third call within the second");
        assert!(
            wait > Duration::from_millis(300) && wait <= Duration::from_millis(500),
            "{wait:?}"
        );
        assert!(
            r.check("t", limit, "b").is_ok(),
            "another caller has its own bucket"
        );
        assert!(
            r.check("u", limit, "a").is_ok(),
            "another scope has its own bucket"
        );
        std::thread::sleep(wait);
        assert!(r.check("t", limit, "a").is_ok(), "refilled after the wait");
        let tighter = RateLimit::parse("1/1h").expect("limit");
        assert!(
            r.check("t", tighter, "a").is_ok(),
            "a changed limit starts afresh"
        );
        assert!(r.check("t", tighter, "a").is_err());
    }
}
