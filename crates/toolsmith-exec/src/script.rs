//! Script tools (SPEC §5.3): the interpreter resolved once to its real executable, and each
//! script's source written once to a content-addressed file that every call reuses.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Resolved interpreters and written scripts, shared by every call of an engine.
#[derive(Debug)]
pub struct Scripts {
    dir: PathBuf,
    /// The Python of `toolsmith runtime setup`, used for `python3`/`python` when present.
    runtime_python: Option<PathBuf>,
    interpreters: Mutex<HashMap<String, Result<PathBuf, String>>>,
    files: Mutex<HashMap<u64, PathBuf>>,
}

impl Scripts {
    pub fn new(dir: PathBuf, runtime_python: Option<PathBuf>) -> Self {
        Self {
            dir,
            runtime_python,
            interpreters: Mutex::default(),
            files: Mutex::default(),
        }
    }

    /// The executable for `name`: the runtime's Python for python3/python when set up;
    /// otherwise found on PATH, symlinks followed, and a shim (a script standing in for the
    /// interpreter, as pyenv installs) asked for the real executable — once.
    pub fn interpreter(&self, name: &str) -> Result<PathBuf, String> {
        if let Some(p) = self
            .runtime_python
            .as_ref()
            .filter(|_| matches!(name, "python3" | "python"))
        {
            return Ok(p.clone());
        }
        let mut cache = self.interpreters.lock().unwrap_or_else(|e| e.into_inner());
        // Where PATH is unset (a gateway started with an empty environment, as an upstream
        // of another toolsmith is), the default search path, as execvp has.
        let path = std::env::var("PATH")
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| crate::programs::DEFAULT_PATH.to_owned());
        cache
            .entry(name.to_owned())
            .or_insert_with(|| resolve(name, &path))
            .clone()
    }

    /// The path of a file holding `source`, written on first use.
    pub fn file(&self, source: &str, interpreter: &str) -> Result<PathBuf, String> {
        let hash = fnv(source.as_bytes()) ^ fnv(interpreter.as_bytes()).rotate_left(1);
        let mut files = self.files.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = files.get(&hash).filter(|p| p.exists()) {
            return Ok(p.clone());
        }
        std::fs::create_dir_all(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        let ext = match Path::new(interpreter)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
        {
            n if n.starts_with("python") => ".py",
            n if n.starts_with("node") => ".js",
            "bash" | "sh" | "zsh" => ".sh",
            "ruby" => ".rb",
            "perl" => ".pl",
            _ => "",
        };
        let path = self.dir.join(format!("{hash:016x}{ext}"));
        // Already there (another server on this machine wrote it): kept, not replaced — a
        // sandboxed call of that server may be about to open it, and Landlock allows the
        // file it was given, not whatever later takes its name.
        if std::fs::read(&path).is_ok_and(|on_disk| on_disk == source.as_bytes()) {
            files.insert(hash, path.clone());
            return Ok(path);
        }
        // Write then rename, so a concurrent reader never sees half a script.
        let tmp = self
            .dir
            .join(format!(".{hash:016x}.{}", std::process::id()));
        std::fs::write(&tmp, source)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        files.insert(hash, path.clone());
        Ok(path)
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// `name` found on `path`, symlinks followed, and a shim replaced by what it launches.
fn resolve(name: &str, path: &str) -> Result<PathBuf, String> {
    let found = crate::programs::resolve_program(name, Some(path))
        .ok_or_else(|| format!("interpreter {name:?} not found on PATH"))?;
    let real = found
        .canonicalize()
        .map_err(|e| format!("interpreter {}: {e}", found.display()))?;
    if !is_shim(&real) {
        // The path as found, not where its links lead: a virtual environment's `bin/python`
        // is a link to the base interpreter, and only started by that path does it use the
        // environment's packages.
        return Ok(if found.is_absolute() { found } else { real });
    }
    // A shell script standing in for the interpreter: ask the interpreter where it lives.
    let base = real
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let probe: &[&str] = if base.starts_with("python") {
        &["-c", "import sys; print(sys.executable)"]
    } else if base.starts_with("node") {
        &["-p", "process.execPath"]
    } else {
        return Ok(real);
    };
    let out = std::process::Command::new(&real)
        .args(probe)
        .output()
        .map_err(|e| format!("interpreter {}: {e}", real.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !text.is_empty() && Path::new(&text).is_absolute() {
        Ok(PathBuf::from(text))
    } else {
        Ok(real)
    }
}

/// A text file starting with `#!`: a launcher, not the interpreter itself.
fn is_shim(p: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    std::fs::File::open(p)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == b"#!"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shim_resolves_to_the_interpreter_it_launches() {
        // The real interpreter, as the machine's python3 (itself possibly a shim) reports it.
        let real = resolve("python3", &std::env::var("PATH").unwrap_or_default())
            .expect("python3 on PATH");
        assert!(
            !is_shim(&real),
            "{} is still a launcher script",
            real.display()
        );
        // A pyenv-style shim in front of it is seen through.
        let dir = tempfile::tempdir().expect("tempdir");
        let shim = dir.path().join("python3");
        std::fs::write(
            &shim,
            format!("#!/bin/sh\nexec {} \"$@\"\n", real.display()),
        )
        .expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let resolved = resolve("python3", &dir.path().display().to_string()).expect("resolves");
        assert_eq!(resolved.canonicalize().ok(), real.canonicalize().ok());
        assert!(resolve("no-such-interpreter", "/nonexistent").is_err());
    }

    #[test]
    fn a_script_another_server_wrote_is_kept_not_replaced() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        // Two servers on one machine, one scripts folder.
        let (one, two) = (
            Scripts::new(dir.path().to_path_buf(), None),
            Scripts::new(dir.path().to_path_buf(), None),
        );
        let first = one.file("print(1)", "python3").expect("written");
        let inode = std::fs::metadata(&first).expect("meta").ino();
        let again = two.file("print(1)", "python3").expect("found");
        assert_eq!(first, again);
        // The same file, not a new one under its name (a sandboxed call of the first server
        // may hold a Landlock rule for it).
        assert_eq!(std::fs::metadata(&again).expect("meta").ino(), inode);
        // A file of that name with other bytes is written anew.
        std::fs::write(&first, "tampered").expect("write");
        let three = Scripts::new(dir.path().to_path_buf(), None);
        let fixed = three.file("print(1)", "python3").expect("rewritten");
        assert_eq!(
            std::fs::read_to_string(&fixed).ok().as_deref(),
            Some("print(1)")
        );
    }
}
