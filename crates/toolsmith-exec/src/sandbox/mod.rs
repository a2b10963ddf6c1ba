//! The kernel sandbox of every process toolsmith starts (SPEC §13): command and script
//! tools (cold, and the warm runtime's children), session processes and stdio upstream
//! servers.
//!
//! The engine probes the kernel once ([`Kernel`]); per process, [`Sandboxes::confine`] turns
//! the tool's policy into a [`Confinement`] (Landlock path and port rules, a seccomp filter,
//! whether to drop capabilities) and the report `meta.sandbox` carries — or refuses the call
//! when the policy says `enforce: required` and the kernel cannot enforce all of it.
//!
//! Applying it never forks the gateway: a short-lived thread of the gateway (born in the
//! call's cgroup where there is one, of a helper thread that dropped its capabilities, set
//! `no_new_privs` and loaded the seccomp filter once) restricts itself with Landlock, then
//! spawns the process with `posix_spawn`; the child inherits all of it, and the thread ends
//! ([`apply`]). Landlock, seccomp, capabilities and `no_new_privs` are all per thread, so the
//! rest of the gateway is untouched. A warm runtime (`zygote.py`) is born under its
//! children's seccomp filter, with capabilities dropped where they are confined ([`Base`]),
//! builds each confinement's Landlock ruleset once, and a child restricts itself to it
//! before any user code.

mod apply;
mod explain;
mod kernel;
mod report;
mod rules;
mod seccomp;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
};
use serde_json::{Value, json};
use toolsmith_core::sandbox::{Enforce, Network, Sandbox};

pub use apply::run_confined;
pub(crate) use apply::{SlotHelpers, end_helpers, mark_exclusive_thread, on_helper_thread};
pub use explain::propose_writes;
pub use kernel::{ABI_VARIABLE, Kernel};
pub use report::{assess, starts_processes, tool_report};
pub use rules::SYSTEM;

/// What the sandbox may protect and how.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Off: processes run as before this existed (`--sandbox off`).
    pub enabled: bool,
    /// The policy of processes that do not give one.
    pub default: Sandbox,
    /// The policy of stdio upstream servers that do not give one ([`server_default`]).
    pub server_default: Sandbox,
    /// Never reachable by a sandboxed process: the registry's files, the data folder, the key
    /// and tokens files, transcripts, the sessions ledger (the engine adds its own folders).
    pub protected: Vec<PathBuf>,
    /// Reachable even inside a protected folder (the runtime's environment).
    pub exempt: Vec<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            default: Sandbox::default(),
            server_default: server_default(),
            protected: Vec::new(),
            exempt: Vec::new(),
        }
    }
}

/// The default of stdio upstream servers: the `workspace` preset, and everything readable
/// (the protected paths cut out), and the package runners' caches writable — so that
/// servers started with `npx`, `uvx`, `node` or `python` from wherever they are installed
/// keep working.
pub fn server_default() -> Sandbox {
    Sandbox {
        read: vec!["/".into()],
        write: vec!["$HOME/.npm".into(), "$HOME/.cache".into()],
        ..Sandbox::default()
    }
}

/// One Landlock path rule; `fd`, when the folder was opened once for every process (the
/// static rules' folders, held by the engine).
#[derive(Debug, Clone)]
struct FsRule {
    path: PathBuf,
    mask: BitFlags<AccessFs>,
    fd: Option<Arc<std::os::fd::OwnedFd>>,
}

impl FsRule {
    /// `[path, mask]`, as a warm runtime builds the rule (`zygote.py`).
    fn for_zygote(&self) -> Value {
        json!([self.path, self.mask.bits()])
    }
}

/// The sockets of the seccomp filter a warm runtime for unconfined children is born under:
/// any.
const BASE: seccomp::NetRule = seccomp::NetRule::new(seccomp::Family::Any, true);

