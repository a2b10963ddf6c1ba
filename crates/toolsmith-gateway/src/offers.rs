//! What upstreams offer besides tools, through the gateway (SPEC §11): their resources,
//! resource templates and prompts merged in the caller's view, and `resources/read`,
//! `prompts/get` and `completion/complete` routed to the server that owns what they name.
//!
//! Prompts and templates are served as approved ([`crate::offer_pins`]); a held one is left
//! out. Resources keep the URIs their server gave; prompts are named like the server's tools
//! (its prefix, [`SEPARATOR`], the upstream's name; no prefix, the name as is). Servers are
//! merged in name order: a URI, template or prompt name a second server also offers is served
//! from the first, and the clash is logged naming both. A view holds a server's resources and
//! prompts when its toolsets name the server or pick them by name or URI (see
//! [`View::admits_prompt`], [`View::admits_resource`]); outside the view
//! they answer exactly as missing ones. A URI no server lists but one template matches goes to
//! that template's server; with none, to the one visible server offering resources, if there
//! is exactly one (servers may serve URIs they do not list).

use std::time::Instant;

use serde_json::{Map, Value, json};
use toolsmith_core::upstream::SEPARATOR;
use toolsmith_exec::upstream::{Offer, ServerOffer, UpstreamError};
use toolsmith_store::RunRecord;

use crate::Gateway;
use crate::call::Door;
use crate::view::View;

/// Why an offer's request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum OfferError {
    /// No visible server offers it (or the caller may not see it).
    #[error("unknown {what} {name:?}")]
    NotFound { what: &'static str, name: String },
    #[error("{0}")]
    Upstream(String),
    /// The upstream answered with a JSON-RPC error, passed on.
    #[error("{message}")]
    Rpc { code: i32, message: String },
}

impl OfferError {
    /// Its kind in the run log: `not_found`, or `upstream`.
    fn kind(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "not_found",
            Self::Upstream(_) | Self::Rpc { .. } => "upstream",
        }
    }
}

impl From<UpstreamError> for OfferError {
    fn from(e: UpstreamError) -> Self {
        match e {
            UpstreamError::Rpc { code, message, .. } => Self::Rpc { code, message },
            UpstreamError::Unknown(s) => Self::Upstream(format!("no MCP server {s:?} here")),
            UpstreamError::Down(why)
            | UpstreamError::Failed(why)
            | UpstreamError::NeedsAuthorization(why) => Self::Upstream(why),
            UpstreamError::Timeout(t) => {
                Self::Upstream(format!("no answer within {} s", t.as_secs()))
            }
        }
    }
}

/// A prompt's served name: the server's prefix, [`SEPARATOR`] and its own.
fn prompt_name(prefix: &str, name: &str) -> String {
    match prefix {
        "" => name.to_owned(),
        p => format!("{p}{SEPARATOR}{name}"),
    }
}

/// Items of every server by key that `admits` lets into the view, first server first,
/// clashes dropped (logged): `(server, item)`.
fn merged<T>(
    offers: &[ServerOffer],
    admits: impl Fn(&str, &str) -> bool,
    pick: impl Fn(&ServerOffer) -> Vec<(String, T)>,
    what: &str,
) -> Vec<(String, T)> {
    let mut owner = std::collections::HashMap::<String, String>::new();
    let mut out = Vec::new();
    for o in offers {
        for (key, item) in pick(o).into_iter().filter(|(k, _)| admits(&o.server, k)) {
            match owner.get(&key) {
                None => {
                    owner.insert(key, o.server.clone());
                    out.push((o.server.clone(), item));
                }
                Some(first) => tracing::warn!(
                    "{what} {key:?} is offered by MCP servers `{first}` and `{}`; `{first}`'s is served",
                    o.server
                ),
            }
        }
    }
    out
}

