//! A policy's paths → Landlock path rules for one process: the system folders, the
//! workspace, the call's working folder, where its program and interpreter live, and the
//! policy's own paths — minus what is never reachable. Landlock only ever allows, so a
//! protected path inside an allowed folder is cut out by allowing that folder's other
//! entries one by one instead ("carving"), down to the protected path; symbolic links met
//! while carving are not followed (a link a tool placed in its workspace would otherwise
//! allow its target).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::{ABI, Access, AccessFs, BitFlags};
use toolsmith_core::sandbox::{Preset, Sandbox};

/// Folders every sandboxed process reads and executes from (those that exist).
pub const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/srv", "/var",
    "/run", "/nix", "/snap", "/proc", "/sys",
];

/// Files of the user's home every process reads: git's configuration (git stops at an
/// unreadable one). Nothing else of the home folder is readable unless a policy says so.
pub const HOME_FILES: &[&str] = &[".gitconfig", ".config/git"];

/// Devices a process may write (and use with `ioctl`): the null sinks, randomness, its
/// terminal and pseudo-terminals.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// What one process's rules are computed from.
pub(crate) struct Places<'a> {
    pub workspace: &'a Path,
    pub workdir: &'a Path,
    pub home: Option<&'a Path>,
    pub runtime: Option<&'a Path>,
    /// The program's file (as found on PATH) and, for a script, the interpreter's.
    pub programs: Vec<PathBuf>,
    /// Files a process must read besides (a script's file).
    pub files: Vec<PathBuf>,
    /// Never reachable, whatever the policy says.
    pub protected: &'a [PathBuf],
    /// Reachable even inside a protected path (the runtime's environment, in the data folder).
    pub exempt: &'a [PathBuf],
}

/// Access masks for one ABI.
#[derive(Clone, Copy)]
pub(crate) struct Masks {
    pub all: BitFlags<AccessFs>,
    pub read: BitFlags<AccessFs>,
    pub device: BitFlags<AccessFs>,
}

impl Masks {
    pub fn new(abi: ABI) -> Self {
        let all = AccessFs::from_all(abi);
        let read = AccessFs::from_read(abi);
        let device = all & (AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev) | read;
        Self { all, read, device }
    }

    /// What a rule on a file (not a folder) may carry: the kernel refuses folder rights there.
    fn for_file(self, mask: BitFlags<AccessFs>) -> BitFlags<AccessFs> {
        mask & AccessFs::from_file(ABI::V7)
    }
}

/// `$NAME/rest` → a path, or `None` when the place does not exist for this process.
fn expand(p: &str, places: &Places) -> Option<PathBuf> {
    let (name, rest) = match p.split_once('/') {
        Some((n, r)) if n.starts_with('$') => (n, r),
        None if p.starts_with('$') => (p, ""),
        _ => return Some(PathBuf::from(p)),
    };
    let base: PathBuf = match name {
        "$WORKSPACE" => places.workspace.to_path_buf(),
        "$WORKDIR" => places.workdir.to_path_buf(),
        "$HOME" => places.home?.to_path_buf(),
        "$RUNTIME" => places.runtime?.to_path_buf(),
        "$PYTHON_PREFIX" => places
            .programs
            .get(1)
            .or(places.programs.first())
            .and_then(|p| prefix(p))?,
        _ => return None,
    };
    Some(if rest.is_empty() {
        base
    } else {
        base.join(rest)
    })
}

/// Where a program is installed: the folder above its `bin` (or `sbin`, `shims`), else its
/// own folder. A virtual environment's interpreter gives the environment.
pub(crate) fn prefix(program: &Path) -> Option<PathBuf> {
    let dir = program.parent()?;
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("bin" | "sbin" | "shims") => dir.parent().map(Path::to_path_buf),
        _ => Some(dir.to_path_buf()),
    }
}

/// One rule: a path and what it allows.
pub(crate) type Rule = (PathBuf, BitFlags<AccessFs>);

/// Whether a policy path names a place that changes from one process to the next.
fn per_call(p: &str) -> bool {
    p.starts_with("$WORKDIR") || p.starts_with("$PYTHON_PREFIX")
}

