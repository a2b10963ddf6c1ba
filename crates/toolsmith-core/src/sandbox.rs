//! The sandbox policy of a process toolsmith starts (SPEC §13): which paths it may read and
//! write, which network it may use, and whether a kernel that cannot enforce all of it runs
//! the tool anyway. Read from the catalog's `sandbox:` (on a command or script tool, on
//! `defaults`, on the `session_start` built-in, on a stdio upstream server); applied by
//! `toolsmith-exec`. Pure: paths stay text here, with their `$WORKSPACE`-style names.

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::form::{Errs, Fields};

/// A starting point for the filesystem rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Preset {
    /// Read the system and the workspace; write the call's working folder and the workspace.
    #[default]
    Workspace,
    /// Read the system and the workspace; write only the call's working folder.
    ReadOnly,
    /// No sandbox at all: the process has the server's user's full reach.
    None,
}

impl Preset {
    pub const NAMES: [&'static str; 3] = ["workspace", "read-only", "none"];

    pub fn name(self) -> &'static str {
        match self {
            Preset::Workspace => "workspace",
            Preset::ReadOnly => "read-only",
            Preset::None => "none",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "workspace" => Some(Preset::Workspace),
            "read-only" => Some(Preset::ReadOnly),
            "none" => Some(Preset::None),
            _ => None,
        }
    }
}

/// What the process may do on the network.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub enum Network {
    /// As the server's user may (the default).
    #[default]
    All,
    /// No sockets (but those [`Sandbox::unix_sockets`] allows): no TCP, no UDP, no name
    /// resolution over the network.
    None,
    /// TCP only, connecting to and binding these ports (on any address); no UDP.
    Ports { connect: Vec<u16>, bind: Vec<u16> },
}

/// Whether a policy the kernel cannot fully enforce still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforce {
    /// Refused (error kind `sandbox`) unless every part is enforced.
    Required,
    /// Runs with what the kernel enforces, and says what that was.
    BestEffort,
}

/// A process's sandbox policy.
#[derive(Debug, Clone, PartialEq, Eq, Default, Hash)]
pub struct Sandbox {
    pub preset: Preset,
    /// Paths readable besides the preset's (absolute, or starting with a `$NAME` of [`PLACES`]).
    pub read: Vec<String>,
    /// Paths writable (and readable) besides the preset's.
    pub write: Vec<String>,
    pub network: Network,
    /// Named Unix sockets the process may connect to (or listen on). Empty: none — no
    /// `socket(AF_UNIX, …)` at all (`socketpair` still works). The kernel cannot filter a
    /// connection by its path (Landlock ABI 7 has no right for it), so any entry allows
    /// every named socket: the list says which, for people and for a kernel that can.
    pub unix_sockets: Vec<String>,
    /// `None`: the server's default, best effort.
    pub enforce: Option<Enforce>,
}

/// The gateway's own secrets in its environment (the registry's key, its token, the
/// registry's address, which may hold a password): never passed to a process it starts,
/// whatever `env_allowlist` says. A catalog naming one is refused.
pub const GATEWAY_VARIABLES: &[&str] = &["TOOLSMITH_SECRET_KEY", "TOOLSMITH_TOKEN", "TOOLSMITH_DB"];

/// Refuses an `env_allowlist` entry naming one of [`GATEWAY_VARIABLES`].
pub fn check_allowlisted(name: &str) -> Result<(), GatewaySecret> {
    match GATEWAY_VARIABLES.contains(&name) {
        true => Err(GatewaySecret(name.to_owned())),
        false => Ok(()),
    }
}

/// An `env_allowlist` entry naming one of the gateway's own secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} is the gateway's own secret: it never reaches a process toolsmith starts")]
pub struct GatewaySecret(pub String);

/// Variables of the server's environment any tool may pass through (`env_allowlist`)
/// whoever defines it: they say where and how, never grant anything.
pub const SAFE_VARIABLES: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TERM",
    "TMPDIR",
];

/// What a definition with `policy` and `env_allowlist` would take beyond the default
/// containment, each said as the key to leave out: more paths, named Unix sockets,
/// `sandbox: none`, `enforce: best_effort`, variables beyond [`SAFE_VARIABLES`]. Only an
/// unlimited admin may define those (a caller limited to toolsets gets them refused).
pub fn widenings(policy: Option<&Sandbox>, env_allowlist: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = policy {
        if p.is_none() {
            out.push("`sandbox: none`".to_owned());
        }
        if !p.read.is_empty() || !p.write.is_empty() {
            out.push("`sandbox.filesystem` paths".to_owned());
        }
        if !p.unix_sockets.is_empty() {
            out.push("`sandbox.unix_sockets`".to_owned());
        }
        if p.enforce == Some(Enforce::BestEffort) {
            out.push("`sandbox.enforce: best_effort`".to_owned());
        }
    }
    let unsafe_vars: Vec<&str> = env_allowlist
        .iter()
        .map(String::as_str)
        .filter(|v| !SAFE_VARIABLES.contains(v))
        .collect();
    if !unsafe_vars.is_empty() {
        out.push(format!(
            "`env_allowlist` entries {} (any tool may pass {})",
            unsafe_vars.join(", "),
            SAFE_VARIABLES.join(", ")
        ));
    }
    out
}

