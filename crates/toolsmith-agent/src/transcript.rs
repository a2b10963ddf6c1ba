//! Conversations saved as JSONL, one file each under `<data>/chats/`: a `session` line
//! (provider, model, base URL, time — never the API key), then one `item` line per entry of
//! the conversation, appended and flushed as it happens, so a killed process loses at most
//! the line being written. `--resume ID|last` reads one back.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolsmith_core::agent::history::{Item, answered};
use toolsmith_core::agent::machine::INTERRUPTED;

/// An open transcript.
#[derive(Debug)]
pub struct Transcript {
    pub id: String,
    pub path: PathBuf,
    file: std::fs::File,
}

/// What a saved conversation says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub id: String,
    pub provider: String,
    pub model: String,
    pub base_url: String,
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Why a conversation could not be written or read back.
#[derive(Debug, thiserror::Error)]
pub enum TranscriptError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no saved conversation in {}", .0.display())]
    NoneSaved(PathBuf),
    #[error("no saved conversation {which:?} in {} (`--resume last` takes the newest)", dir.display())]
    Unknown { which: String, dir: PathBuf },
    /// A file that is not a conversation, or one whose calls cannot be answered.
    #[error("{}: {why}", path.display())]
    Damaged { path: PathBuf, why: String },
}

/// The I/O error `e` on `path`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> TranscriptError + '_ {
    move |source| TranscriptError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Transcript {
    /// A new transcript in `dir`, its id from the time and a little randomness.
    pub fn create(dir: &Path, header: &Header) -> Result<Self, TranscriptError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let random = std::collections::hash_map::RandomState::new();
        let noise = std::hash::BuildHasher::hash_one(&random, now_ms()) as u32;
        let id = format!("{}-{noise:08x}", now_ms());
        let path = dir.join(format!("{id}.jsonl"));
        let mut t = Self::open_append(&path, id.clone())?;
        t.line(&json!({
            "type": "session", "id": id, "provider": header.provider, "model": header.model,
            "base_url": header.base_url, "created_ms": now_ms() as u64,
            "toolsmith": env!("CARGO_PKG_VERSION"),
        }))?;
        Ok(t)
    }

    fn open_append(path: &Path, id: String) -> Result<Self, TranscriptError> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io(path))?;
        Ok(Self {
            id,
            path: path.to_owned(),
            file,
        })
    }

    fn line(&mut self, v: &Value) -> Result<(), TranscriptError> {
        let mut text = v.to_string();
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(io(&self.path))
    }

    /// Appends one entry of the conversation.
    pub fn append(&mut self, item: &Item) -> Result<(), TranscriptError> {
        self.line(&json!({"type": "item", "item": item}))
    }

    /// Opens `which` (an id, or `last` for the newest) in `dir` for appending, with what it
    /// holds. Calls a killed session left unanswered are answered as interrupted (and that
    /// is written down), so the conversation can go on.
    pub fn resume(dir: &Path, which: &str) -> Result<(Self, Header, Vec<Item>), TranscriptError> {
        let path = if which == "last" {
            newest(dir)?.ok_or_else(|| TranscriptError::NoneSaved(dir.to_owned()))?
        } else {
            let p = dir.join(format!("{which}.jsonl"));
            if !p.exists() {
                return Err(TranscriptError::Unknown {
                    which: which.to_owned(),
                    dir: dir.to_owned(),
                });
            }
            p
        };
        let (header, mut items) = read(&path)?;
        let mut t = Self::open_append(&path, header.id.clone())?;
        while let Err(open) = answered(&items) {
            // Only a trailing unanswered call can be repaired; anything else is a damaged file.
            let Some(Item::Assistant { calls, .. }) = items
                .iter()
                .rev()
                .find(|i| matches!(i, Item::Assistant { .. }))
                .cloned()
            else {
                return Err(TranscriptError::Damaged {
                    path,
                    why: open.to_string(),
                });
            };
            let done: Vec<String> = items
                .iter()
                .filter_map(|i| match i {
                    Item::ToolResult { call_id, .. } => Some(call_id.clone()),
                    _ => None,
                })
                .collect();
            let missing: Vec<_> = calls
                .into_iter()
                .filter(|c| !done.contains(&c.id))
                .collect();
            if missing.is_empty() {
                return Err(TranscriptError::Damaged {
                    path,
                    why: open.to_string(),
                });
            }
            for c in missing {
                let item = Item::ToolResult {
                    call_id: c.id,
                    name: c.name,
                    content: INTERRUPTED.into(),
                    is_error: true,
                };
                t.append(&item)?;
                items.push(item);
            }
        }
        Ok((t, header, items))
    }
}

fn newest(dir: &Path) -> Result<Option<PathBuf>, TranscriptError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(dir)(e)),
    };
    Ok(entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .max_by_key(|p| p.file_name().map(|n| n.to_os_string())))
}

/// A transcript's header and items; a last line cut short by a crash is skipped.
pub fn read(path: &Path) -> Result<(Header, Vec<Item>), TranscriptError> {
    let file = std::fs::File::open(path).map_err(io(path))?;
    let lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .collect::<Result<_, _>>()
        .map_err(io(path))?;
    let damaged = |why: String| TranscriptError::Damaged {
        path: path.to_owned(),
        why,
    };
    let mut header = None;
    let mut items = Vec::new();
    let count = lines.len();
    for (n, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(_) if n + 1 == count => break,
            Err(e) => return Err(damaged(format!("line {}: {e}", n + 1))),
        };
        match v["type"].as_str() {
            Some("session") => {
                let s = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
                header = Some(Header {
                    id: s("id"),
                    provider: s("provider"),
                    model: s("model"),
                    base_url: s("base_url"),
                });
            }
            Some("item") => items.push(
                serde_json::from_value(v["item"].clone())
                    .map_err(|e| damaged(format!("line {}: {e}", n + 1)))?,
            ),
            _ => {}
        }
    }
    let header = header.ok_or_else(|| damaged("no session line".into()))?;
    Ok((header, items))
}