/// One process's confinement, ready to apply.
#[derive(Debug)]
pub struct Confinement {
    /// Which seccomp program.
    net_rule: seccomp::NetRule,
    statics: Arc<Statics>,
    call: Vec<FsRule>,
    handled_fs: BitFlags<AccessFs>,
    ports: Vec<(u16, BitFlags<AccessNet>)>,
    handled_net: BitFlags<AccessNet>,
    scoped: BitFlags<Scope>,
    seccomp: Option<Arc<Filter>>,
    drop_caps: bool,
    /// [`Confinement::identity`], once computed.
    identity: std::sync::OnceLock<String>,
}

/// A seccomp program and its bytes in hex (for a warm runtime's start).
#[derive(Debug)]
struct Filter {
    program: seccompiler::BpfProgram,
    hex: String,
}

/// A policy's static rules, and the same as a warm runtime builds them.
#[derive(Debug, Default)]
struct Statics {
    rules: Vec<FsRule>,
    /// The rules as a warm runtime builds them ([`FsRule::for_zygote`]).
    zygote: Vec<Value>,
    /// Kept in the engine's cache for good (so one set of rules is one address): a carved
    /// set, made per call, is not.
    cached: bool,
}

/// A process's confinement (none for preset `none` or a server with the sandbox off) and
/// what is reported of it.
#[derive(Debug)]
pub struct Confined {
    pub confinement: Option<Confinement>,
    pub report: Value,
}

/// Where one process runs.
pub struct Context<'a> {
    pub workdir: &'a Path,
    /// The program as found on PATH; for a script, the interpreter.
    pub program: Option<&'a Path>,
    /// Files it must read (a script's file).
    pub files: Vec<PathBuf>,
}

/// A policy's report, and what this kernel misses of it.
type Assessed = (Value, Vec<String>);

/// The engine's sandbox: the kernel's answer, the seccomp programs, the protected paths.
#[derive(Debug)]
pub struct Sandboxes {
    config: SandboxConfig,
    kernel: Kernel,
    workspace: PathBuf,
    home: Option<PathBuf>,
    runtime: Option<PathBuf>,
    protected: Vec<PathBuf>,
    exempt: Vec<PathBuf>,
    /// One per [`seccomp::NetRule::ALL`].
    programs: Vec<Option<Arc<Filter>>>,
    /// Each policy's static rules (by its catalog form), folders opened once; only those
    /// that carved nothing (a carve depends on a folder's entries at the time).
    statics: std::sync::Mutex<std::collections::HashMap<Sandbox, Arc<Statics>>>,
    /// Each policy's report and what this kernel misses of it ([`Sandboxes::assess`]).
    assessed: std::sync::Mutex<std::collections::HashMap<Sandbox, Arc<Assessed>>>,
    /// The protected folders' files, for the hard-link check before each spawn.
    listings: rules::Listings,
}