/// The rules of `policy` that are the same for every process: the system, the devices, the
/// home files, the workspace, the policy's own paths naming no per-call place. The second
/// value says whether a folder was carved (then the rules depend on its entries now).
pub(crate) fn static_rules(policy: &Sandbox, places: &Places, m: Masks) -> (Vec<Rule>, bool) {
    let mut wanted: Vec<Rule> = Vec::new();
    for dir in SYSTEM {
        wanted.push((PathBuf::from(dir), m.read));
    }
    wanted.push((PathBuf::from("/dev"), m.read | (m.all & AccessFs::IoctlDev)));
    if let Some(home) = places.home {
        for f in HOME_FILES {
            wanted.push((home.join(f), m.read));
        }
    }
    for dev in DEVICES {
        wanted.push((PathBuf::from(dev), m.device));
    }
    let workspace = match policy.preset {
        Preset::Workspace => m.all,
        Preset::ReadOnly | Preset::None => m.read,
    };
    wanted.push((places.workspace.to_path_buf(), workspace));
    policy_paths(policy, places, m, false, &mut wanted);
    resolve(wanted, places, m)
}

/// The rules of one process: its working folder, where its program and interpreter live,
/// its files, and the policy's paths under `$WORKDIR` and `$PYTHON_PREFIX`.
pub(crate) fn call_rules(policy: &Sandbox, places: &Places, m: Masks) -> Vec<Rule> {
    let mut wanted: Vec<Rule> = vec![(places.workdir.to_path_buf(), m.all)];
    for program in &places.programs {
        // The program as found (a shim, a virtual environment's link) and what it is.
        for p in [Some(program.clone()), std::fs::canonicalize(program).ok()]
            .into_iter()
            .flatten()
        {
            if let Some(root) = prefix(&p) {
                wanted.push((root, m.read));
            }
        }
    }
    for f in &places.files {
        wanted.push((f.clone(), m.read));
    }
    policy_paths(policy, places, m, true, &mut wanted);
    resolve(wanted, places, m).0
}

/// The policy's own read and write paths, those naming a per-call place or the others.
fn policy_paths(policy: &Sandbox, places: &Places, m: Masks, call: bool, out: &mut Vec<Rule>) {
    for (list, mask) in [(&policy.read, m.read), (&policy.write, m.all)] {
        for p in list.iter().filter(|p| per_call(p) == call) {
            if let Some(p) = expand(p, places) {
                out.push((p, mask));
            }
        }
    }
}

/// The wanted rules as the kernel gets them: real paths, folders' rights off file rules,
/// nothing inside a protected path (unless exempt), protected paths carved out of folders.
fn resolve(wanted: Vec<Rule>, places: &Places, m: Masks) -> (Vec<Rule>, bool) {
    let mut carved = false;
    let mut out = Vec::new();
    for (path, mask) in wanted {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue; // a folder this machine does not have
        };
        let real = std::fs::canonicalize(&path).unwrap_or(path);
        let inside_protected = places.protected.iter().any(|p| real.starts_with(p));
        // The call's own folder is reachable wherever it is (in the engine's folder of call
        // folders, which is protected), as is what is exempt.
        let exempt =
            real.starts_with(places.workdir) || places.exempt.iter().any(|x| real.starts_with(x));
        if inside_protected && !exempt {
            continue;
        }
        let mask = if meta.is_dir() {
            mask
        } else {
            m.for_file(mask)
        };
        let cut: Vec<&PathBuf> = places
            .protected
            .iter()
            .filter(|p| p.starts_with(&real) && **p != real)
            .collect();
        if cut.is_empty() || !meta.is_dir() {
            out.push((real, mask));
        } else {
            carved = true;
            carve(&real, mask, &cut, places.exempt, m, &mut out);
        }
    }
    (dedupe(out), carved)
}

/// Drops each rule that a rule on a folder above it (or the same path) already covers with
/// at least its rights (`/bin` is `/usr/bin` on most systems): fewer rules, less to apply.
fn dedupe(mut rules: Vec<Rule>) -> Vec<Rule> {
    rules.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<Rule> = Vec::with_capacity(rules.len());
    for (path, mask) in rules {
        if let Some(same) = out.iter_mut().find(|(p, _)| *p == path) {
            same.1 |= mask;
            continue;
        }
        let covered = out
            .iter()
            .any(|(p, m)| path.starts_with(p) && m.contains(mask));
        if !covered {
            out.push((path, mask));
        }
    }
    out
}

/// Allows every entry of `dir` but the protected ones, going down into those that hold one.
fn carve(
    dir: &Path,
    mask: BitFlags<AccessFs>,
    protected: &[&PathBuf],
    exempt: &[PathBuf],
    m: Masks,
    out: &mut Vec<(PathBuf, BitFlags<AccessFs>)>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        if protected.iter().any(|p| **p == path) {
            // Only what is exempt inside it.
            for x in exempt.iter().filter(|x| x.starts_with(&path)) {
                out.push((x.clone(), mask));
            }
            continue;
        }
        let below: Vec<&PathBuf> = protected
            .iter()
            .copied()
            .filter(|p| p.starts_with(&path))
            .collect();
        if below.is_empty() {
            let mask = if meta.is_dir() {
                mask
            } else {
                m.for_file(mask)
            };
            out.push((path, mask));
        } else if meta.is_dir() {
            carve(&path, mask, &below, exempt, m, out);
        }
    }
}

