//! The built-in tools (SPEC §5.4): file tools confined to the workspace, and an HTTP client.
//! Their interfaces are in `toolsmith_core::builtin`; this is what they do.

mod files;
mod http;

use serde_json::{Map, Value};

use crate::workspace::Workspace;

/// A built-in's failure, as a message for the model.
#[derive(Debug)]
pub struct BuiltinError {
    pub message: String,
}

impl<T: Into<String>> From<T> for BuiltinError {
    fn from(message: T) -> Self {
        Self {
            message: message.into(),
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
) -> Result<Value, BuiltinError> {
    match name {
        "read_file" => files::read_file(args, config, ws),
        "write_file" => files::write_file(args, ws),
        "list_dir" => files::list_dir(args, ws),
        "glob" => files::glob(args, config, ws),
        "http_request" => http::request(args, config),
        other => Err(format!("unknown built-in {other:?}").into()),
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn u64_arg(args: &Map<String, Value>, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}