/// The names a policy's paths may start with.
pub const PLACES: [(&str, &str); 5] = [
    ("$WORKSPACE", "the workspace"),
    ("$WORKDIR", "the call's working folder"),
    ("$HOME", "the server's user's home folder"),
    (
        "$PYTHON_PREFIX",
        "the prefix of the tool's Python interpreter",
    ),
    (
        "$RUNTIME",
        "the runtime's virtual environment (`toolsmith runtime`)",
    ),
];

impl Sandbox {
    pub fn preset(preset: Preset) -> Self {
        Self {
            preset,
            ..Self::default()
        }
    }

    pub fn is_none(&self) -> bool {
        self.preset == Preset::None
    }

    pub fn enforce(&self) -> Enforce {
        self.enforce.unwrap_or(Enforce::BestEffort)
    }

    /// The catalog form: the preset's name alone when nothing else is said.
    pub fn to_value(&self) -> Value {
        if self.read.is_empty()
            && self.write.is_empty()
            && self.network == Network::All
            && self.unix_sockets.is_empty()
            && self.enforce.is_none()
        {
            return Value::String(self.preset.name().into());
        }
        let mut map = Map::new();
        if self.preset != Preset::Workspace {
            map.insert("preset".into(), json!(self.preset.name()));
        }
        if !self.read.is_empty() || !self.write.is_empty() {
            let mut fs = Map::new();
            if !self.read.is_empty() {
                fs.insert("read".into(), json!(self.read));
            }
            if !self.write.is_empty() {
                fs.insert("write".into(), json!(self.write));
            }
            map.insert("filesystem".into(), Value::Object(fs));
        }
        match &self.network {
            Network::All => {}
            Network::None => {
                map.insert("network".into(), json!("none"));
            }
            Network::Ports { connect, bind } => {
                let mut net = Map::new();
                if !connect.is_empty() {
                    net.insert("connect".into(), json!(connect));
                }
                if !bind.is_empty() {
                    net.insert("bind".into(), json!(bind));
                }
                map.insert("network".into(), Value::Object(net));
            }
        }
        if !self.unix_sockets.is_empty() {
            map.insert("unix_sockets".into(), json!(self.unix_sockets));
        }
        if let Some(enforce) = self.enforce {
            map.insert("enforce".into(), json!(enforce));
        }
        Value::Object(map)
    }
}

impl Serialize for Sandbox {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

const KEYS: &[&str] = &["preset", "filesystem", "network", "unix_sockets", "enforce"];

/// Reads a `sandbox:` value: a preset's name, or a mapping.
pub(crate) fn read(v: &Value, at: &str, e: &mut Errs) -> Option<Sandbox> {
    let preset_of = |s: &str, at: &str, e: &mut Errs| {
        let found = Preset::parse(s);
        if found.is_none() {
            e.push(
                at,
                format!(
                    "unknown sandbox preset {s:?}; expected one of {}",
                    Preset::NAMES.join(", ")
                ),
            );
        }
        found
    };
    if let Value::String(s) = v {
        return preset_of(s, at, e).map(Sandbox::preset);
    }
    let f = Fields::new(v, at, KEYS, e)?;
    let before = e.list.len();
    let preset = match f.string("preset", e) {
        Some(s) => preset_of(&s, &f.at("preset"), e).unwrap_or_default(),
        None => Preset::Workspace,
    };
    let (mut read, mut write) = (Vec::new(), Vec::new());
    if let Some(fs) = f.get("filesystem") {
        let at = f.at("filesystem");
        if let Some(ff) = Fields::new(fs, &at, &["read", "write"], e) {
            for (key, out) in [("read", &mut read), ("write", &mut write)] {
                for (i, p) in ff
                    .strings(key, e)
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                {
                    if let Err(msg) = check_path(&p) {
                        e.push(&format!("{}[{i}]", ff.at(key)), msg);
                    }
                    out.push(p);
                }
            }
        }
    }
    let network = match f.get("network") {
        None => Network::All,
        Some(Value::String(s)) => match s.as_str() {
            "all" => Network::All,
            "none" => Network::None,
            "loopback" => {
                e.push(
                    &f.at("network"),
                    "`loopback` cannot be enforced: Landlock and seccomp filter TCP by port and \
                     sockets by family, never by address; say `{connect: [PORT, ...]}` for the \
                     ports a tool may reach (on any address), or `none`",
                );
                Network::All
            }
            other => {
                e.push(
                    &f.at("network"),
                    format!("unknown network policy {other:?}; expected all, none, or {{connect: [ports], bind: [ports]}}"),
                );
                Network::All
            }
        },
        Some(net) => read_ports(net, &f.at("network"), e),
    };
    let mut unix_sockets = Vec::new();
    for (i, p) in f
        .strings("unix_sockets", e)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        if let Err(msg) = check_path(&p) {
            e.push(&format!("{}[{i}]", f.at("unix_sockets")), msg);
        }
        unix_sockets.push(p);
    }
    let enforce = f.choice(
        "enforce",
        "enforcement",
        &["required", "best_effort"],
        |s| match s {
            "required" => Some(Enforce::Required),
            "best_effort" => Some(Enforce::BestEffort),
            _ => None,
        },
        e,
    );
    if preset == Preset::None
        && (!read.is_empty()
            || !write.is_empty()
            || network != Network::All
            || !unix_sockets.is_empty())
    {
        e.push(
            at,
            "preset `none` runs without a sandbox: paths and network rules would not apply",
        );
    }
    (e.list.len() == before).then_some(Sandbox {
        preset,
        read,
        write,
        network,
        unix_sockets,
        enforce,
    })
}