impl Sandboxes {
    /// `own` are the engine's folders no process may reach (other calls' working folders,
    /// the sessions ledger).
    pub fn new(
        config: SandboxConfig,
        workspace: &Path,
        runtime: Option<PathBuf>,
        own: &[PathBuf],
    ) -> Self {
        let kernel = Kernel::probe();
        // A file not made yet (a registry's WAL) is named by its folder's real path.
        let canon = |p: &Path| {
            std::fs::canonicalize(p)
                .or_else(|e| match (p.parent(), p.file_name()) {
                    (Some(dir), Some(name)) => std::fs::canonicalize(dir).map(|d| d.join(name)),
                    _ => Err(e),
                })
                .unwrap_or_else(|_| p.to_path_buf())
        };
        let protected = config
            .protected
            .iter()
            .chain(own)
            .map(|p| canon(p))
            .collect();
        let exempt = config
            .exempt
            .iter()
            .chain(runtime.as_ref())
            .map(|p| canon(p))
            .collect();
        let hex = |p: &seccompiler::BpfProgram| -> String {
            seccomp::bytes(p)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let program = |n| {
            kernel
                .seccomp
                .then(|| {
                    let program = seccomp::program(n).ok()?;
                    Some(Arc::new(Filter {
                        hex: hex(&program),
                        program,
                    }))
                })
                .flatten()
        };
        Self {
            programs: seccomp::NetRule::ALL.into_iter().map(program).collect(),
            kernel,
            workspace: canon(workspace),
            home: std::env::var_os("HOME").map(PathBuf::from),
            runtime,
            protected,
            exempt,
            config,
            statics: std::sync::Mutex::default(),
            assessed: std::sync::Mutex::default(),
            listings: rules::Listings::default(),
        }
    }

    /// `policy`'s static rules: from the cache, else computed (and kept when nothing was
    /// carved, with each folder opened once).
    fn statics(
        &self,
        policy: &Sandbox,
        places: &rules::Places,
        masks: rules::Masks,
    ) -> Arc<Statics> {
        let mut cache = self.statics.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = cache.get(policy) {
            return hit.clone();
        }
        let (list, carved) = rules::static_rules(policy, places, masks);
        let open = |p: &Path| {
            use rustix::fs::{Mode, OFlags};
            let dir = std::fs::metadata(p).is_ok_and(|m| m.is_dir());
            // Files are opened per process: one replaced by a rename (git's config) would
            // otherwise keep its old inode here.
            dir.then(|| {
                rustix::fs::open(
                    p,
                    OFlags::PATH | OFlags::CLOEXEC | OFlags::DIRECTORY,
                    Mode::empty(),
                )
                .ok()
                .map(Arc::new)
            })
            .flatten()
        };
        let rules: Vec<FsRule> = list
            .into_iter()
            .map(|(path, mask)| FsRule {
                fd: if carved { None } else { open(&path) },
                path,
                mask,
            })
            .collect();
        let zygote = rules.iter().map(FsRule::for_zygote).collect();
        let statics = Arc::new(Statics {
            rules,
            zygote,
            cached: !carved,
        });
        if !carved {
            cache.insert(policy.clone(), statics.clone());
        }
        statics
    }

    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// What a warm runtime applies to itself at its start for the children of `policy`
    /// (its tool's, or the default): the seccomp program of its sockets and, for a confined
    /// policy as root, capabilities dropped — so that a child loads no filter and drops
    /// nothing (loading a filter costs tens of µs per process). An unconfined policy's
    /// runtime loads the filter that allows every socket and keeps its capabilities.
    pub fn base(&self, policy: &Sandbox) -> Base {
        let confined = self.config.enabled && !policy.is_none();
        let rule = match confined {
            true => net_rule(policy),
            false => BASE,
        };
        Base {
            filter: self.config.enabled && self.programs[rule.index()].is_some(),
            rule: rule.index() as u8,
            drop_caps: confined && self.kernel.capabilities,
        }
    }

    /// The seccomp programs (hex) warm runtimes load at their start, by [`Base`]'s rule.
    pub fn zygote_filters(&self) -> Vec<Option<String>> {
        self.programs
            .iter()
            .map(|p| p.as_ref().map(|f| f.hex.clone()))
            .collect()
    }

    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// What an operator should know at start: protected paths inside the workspace (that
    /// folder's own entries are then fixed for sandboxed processes: Landlock allows folders,
    /// so the workspace is allowed entry by entry around them, and files cannot be made or
    /// removed directly in it).
    pub fn notes(&self) -> Vec<String> {
        if !self.config.enabled || self.kernel.landlock_abi == 0 {
            return Vec::new();
        }
        let mut folders: Vec<&Path> = self
            .protected
            .iter()
            .filter(|p| p.starts_with(&self.workspace) && **p != self.workspace)
            .filter_map(|p| p.parent())
            .collect();
        folders.sort();
        folders.dedup();
        folders
            .into_iter()
            .map(|dir| {
                format!(
                    "a protected file (the registry, a key or tokens file) is inside the workspace, in {}: sandboxed tools can change the files there but not make or remove any; keep the registry outside the workspace (--db)",
                    dir.display()
                )
            })
            .collect()
    }

    /// The policy a process with `own` (its tool's, its session tool's) runs under.
    pub fn policy<'a>(&'a self, own: Option<&'a Sandbox>) -> &'a Sandbox {
        own.unwrap_or(&self.config.default)
    }

    /// The policy a stdio upstream server with `own` runs under.
    pub fn server_policy<'a>(&'a self, own: Option<&'a Sandbox>) -> &'a Sandbox {
        own.unwrap_or(&self.config.server_default)
    }

    /// What the kernel enforces of `policy`, as `meta.sandbox` shows it, and what is missing
    /// (empty when everything is enforced).
    pub fn assess(&self, policy: &Sandbox) -> (Value, Vec<String>) {
        assess(self.kernel, self.config.enabled, policy)
    }

    /// `meta.sandbox` for a call of `tool` (its policy, or the default), before it runs — what
    /// plans and dry runs show; `None` for a tool that starts no process.
    pub fn report_for(&self, tool: &toolsmith_core::Tool) -> Option<Value> {
        starts_processes(tool).then(|| self.assess(self.policy(tool.sandbox.as_ref())).0)
    }

    /// The confinement of one process under `own` (or the default), or why it may not run:
    /// a policy saying `enforce: required` that this kernel cannot enforce, or a protected
    /// file with a second name.
    pub fn confine(&self, own: Option<&Sandbox>, cx: &Context) -> Result<Confined, Refused> {
        self.confine_as(self.policy(own), cx)
    }

    /// [`Sandboxes::assess`], computed once per policy.
    fn assessed(&self, policy: &Sandbox) -> Arc<Assessed> {
        let mut cache = self.assessed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = cache.get(policy) {
            return hit.clone();
        }
        if cache.len() >= 1024 {
            cache.clear();
        }
        let fresh = Arc::new(self.assess(policy));
        cache.insert(policy.clone(), fresh.clone());
        fresh
    }

    /// [`Sandboxes::confine`] with the policy given.
    pub fn confine_as(&self, policy: &Sandbox, cx: &Context) -> Result<Confined, Refused> {
        let assessed = self.assessed(policy);
        let (report, missing) = (assessed.0.clone(), &assessed.1);
        if !self.config.enabled || policy.is_none() {
            return Ok(Confined {
                confinement: None,
                report,
            });
        }
        if policy.enforce() == Enforce::Required && !missing.is_empty() {
            return Err(Refused::Unenforceable(missing.join("; ")));
        }
        if let Some(file) = rules::linked(&self.protected, &self.exempt, &self.listings) {
            return Err(Refused::LinkedProtected(file.display().to_string()));
        }
        let abi = self.kernel.abi();
        let (statics, call, handled_fs) = if self.kernel.landlock_abi > 0 {
            let masks = rules::Masks::new(abi);
            let places = rules::Places {
                workspace: &self.workspace,
                workdir: cx.workdir,
                home: self.home.as_deref(),
                runtime: self.runtime.as_deref(),
                programs: cx.program.map(Path::to_path_buf).into_iter().collect(),
                files: cx.files.clone(),
                protected: &self.protected,
                exempt: &self.exempt,
            };
            let call = rules::call_rules(policy, &places, masks)
                .into_iter()
                .map(|(path, mask)| FsRule {
                    path,
                    mask,
                    fd: None,
                })
                .collect();
            (self.statics(policy, &places, masks), call, masks.all)
        } else {
            (Arc::default(), Vec::new(), BitFlags::EMPTY)
        };
        let (ports, handled_net) = match (&policy.network, self.kernel.landlock_abi >= 4) {
            (Network::All, _) | (_, false) => (Vec::new(), BitFlags::EMPTY),
            (Network::None, true) => (Vec::new(), AccessNet::from_all(abi)),
            (Network::Ports { connect, bind }, true) => {
                let mut ports: Vec<(u16, BitFlags<AccessNet>)> = connect
                    .iter()
                    .map(|p| (*p, BitFlags::from(AccessNet::ConnectTcp)))
                    .collect();
                ports.extend(
                    bind.iter()
                        .map(|p| (*p, BitFlags::from(AccessNet::BindTcp))),
                );
                (ports, AccessNet::from_all(abi))
            }
        };
        let net_rule = net_rule(policy);
        Ok(Confined {
            confinement: Some(Confinement {
                net_rule,
                statics,
                call,
                handled_fs,
                ports,
                handled_net,
                scoped: Scope::from_all(abi),
                seccomp: self.programs[net_rule.index()].clone(),
                drop_caps: self.kernel.capabilities,
                identity: std::sync::OnceLock::new(),
            }),
            report,
        })
    }
}

/// Why a process may not start under its policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// The policy says `enforce: required`; what this kernel lacks.
    #[error("the sandbox policy says `enforce: required`, and this kernel cannot enforce: {0}")]
    Unenforceable(String),
    /// A protected file has a second name a sandboxed process could reach.
    #[error(
        "{0} has another name (a hard link): a sandboxed process could reach it through that name; remove the link"
    )]
    LinkedProtected(String),
}

