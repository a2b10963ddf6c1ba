//! Rate limits (SPEC §15): how many calls a caller may make in a period, with a burst.
//! Declared on a tool (`rate_limit: {calls: 10, per: 1m, burst: 3}`: each caller's calls of
//! it), under `defaults`, per token (`rate_limit=100/1m`) and per server (`--rate-limit`).
//! Enforced by `toolsmith-exec` (this crate has no clock).

use serde::Serialize;

/// `calls` per `per_ms`, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimit {
    pub calls: u32,
    pub per_ms: u64,
    /// Calls that may come at once after a quiet spell (at least 1; `calls` when not given).
    pub burst: u32,
}

/// Why a rate limit's text or parts were refused; each says what was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateLimitError {
    #[error("{0:?}: after the comma, expected burst=N")]
    Burst(String),
    #[error("{0:?}: expected CALLS/PERIOD such as 100/1m (s, m or h)")]
    Shape(String),
    #[error("{what} {text:?}: expected a whole number of at least 1")]
    Count { what: &'static str, text: String },
    #[error("period {0:?}: expected a number and s, m or h (1s, 1m, 1h)")]
    Period(String),
    #[error("period {0:?}: from 1s to 24h")]
    PeriodRange(String),
    #[error("calls must be at least 1")]
    NoCalls,
}

impl RateLimit {
    /// `N/PER[,burst=M]`, PER being a count and a unit (`s`, `m`, `h`; `1` when left out):
    /// `100/1m`, `5/s`, `1000/1h,burst=50`.
    pub fn parse(text: &str) -> Result<Self, RateLimitError> {
        let (main, burst) = match text.split_once(',') {
            Some((m, b)) => {
                let b = b.trim();
                let n = b
                    .strip_prefix("burst=")
                    .ok_or_else(|| RateLimitError::Burst(text.to_owned()))?;
                (m, Some(parse_count(n, "burst")?))
            }
            None => (text, None),
        };
        let (calls, per) = main
            .split_once('/')
            .ok_or_else(|| RateLimitError::Shape(text.to_owned()))?;
        Self::new(parse_count(calls.trim(), "calls")?, per.trim(), burst)
    }

    /// From its parts; `per` as in [`Self::parse`].
    pub fn new(calls: u32, per: &str, burst: Option<u32>) -> Result<Self, RateLimitError> {
        let per_ms = parse_period(per)?;
        if calls == 0 {
            return Err(RateLimitError::NoCalls);
        }
        Ok(Self {
            calls,
            per_ms,
            burst: burst.unwrap_or(calls).max(1),
        })
    }

    /// The period as written back: `1m`, `30s`, `2h`.
    pub fn per_text(&self) -> String {
        let ms = self.per_ms;
        match ms {
            _ if ms.is_multiple_of(3_600_000) => format!("{}h", ms / 3_600_000),
            _ if ms.is_multiple_of(60_000) => format!("{}m", ms / 60_000),
            _ => format!("{}s", ms / 1000),
        }
    }

    /// `100/1m` (and `,burst=M` when it differs from the calls).
    pub fn text(&self) -> String {
        match self.burst == self.calls {
            true => format!("{}/{}", self.calls, self.per_text()),
            false => format!("{}/{},burst={}", self.calls, self.per_text(), self.burst),
        }
    }
}

impl Serialize for RateLimit {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let burst = self.burst != self.calls;
        let mut m = s.serialize_map(Some(2 + usize::from(burst)))?;
        m.serialize_entry("calls", &self.calls)?;
        m.serialize_entry("per", &self.per_text())?;
        if burst {
            m.serialize_entry("burst", &self.burst)?;
        }
        m.end()
    }
}

fn parse_count(text: &str, what: &'static str) -> Result<u32, RateLimitError> {
    text.parse::<u32>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| RateLimitError::Count {
            what,
            text: text.to_owned(),
        })
}

/// `1s`, `30s`, `1m`, `h` (one hour), up to a day.
fn parse_period(text: &str) -> Result<u64, RateLimitError> {
    let unit_at = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (count, unit) = text.split_at(unit_at);
    let count: u64 = match count {
        "" => 1,
        n => n
            .parse()
            .map_err(|_| RateLimitError::Period(text.to_owned()))?,
    };
    let unit_ms = match unit {
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(RateLimitError::Period(text.to_owned())),
    };
    let ms = count * unit_ms;
    match ms {
        1..=86_400_000 => Ok(ms),
        _ => Err(RateLimitError::PeriodRange(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogs_declare_limits_per_tool_and_under_defaults() {
        use crate::catalog::{TextSource, load};
        let yaml = "defaults:\n  rate_limit: 10/1m\ntools:\n  - {name: a, description: d, command: [\"true\"]}\n  - {name: b, description: d, command: [\"true\"], rate_limit: {calls: 3, per: 1h, burst: 1}}\n";
        let c = load("c.yaml", &TextSource(yaml.into())).expect("loads");
        assert_eq!(
            c.tools[0].rate_limit.map(|r| r.text()),
            Some("10/1m".into())
        );
        assert_eq!(
            c.tools[1].rate_limit.map(|r| r.text()),
            Some("3/1h,burst=1".into())
        );
        // The catalog form keeps it.
        let back = c.tools[1].to_catalog_value(crate::model::Secrets::Keep);
        assert_eq!(
            back["rate_limit"],
            serde_json::json!({"calls": 3, "per": "1h", "burst": 1})
        );
        let bad = "tools:\n  - {name: a, description: d, command: [\"true\"], rate_limit: {calls: 0, per: 1d}}\n  - {name: b, description: d, command: [\"true\"], rate_limit: {per: 1m}}\n";
        let errors = load("c.yaml", &TextSource(bad.into()))
            .expect_err("refused")
            .0;
        let at: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            at,
            ["tools[0].rate_limit", "tools[1].rate_limit.calls"],
            "{errors:?}"
        );
    }

    #[test]
    fn limits_read_and_write_back() {
        let r = RateLimit::parse("100/1m").expect("valid");
        assert_eq!((r.calls, r.per_ms, r.burst), (100, 60_000, 100));
        assert_eq!(r.text(), "100/1m");
        let r = RateLimit::parse("5/s,burst=2").expect("valid");
        assert_eq!(
            (r.calls, r.per_ms, r.burst, r.text()),
            (5, 1000, 2, "5/1s,burst=2".into())
        );
        assert_eq!(
            serde_json::to_value(r).expect("json"),
            serde_json::json!({"calls": 5, "per": "1s", "burst": 2})
        );
        assert_eq!(RateLimit::parse("3/90s").expect("valid").per_text(), "90s");
        for bad in [
            "0/1m",
            "10",
            "10/1d",
            "10/0s",
            "x/1m",
            "10/1m,bursts=3",
            "10/25h",
        ] {
            assert!(RateLimit::parse(bad).is_err(), "{bad} accepted");
        }
    }
}
