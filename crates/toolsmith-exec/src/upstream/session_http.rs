//! The HTTP client of an HTTP upstream's connection ([`SessionAware`]): reqwest as rmcp's
//! Streamable HTTP client, with a repair for servers that answer a lost session wrongly, and
//! an OAuth server's refusals noted where calls and the next authorization find them.

use std::collections::HashMap;
use std::sync::Arc;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};

/// reqwest as rmcp's HTTP client, with one repair. Many servers (the TypeScript SDK's
/// examples among them) answer a request on a session they no longer know — they restarted
/// — with HTTP 400 and a JSON-RPC error without an id, not the 404 the spec asks for. rmcp
/// cannot match that error to the request, which would then wait for its whole timeout;
/// taken as the session expiring, it makes rmcp initialize a new session and send the
/// request again.
///
/// And it notes an OAuth server's refusal — without a token (401) or for want of scope (403
/// `insufficient_scope`), either of which ends the connection — where calls and the next
/// authorization find it ([`super::Upstream::auth_challenge`]).
#[derive(Clone)]
pub(crate) struct SessionAware(
    pub reqwest::Client,
    pub Arc<std::sync::Mutex<Option<String>>>,
);

impl StreamableHttpClient for SessionAware {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let max =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::default()
                .max_sse_event_size;
        self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max,
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<reqwest::Error>> {
        let on_session = session_id.is_some() && matches!(message, JsonRpcMessage::Request(_));
        let answer = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        match answer {
            Err(StreamableHttpError::InsufficientScope(e)) => {
                tracing::warn!(
                    "an MCP server refused a request for want of scope: {}",
                    e.www_authenticate_header
                );
                *super::lock(&self.1) = Some(e.www_authenticate_header.clone());
                Err(StreamableHttpError::InsufficientScope(e))
            }
            Err(StreamableHttpError::AuthRequired(e)) => {
                *super::lock(&self.1) = Some(e.www_authenticate_header.clone());
                Err(StreamableHttpError::AuthRequired(e))
            }
            Ok(StreamableHttpPostResponse::Json(JsonRpcMessage::Error(e), _))
                if on_session && e.id.is_none() =>
            {
                tracing::info!(
                    "an MCP server answered a request on its session with an error for no request ({}): taken as the session expiring",
                    e.error.message
                );
                Err(StreamableHttpError::SessionExpired)
            }
            other => other,
        }
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<reqwest::Error>>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>>> + Send + '_
    {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<BoxedSseResponse, StreamableHttpError<reqwest::Error>>> + Send + '_
    {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}