fn key_of(item: &Value, field: &str) -> String {
    item.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Whether `uri` is one `template` (RFC 6570) expands to: its literal parts in order, each
/// expression standing for at least one character — no `/` but for `{+…}` and `{#…}`.
pub fn template_matches(template: &str, uri: &str) -> bool {
    fn go(t: &str, u: &str) -> bool {
        let Some(open) = t.find('{') else {
            return t == u;
        };
        let (literal, rest) = t.split_at(open);
        let Some(u) = u.strip_prefix(literal) else {
            return false;
        };
        let Some(close) = rest.find('}') else {
            return false;
        };
        let reserved = matches!(rest.as_bytes().get(1), Some(b'+' | b'#'));
        let after = &rest[close + 1..];
        (1..=u.len())
            .filter(|&n| u.is_char_boundary(n))
            .take_while(|&n| reserved || !u[..n].contains('/'))
            .any(|n| go(after, &u[n..]))
    }
    go(template, uri)
}

/// Whether an item of `server` is in a listing narrowed to `only` (none: every server's).
fn of(only: Option<&str>, server: &str) -> bool {
    only.is_none_or(|o| o == server)
}

fn resources_of(offers: &[ServerOffer], view: &View, only: Option<&str>) -> Vec<Value> {
    listed(offers, view, |o| &o.resources, "uri", "resource", only)
}

fn templates_of(offers: &[ServerOffer], view: &View, only: Option<&str>) -> Vec<Value> {
    listed(
        offers,
        view,
        |o| &o.templates,
        "uriTemplate",
        "resource template",
        only,
    )
}

fn prompts_of(offers: &[ServerOffer], view: &View, only: Option<&str>) -> Vec<Value> {
    served_prompts(offers, view)
        .into_iter()
        .filter(|(server, _, _)| of(only, server))
        .map(|(_, _, p)| p)
        .collect()
}

/// The items of one list (`pick`, resources or templates) in `view`, keyed by `key` (a URI
/// or a URI template, which the view's `resources:` globs match); of server `only` if given
/// (after the merge, so an item another server serves is not listed as this one's).
fn listed(
    offers: &[ServerOffer],
    view: &View,
    pick: impl Fn(&Offer) -> &Vec<Value>,
    key: &str,
    what: &str,
    only: Option<&str>,
) -> Vec<Value> {
    let items = |o: &ServerOffer| {
        pick(&o.offer)
            .iter()
            .map(|item| (key_of(item, key), item.clone()))
            .collect()
    };
    let admits = |server: &str, key: &str| view.admits_resource(server, key);
    merged(offers, admits, items, what)
        .into_iter()
        .filter(|(server, _)| of(only, server))
        .map(|(_, item)| item)
        .collect()
}

/// `(server, upstream name, prompt as served)` of every prompt in `view`.
fn served_prompts(offers: &[ServerOffer], view: &View) -> Vec<(String, String, Value)> {
    merged(
        offers,
        |server, served| view.admits_prompt(server, served),
        |o| {
            o.offer
                .prompts
                .iter()
                .map(|p| {
                    let own = key_of(p, "name");
                    let served = prompt_name(&o.prefix, &own);
                    let mut p = p.clone();
                    if let Some(map) = p.as_object_mut() {
                        map.insert("name".into(), Value::String(served.clone()));
                    }
                    (served, (own, p))
                })
                .collect()
        },
        "prompt",
    )
    .into_iter()
    .map(|(server, (own, p))| (server, own, p))
    .collect()
}

impl Gateway {
    /// What each upstream offers now, its prompts and templates as approved
    /// ([`crate::offer_pins`]).
    ///
    /// Kept per registry generation (taken before the read, so a change that raced with it
    /// makes the kept one stale, never the reverse): every change of an upstream's offer or
    /// of its pins is a registry change (`offer_pins::reconcile`, approvals, the servers'
    /// sync), so a read or a get between two changes reads no pins.
    async fn offers(&self) -> Vec<ServerOffer> {
        let generation = self.generation();
        if let Some((at, kept)) = &*self.served_offers.lock().unwrap_or_else(|e| e.into_inner())
            && *at == generation
        {
            return kept.clone();
        }
        let mut out = Vec::new();
        for mut o in self.engine.upstreams().offers() {
            o.offer = std::sync::Arc::new(self.approved(&o.server, &o.offer).await);
            out.push(o);
        }
        let mut kept = self.served_offers.lock().unwrap_or_else(|e| e.into_inner());
        if kept.as_ref().is_none_or(|(at, _)| *at <= generation) {
            *kept = Some((generation, out.clone()));
        }
        out
    }

    /// The resources `view` holds (MCP `Resource` objects), servers in name order; of the
    /// server `only` if given.
    pub async fn resources(&self, view: &View, only: Option<&str>) -> Vec<Value> {
        resources_of(&self.offers().await, view, only)
    }

    /// The resource templates `view` holds (of the server `only` if given).
    pub async fn resource_templates(&self, view: &View, only: Option<&str>) -> Vec<Value> {
        templates_of(&self.offers().await, view, only)
    }

    /// The prompts `view` holds, each under its served name (of the server `only` if given).
    pub async fn prompts(&self, view: &View, only: Option<&str>) -> Vec<Value> {
        prompts_of(&self.offers().await, view, only)
    }

    /// The server that serves `uri` in `view`: one listing it, else one whose template
    /// matches it, else the only visible server offering resources.
    pub(crate) async fn resource_owner(&self, view: &View, uri: &str) -> Option<String> {
        // The servers whose part of the view holds this URI.
        let offers: Vec<ServerOffer> = self
            .offers()
            .await
            .into_iter()
            .filter(|o| view.admits_resource(&o.server, uri))
            .collect();
        let listed = offers
            .iter()
            .find(|o| o.offer.resources.iter().any(|r| key_of(r, "uri") == uri));
        let templated = || {
            offers.iter().find(|o| {
                o.offer
                    .templates
                    .iter()
                    .any(|t| template_matches(&key_of(t, "uriTemplate"), uri))
            })
        };
        let only = || {
            let mut with = offers
                .iter()
                .filter(|o| !o.offer.resources.is_empty() || !o.offer.templates.is_empty());
            match (with.next(), with.next()) {
                (Some(one), None) => Some(one),
                _ => None,
            }
        };
        listed
            .or_else(templated)
            .or_else(only)
            .map(|o| o.server.clone())
    }

    /// Fingerprints of what `view` holds: `(prompts, resources and templates)`; a change of
    /// either is a `list_changed` for clients that follow them.
    pub async fn offer_fingerprints(&self, view: &View) -> (u64, u64) {
        use std::hash::{DefaultHasher, Hash, Hasher};
        let hash = |items: &[Value]| {
            let mut h = DefaultHasher::new();
            for i in items {
                i.to_string().hash(&mut h);
            }
            h.finish()
        };
        // One reading of the offers (and their pins) for all three lists.
        let offers = self.offers().await;
        let mut resources = resources_of(&offers, view, None);
        resources.extend(templates_of(&offers, view, None));
        (hash(&prompts_of(&offers, view, None)), hash(&resources))
    }

    /// `resources/read` of `uri` as `view` may: the owner's `ReadResourceResult` (its `ttlMs`
    /// kept, its `cacheScope` private). Logged in the run log as `resources/read` (its URI the
    /// arguments, its server the upstream).
    pub async fn read_resource(
        &self,
        door: &Door,
        view: &View,
        uri: &str,
    ) -> Result<Value, OfferError> {
        let started = Instant::now();
        let server = self.resource_owner(view, uri).await;
        let result = match &server {
            None => Err(OfferError::NotFound {
                what: "resource",
                name: uri.to_owned(),
            }),
            Some(server) => self
                .engine
                .upstreams()
                .read_resource(server, uri, door.on_behalf(&door.subject()))
                .await
                .map_err(OfferError::from),
        };
        let (mut result, guarded) = self.guard_offer(server.as_deref(), result);
        if let Ok(Value::Object(answer)) = &mut result {
            // Freshness is the owner's to say (its `ttlMs` is kept); whether a cached answer
            // may be shared is toolsmith's: a resource is in some callers' views and not
            // others', so never across authorization contexts.
            answer.insert("cacheScope".into(), Value::String("private".into()));
        }
        let asked = Asked {
            method: "resources/read",
            server,
            arguments: json!({ "uri": uri }),
            guardrails: guarded,
        };
        self.record_offer(door, asked, &result, started);
        result
    }

    /// `prompts/get` of the served prompt `name`: the owner's `GetPromptResult`. Logged as
    /// `prompts/get`.
    pub async fn get_prompt(
        &self,
        door: &Door,
        view: &View,
        name: &str,
        arguments: Map<String, Value>,
        resume: Option<toolsmith_exec::upstream::Resume>,
    ) -> Result<Value, OfferError> {
        let started = Instant::now();
        let found = served_prompts(&self.offers().await, view)
            .into_iter()
            .find(|(_, _, p)| key_of(p, "name") == name);
        let logged = json!({ "name": name, "arguments": arguments });
        let result = match &found {
            None => Err(OfferError::NotFound {
                what: "prompt",
                name: name.to_owned(),
            }),
            Some((server, own, _)) => self
                .engine
                .upstreams()
                .get_prompt(
                    server,
                    own,
                    arguments,
                    resume,
                    door.on_behalf(&door.subject()),
                )
                .await
                .map_err(OfferError::from),
        };
        let server = found.map(|(server, _, _)| server);
        let (result, guarded) = self.guard_offer(server.as_deref(), result);
        let result = result.map(|mut got| {
            self.scan_messages(server.as_deref().unwrap_or_default(), &mut got);
            got
        });
        let asked = Asked {
            method: "prompts/get",
            server,
            arguments: logged,
            guardrails: guarded,
        };
        self.record_offer(door, asked, &result, started);
        result
    }

    /// What the guardrail scanner finds in a prompt's messages, in its `_meta`
    /// (`io.toolsmith/findings`), counted and logged. Messages are instructions by nature and
    /// differ with each request's arguments, so they are shown, never held.
    fn scan_messages(&self, server: &str, got: &mut Value) {
        let Some(messages) = got.get("messages").cloned() else {
            return;
        };
        let scanned = json!({ "messages": messages });
        let findings = toolsmith_core::guard::scan(
            toolsmith_core::guard::Kind::Prompt,
            &scanned,
            &Default::default(),
        );
        if findings.is_empty() {
            return;
        }
        self.metrics.findings(server, &findings);
        tracing::info!(
            server,
            "a prompt of MCP server `{server}` answered with guardrail findings ({})",
            toolsmith_core::guard::rule_list(&findings)
        );
        if let Some(map) = got.as_object_mut() {
            let meta = map.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(
                    "io.toolsmith/findings".into(),
                    serde_json::to_value(&findings).unwrap_or_default(),
                );
            }
        }
    }

    /// The result guardrails of `server` (its `max_result_bytes` and `scrub`, its own secret
    /// values) applied to a resource's contents or a prompt's messages, said in the answer's
    /// `_meta` (`io.toolsmith/guardrails`) and returned for the run log.
    fn guard_offer(
        &self,
        server: Option<&str>,
        result: Result<Value, OfferError>,
    ) -> (Result<Value, OfferError>, Option<Value>) {
        let Some(def) = server.and_then(|s| self.engine.upstreams().definition(s)) else {
            return (result, None);
        };
        let mut value = match result {
            Ok(value) => value,
            Err(e) => return (Err(e), None),
        };
        let secrets = toolsmith_core::secrets::scrub_value(&mut value, &def.secret_values());
        let mut done = def.results.guard().apply_value(&mut value);
        if secrets > 0 {
            done.scrubbed.insert("tool_secret".into(), secrets);
        }
        if done.is_empty() {
            return (Ok(value), None);
        }
        let report = serde_json::to_value(&done).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            let meta = map.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("io.toolsmith/guardrails".into(), report.clone());
            }
        }
        (Ok(value), Some(report))
    }

    /// A run-log entry for a read or a get (the method as its tool, who asked, the server,
    /// the outcome and how long it took), and its metrics.
    fn record_offer(
        &self,
        door: &Door,
        asked: Asked,
        result: &Result<Value, OfferError>,
        started: Instant,
    ) {
        let Asked {
            method,
            server,
            arguments,
            guardrails,
        } = asked;
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        let outcome = result.as_ref().map_or_else(|e| e.kind(), |_| "ok");
        self.metrics.offer(
            server.as_deref(),
            method,
            &door.label,
            outcome,
            duration_ms / 1000.0,
        );
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        self.runs.record(RunRecord {
            id: 0,
            tool: method.to_owned(),
            version: 0,
            caller: door.log_name.clone(),
            arguments: RunRecord::logged_arguments(&arguments),
            kind: outcome.to_owned(),
            duration_ms,
            exit_code: None,
            truncated: false,
            started_at_ms: now_ms - duration_ms as i64,
            upstream: server,
            sandbox: None,
            call_id: None,
            parent_call_id: None,
            guardrails,
        });
    }

    /// `completion/complete` for a prompt's argument (`ref/prompt`, its served name) or a
    /// template's (`ref/resource`, its URI template), routed to the owner with the reference
    /// in the owner's names.
    pub async fn complete(&self, view: &View, mut params: Value) -> Result<Value, OfferError> {
        let reference = params.get("ref").cloned().unwrap_or(Value::Null);
        let server = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = key_of(&reference, "name");
                let (server, own, _) = served_prompts(&self.offers().await, view)
                    .into_iter()
                    .find(|(_, _, p)| key_of(p, "name") == name)
                    .ok_or(OfferError::NotFound {
                        what: "prompt",
                        name,
                    })?;
                params["ref"]["name"] = Value::String(own);
                server
            }
            _ => {
                let uri = key_of(&reference, "uri");
                self.offers()
                    .await
                    .into_iter()
                    .filter(|o| view.admits_resource(&o.server, &uri))
                    .find(|o| {
                        o.offer
                            .templates
                            .iter()
                            .any(|t| key_of(t, "uriTemplate") == uri)
                            || o.offer.resources.iter().any(|r| key_of(r, "uri") == uri)
                    })
                    .map(|o| o.server)
                    .ok_or(OfferError::NotFound {
                        what: "resource template",
                        name: uri,
                    })?
            }
        };
        Ok(self.engine.upstreams().complete(&server, params).await?)
    }
}

/// What a read or a get asked, as its run-log entry records it.
struct Asked {
    method: &'static str,
    server: Option<String>,
    arguments: Value,
    /// What the server's result guardrails did to the answer.
    guardrails: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::template_matches;

    #[test]
    fn templates_match_what_they_expand_to() {
        let t = "demo://resource/dynamic/text/{id}";
        assert!(template_matches(t, "demo://resource/dynamic/text/42"));
        assert!(!template_matches(t, "demo://resource/dynamic/text/"));
        assert!(!template_matches(t, "demo://resource/dynamic/text/4/2"));
        assert!(!template_matches(t, "demo://resource/dynamic/blob/42"));
        assert!(template_matches("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_matches("x://{a}-{b}", "x://1-2"));
        assert!(!template_matches("x://{a}-{b}", "x://12"));
        assert!(template_matches("test://static", "test://static"));
    }
}
