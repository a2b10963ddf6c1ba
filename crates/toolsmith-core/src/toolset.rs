//! Toolsets (SPEC §14): named subsets of the registry, computed from selectors — names
//! (globs), tags, executor kinds, upstream servers, danger — so a tool added later with the
//! right tag joins without anyone editing the toolset.
//!
//! A [`Selector`] matches a tool when every key it gives matches (values within a key are
//! alternatives); `include` and `exclude` each hold one or more selectors, any of which may
//! match. A tool is a member when some `include` selector matches it and no `exclude` one
//! does; [`Toolset::why`] says which selector let it in.
//!
//! What upstream servers offer besides tools is selected too ([`Toolset::admits_prompt`],
//! [`Toolset::admits_resource`]): a selector naming servers (and nothing of tools) holds
//! their prompts and resources; `prompts:` (served-name globs) and `resources:` (URI globs,
//! matched against a resource's URI and a template's URI template) pick single ones, within
//! the selector's `servers:` when it gives them. A selector with only those keys holds no
//! tool.

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};
use serde_json::{Map, Value, json};

use crate::model::{Danger, Tool};

/// The executor kinds a selector may name.
pub const KINDS: [&str; 5] = ["command", "script", "builtin", "mcp", "http"];

/// How a toolset is shown to MCP clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Discovery {
    /// Every member as its own tool.
    #[default]
    All,
    /// Two tools only: `search_tools` and `call_tool` (for huge toolsets).
    Search,
    /// Two tools only: `search_tools` (answering with Python stubs) and `run_code`, a
    /// program that calls the members as functions (code mode).
    Code,
}

impl Discovery {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "all" => Some(Self::All),
            "search" => Some(Self::Search),
            "code" => Some(Self::Code),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Search => "search",
            Self::Code => "code",
        }
    }
}

/// One selector: every key given must match.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    /// Name globs (`*`, `?`, `[...]`).
    pub names: Vec<String>,
    pub tags: Vec<String>,
    /// Executor kinds ([`KINDS`]).
    pub kinds: Vec<String>,
    /// Upstream MCP server names (the `mcp` tools they provide).
    pub servers: Vec<String>,
    pub danger: Option<Danger>,
    /// Served prompt names (globs) of upstream servers.
    pub prompts: Vec<String>,
    /// Resource URIs and URI templates (globs) of upstream servers.
    pub resources: Vec<String>,
    matcher: Option<GlobSet>,
    prompt_matcher: Option<GlobSet>,
    resource_matcher: Option<GlobSet>,
}

impl PartialEq for Selector {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.names,
            &self.tags,
            &self.kinds,
            &self.servers,
            self.danger,
            (&self.prompts, &self.resources),
        ) == (
            &other.names,
            &other.tags,
            &other.kinds,
            &other.servers,
            other.danger,
            (&other.prompts, &other.resources),
        )
    }
}

impl Selector {
    /// A selector from its parts; a name glob that does not compile is an error naming it.
    pub fn new(
        names: Vec<String>,
        tags: Vec<String>,
        kinds: Vec<String>,
        servers: Vec<String>,
        danger: Option<Danger>,
    ) -> Result<Self, GlobError> {
        let matcher = match names.is_empty() {
            true => None,
            false => Some(glob_set(&names)?),
        };
        Ok(Self {
            names,
            tags,
            kinds,
            servers,
            danger,
            matcher,
            ..Default::default()
        })
    }

    /// The selector picking prompts by served name and resources by URI (globs) too.
    pub fn with_offers(
        mut self,
        prompts: Vec<String>,
        resources: Vec<String>,
    ) -> Result<Self, GlobError> {
        let set = |globs: &[String]| match globs.is_empty() {
            true => Ok(None),
            false => glob_set(globs).map(Some),
        };
        self.prompt_matcher = set(&prompts)?;
        self.resource_matcher = set(&resources)?;
        self.prompts = prompts;
        self.resources = resources;
        Ok(self)
    }

