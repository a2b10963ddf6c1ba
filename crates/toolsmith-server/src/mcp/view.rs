//! Which view of the registry an MCP request gets ([`crate::view`]): the one the HTTP layer
//! attached to the request, or on stdio the `--toolset` the server was started with; for a
//! lasting request (a subscription), resolved again at each change.

use std::sync::Arc;

use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};

use crate::mcp::McpServer;
use toolsmith_gateway::view::View;

impl McpServer {
    /// What this request may see: the view the HTTP layer attached ([`crate::view::attach`]),
    /// or on stdio the `--toolset` this server was started with.
    pub(crate) async fn view(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Arc<View>, ErrorData> {
        let parts = ctx.extensions.get::<axum::http::request::Parts>();
        match parts.and_then(|p| p.extensions.get::<Arc<View>>()) {
            Some(view) => Ok(view.clone()),
            None => self.view_of_options().await,
        }
    }

    /// [`Self::view`] as of now, for a lasting request (a subscription): resolved again from
    /// who asked for what (toolsets are cached per registry generation), so an edited
    /// toolset is followed.
    pub(crate) async fn current_view(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<Arc<View>, ErrorData> {
        if let Some(asked) = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Arc<toolsmith_gateway::view::Asked>>())
        {
            return self
                .state
                .view(&asked.caller, &asked.ask)
                .await
                .map(Arc::new)
                .map_err(|e| ErrorData::invalid_params(e.to_string(), None));
        }
        self.view_of_options().await
    }

    /// The view of a server started for one toolset (or for every tool).
    pub(crate) async fn view_of_options(&self) -> Result<Arc<View>, ErrorData> {
        let ask = toolsmith_gateway::view::Ask {
            endpoint: self.options.toolset.clone(),
            ..Default::default()
        };
        self.state
            .view(&toolsmith_gateway::Caller::local(), &ask)
            .await
            .map(Arc::new)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))
    }
}
