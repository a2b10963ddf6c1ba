//! Workspace confinement: every file a built-in touches is opened here, and refused with the
//! rule that refused it.
//!
//! Rules: no NUL; no `..` component (`rule: no parent references`); an absolute path must lie
//! inside the root (`rule: absolute paths must be inside the workspace`); resolution may not
//! leave the root through a symlink (`rule: symlinks may not leave the workspace`).
//!
//! Files are opened **relative to a directory descriptor of the root** held for the engine's
//! life, with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the kernel resolves the
//! whole path, symlinks included, and refuses any step out of the root, atomically. Nothing
//! is checked first and used later, so swapping a folder for a symlink between a check and
//! the open (a race that used to work) finds nothing to exploit. Where `openat2` is missing
//! (Linux before 5.6, or a seccomp filter), the path is walked one component at a time with
//! `O_NOFOLLOW`, and every symlink is refused.
//!
//! Only regular files are read or written (a FIFO or a device would block a thread or never
//! end), and files are opened non-blocking so that even the open cannot hang. Hard links
//! are not symlinks: a hard link inside the workspace to a file elsewhere on the same
//! filesystem reads that file; writing to a file with more than one link is refused.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// The folder file built-ins are confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    dir: Arc<OwnedFd>,
}

/// A path inside the workspace, checked against the rules that need no filesystem.
struct Inside {
    /// Relative to the root; empty for the root itself.
    rel: PathBuf,
    /// As the caller wrote it, for messages.
    given: String,
}

const READ: OFlags = OFlags::RDONLY
    .union(OFlags::CLOEXEC)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY);

