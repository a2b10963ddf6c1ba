//! `read_file`, `write_file`, `list_dir` and `glob`: every file opened through the
//! [`Workspace`]'s directory descriptor, never by a path a second time, so a folder swapped
//! for a symlink mid-call leads nowhere. Long loops look at the call's [`Stop`] and end at
//! its deadline.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{FileType, Mode, OFlags};
use serde_json::{Map, Value, json};

use super::{BuiltinError, Stop, str_arg, u64_arg};
use crate::workspace::{Workspace, entry_kind};

const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;
const MAX_DIR_ENTRIES: usize = 10_000;
/// Files larger than this are not parsed for ignore rules.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;

pub fn read_file(
    args: &Map<String, Value>,
    config: &Map<String, Value>,
    ws: &Workspace,
    stop: &Stop,
) -> Result<Value, BuiltinError> {
    let (file, shown) = ws.open_read(str_arg(args, "path"))?;
    let max_bytes = u64_arg(config, "max_bytes").unwrap_or(DEFAULT_MAX_BYTES);
    let offset = u64_arg(args, "offset").unwrap_or(1).max(1);
    let limit = u64_arg(args, "limit");
    let mut reader = BufReader::new(file);
    let mut content = Vec::new();
    let mut line_no = 0u64;
    let mut returned = 0u64;
    let mut truncated = false;
    let mut line = Vec::new();
    loop {
        stop.check()?;
        line.clear();
        // Lines are read with a bound so one endless line cannot exhaust memory.
        let n = (&mut reader)
            .take(max_bytes + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{shown}: {e}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if limit.is_some_and(|l| returned >= l) {
            truncated = true;
            break;
        }
        if content.len() as u64 + line.len() as u64 > max_bytes {
            let room = (max_bytes as usize).saturating_sub(content.len());
            content.extend_from_slice(&line[..room.min(line.len())]);
            truncated = true;
            break;
        }
        content.extend_from_slice(&line);
        returned += 1;
    }
    let lossy = std::str::from_utf8(&content).is_err();
    Ok(json!({
        "path": shown,
        "content": String::from_utf8_lossy(&content),
        "first_line": offset,
        "lines": returned,
        "truncated": truncated,
        "lossy": lossy,
    }))
}

pub fn write_file(args: &Map<String, Value>, ws: &Workspace) -> Result<Value, BuiltinError> {
    let append = args.get("append").and_then(Value::as_bool).unwrap_or(false);
    let content = str_arg(args, "content");
    let (mut file, shown, created) = ws.open_write(str_arg(args, "path"), append)?;
    file.write_all(content.as_bytes())
        .map_err(|e| format!("{shown}: {e}"))?;
    Ok(
        json!({"path": shown, "bytes_written": content.len(), "created": created, "appended": append}),
    )
}

pub fn list_dir(
    args: &Map<String, Value>,
    ws: &Workspace,
    stop: &Stop,
) -> Result<Value, BuiltinError> {
    let (dir, shown) = ws.open_dir(str_arg(args, "path"))?;
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in rustix::fs::Dir::read_from(&dir).map_err(|e| format!("{shown}: {e}"))? {
        stop.check()?;
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        if entries.len() >= MAX_DIR_ENTRIES {
            truncated = true;
            break;
        }
        let (kind, size) = entry_kind(dir.as_fd(), name).unwrap_or((FileType::Unknown, 0));
        let kind = match kind {
            FileType::Symlink => "symlink",
            FileType::Directory => "dir",
            FileType::RegularFile => "file",
            _ => "other",
        };
        let mut e = json!({"name": String::from_utf8_lossy(name.to_bytes()), "kind": kind});
        if kind == "file" {
            e["size"] = json!(size);
        }
        entries.push(e);
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(json!({"path": shown, "entries": entries, "truncated": truncated}))
}

pub fn glob(
    args: &Map<String, Value>,
    config: &Map<String, Value>,
    ws: &Workspace,
    stop: &Stop,
) -> Result<Value, BuiltinError> {
    let pattern = str_arg(args, "pattern");
    let (base, shown) = ws.open_dir(str_arg(args, "base"))?;
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob pattern {pattern:?}: {e}"))?
        .compile_matcher();
    let max = u64_arg(config, "max_results").unwrap_or(1000) as usize;
    let base_rel = if shown == "." {
        PathBuf::new()
    } else {
        PathBuf::from(&shown)
    };
    let mut walk = Walk {
        root: ws.root().to_path_buf(),
        stop,
        matcher,
        max,
        paths: Vec::new(),
        truncated: false,
    };
    // The ignore files of the folders above the base apply too.
    let mut rules = Vec::new();
    let mut above = PathBuf::new();
    for part in base_rel.components() {
        if let Ok((dir, _)) = ws.open_dir(&above.to_string_lossy()) {
            rules.push(ignore_rules(&dir, &ws.root().join(&above)));
        }
        above.push(part);
    }
    walk.dir(base, &base_rel, Path::new(""), &mut rules)?;
    let mut paths = walk.paths;
    paths.sort();
    Ok(json!({"base": shown, "pattern": pattern, "paths": paths, "truncated": walk.truncated}))
}

/// A walk over descriptors: each folder is opened from its parent's descriptor with
/// `O_NOFOLLOW`, so symlinks are never followed and no path is resolved twice.
struct Walk<'a> {
    root: PathBuf,
    stop: &'a Stop,
    matcher: globset::GlobMatcher,
    max: usize,
    paths: Vec<String>,
    truncated: bool,
}

impl Walk<'_> {
    /// Walks `dir`, which is `rel` from the workspace root and `from_base` from the glob's
    /// base; `rules` holds the ignore rules of every folder above.
    fn dir(
        &mut self,
        dir: OwnedFd,
        rel: &Path,
        from_base: &Path,
        rules: &mut Vec<Gitignore>,
    ) -> Result<(), BuiltinError> {
        rules.push(ignore_rules(&dir, &self.root.join(rel)));
        let mut names: Vec<(Vec<u8>, FileType)> = Vec::new();
        if let Ok(listing) = rustix::fs::Dir::read_from(&dir) {
            for entry in listing.flatten() {
                let name = entry.file_name().to_bytes();
                // Hidden entries (and `.`, `..`, `.git`) are skipped, as `ignore` does.
                if name.first() == Some(&b'.') {
                    continue;
                }
                let kind = match entry.file_type() {
                    FileType::Unknown => entry_kind(dir.as_fd(), entry.file_name())
                        .map_or(FileType::Unknown, |(k, _)| k),
                    k => k,
                };
                names.push((name.to_vec(), kind));
            }
        }
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in names {
            self.stop.check()?;
            if self.truncated {
                break;
            }
            let name = OsStr::from_bytes(&name);
            let here = rel.join(name);
            let is_dir = kind == FileType::Directory;
            if ignored(rules, &self.root.join(&here), is_dir) {
                continue;
            }
            let from = from_base.join(name);
            if self.matcher.is_match(&from) {
                if self.paths.len() >= self.max {
                    self.truncated = true;
                    break;
                }
                self.paths.push(here.to_string_lossy().into_owned());
            }
            if is_dir
                && let Ok(sub) = rustix::fs::openat(
                    &dir,
                    name,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
            {
                self.dir(sub, &here, &from, rules)?;
            }
        }
        rules.pop();
        Ok(())
    }
}

/// The `.gitignore` and `.ignore` rules of one folder (read through its descriptor).
fn ignore_rules(dir: &OwnedFd, path: &Path) -> Gitignore {
    let mut builder = GitignoreBuilder::new(path);
    for file in [".gitignore", ".ignore"] {
        let Ok(fd) = rustix::fs::openat(
            dir,
            file,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        if !rustix::fs::fstat(&fd).is_ok_and(|s| {
            FileType::from_raw_mode(s.st_mode) == FileType::RegularFile
                && (s.st_size as u64) <= MAX_IGNORE_FILE
        }) {
            continue;
        }
        let mut text = String::new();
        if std::fs::File::from(fd).read_to_string(&mut text).is_ok() {
            for line in text.lines() {
                let _ = builder.add_line(Some(path.to_path_buf()), line);
            }
        }
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Whether the rules of the deepest folder that has an opinion ignore `path`.
fn ignored(rules: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    for r in rules.iter().rev() {
        let m = r.matched(path, is_dir);
        if m.is_ignore() {
            return true;
        }
        if m.is_whitelist() {
            return false;
        }
    }
    false
}
