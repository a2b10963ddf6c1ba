//! Finding the file a program name means: itself when it holds a `/`, else the first
//! executable of that name on the tool's PATH. Used where a process is started (commands,
//! scripts, sessions, upstream servers) and where the sandbox explains what it would allow.

use std::path::PathBuf;

/// Where programs are looked up for a tool whose environment has no PATH.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The file `program` names: itself when it holds a `/`, else the first executable of that
/// name in `path` (the tool's PATH; [`DEFAULT_PATH`] when it has none).
pub fn resolve_program(program: &str, path: Option<&str>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    path.unwrap_or(DEFAULT_PATH)
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