/// The regular files directly in each protected folder (the exempt left out), listed again
/// only when the folder changed: [`linked`] runs before every sandboxed spawn, and a
/// listing costs more than the rest of a confinement's computation.
#[derive(Debug, Default)]
pub(crate) struct Listings(std::sync::Mutex<HashMap<PathBuf, Listing>>);

/// A folder's device, inode and modification time, and its regular files then.
type Listing = ((u64, u64, i64, i64), Arc<[PathBuf]>);

impl Listings {
    /// The regular files of `dir` (whose metadata is `meta`) but the exempt.
    fn files(&self, dir: &Path, meta: &std::fs::Metadata, exempt: &[PathBuf]) -> Arc<[PathBuf]> {
        let stamp = (meta.dev(), meta.ino(), meta.mtime(), meta.mtime_nsec());
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, files)) = cache.get(dir)
            && *at == stamp
        {
            return files.clone();
        }
        // Only regular files can have a second name; the entry's type comes with the
        // listing (folders such as the engine's call folders cost no look-up).
        let files: Arc<[PathBuf]> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| !exempt.contains(p))
            .collect();
        // A folder changed within the last second is listed again next time: two changes
        // in one tick of the file system's clock leave the same modification time.
        let settled = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|age| age > std::time::Duration::from_secs(1));
        if settled {
            if cache.len() > 64 {
                cache.clear();
            }
            cache.insert(dir.to_path_buf(), (stamp, files.clone()));
        } else {
            cache.remove(dir);
        }
        files
    }
}

/// The protected regular files — each protected file, and the files directly in each
/// protected folder but the exempt — that have another name somewhere (a hard link):
/// Landlock judges a path, so a second name inside an allowed folder would reach the file.
/// Each file's link count is read every time; a folder's list of files comes from
/// `listings` while the folder is unchanged.
pub(crate) fn linked(
    protected: &[PathBuf],
    exempt: &[PathBuf],
    listings: &Listings,
) -> Option<PathBuf> {
    let hard_linked =
        |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file() && m.nlink() > 1);
    for p in protected {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            continue;
        };
        if meta.is_file() && meta.nlink() > 1 {
            return Some(p.clone());
        }
        if !meta.is_dir() {
            continue;
        }
        if let Some(file) = listings
            .files(p, &meta, exempt)
            .iter()
            .find(|f| hard_linked(f))
        {
            return Some(file.clone());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sets `dir`'s modification time `secs` seconds back (as if it had settled).
    fn age(dir: &Path, secs: u64) {
        let then = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        let since = then
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after the epoch");
        let t = rustix::fs::Timespec {
            tv_sec: since.as_secs() as i64,
            tv_nsec: i64::from(since.subsec_nanos()),
        };
        rustix::fs::utimensat(
            rustix::fs::CWD,
            dir,
            &rustix::fs::Timestamps {
                last_access: t,
                last_modification: t,
            },
            rustix::fs::AtFlags::empty(),
        )
        .expect("utimensat");
    }

    #[test]
    fn a_second_name_is_found_whether_the_listing_was_kept_or_not() {
        let protected = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        let dir = protected.path().to_path_buf();
        std::fs::write(dir.join("key"), "k").expect("write");
        age(&dir, 10);
        let listings = Listings::default();
        let all = [dir.clone()];
        assert_eq!(linked(&all, &[], &listings), None);
        assert!(
            listings.0.lock().expect("lock").contains_key(&dir),
            "a settled folder's listing is kept"
        );

        // A file listed before gets a second name: its link count is read every time.
        std::fs::hard_link(dir.join("key"), outside.path().join("a")).expect("link");
        assert_eq!(linked(&all, &[], &listings), Some(dir.join("key")));
        std::fs::remove_file(outside.path().join("a")).expect("unlink");
        assert_eq!(linked(&all, &[], &listings), None);

        // A file made since (the folder changed): listed again, so it is checked too.
        std::fs::write(dir.join("tokens"), "t").expect("write");
        std::fs::hard_link(dir.join("tokens"), outside.path().join("b")).expect("link");
        assert_eq!(linked(&all, &[], &listings), Some(dir.join("tokens")));
        assert!(
            !listings.0.lock().expect("lock").contains_key(&dir),
            "a folder changed within the second is listed again next time"
        );
        // The exempt are left out.
        assert_eq!(linked(&all, &[dir.join("tokens")], &listings), None);
    }
}
