//! What a 2026-07-28 upstream says between calls. It has no session to send notifications on,
//! so toolsmith keeps one `subscriptions/listen` open with it, for its tools', prompts' and
//! resources' `list_changed` and for the updates of the resources toolsmith's clients watch.
//! The filter names those resources, so the subscription is opened again (the old one
//! cancelled) when the set changes. An upstream on the older protocol sends the same
//! notifications on its session instead ([`super::conn::Handler`]).

use std::collections::BTreeSet;

use rmcp::model::{ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::{RoleClient, Subscription};

/// Whether the connection speaks the 2026-07-28 protocol (no session).
pub(crate) fn modern(peer: &rmcp::Peer<RoleClient>) -> bool {
    peer.peer_info()
        .is_some_and(|info| info.protocol_version >= ProtocolVersion::V_2026_07_28)
}

/// Opens the subscription: every `list_changed`, and the updates of `watched`. `None` when
/// the upstream refuses it (it is then listed again periodically, as any upstream is).
pub(crate) async fn open(
    server: &str,
    peer: &rmcp::Peer<RoleClient>,
    watched: &BTreeSet<String>,
) -> Option<Subscription> {
    let mut filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .prompts_list_changed()
        .resources_list_changed()
        .build();
    if !watched.is_empty() {
        filter.resource_subscriptions = Some(watched.iter().cloned().collect());
    }
    match tokio::time::timeout(super::START_TIMEOUT, peer.listen(filter)).await {
        Ok(Ok(sub)) => Some(sub),
        Ok(Err(e)) => {
            tracing::info!(server, "MCP server refused subscriptions/listen: {e}");
            None
        }
        Err(_) => {
            tracing::info!(
                server,
                "MCP server did not acknowledge subscriptions/listen"
            );
            None
        }
    }
}

/// What was heard on the subscription.
pub(crate) enum Heard {
    /// Its tools, prompts or resources changed.
    ListChanged,
    /// A watched resource changed.
    ResourceUpdated(String),
    /// Something else (ignored).
    Other,
    /// The subscription ended.
    Ended,
}

/// The next notification on `sub`; never resolves without one.
pub(crate) async fn next(sub: &mut Option<Subscription>) -> Heard {
    let Some(s) = sub.as_mut() else {
        return std::future::pending().await;
    };
    match s.next().await {
        Ok(Some(
            ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::PromptListChangedNotification(_)
            | ServerNotification::ResourceListChangedNotification(_),
        )) => Heard::ListChanged,
        Ok(Some(ServerNotification::ResourceUpdatedNotification(n))) => {
            Heard::ResourceUpdated(n.params.uri)
        }
        Ok(Some(_)) => Heard::Other,
        Ok(None) | Err(_) => {
            *sub = None;
            Heard::Ended
        }
    }
}