    /// Whether nothing is given (such a selector matches every tool).
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
            && self.tags.is_empty()
            && self.kinds.is_empty()
            && self.servers.is_empty()
            && self.danger.is_none()
            && !self.picks_offers()
    }

    /// Whether it picks prompts or resources by name (`prompts:`, `resources:`).
    pub fn picks_offers(&self) -> bool {
        !self.prompts.is_empty() || !self.resources.is_empty()
    }

    /// Whether it gives any key about tools (names, tags, kinds, danger).
    fn picks_tools(&self) -> bool {
        !self.names.is_empty()
            || !self.tags.is_empty()
            || !self.kinds.is_empty()
            || self.danger.is_some()
    }

    /// Whether it holds what `server` offers named `name` (a prompt's served name, or a
    /// resource's URI or template), `prompts` telling which: by its own glob within its
    /// servers, or — giving servers and no glob of either kind — everything of those
    /// servers; an empty selector holds everything.
    fn holds_offer(&self, server: &str, name: &str, prompts: bool) -> bool {
        if self.is_empty() {
            return true;
        }
        let in_servers = self.servers.is_empty() || self.servers.iter().any(|s| s == server);
        if self.picks_offers() {
            let matcher = match prompts {
                true => &self.prompt_matcher,
                false => &self.resource_matcher,
            };
            return in_servers && matcher.as_ref().is_some_and(|m| m.is_match(name));
        }
        !self.servers.is_empty() && in_servers
    }

    /// Why `tool` matches, as the keys that matched (`tag support, kind http`), or `None`.
    pub fn why(&self, tool: &Tool) -> Option<String> {
        // A selector picking prompts or resources (with nothing about tools but servers)
        // holds no tool.
        if self.picks_offers() && !self.picks_tools() {
            return None;
        }
        let mut reasons = Vec::new();
        if let Some(m) = &self.matcher {
            let hit = m.matches(tool.name.as_str());
            let first = hit.first()?;
            reasons.push(format!("name {}", self.names[*first]));
        }
        if !self.tags.is_empty() {
            let tag = self.tags.iter().find(|t| tool.tags.contains(t))?;
            reasons.push(format!("tag {tag}"));
        }
        if !self.kinds.is_empty() {
            let kind = tool.executor.kind();
            self.kinds.iter().find(|k| *k == kind)?;
            reasons.push(format!("kind {kind}"));
        }
        if !self.servers.is_empty() {
            let target = tool.executor.upstream()?;
            self.servers.iter().find(|s| **s == target.server)?;
            reasons.push(format!("server {}", target.server));
        }
        if let Some(d) = self.danger {
            if tool.is_dangerous() != (d == Danger::Dangerous) {
                return None;
            }
            reasons.push(format!("danger {}", danger_name(d)));
        }
        if reasons.is_empty() {
            reasons.push("every tool".into());
        }
        Some(reasons.join(", "))
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        for (key, list) in [
            ("names", &self.names),
            ("tags", &self.tags),
            ("kinds", &self.kinds),
            ("servers", &self.servers),
            ("prompts", &self.prompts),
            ("resources", &self.resources),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), json!(list));
            }
        }
        if let Some(d) = self.danger {
            m.insert("danger".into(), json!(danger_name(d)));
        }
        Value::Object(m)
    }
}

fn danger_name(d: Danger) -> &'static str {
    match d {
        Danger::Safe => "safe",
        Danger::Dangerous => "dangerous",
    }
}

/// Whole-name globs: `*` crosses every character (tool names have no path separators).
pub fn glob_set(patterns: &[String]) -> Result<GlobSet, GlobError> {
    let mut set = GlobSetBuilder::new();
    for p in patterns {
        set.add(glob(p)?);
    }
    set.build().map_err(|error| GlobError {
        pattern: error.glob().unwrap_or_default().to_owned(),
        error,
    })
}

fn glob(pattern: &str) -> Result<Glob, GlobError> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .map_err(|error| GlobError {
            pattern: pattern.to_owned(),
            error,
        })
}

/// One compiled glob, for a single pattern.
pub fn glob_matcher(pattern: &str) -> Result<GlobMatcher, GlobError> {
    glob(pattern).map(|g| g.compile_matcher())
}

/// A name glob that does not compile.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid name glob {pattern:?}: {error}")]
pub struct GlobError {
    pub pattern: String,
    #[source]
    pub error: globset::Error,
}

/// A named subset of the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct Toolset {
    pub name: String,
    pub description: String,
    /// Any of these lets a tool in.
    pub include: Vec<Selector>,
    /// Any of these keeps a tool out.
    pub exclude: Vec<Selector>,
    pub discovery: Discovery,
}

impl Toolset {
    /// Why `tool` is a member (`include[0]: tag support`), or `None` when it is not.
    pub fn why(&self, tool: &Tool) -> Option<String> {
        if self.exclude.iter().any(|s| s.why(tool).is_some()) {
            return None;
        }
        let several = self.include.len() > 1;
        self.include.iter().enumerate().find_map(|(i, s)| {
            let why = s.why(tool)?;
            Some(match several {
                true => format!("include[{i}]: {why}"),
                false => why,
            })
        })
    }

    pub fn admits(&self, tool: &Tool) -> bool {
        self.why(tool).is_some()
    }

