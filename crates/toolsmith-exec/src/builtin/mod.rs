//! The built-in tools (SPEC §5.4): file tools confined to the workspace, and an HTTP client.
//! Their interfaces are in `toolsmith_core::builtin`; this is what they do.

mod files;
pub(crate) mod http;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use crate::workspace::Workspace;

/// A built-in's failure, as a message for the model.
#[derive(Debug)]
pub struct BuiltinError {
    pub message: String,
}

impl<T: std::fmt::Display> From<T> for BuiltinError {
    fn from(message: T) -> Self {
        Self {
            message: message.to_string(),
        }
    }
}

/// Raised when the call's deadline passes or its caller goes away; the built-ins' loops look
/// at it and stop, so no thread keeps working for a call nobody waits for.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// An error once raised.
    pub fn check(&self) -> Result<(), BuiltinError> {
        match self.0.load(Ordering::Relaxed) {
            true => Err("stopped: the call ended (its deadline passed or it was cancelled)".into()),
            false => Ok(()),
        }
    }
}

/// Runs the built-in `name` with validated `args` and its `config` (blocking: call it from a
/// blocking thread).
pub fn run(
    name: &str,
    args: &Map<String, Value>,
    config: &Map<String, Value>,
    ws: &Workspace,
    stop: &Stop,
) -> Result<Value, BuiltinError> {
    match name {
        "read_file" => files::read_file(args, config, ws, stop),
        "write_file" => files::write_file(args, ws),
        "list_dir" => files::list_dir(args, ws, stop),
        "glob" => files::glob(args, config, ws, stop),
        other => Err(format!("unknown built-in {other:?}").into()),
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn u64_arg(args: &Map<String, Value>, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_reads_and_walks_end_when_stopped() {
        let dir = tempfile::tempdir().expect("tempdir");
        // 20 GB of holes without a newline: minutes of reading if nothing stops it.
        let file = std::fs::File::create(dir.path().join("sparse")).expect("create");
        file.set_len(20 << 30).expect("set_len");
        let ws = Workspace::new(dir.path()).expect("workspace");
        let stop = Stop::default();
        let raiser = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(200));
                stop.raise();
            })
        };
        let started = std::time::Instant::now();
        let args = json!({"path": "sparse", "offset": 1_000_000});
        let r = run(
            "read_file",
            args.as_object().expect("object"),
            &Map::new(),
            &ws,
            &stop,
        );
        raiser.join().expect("raiser");
        let e = r.expect_err("stopped");
        assert!(e.message.starts_with("stopped"), "{}", e.message);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
        // A raised stop ends a walk before it starts.
        let args = json!({"pattern": "**", "base": ""});
        let e = run(
            "glob",
            args.as_object().expect("object"),
            &Map::new(),
            &ws,
            &stop,
        )
        .expect_err("stopped");
        assert!(e.message.starts_with("stopped"), "{}", e.message);
    }
}
