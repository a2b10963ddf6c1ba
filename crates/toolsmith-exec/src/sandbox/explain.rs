//! Saying when the sandbox is why a tool failed. A program refused by Landlock or seccomp
//! says so in its own words ("sh: 1: cannot create /tmp/out: Permission denied", "[Errno 13]
//! Permission denied: '/data/x'", "python3: Permission denied" after an exec), which does
//! not tell a user it was the sandbox. When a sandboxed process fails and its stderr names a
//! refused path that its policy does not allow, the error says so and names the key to
//! change.

use std::path::{Path, PathBuf};

use toolsmith_core::sandbox::{Preset, Sandbox};

use super::{Sandboxes, rules};

/// The words a refusal ends in (glibc's EACCES and EPERM, Python's errno 13, Go's and
/// Node's lower-case forms).
const REFUSALS: &[&str] = &[
    "Permission denied",
    "permission denied",
    "Operation not permitted",
    "operation not permitted",
    "EACCES",
    "EPERM",
];

impl Sandboxes {
    /// A sentence for a failed process of a tool with policy `own` whose stderr is
    /// `stderr`, when a path it was refused is one its policy does not allow; `path` is the
    /// tool's PATH (a bare program name a shell could not run is looked up there).
    pub fn denial_hint(&self, own: Option<&Sandbox>, stderr: &str, path: &str) -> Option<String> {
        let (policy, name) = self.enforced(own)?;
        for line in stderr
            .lines()
            .filter(|l| REFUSALS.iter().any(|r| l.contains(r)))
        {
            for named in named_paths(line, path) {
                let real = std::fs::canonicalize(&named).unwrap_or_else(|_| named.clone());
                if self.protected.iter().any(|p| real.starts_with(p)) {
                    return Some(format!(
                        "the sandbox refused {}: it is toolsmith's own (the registry, a key, tokens, another call) and never reachable by a tool",
                        named.display()
                    ));
                }
                let (read, write) = self.reach(policy, &real);
                if !read {
                    return Some(unreadable(&name, &named));
                }
                if !write {
                    return Some(format!(
                        "the sandbox (policy {name}) lets this tool write only its working folder{} and the policy's `filesystem.write` paths, not {}: to allow it, add its folder to `sandbox.filesystem.write`",
                        match policy.preset {
                            Preset::Workspace => " and the workspace",
                            _ => "",
                        },
                        named.display()
                    ));
                }
            }
        }
        None
    }

    /// For `toolsmith check`: why a tool with policy `own` would fail to start `program` (a
    /// command's first word, a script's interpreter; a bare name is looked up in `path`).
    /// Where the program is installed is readable to its process whatever the policy; what
    /// its `#!` line runs is not — a script whose `#!/usr/bin/env python3` finds a pyenv shim
    /// under `$HOME`, an interpreter in another folder — and neither is a program in
    /// toolsmith's own folders. `None` when it can start, when the program is not found, or
    /// with no sandbox.
    pub fn program_hint(&self, own: Option<&Sandbox>, program: &str, path: &str) -> Option<String> {
        let (policy, name) = self.enforced(own)?;
        let named = crate::programs::resolve_program(program, Some(path))?;
        let real = std::fs::canonicalize(&named).ok()?;
        if self.protected.iter().any(|p| real.starts_with(p)) {
            return Some(format!(
                "its program {} is in toolsmith's own folders, which no tool can reach",
                named.display()
            ));
        }
        // Its own installation is added to every process's reach (rules::call_rules).
        let installed: Vec<PathBuf> = [&named, &real]
            .into_iter()
            .filter_map(|p| rules::prefix(p))
            .collect();
        let readable = |p: &Path| {
            let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            [p, real.as_path()]
                .iter()
                .all(|p| installed.iter().any(|i| p.starts_with(i)) || self.reach(policy, p).0)
        };
        let runs = shebang_program(&real, path)?;
        if readable(&runs) {
            return None;
        }
        Some(format!(
            "{} starts {} (its #! line), and {}",
            named.display(),
            runs.display(),
            unreadable(&name, &runs)
        ))
    }

    /// The policy a process under `own` gets and how messages name it, when Landlock
    /// enforces it (nothing to explain otherwise).
    fn enforced<'a>(&'a self, own: Option<&'a Sandbox>) -> Option<(&'a Sandbox, String)> {
        let policy = self.policy(own);
        if !self.config.enabled || policy.is_none() || self.kernel.landlock_abi == 0 {
            return None;
        }
        let name = match policy.to_value() {
            serde_json::Value::String(s) => s,
            _ => "its own".to_owned(),
        };
        Some((policy, name))
    }

    /// Whether `policy` lets a process read and write `path` (its working folder aside).
    fn reach(&self, policy: &Sandbox, path: &Path) -> (bool, bool) {
        let under = |list: &[PathBuf]| list.iter().any(|p| path.starts_with(p));
        let expand = |list: &[String]| -> Vec<PathBuf> {
            list.iter()
                .filter_map(|p| {
                    let (name, rest) = p.split_once('/').unwrap_or((p, ""));
                    let base = match name {
                        "$WORKSPACE" => Some(self.workspace.clone()),
                        "$HOME" => self.home.clone(),
                        "$RUNTIME" => self.runtime.clone(),
                        "" => Some(PathBuf::from("/")),
                        _ => None,
                    }?;
                    Some(if rest.is_empty() {
                        base
                    } else {
                        base.join(rest)
                    })
                })
                .collect()
        };
        let system: Vec<PathBuf> = rules::SYSTEM
            .iter()
            .map(PathBuf::from)
            .chain([PathBuf::from("/dev")])
            .collect();
        let write = expand(&policy.write);
        let mut read = expand(&policy.read);
        read.extend(system);
        read.push(self.workspace.clone());
        read.extend(write.iter().cloned());
        let writable = under(&write)
            || (policy.preset == Preset::Workspace && path.starts_with(&self.workspace))
            || path.starts_with("/dev/null")
            || path.starts_with("/dev/pts");
        (under(&read), writable)
    }
}