    /// Whether the toolset holds upstream `server`'s prompt served as `name`: an `include`
    /// selector holds it (empty; naming the server without `prompts:`/`resources:` globs; or
    /// a `prompts:` glob matching it, within its `servers:` if given) and no `exclude`
    /// selector does (empty; giving only `servers:`, naming the server; or a `prompts:` glob
    /// matching it).
    pub fn admits_prompt(&self, server: &str, name: &str) -> bool {
        self.admits_offer(server, name, true)
    }

    /// Whether the toolset holds upstream `server`'s resource (or template) `uri`, as
    /// [`Self::admits_prompt`] with `resources:` globs.
    pub fn admits_resource(&self, server: &str, uri: &str) -> bool {
        self.admits_offer(server, uri, false)
    }

    fn admits_offer(&self, server: &str, name: &str, prompts: bool) -> bool {
        let only_servers = |s: &Selector| !s.picks_tools() && !s.picks_offers();
        self.include
            .iter()
            .any(|s| s.holds_offer(server, name, prompts))
            && !self.exclude.iter().any(|s| {
                s.is_empty()
                    || (only_servers(s) && s.servers.iter().any(|n| n == server))
                    || (s.picks_offers() && s.holds_offer(server, name, prompts))
            })
    }

    /// The catalog form (what the registry stores and `GET /v1/toolsets/{name}` shows).
    pub fn to_catalog_value(&self) -> Value {
        let list = |v: &[Selector]| match v {
            [one] => one.to_value(),
            many => Value::Array(many.iter().map(Selector::to_value).collect()),
        };
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        if !self.description.is_empty() {
            m.insert("description".into(), json!(self.description));
        }
        m.insert("include".into(), list(&self.include));
        if !self.exclude.is_empty() {
            m.insert("exclude".into(), list(&self.exclude));
        }
        if self.discovery != Discovery::All {
            m.insert("discovery".into(), json!(self.discovery.as_str()));
        }
        Value::Object(m)
    }
}

