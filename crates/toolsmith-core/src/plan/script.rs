//! Script tools: `interpreter script`, with the arguments (and `config`) as one JSON object
//! on stdin; the view shows secret config values as `***`.

use super::*;
use crate::model::Script;

pub(super) fn plan(tool: &Tool, script: &Script, args: &Map<String, Value>) -> Process {
    let with_config = |config: Map<String, Value>| {
        let mut input = args.clone();
        if !config.is_empty() {
            input.insert("config".into(), Value::Object(config));
        }
        Value::Object(input).to_string()
    };
    let stdin = with_config(tool.config.clone());
    let secrets = tool.config_schema.iter().any(|p| p.secret);
    let stdin_shown = secrets.then(|| {
        let mut shown = tool.config.clone();
        for p in tool.config_schema.iter().filter(|p| p.secret) {
            if let Some(v) = shown.get_mut(&p.name) {
                *v = json!(REDACTED);
            }
        }
        with_config(shown)
    });
    Process {
        argv: vec![script.interpreter.clone(), SCRIPT_FILE.into()],
        stdin: Some(stdin),
        env: Vec::new(),
        stdin_shown,
    }
}
