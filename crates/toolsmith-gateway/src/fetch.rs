//! Documents the gateway fetches for an admin (an OpenAPI import's `spec_url`), through the
//! engine's one HTTP client: its redirects, limits and refusals apply.

use std::time::Duration;

use toolsmith_exec::http::{Failure, Outbound};

use crate::Gateway;

/// The largest document fetched.
const MAX_BYTES: u64 = 10 * 1024 * 1024;
/// How long a fetch may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// Why a document could not be fetched; each names the URL.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("spec_url {0:?}: an http:// or https:// URL")]
    NotHttp(String),
    #[error("spec_url: {0}")]
    Refused(String),
    #[error("spec_url {0}: no answer within 20 s")]
    Timeout(String),
    #[error("spec_url {url}: the document is over {limit} bytes")]
    TooLarge { url: String, limit: u64 },
    #[error("spec_url {url}: the server answered {status} {reason}")]
    Status {
        url: String,
        status: u16,
        reason: String,
    },
    #[error("spec_url {0}: the document is not UTF-8 text")]
    NotText(String),
}

impl Gateway {
    /// The text at `url` (JSON or YAML asked for).
    pub async fn fetch_document(&self, url: &str) -> Result<String, FetchError> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(FetchError::NotHttp(url.to_owned()));
        }
        let accept = [toolsmith_core::plan::Header {
            name: "accept".into(),
            value: "application/json, application/yaml;q=0.9, */*;q=0.5".into(),
            secret: false,
        }];
        let answer = self
            .engine
            .http()
            .send(Outbound {
                method: "GET",
                url,
                url_shown: url,
                headers: &accept,
                body: None,
                max_bytes: MAX_BYTES,
                truncate: false,
                timeout: TIMEOUT,
                allow_hosts: &[],
            })
            .await
            .map_err(|e| match e {
                Failure::Refused(m) | Failure::Network(m) => FetchError::Refused(m),
                Failure::Timeout => FetchError::Timeout(url.to_owned()),
                Failure::TooLarge { limit } => FetchError::TooLarge {
                    url: url.to_owned(),
                    limit,
                },
            })?;
        if answer.status >= 400 {
            return Err(FetchError::Status {
                url: url.to_owned(),
                status: answer.status,
                reason: answer.reason.to_owned(),
            });
        }
        String::from_utf8(answer.body).map_err(|_| FetchError::NotText(url.to_owned()))
    }
}
