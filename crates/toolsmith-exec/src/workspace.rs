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
    pub fn new(root: &Path) -> Result<Self, WorkspaceError> {
        let root = root.canonicalize().map_err(|e| WorkspaceError::Root {
            root: root.display().to_string(),
            error: e.to_string(),
        })?;
        let dir = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::NOTDIR => WorkspaceError::RootNotADirectory(root.display().to_string()),
            e => WorkspaceError::Root {
                root: root.display().to_string(),
                error: e.to_string(),
            },
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
    fn inside(&self, path: &str) -> Result<Inside, WorkspaceError> {
        if path.contains('\0') {
            return Err(WorkspaceError::Nul(path.to_owned()));
        }
        let p = Path::new(path);
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(WorkspaceError::Parent(path.to_owned()));
        }
        let rel = if p.is_absolute() {
            match p.strip_prefix(&self.root) {
                Ok(r) => r.to_path_buf(),
                Err(_) => {
                    return Err(WorkspaceError::Outside {
                        path: path.to_owned(),
                        root: self.root.display().to_string(),
                    });
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

    /// Why an open of `at` failed.
    fn open_error(&self, at: &Inside, e: Errno) -> WorkspaceError {
        let path = at.given.clone();
        match e {
            Errno::XDEV | Errno::LOOP => WorkspaceError::Symlink(path),
            Errno::NOENT => WorkspaceError::Missing(path),
            Errno::NOTDIR => WorkspaceError::NotADirectoryOnTheWay(path),
            Errno::ISDIR => WorkspaceError::IsADirectory(format!("{path:?}")),
            Errno::NXIO => WorkspaceError::NotAFile(path),
            e => WorkspaceError::Io {
                path,
                error: std::io::Error::from(e).to_string(),
            },
        }
    }

    /// Opens a regular file for reading. A directory, FIFO, socket or device is refused
    /// without blocking.
    pub fn open_read(&self, path: &str) -> Result<(File, String), WorkspaceError> {
        let at = self.inside(path)?;
        let fd = self
            .open_beneath(&at.rel, READ, Mode::empty())
            .map_err(|e| self.open_error(&at, e))?;
        let kind = kind_of(&fd).map_err(|e| self.open_error(&at, e))?;
        match kind {
            FileType::RegularFile => Ok((File::from(fd), Self::shown(&at.rel))),
            FileType::Directory => Err(WorkspaceError::ReadADirectory(Self::shown(&at.rel))),
            other => Err(not_regular(&at.rel, other)),
        }
    }

    /// Opens a directory for listing.
    pub fn open_dir(&self, path: &str) -> Result<(OwnedFd, String), WorkspaceError> {
        let at = self.inside(path)?;
        let fd = self
            .open_beneath(&at.rel, READ | OFlags::DIRECTORY, Mode::empty())
            .map_err(|e| match e {
                Errno::NOTDIR => WorkspaceError::NotADirectory(Self::shown(&at.rel)),
                e => self.open_error(&at, e),
            })?;
        Ok((fd, Self::shown(&at.rel)))
    }

    /// Opens (creating it, and its folders, when missing) a regular file for writing:
    /// truncated, or for appending. Returns the file, its shown path and whether it was
    /// created.
    pub fn open_write(
        &self,
        path: &str,
        append: bool,
    ) -> Result<(File, String, bool), WorkspaceError> {
        let at = self.inside(path)?;
        let shown = Self::shown(&at.rel);
        let Some(parent) = at.rel.parent().filter(|_| !at.rel.as_os_str().is_empty()) else {
            return Err(WorkspaceError::IsADirectory(shown));
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
            FileType::Directory => return Err(WorkspaceError::IsADirectory(shown)),
            other => return Err(not_regular(&at.rel, other)),
        }
        if stat.st_nlink > 1 {
            return Err(WorkspaceError::HardLinks {
                path: shown,
                links: stat.st_nlink,
            });
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
    fn make_dirs(&self, dir: &Path, at: &Inside) -> Result<(), WorkspaceError> {
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
    pub fn check_path(&self, path: &str) -> Result<(), WorkspaceError> {
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
    pub fn resolve(&self, path: &str, must_exist: bool) -> Result<PathBuf, WorkspaceError> {
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
                        return Err(WorkspaceError::Missing(path.to_owned()));
                    }
                    match (existing.parent(), existing.file_name()) {
                        (Some(parent), Some(name)) => {
                            rest.push(name.to_owned());
                            existing = parent;
                        }
                        _ => return Err(WorkspaceError::Missing(path.to_owned())),
                    }
                }
                Err(e) => {
                    return Err(WorkspaceError::Io {
                        path: path.to_owned(),
                        error: e.to_string(),
                    });
                }
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(WorkspaceError::SymlinkTo {
                path: path.to_owned(),
                target: canonical.display().to_string(),
            });
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

fn not_regular(rel: &Path, kind: FileType) -> WorkspaceError {
    let what = match kind {
        FileType::Fifo => "a FIFO",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        FileType::Symlink => "a symlink",
        _ => "not a regular file",
    };
    WorkspaceError::NotRegular {
        path: Workspace::shown(rel),
        what,
    }
}

/// Why a path is refused or cannot be opened. A path is as the caller wrote it (quoted) or
/// relative to the workspace; a refusal names its rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workspace {root}: {error}")]
    Root { root: String, error: String },
    #[error("workspace {0} is not a directory")]
    RootNotADirectory(String),
    #[error("{0:?} refused: paths cannot contain NUL bytes")]
    Nul(String),
    #[error("{0:?} refused: `..` is not allowed in paths (rule: no parent references)")]
    Parent(String),
    #[error(
        "{path:?} refused: absolute path outside the workspace {root} (rule: absolute paths must be inside the workspace)"
    )]
    Outside { path: String, root: String },
    #[error(
        "{0:?} refused: it resolves through a symlink that leaves the workspace, or one that cannot be followed safely (rule: symlinks may not leave the workspace)"
    )]
    Symlink(String),
    #[error(
        "{path:?} refused: it resolves through a symlink to {target}, outside the workspace (rule: symlinks may not leave the workspace)"
    )]
    SymlinkTo { path: String, target: String },
    #[error("{0:?} does not exist in the workspace")]
    Missing(String),
    #[error("{0:?}: a part of the path is not a directory")]
    NotADirectoryOnTheWay(String),
    #[error("{0} is not a directory")]
    NotADirectory(String),
    #[error("{0} is a directory")]
    IsADirectory(String),
    #[error("{0} is a directory; use list_dir")]
    ReadADirectory(String),
    #[error("{0:?} is not a regular file (rule: only regular files)")]
    NotAFile(String),
    #[error("{path} is {what}; only regular files are read or written (rule: only regular files)")]
    NotRegular { path: String, what: &'static str },
    #[error(
        "{path} refused: the file has {links} hard links, so writing it would also change a file elsewhere (rule: no writes through hard links)"
    )]
    HardLinks { path: String, links: u64 },
    #[error("{path:?}: {error}")]
    Io { path: String, error: String },
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