impl Workspace {
    /// `root` must be a directory; it is canonicalised and opened once.
    pub fn new(root: &Path) -> Result<Self, String> {
        let root = root
            .canonicalize()
            .map_err(|e| format!("workspace {}: {e}", root.display()))?;
        let dir = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOTDIR => format!("workspace {} is not a directory", root.display()),
            e => format!("workspace {}: {e}", root.display()),
        })?;
        Ok(Self {
            root,
            dir: Arc::new(dir),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path relative to the root, for results shown to models.
    pub fn relative(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// `rel` (relative to the root) as shown to models.
    fn shown(rel: &Path) -> String {
        if rel.as_os_str().is_empty() {
            ".".into()
        } else {
            rel.to_string_lossy().into_owned()
        }
    }

    /// The rules that need no filesystem: NUL, `..`, absolute paths outside the root.
    fn inside(&self, path: &str) -> Result<Inside, String> {
        if path.contains('\0') {
            return Err(format!("{path:?} refused: paths cannot contain NUL bytes"));
        }
        let p = Path::new(path);
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "{path:?} refused: `..` is not allowed in paths (rule: no parent references)"
            ));
        }
        let rel = if p.is_absolute() {
            match p.strip_prefix(&self.root) {
                Ok(r) => r.to_path_buf(),
                Err(_) => {
                    return Err(format!(
                        "{path:?} refused: absolute path outside the workspace {} (rule: absolute paths must be inside the workspace)",
                        self.root.display()
                    ));
                }
            }
        } else {
            p.components()
                .filter(|c| matches!(c, Component::Normal(_)))
                .collect()
        };
        Ok(Inside {
            rel,
            given: path.to_owned(),
        })
    }

    /// Opens `rel` beneath the root with `flags`.
    fn open_beneath(&self, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        open_beneath(self.dir.as_fd(), rel, flags, mode)
    }

    /// A plain message for a failed open of `at`.
    fn open_error(&self, at: &Inside, e: Errno) -> String {
        let path = &at.given;
        match e {
            Errno::XDEV | Errno::LOOP => format!(
                "{path:?} refused: it resolves through a symlink that leaves the workspace, or one that \
                 cannot be followed safely (rule: symlinks may not leave the workspace)"
            ),
            Errno::NOENT => format!("{path:?} does not exist in the workspace"),
            Errno::NOTDIR => format!("{path:?}: a part of the path is not a directory"),
            Errno::ISDIR => format!("{path:?} is a directory"),
            Errno::NXIO => format!("{path:?} is not a regular file (rule: only regular files)"),
            e => format!("{path:?}: {}", std::io::Error::from(e)),
        }
    }

    /// Opens a regular file for reading. A directory, FIFO, socket or device is refused
    /// without blocking.
    pub fn open_read(&self, path: &str) -> Result<(File, String), String> {
        let at = self.inside(path)?;
        let fd = self
            .open_beneath(&at.rel, READ, Mode::empty())
            .map_err(|e| self.open_error(&at, e))?;
        let kind = kind_of(&fd).map_err(|e| self.open_error(&at, e))?;
        match kind {
            FileType::RegularFile => Ok((File::from(fd), Self::shown(&at.rel))),
            FileType::Directory => Err(format!(
                "{} is a directory; use list_dir",
                Self::shown(&at.rel)
            )),
            other => Err(not_regular(&at.rel, other)),
        }
    }

    /// Opens a directory for listing.
    pub fn open_dir(&self, path: &str) -> Result<(OwnedFd, String), String> {
        let at = self.inside(path)?;
        let fd = self
            .open_beneath(&at.rel, READ | OFlags::DIRECTORY, Mode::empty())
            .map_err(|e| match e {
                Errno::NOTDIR => format!("{} is not a directory", Self::shown(&at.rel)),
                e => self.open_error(&at, e),
            })?;
        Ok((fd, Self::shown(&at.rel)))
    }

    /// Opens (creating it, and its folders, when missing) a regular file for writing:
    /// truncated, or for appending. Returns the file, its shown path and whether it was
    /// created.
    pub fn open_write(&self, path: &str, append: bool) -> Result<(File, String, bool), String> {
        let at = self.inside(path)?;
        let shown = Self::shown(&at.rel);
        let Some(parent) = at.rel.parent().filter(|_| !at.rel.as_os_str().is_empty()) else {
            return Err(format!("{shown} is a directory"));
        };
        self.make_dirs(parent, &at)?;
        let write = OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
        let mode = Mode::from_raw_mode(0o644);
        // Exclusive creation first: then a new file is known to be new. A dangling symlink
        // as the last component is followed by the kernel only as far as RESOLVE_BENEATH
        // allows, so it can never create a file outside.
        let (fd, created) =
            match self.open_beneath(&at.rel, write | OFlags::CREATE | OFlags::EXCL, mode) {
                Ok(fd) => (fd, true),
                Err(Errno::EXIST) => (
                    self.open_beneath(&at.rel, write, Mode::empty())
                        .map_err(|e| self.open_error(&at, e))?,
                    false,
                ),
                Err(e) => return Err(self.open_error(&at, e)),
            };
        let stat = rustix::fs::fstat(&fd).map_err(|e| self.open_error(&at, e))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err(format!("{shown} is a directory")),
            other => return Err(not_regular(&at.rel, other)),
        }
        if stat.st_nlink > 1 {
            return Err(format!(
                "{shown} refused: the file has {} hard links, so writing it would also change a file \
                 elsewhere (rule: no writes through hard links)",
                stat.st_nlink
            ));
        }
        if append {
            rustix::fs::seek(&fd, rustix::fs::SeekFrom::End(0))
                .map_err(|e| self.open_error(&at, e))?;
        } else {
            rustix::fs::ftruncate(&fd, 0).map_err(|e| self.open_error(&at, e))?;
        }
        Ok((File::from(fd), shown, created))
    }

    /// Creates the folders of `dir` (relative to the root) that are missing, each beneath
    /// the one before.
    fn make_dirs(&self, dir: &Path, at: &Inside) -> Result<(), String> {
        let mut so_far = PathBuf::new();
        for part in dir.components() {
            so_far.push(part);
            match rustix::fs::mkdirat(
                self.open_beneath(
                    so_far.parent().unwrap_or(Path::new("")),
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| self.open_error(at, e))?,
                part.as_os_str(),
                Mode::from_raw_mode(0o755),
            ) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(self.open_error(at, e)),
            }
        }
        Ok(())
    }

    /// Checks that `path` (for a command tool's argument) stays inside the workspace: the
    /// longest part of it that exists resolves beneath the root. The command opens the path
    /// itself later; this refuses what already leads out, it cannot stop a swap made after.
    pub fn check_path(&self, path: &str) -> Result<(), String> {
        let at = self.inside(path)?;
        let parts: Vec<_> = at.rel.components().collect();
        for n in (0..=parts.len()).rev() {
            let prefix: PathBuf = parts[..n].iter().collect();
            match self.open_beneath(&prefix, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
                Ok(_) => return Ok(()),
                Err(Errno::NOENT | Errno::NOTDIR) => continue,
                Err(e) => return Err(self.open_error(&at, e)),
            }
        }
        Ok(())
    }

    /// Resolves `path` (relative to the root, or absolute inside it) to a canonical path
    /// inside the workspace, for a tool's `working_dir` (set by the catalog, not by a
    /// model). `must_exist: false` allows a path whose last components do not exist yet.
    pub fn resolve(&self, path: &str, must_exist: bool) -> Result<PathBuf, String> {
        let at = self.inside(path)?;
        let joined = self.root.join(&at.rel);
        // Canonicalise the longest existing prefix; the rest must not exist yet.
        let mut existing = joined.as_path();
        let mut rest = Vec::new();
        let canonical = loop {
            match existing.canonicalize() {
                Ok(c) => break c,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if must_exist {
                        return Err(format!("{path:?} does not exist in the workspace"));
                    }
                    match (existing.parent(), existing.file_name()) {
                        (Some(parent), Some(name)) => {
                            rest.push(name.to_owned());
                            existing = parent;
                        }
                        _ => return Err(format!("{path:?} does not exist in the workspace")),
                    }
                }
                Err(e) => return Err(format!("{path:?}: {e}")),
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(format!(
                "{path:?} refused: it resolves through a symlink to {}, outside the workspace (rule: symlinks may not leave the workspace)",
                canonical.display()
            ));
        }
        let mut full = canonical;
        for name in rest.into_iter().rev() {
            full.push(name);
        }
        Ok(full)
    }
}