/// The program a script's `#!` line runs: its interpreter, or what `env` finds on `path` for
/// `#!/usr/bin/env NAME`. `None` for a binary or an unreadable file.
fn shebang_program(script: &Path, path: &str) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = std::str::from_utf8(
        head[..n]
            .strip_prefix(b"#!")?
            .split(|b| *b == b'\n')
            .next()?,
    )
    .ok()?;
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    if Path::new(interpreter)
        .file_name()
        .is_some_and(|f| f == "env")
    {
        let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        return crate::programs::resolve_program(name, Some(path));
    }
    Some(PathBuf::from(interpreter))
}

/// What to say when policy `name` cannot read `named`: a program in a `bin` (a pyenv shim, a
/// virtual environment) needs where it is installed, whole.
fn unreadable(name: &str, named: &Path) -> String {
    let installed = named
        .parent()
        .and_then(|d| d.file_name())
        .is_some_and(|d| matches!(d.to_str(), Some("bin" | "sbin" | "shims")));
    match installed.then(|| rules::prefix(named)).flatten() {
        Some(prefix) => format!(
            "the sandbox (policy {name}) does not let this tool run {}: to allow it, add {} (where it is installed) to `sandbox.filesystem.read`",
            named.display(),
            prefix.display()
        ),
        None => format!(
            "the sandbox (policy {name}) does not let this tool reach {}: to allow it, add it or its folder to `sandbox.filesystem.read` (to read or run it) or `sandbox.filesystem.write` (to write it too)",
            named.display()
        ),
    }
}

/// The paths a refusal line names: absolute ones as written, and a bare program name a
/// shell could not run (`sh: 1: python3: Permission denied`), looked up in `path`.
fn named_paths(line: &str, path: &str) -> Vec<PathBuf> {
    let trim = |w: &str| {
        w.trim_matches(|c: char| matches!(c, '\'' | '"' | '`' | ',' | '(' | ')' | '[' | ']'))
            .trim_end_matches(':')
            .to_owned()
    };
    let mut out: Vec<PathBuf> = line
        .split_whitespace()
        .map(trim)
        .filter(|w| w.starts_with('/') && w.len() > 1)
        .map(PathBuf::from)
        .collect();
    if out.is_empty() {
        let parts: Vec<&str> = line.split(": ").collect();
        if let Some(i) = parts
            .iter()
            .position(|p| REFUSALS.iter().any(|r| p.starts_with(r)))
            && i > 0
        {
            let word = trim(parts[i - 1]);
            if !word.is_empty() && !word.contains(char::is_whitespace) && !word.contains('/') {
                out.extend(crate::programs::resolve_program(&word, Some(path)));
            }
        }
    }
    out
}

/// For a stdio server read from a client's configuration: the folders its arguments name
/// (absolute, existing, outside the system folders) — what a server such as
/// `server-filesystem` is started to work in — which its default policy would let it read but
/// not write. Gives the server a policy that writes them too (the default's, plus those) and
/// returns them, so that the import can say so; nothing for a server with a policy of its
/// own or naming no folder.
pub fn propose_writes(server: &mut toolsmith_core::upstream::McpServer) -> Vec<String> {
    let toolsmith_core::upstream::Transport::Stdio {
        command, sandbox, ..
    } = &mut server.transport
    else {
        return Vec::new();
    };
    if sandbox.is_some() {
        return Vec::new();
    }
    let folders: Vec<String> = command
        .iter()
        .skip(1)
        .filter(|a| a.starts_with('/') && Path::new(a.as_str()).is_dir())
        .filter(|a| {
            !rules::SYSTEM
                .iter()
                .any(|s| Path::new(a.as_str()).starts_with(s))
        })
        .cloned()
        .collect();
    if !folders.is_empty() {
        let mut policy = super::server_default();
        policy.write.extend(folders.iter().cloned());
        *sandbox = Some(policy);
    }
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_paths_are_found_in_the_usual_wordings() {
        let p = |l: &str| named_paths(l, "/usr/bin:/bin");
        assert_eq!(
            p("sh: 1: cannot create /tmp/x/out: Permission denied"),
            [PathBuf::from("/tmp/x/out")]
        );
        assert_eq!(
            p("PermissionError: [Errno 13] Permission denied: '/srv/data/x.csv'"),
            [PathBuf::from("/srv/data/x.csv")]
        );
        assert_eq!(
            p("sh: 1: sh: Permission denied"),
            [PathBuf::from("/usr/bin/sh")]
        );
        assert!(p("fatal: Permission denied (publickey)").is_empty());
    }

    #[test]
    fn a_servers_folders_become_its_write_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().display().to_string();
        let doc = serde_json::json!({"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", folder, "/usr/share", "/no/such/folder"]}}});
        let mut imported =
            toolsmith_core::upstream::from_mcp_config(&doc, &|_| None).expect("read");
        let server = &mut imported.servers[0];
        assert_eq!(propose_writes(server), std::slice::from_ref(&folder));
        let toolsmith_core::upstream::Transport::Stdio { sandbox, .. } = &server.transport else {
            panic!("stdio");
        };
        let policy = sandbox.as_ref().expect("a policy");
        assert!(policy.write.contains(&folder), "{policy:?}");
        assert_eq!(policy.read, ["/"], "the default's reads are kept");
        // A server with a policy of its own is left as it is.
        assert!(propose_writes(server).is_empty());
    }
}
