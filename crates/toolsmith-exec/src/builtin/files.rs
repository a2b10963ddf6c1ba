//! `read_file`, `write_file`, `list_dir` and `glob`, all through [`Workspace::resolve`].

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};

use serde_json::{Map, Value, json};

use super::{BuiltinError, str_arg, u64_arg};
use crate::workspace::Workspace;

const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;
const MAX_DIR_ENTRIES: usize = 10_000;

pub fn read_file(
    args: &Map<String, Value>,
    config: &Map<String, Value>,
    ws: &Workspace,
) -> Result<Value, BuiltinError> {
    let path = ws.resolve(str_arg(args, "path"), true)?;
    if path.is_dir() {
        return Err(format!("{} is a directory; use list_dir", ws.relative(&path)).into());
    }
    let max_bytes = u64_arg(config, "max_bytes").unwrap_or(DEFAULT_MAX_BYTES);
    let offset = u64_arg(args, "offset").unwrap_or(1).max(1);
    let limit = u64_arg(args, "limit");
    let file = fs::File::open(&path).map_err(|e| format!("{}: {e}", ws.relative(&path)))?;
    let mut reader = BufReader::new(file);
    let mut content = Vec::new();
    let mut line_no = 0u64;
    let mut returned = 0u64;
    let mut truncated = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        // Lines are read with a bound so one endless line cannot exhaust memory.
        let n = (&mut reader)
            .take(max_bytes + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("{}: {e}", ws.relative(&path)))?;
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
        "path": ws.relative(&path),
        "content": String::from_utf8_lossy(&content),
        "first_line": offset,
        "lines": returned,
        "truncated": truncated,
        "lossy": lossy,
    }))
}

pub fn write_file(args: &Map<String, Value>, ws: &Workspace) -> Result<Value, BuiltinError> {
    let path = ws.resolve(str_arg(args, "path"), false)?;
    if path.is_dir() {
        return Err(format!("{} is a directory", ws.relative(&path)).into());
    }
    let append = args.get("append").and_then(Value::as_bool).unwrap_or(false);
    let content = str_arg(args, "content");
    let created = !path.exists();
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", ws.relative(parent)))?;
    }
    let mut file = fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(&path)
        .map_err(|e| format!("{}: {e}", ws.relative(&path)))?;
    file.write_all(content.as_bytes())
        .map_err(|e| format!("{}: {e}", ws.relative(&path)))?;
    Ok(
        json!({"path": ws.relative(&path), "bytes_written": content.len(), "created": created, "appended": append}),
    )
}

pub fn list_dir(args: &Map<String, Value>, ws: &Workspace) -> Result<Value, BuiltinError> {
    let path = ws.resolve(str_arg(args, "path"), true)?;
    if !path.is_dir() {
        return Err(format!("{} is not a directory", ws.relative(&path)).into());
    }
    let mut entries = Vec::new();
    let mut truncated = false;
    for entry in fs::read_dir(&path).map_err(|e| format!("{}: {e}", ws.relative(&path)))? {
        let Ok(entry) = entry else { continue };
        if entries.len() >= MAX_DIR_ENTRIES {
            truncated = true;
            break;
        }
        let meta = entry.path().symlink_metadata().ok();
        let kind = match &meta {
            Some(m) if m.file_type().is_symlink() => "symlink",
            Some(m) if m.is_dir() => "dir",
            Some(m) if m.is_file() => "file",
            _ => "other",
        };
        let mut e = json!({"name": entry.file_name().to_string_lossy(), "kind": kind});
        if kind == "file" {
            e["size"] = json!(meta.map(|m| m.len()).unwrap_or(0));
        }
        entries.push(e);
    }
    entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    Ok(json!({"path": ws.relative(&path), "entries": entries, "truncated": truncated}))
}

pub fn glob(
    args: &Map<String, Value>,
    config: &Map<String, Value>,
    ws: &Workspace,
) -> Result<Value, BuiltinError> {
    let pattern = str_arg(args, "pattern");
    let base = ws.resolve(str_arg(args, "base"), true)?;
    if !base.is_dir() {
        return Err(format!("{} is not a directory", ws.relative(&base)).into());
    }
    let matcher = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("invalid glob pattern {pattern:?}: {e}"))?
        .compile_matcher();
    let max = u64_arg(config, "max_results").unwrap_or(1000) as usize;
    let mut paths = Vec::new();
    let mut truncated = false;
    // gitignore-aware, hidden files skipped, symlinks not followed (they could leave).
    let walker = ignore::WalkBuilder::new(&base)
        .follow_links(false)
        .require_git(false)
        .build();
    for entry in walker.flatten() {
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(&base) else {
            continue;
        };
        if rel.as_os_str().is_empty() || !matcher.is_match(rel) {
            continue;
        }
        if paths.len() >= max {
            truncated = true;
            break;
        }
        paths.push(ws.relative(path));
    }
    paths.sort();
    Ok(
        json!({"base": ws.relative(&base), "pattern": pattern, "paths": paths, "truncated": truncated}),
    )
}