/// The sockets `policy`'s seccomp program allows.
fn net_rule(policy: &Sandbox) -> seccomp::NetRule {
    seccomp::NetRule::new(
        match policy.network {
            Network::All => seccomp::Family::Any,
            Network::None => seccomp::Family::None,
            Network::Ports { .. } => seccomp::Family::Tcp,
        },
        !policy.unix_sockets.is_empty(),
    )
}

/// What a warm runtime applied to itself at its start, for every child it forks
/// ([`Sandboxes::base`]): a call runs only in a runtime of its own base.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Base {
    /// Whether it loaded a seccomp program (none with the sandbox off or without seccomp)…
    pub filter: bool,
    /// …the one of these sockets (an index of the programs).
    pub rule: u8,
    /// Whether it dropped its capabilities (a confined policy's, as root).
    pub drop_caps: bool,
}

impl Base {
    /// How the runtime and its children name it (`zygote.py` compares the two).
    pub fn label(self) -> String {
        let filter = match self.filter {
            true => format!("f{}", self.rule),
            false => "open".to_owned(),
        };
        format!("{filter}{}", if self.drop_caps { "-nocaps" } else { "" })
    }
}

/// The variables of the gateway's own environment named in `names` that are set — never one
/// of its secrets ([`toolsmith_core::sandbox::GATEWAY_VARIABLES`]), whatever a stored
/// `env_allowlist` says. Every process toolsmith starts takes its inherited variables here.
pub fn inherited<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> std::collections::BTreeMap<String, String> {
    inherited_from(names, |n| std::env::var(n).ok())
}

