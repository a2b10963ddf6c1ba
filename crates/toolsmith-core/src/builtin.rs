//! The built-in tools' interfaces (SPEC §5.4): their descriptions, danger and parameters.
//!
//! The implementations live in the execution crate; the interfaces live here so a catalog
//! entry `builtin: read_file` can be checked and rendered without running anything. They are
//! written in the catalog's own parameter format and read by the same parser, once.

use std::sync::OnceLock;

use serde_json::Value;

use crate::form::Errs;
use crate::form::param::{Place, parse_list};
use crate::model::{Annotations, Danger, Parameter};

/// What a built-in tool looks like to a catalog and to models.
#[derive(Debug, Clone)]
pub struct BuiltinSpec {
    pub name: String,
    pub description: String,
    pub danger: Danger,
    pub annotations: Annotations,
    pub parameters: Vec<Parameter>,
    pub config_schema: Vec<Parameter>,
}

const SPECS: &str = r#"
read_file:
  description: Read a text file inside the workspace, optionally only some of its lines.
  annotations: {read_only: true, idempotent: true, open_world: false}
  parameters:
    - {name: path, description: "Path of the file, relative to the workspace root."}
    - {name: offset, type: integer, minimum: 1, required: false, description: "First line to return, counting from 1."}
    - {name: limit, type: integer, minimum: 1, required: false, description: "Largest number of lines to return."}
  config_schema:
    - {name: max_bytes, type: integer, minimum: 1, default: 1048576, description: "Largest number of bytes returned."}
write_file:
  description: Write text to a file inside the workspace, creating it or replacing its content.
  danger: dangerous
  annotations: {read_only: false, idempotent: true, open_world: false}
  parameters:
    - {name: path, description: "Path of the file, relative to the workspace root."}
    - {name: content, description: "The text to write."}
    - {name: append, type: boolean, default: false, description: "Add to the end of the file instead of replacing it."}
list_dir:
  description: List the entries of a directory inside the workspace, with their kind and size.
  annotations: {read_only: true, idempotent: true, open_world: false}
  parameters:
    - {name: path, default: ".", description: "Directory, relative to the workspace root."}
glob:
  description: Find files inside the workspace whose paths match a glob pattern; files ignored by .gitignore are skipped.
  annotations: {read_only: true, idempotent: true, open_world: false}
  parameters:
    - {name: pattern, min_length: 1, description: "Glob pattern such as `src/**/*.rs`."}
    - {name: base, default: ".", description: "Directory to search from, relative to the workspace root."}
  config_schema:
    - {name: max_results, type: integer, minimum: 1, default: 1000, description: "Largest number of paths returned."}
http_request:
  description: Send an HTTP request and return the status, headers and body of the response.
  danger: dangerous
  annotations: {read_only: false, idempotent: false, open_world: true}
  parameters:
    - {name: url, format: uri, description: "Absolute http or https URL."}
    - {name: method, type: enum, values: [GET, POST, PUT, PATCH, DELETE, HEAD], default: GET, description: "HTTP method."}
    - {name: headers, type: object, required: false, additional_properties: true, description: "Request headers, name to value."}
    - {name: body, required: false, description: "Request body."}
  config_schema:
    - {name: timeout_ms, type: integer, minimum: 1, default: 10000, description: "Time allowed for the whole request."}
    - {name: max_bytes, type: integer, minimum: 1, default: 1048576, description: "Largest response body returned."}
session_start:
  description: "Start a session that outlives one call. Without `command`: a bash shell whose working directory and variables persist between session_exec calls. With `command`: that program (no shell), optionally on a terminal (`tty`) for REPLs and prompts. Returns a session_id for the other session tools. A shell can read whatever the server's user can: its starting folder is in the workspace, but that is not a sandbox."
  danger: dangerous
  annotations: {read_only: false, idempotent: false, open_world: true}
  parameters:
    - {name: command, type: array, items: {type: string}, min_items: 1, required: false, description: "Program and its arguments, run directly (no shell). Omit for a bash shell session."}
    - {name: cwd, default: ".", description: "Starting folder, relative to the workspace root."}
    - {name: env, type: object, required: false, additional_properties: true, description: "Environment variables (names to text values) added to the session's."}
    - {name: tty, type: boolean, default: false, description: "Run on a terminal (PTY): for REPLs, prompts and programs that behave differently without one."}
    - {name: cols, type: integer, minimum: 20, maximum: 1000, default: 120, description: "Terminal width (tty sessions)."}
    - {name: rows, type: integer, minimum: 5, maximum: 1000, default: 40, description: "Terminal height (tty sessions)."}
    - {name: wait_ms, type: integer, minimum: 0, maximum: 30000, default: 0, description: "Wait up to this long for the first output (or for `until`) before returning."}
    - {name: until, format: regex, required: false, description: "Return as soon as the output matches this regular expression (for example `Listening on`)."}
  config_schema:
    - {name: ring_bytes, type: integer, minimum: 4096, maximum: 16777216, default: 1048576, description: "Output kept per stream; older output is dropped (reads report dropped_bytes)."}
    - {name: idle_timeout_ms, type: integer, minimum: 1, default: 1800000, description: "A session no call has used for this long is ended."}
    - {name: max_lifetime_ms, type: integer, minimum: 1, default: 28800000, description: "A session is ended this long after it started."}