fn read_ports(v: &Value, at: &str, e: &mut Errs) -> Network {
    let Some(f) = Fields::new(v, at, &["connect", "bind"], e) else {
        return Network::All;
    };
    let ports = |key: &str, e: &mut Errs| -> Vec<u16> {
        let Some(list) = f.list(key, e) else {
            return Vec::new();
        };
        list.iter()
            .enumerate()
            .filter_map(
                |(i, p)| match p.as_u64().and_then(|n| u16::try_from(n).ok()) {
                    Some(n) if n > 0 => Some(n),
                    _ => {
                        e.push(
                            &format!("{}[{i}]", f.at(key)),
                            "a TCP port is a whole number from 1 to 65535",
                        );
                        None
                    }
                },
            )
            .collect()
    };
    let connect = ports("connect", e);
    let bind = ports("bind", e);
    Network::Ports { connect, bind }
}

/// A policy path is absolute or starts with one of [`PLACES`], and has no `..`.
pub fn check_path(p: &str) -> Result<(), PolicyPathError> {
    let named = PLACES
        .iter()
        .any(|(name, _)| p == *name || p.starts_with(&format!("{name}/")));
    if !named && !p.starts_with('/') {
        return Err(PolicyPathError::Relative(p.to_owned()));
    }
    if p.split('/').any(|s| s == "..") {
        return Err(PolicyPathError::Parent(p.to_owned()));
    }
    Ok(())
}

/// A policy path [`check_path`] refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyPathError {
    #[error("{0:?} must be absolute or start with one of {places}", places = PLACES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "))]
    Relative(String),
    #[error("{0:?} must not contain `..`")]
    Parent(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_yaml(text: &str) -> Result<Sandbox, Vec<String>> {
        let v: Value = serde_yaml_ng::from_str(text).expect("yaml");
        let mut e = Errs::new("t.yaml");
        let out = read(&v, "sandbox", &mut e);
        match out {
            Some(s) if e.list.is_empty() => Ok(s),
            _ => Err(e
                .list
                .iter()
                .map(|x| format!("{}: {}", x.path, x.message))
                .collect()),
        }
    }

    #[test]
    fn presets_and_maps_read_and_write_back() {
        assert_eq!(
            read_yaml("read-only").map(|s| s.preset),
            Ok(Preset::ReadOnly)
        );
        let s = read_yaml(
            "{filesystem: {read: [$HOME/.gitconfig], write: [/var/cache/x]}, network: {connect: [5432]}, unix_sockets: [/run/postgresql/.s.PGSQL.5432], enforce: required}",
        )
        .expect("reads");
        assert_eq!(s.preset, Preset::Workspace);
        assert_eq!(
            s.network,
            Network::Ports {
                connect: vec![5432],
                bind: vec![]
            }
        );
        assert_eq!(s.enforce(), Enforce::Required);
        assert_eq!(s.unix_sockets, ["/run/postgresql/.s.PGSQL.5432"]);
        let back = read_yaml(&serde_json::to_string(&s.to_value()).expect("json")).expect("again");
        assert_eq!(back, s);
        assert_eq!(Sandbox::default().to_value(), json!("workspace"));
    }

    #[test]
    fn mistakes_are_named_where_they_are() {
        let errs = read_yaml(
            "{preset: strict, filesystem: {read: [relative/x, /a/../b]}, network: {connect: [0, 70000]}, unix_sockets: [docker.sock]}",
        )
        .expect_err("refused");
        let text = errs.join("\n");
        for needle in [
            "sandbox.preset: unknown sandbox preset \"strict\"",
            "sandbox.filesystem.read[0]: \"relative/x\" must be absolute",
            "sandbox.filesystem.read[1]: \"/a/../b\" must not contain `..`",
            "sandbox.network.connect[0]: a TCP port",
            "sandbox.network.connect[1]: a TCP port",
            "sandbox.unix_sockets[0]: \"docker.sock\" must be absolute",
        ] {
            assert!(text.contains(needle), "{needle} not in {text}");
        }
        let loopback = read_yaml("{network: loopback}")
            .expect_err("refused")
            .join("\n");
        assert!(loopback.contains("cannot be enforced"), "{loopback}");
        let none = read_yaml("{preset: none, network: none}")
            .expect_err("refused")
            .join("\n");
        assert!(none.contains("would not apply"), "{none}");
    }
}