/// [`inherited`] from the environment `lookup` reads.
fn inherited_from<'a>(
    names: impl IntoIterator<Item = &'a str>,
    lookup: impl Fn(&str) -> Option<String>,
) -> std::collections::BTreeMap<String, String> {
    names
        .into_iter()
        .filter(|n| !toolsmith_core::sandbox::GATEWAY_VARIABLES.contains(n))
        .filter_map(|n| lookup(n).map(|v| (n.to_owned(), v)))
        .collect()
}

/// The virtual environment `python` belongs to (the folder above its `bin` holding a
/// `pyvenv.cfg`), if any.
pub fn venv_of(python: &Path) -> Option<PathBuf> {
    let root = rules::prefix(python)?;
    root.join("pyvenv.cfg").exists().then_some(root)
}

impl Confinement {
    /// What makes two confinements the same domain: the policy's static rules (their
    /// cached set), each per-call rule's path, rights and inode (a working folder removed
    /// and made again is another), the ports, the filter, the capabilities.
    /// Static rules the engine caches are named by their address (kept for good); a carved
    /// set, made for one call, by its rules.
    pub(crate) fn identity(&self) -> String {
        self.identity
            .get_or_init(|| self.compute_identity())
            .clone()
    }

    fn compute_identity(&self) -> String {
        use std::fmt::Write;
        use std::os::unix::fs::MetadataExt;
        let mut key = match self.statics.cached {
            true => format!("{:p}", Arc::as_ptr(&self.statics)),
            false => self
                .statics
                .rules
                .iter()
                .map(|r| {
                    let ino = std::fs::metadata(&r.path).map_or(0, |m| m.ino());
                    format!("{}:{}:{ino}", r.path.display(), r.mask.bits())
                })
                .collect::<Vec<_>>()
                .join(" "),
        };
        let _ = write!(
            key,
            " {} {} {} {} {}",
            self.handled_fs.bits(),
            self.handled_net.bits(),
            self.scoped.bits(),
            self.net_rule.index(),
            self.drop_caps
        );
        for rule in &self.call {
            let ino = std::fs::metadata(&rule.path).map_or(0, |m| m.ino());
            let _ = write!(key, " {}:{}:{ino}", rule.path.display(), rule.mask.bits());
        }
        for (port, mask) in &self.ports {
            let _ = write!(key, " p{port}:{}", mask.bits());
        }
        key
    }