fn kind_of(fd: &OwnedFd) -> Result<FileType, Errno> {
    rustix::fs::fstat(fd).map(|s| FileType::from_raw_mode(s.st_mode))
}

fn not_regular(rel: &Path, kind: FileType) -> String {
    let what = match kind {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Symlink => "a symlink",
        _ => "not a regular file",
    };
    format!(
        "{} is {what}; only regular files are read or written (rule: only regular files)",
        Workspace::shown(rel)
    )
}

/// Opens `rel` beneath `dir`: `openat2` with `RESOLVE_BENEATH`, or, where the kernel has no
/// `openat2`, a walk one component at a time that follows no symlink at all.
pub(crate) fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let target = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    match rustix::fs::openat2(
        dir,
        target,
        flags,
        mode,
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Err(Errno::NOSYS | Errno::PERM) => walk_nofollow(dir, rel, flags, mode),
        Err(Errno::AGAIN) => {
            // The kernel asks for a retry when a rename raced the lookup.
            rustix::fs::openat2(
                dir,
                target,
                flags,
                mode,
                ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
            )
        }
        r => r,
    }
}

fn walk_nofollow(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Errno> {
    let parts: Vec<_> = rel.components().collect();
    let Some((last, folders)) = parts.split_last() else {
        return rustix::fs::openat(dir, ".", flags, mode);
    };
    let mut current: Option<OwnedFd> = None;
    for part in folders {
        let base = current.as_ref().map_or(dir, |f| f.as_fd());
        let next = rustix::fs::openat(
            base,
            part.as_os_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        current = Some(next);
    }
    let base = current.as_ref().map_or(dir, |f| f.as_fd());
    rustix::fs::openat(base, last.as_os_str(), flags | OFlags::NOFOLLOW, mode)
}

/// The kind of the entry `name` of the directory `dir`, without following a symlink.
pub(crate) fn entry_kind(dir: BorrowedFd<'_>, name: &std::ffi::CStr) -> Option<(FileType, u64)> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|s| (FileType::from_raw_mode(s.st_mode), s.st_size as u64))
}