session_exec:
  description: "Run a command in a shell session (one at a time; its exit code and the shell's folder come back when it completes), or send `input` text, `keys` (C-c, C-d, Enter, Tab, Up, Down, ...) or end of input (`eof`) to any session. Waits at most `timeout_ms`; if the command is still running you get its output so far and a cursor for session_read."
  danger: dangerous
  annotations: {read_only: false, idempotent: false, open_world: true}
  parameters:
    - {name: session_id, min_length: 1, description: "The id session_start returned."}
    - {name: command, required: false, description: "Shell command line to run (shell sessions)."}
    - {name: input, required: false, description: "Text to write to the session's input (a newline is not added)."}
    - {name: keys, type: array, items: {type: string}, required: false, description: "Keys to send, in order: C-c, C-d, C-z, C-\\, Enter, Tab, Esc, Backspace, Up, Down, Left, Right, or C-<letter>."}
    - {name: eof, type: boolean, default: false, description: "Close the session's input (pipe sessions) or send C-d (tty sessions)."}
    - {name: timeout_ms, type: integer, minimum: 0, maximum: 30000, default: 10000, description: "Longest wait for completion, exit or `until`."}
    - {name: until, format: regex, required: false, description: "Return as soon as new output matches this regular expression."}
    - {name: max_bytes, type: integer, minimum: 1, maximum: 1048576, default: 65536, description: "Largest output returned per stream; the rest stays readable with session_read."}
session_read:
  description: "Read a session's output after a cursor (omit it to read what came since the last call returned), optionally waiting for more or for a regular expression. Reports the session's status and exit code."
  annotations: {read_only: true, idempotent: true, open_world: false}
  parameters:
    - {name: session_id, min_length: 1, description: "The id session_start returned."}
    - {name: cursor, required: false, description: "A cursor a session tool returned, copied verbatim; omit for everything since the last call."}
    - {name: timeout_ms, type: integer, minimum: 0, maximum: 30000, default: 0, description: "Wait up to this long for new output (or `until`) when there is none yet."}
    - {name: until, format: regex, required: false, description: "Wait until the output matches this regular expression."}
    - {name: max_bytes, type: integer, minimum: 1, maximum: 1048576, default: 65536, description: "Largest output returned per stream."}
    - {name: tail, type: boolean, default: false, description: "Return the last `max_bytes` instead of the first ones after the cursor."}
session_end:
  description: "End a session: signal its processes (TERM, then KILL after a grace period) and return its final status and the end of its output. Ending an ended session is not an error."
  annotations: {read_only: false, idempotent: true, open_world: false}
  parameters:
    - {name: session_id, min_length: 1, description: "The id session_start returned."}
    - {name: signal, type: enum, values: [TERM, INT, HUP, KILL], default: TERM, description: "The first signal sent."}
    - {name: grace_ms, type: integer, minimum: 0, maximum: 30000, default: 2000, description: "How long the processes get to exit before KILL."}
session_list:
  description: "List your sessions: id, kind, command, folder, status, idle time and buffered output."
  annotations: {read_only: true, idempotent: true, open_world: false}
  parameters: []
"#;

fn all() -> &'static [BuiltinSpec] {
    static SPECS_CELL: OnceLock<Vec<BuiltinSpec>> = OnceLock::new();
    SPECS_CELL.get_or_init(|| {
        let doc: Value = serde_yaml_ng::from_str(SPECS).expect("built-in specs are valid YAML");
        let mut e = Errs::new("<builtin>");
        let mut out = Vec::new();
        for (name, spec) in doc.as_object().into_iter().flatten() {
            let text = |k: &str| {
                spec.get(k)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let flag = |k: &str| {
                spec.pointer(&format!("/annotations/{k}"))
                    .and_then(Value::as_bool)
            };
            let list = |k: &str, place| match spec.get(k).and_then(Value::as_array) {
                Some(l) => parse_list(l, k, place, &mut Errs::new("<builtin>")),
                None => Vec::new(),
            };
            out.push(BuiltinSpec {
                name: name.clone(),
                description: text("description"),
                danger: if text("danger") == "dangerous" {
                    Danger::Dangerous
                } else {
                    Danger::Safe
                },
                annotations: Annotations {
                    read_only: flag("read_only"),
                    idempotent: flag("idempotent"),
                    open_world: flag("open_world"),
                },
                parameters: list("parameters", Place::JsonArgument),
                config_schema: list("config_schema", Place::Config),
            });
        }
        e.list.clear();
        out
    })
}

/// The interface of the built-in tool `name`.
pub fn spec(name: &str) -> Option<&'static BuiltinSpec> {
    all().iter().find(|s| s.name == name)
}

/// Whether the built-in `name` is a session tool: it needs a process that stays up (a
/// server), and its results are state a model must see whole.
pub fn is_session(name: &str) -> bool {
    name.starts_with("session_")
}

/// The names of every built-in tool.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|s| s.name.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_parses_cleanly() {
        let doc: Value = serde_yaml_ng::from_str(SPECS).expect("yaml");
        for (name, spec) in doc.as_object().expect("mapping") {
            for (key, place) in [
                ("parameters", Place::JsonArgument),
                ("config_schema", Place::Config),
            ] {
                if let Some(list) = spec.get(key).and_then(Value::as_array) {
                    let mut e = Errs::new("<builtin>");
                    parse_list(list, key, place, &mut e);
                    assert!(e.list.is_empty(), "{name}.{key}: {:?}", e.list);
                }
            }
        }
        assert_eq!(
            names(),
            [
                "read_file",
                "write_file",
                "list_dir",
                "glob",
                "http_request",
                "session_start",
                "session_exec",
                "session_read",
                "session_end",
                "session_list"
            ]
        );
        assert_eq!(
            spec("write_file").map(|s| s.danger),
            Some(Danger::Dangerous)
        );
    }
}