    /// Whether it has Landlock rules (a ruleset to restrict to).
    pub(crate) fn has_landlock(&self) -> bool {
        !self.handled_fs.is_empty()
    }

    /// The Landlock ruleset as a warm runtime builds it — once per confinement, kept open
    /// and handed to each child confined alike (masks are the kernel's `LANDLOCK_ACCESS_*`
    /// bits): paths and rights, nothing of a call's data.
    pub(crate) fn ruleset_for_zygote(&self) -> Value {
        let paths: Vec<Value> = self
            .statics
            .zygote
            .iter()
            .cloned()
            .chain(self.call.iter().map(FsRule::for_zygote))
            .collect();
        json!({
            "handled_fs": self.handled_fs.bits(),
            "handled_net": self.handled_net.bits(),
            "scoped": self.scoped.bits(),
            "paths": paths,
            "ports": self.ports.iter().map(|(p, m)| json!([p, m.bits()])).collect::<Vec<_>>(),
        })
    }
}

/// The Landlock ruleset for `c` (used by [`apply`]).
fn ruleset(c: &Confinement) -> Result<Option<landlock::RulesetCreated>, String> {
    use landlock::{NetPort, PathBeneath, RulesetCreatedAttr};
    if c.handled_fs.is_empty() {
        return Ok(None);
    }
    let err = |e: landlock::RulesetError| format!("Landlock: {e}");
    let mut r = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(c.handled_fs)
        .map_err(err)?;
    if !c.handled_net.is_empty() {
        r = r.handle_access(c.handled_net).map_err(err)?;
    }
    if !c.scoped.is_empty() {
        r = r.scope(c.scoped).map_err(err)?;
    }
    let mut created = r.create().map_err(err)?;
    for rule in c.statics.rules.iter().chain(&c.call) {
        let err =
            |e: landlock::RulesetError| format!("Landlock rule for {}: {e}", rule.path.display());
        created = match &rule.fd {
            Some(fd) => {
                use std::os::fd::AsFd;
                created
                    .add_rule(PathBeneath::new(fd.as_fd(), rule.mask))
                    .map_err(err)?
            }
            None => {
                // A path gone since the rules were made allows nothing; the rest still hold.
                let Ok(fd) = landlock::PathFd::new(&rule.path) else {
                    continue;
                };
                created
                    .add_rule(PathBeneath::new(fd, rule.mask))
                    .map_err(err)?
            }
        };
    }
    for (port, mask) in &c.ports {
        created = created
            .add_rule(NetPort::new(*port, *mask))
            .map_err(|e| format!("Landlock rule for port {port}: {e}"))?;
    }
    Ok(Some(created))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_gateways_secrets_are_never_inherited() {
        let env = super::inherited_from(
            [
                "PATH",
                "TOOLSMITH_SECRET_KEY",
                "TOOLSMITH_TOKEN",
                "TOOLSMITH_DB",
                "UNSET",
            ],
            |n| (n != "UNSET").then(|| format!("value of {n}")),
        );
        assert_eq!(env.keys().collect::<Vec<_>>(), ["PATH"]);
    }
}