/// `[A-Za-z0-9_-]{1,64}`: a toolset's (and an upstream server's) name is part of URLs
/// (`/mcp/{toolset}`), tokens and tool names.
pub fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{TextSource, parse_toolset};

    fn tools() -> Vec<Tool> {
        let yaml = r#"
tools:
  - {name: gh_issues, description: d, tags: [support, read], command: [echo]}
  - {name: gh_delete, description: d, danger: dangerous, tags: [support], command: [rm]}
  - {name: calc, description: d, script: {interpreter: python3, source: "print(1)"}}
  - {name: api_get, description: d, http: {method: GET, url: "http://127.0.0.1:9/x"}}
  - {name: gh_search, description: d, mcp: {server: gh, tool: search}, input_schema: {type: object}}
"#;
        crate::catalog::load("c.yaml", &TextSource(yaml.into()))
            .expect("the test catalog loads")
            .tools
    }

    fn members(def: Value) -> Vec<(String, String)> {
        let set = parse_toolset(&def).expect("a valid toolset");
        tools()
            .iter()
            .filter_map(|t| set.why(t).map(|w| (t.name.to_string(), w)))
            .collect()
    }

    #[test]
    fn a_toolset_holds_the_resources_and_prompts_of_the_servers_it_names() {
        let admits = |def: Value, server: &str| {
            let set = parse_toolset(&def).expect("a valid toolset");
            set.admits_prompt(server, "any") && set.admits_resource(server, "file:///any")
        };
        let named = json!({"name": "s", "include": {"servers": ["gh"], "tags": ["read"]}});
        assert!(admits(named.clone(), "gh"));
        assert!(!admits(named, "jira"), "a server not named is not held");
        assert!(
            !admits(json!({"name": "s", "include": {"tags": ["read"]}}), "gh"),
            "selectors of tools alone hold no server's resources"
        );
        let all = json!({"name": "s", "include": {}, "exclude": {"servers": ["jira"]}});
        assert!(
            admits(all.clone(), "gh"),
            "an empty selector holds every server"
        );
        assert!(!admits(all, "jira"), "unless an exclude names it alone");
        let narrow_exclude = json!({"name": "s", "include": {"servers": ["gh"]}, "exclude": {"servers": ["gh"], "danger": "dangerous"}});
        assert!(
            admits(narrow_exclude, "gh"),
            "excluding some of a server's tools keeps its resources"
        );
    }

    #[test]
    fn prompts_and_resources_are_picked_by_name_and_uri() {
        let set = parse_toolset(&json!({"name": "s",
            "include": [{"prompts": ["gh__review*"]}, {"servers": ["docs"], "resources": ["file:///docs/*", "tmpl://*"]}],
            "exclude": {"prompts": ["*_draft"]}}))
        .expect("a valid toolset");
        assert!(set.admits_prompt("gh", "gh__review_pr"));
        assert!(
            set.admits_prompt("other", "gh__review_x"),
            "no servers: any server's"
        );
        assert!(!set.admits_prompt("gh", "gh__triage"), "another name");
        assert!(
            !set.admits_prompt("gh", "gh__review_draft"),
            "excluded by name"
        );
        assert!(set.admits_resource("docs", "file:///docs/a.md"));
        assert!(
            set.admits_resource("docs", "tmpl://{id}"),
            "a template by its URI template"
        );
        assert!(
            !set.admits_resource("other", "file:///docs/a.md"),
            "outside its servers"
        );
        assert!(!set.admits_resource("docs", "file:///etc/passwd"));
        assert!(
            !set.admits_resource("gh", "file:///docs/a.md"),
            "prompts pick no resource"
        );
        assert!(
            !set.admits_prompt("docs", "docs__x"),
            "resources pick no prompt"
        );
        // Such selectors hold no tool.
        assert!(tools().iter().all(|t| set.why(t).is_none()));
        // A glob that does not compile names its key.
        let bad = parse_toolset(&json!({"name": "s", "include": {"resources": ["a["]}}));
        let err = format!("{:?}", bad.expect_err("refused"));
        assert!(
            err.contains("include.resources") && err.contains("a["),
            "{err}"
        );
    }

    #[test]
    fn each_selector_chooses_its_tools_and_says_why() {
        let by_tag = members(json!({"name": "s", "include": {"tags": ["support"]}}));
        assert_eq!(
            by_tag,
            [
                ("gh_issues".into(), "tag support".into()),
                ("gh_delete".into(), "tag support".into())
            ]
        );
        let by_name = members(
            json!({"name": "s", "include": {"names": ["gh_*"]}, "exclude": [{"danger": "dangerous"}, {"kinds": ["mcp"]}]}),
        );
        assert_eq!(by_name, [("gh_issues".into(), "name gh_*".into())]);
        let by_kind = members(
            json!({"name": "s", "include": [{"kinds": ["script"]}, {"kinds": ["http"], "danger": "safe"}]}),
        );
        assert_eq!(
            by_kind,
            [
                ("calc".into(), "include[0]: kind script".into()),
                (
                    "api_get".into(),
                    "include[1]: kind http, danger safe".into()
                )
            ]
        );
        // Keys of one selector must all match.
        let both =
            members(json!({"name": "s", "include": {"tags": ["support"], "kinds": ["script"]}}));
        assert!(both.is_empty());
        // Only the upstream server's own tools, whatever their names.
        assert_eq!(
            members(json!({"name": "s", "include": {"servers": ["gh"]}})),
            [("gh_search".into(), "server gh".into())]
        );
        assert!(members(json!({"name": "s", "include": {"servers": ["other"]}})).is_empty());
    }

    #[test]
    fn a_catalog_reports_every_toolset_problem_with_its_path() {
        let yaml = r#"
toolsets:
  - {name: a, include: {tags: [x]}}
  - {name: a, include: {tag: [x]}}
  - {name: "b c", include: [], discovery: sometimes}
  - {name: d}
  - {name: e, include: {kinds: [lambda], names: ["[z"]}}
"#;
        let errors = crate::catalog::load("c.yaml", &TextSource(yaml.into()))
            .expect_err("refused")
            .0;
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "toolsets[1].include.tag",
                "toolsets[2].name",
                "toolsets[2].include",
                "toolsets[2].discovery",
                "toolsets[3].include",
                "toolsets[4].include.kinds[0]",
                "toolsets[4].include.names",
            ],
            "{errors:?}"
        );
        // A valid duplicate is named with where the first one is.
        let dup = "toolsets:\n  - {name: a, include: {}}\n  - {name: a, include: {}}\n";
        let errors = crate::catalog::load("c.yaml", &TextSource(dup.into()))
            .expect_err("refused")
            .0;
        assert!(
            errors[0].message.contains("duplicate toolset name \"a\""),
            "{errors:?}"
        );
    }

    #[test]
    fn the_catalog_form_reads_back_the_same() {
        let def = json!({"name": "s", "description": "x", "include": [{"names": ["a*"]}, {"tags": ["t"]}], "exclude": {"danger": "dangerous"}, "discovery": "search"});
        let set = parse_toolset(&def).expect("a valid toolset");
        assert_eq!(set.to_catalog_value(), def);
        assert_eq!(
            parse_toolset(&set.to_catalog_value()).expect("reads back"),
            set
        );
    }
}
