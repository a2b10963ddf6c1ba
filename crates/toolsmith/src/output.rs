//! Human and JSON output of the subcommands.

use std::path::Path;

use serde_json::{Value, json};
use toolsmith_core::command::InjectAs;
use toolsmith_core::model::{Executor, Parameter, Secrets};
use toolsmith_core::schema::tool_schema;
use toolsmith_core::{Catalog, Tool, ToolResult};

pub fn check_summary(file: &Path, catalog: &Catalog, warnings: &[String], json: bool) {
    let enabled = catalog.tools.iter().filter(|t| t.enabled).count();
    let count = |kind: &str| {
        catalog
            .tools
            .iter()
            .filter(|t| t.executor.kind() == kind)
            .count()
    };
    if json {
        let summary = json!({
            "ok": true,
            "file": file.display().to_string(),
            "files": catalog.files,
            "tools": catalog.tools.len(),
            "enabled": enabled,
            "by_executor": {"command": count("command"), "script": count("script"), "builtin": count("builtin"), "http": count("http")},
            "mcp_servers": catalog.servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            "notes": catalog.notes,
            "warnings": warnings,
        });
        outln!("{summary}");
        return;
    }
    let servers = match catalog.servers.len() {
        0 => String::new(),
        n => format!(
            " and {n} MCP server{} ({}; their tools are found when they run)",
            if n == 1 { "" } else { "s" },
            catalog
                .servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    outln!(
        "ok: {} — {} tool{} ({enabled} enabled; {} command, {} script, {} builtin, {} http){servers} from {} file{}",
        file.display(),
        catalog.tools.len(),
        if catalog.tools.len() == 1 { "" } else { "s" },
        count("command"),
        count("script"),
        count("builtin"),
        count("http"),
        catalog.files.len(),
        if catalog.files.len() == 1 { "" } else { "s" }
    );
    for note in &catalog.notes {
        outln!("  note: {note}");
    }
    for warning in warnings {
        outln!("  warning: {warning}");
    }
}

pub fn list(catalog: &Catalog, json: bool) {
    if json {
        let rows: Vec<Value> = catalog
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "title": t.title,
                    "description": t.description,
                    "executor": t.executor.kind(),
                    "danger": t.danger,
                    "enabled": t.enabled,
                    "tags": t.tags,
                })
            })
            .collect();
        outln!("{}", Value::Array(rows));
        return;
    }
    let width = catalog
        .tools
        .iter()
        .map(|t| t.name.as_str().len())
        .max()
        .unwrap_or(4)
        .max(4);
    outln!(
        "{:width$}  {:8}  {:9}  {:8}  DESCRIPTION",
        "NAME",
        "EXECUTOR",
        "DANGER",
        "STATUS"
    );
    for t in &catalog.tools {
        outln!(
            "{:width$}  {:8}  {:9}  {:8}  {}",
            t.name.as_str(),
            t.executor.kind(),
            if t.is_dangerous() {
                "dangerous"
            } else {
                "safe"
            },
            if t.enabled { "enabled" } else { "disabled" },
            first_line(&t.description, 70)
        );
    }
}

/// `meta.sandbox` in one line: the policy, then what this kernel enforces of it.
pub fn sandbox_line(report: &Value) -> String {
    let policy = match &report["policy"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if report["filesystem"].is_null() {
        return format!("{policy} (nothing enforced)");
    }
    format!(
        "{policy} — on this kernel: files {}, network {}, signals {} (Landlock ABI {}, seccomp {})",
        report["filesystem"].as_str().unwrap_or("?"),
        report["network"].as_str().unwrap_or("?"),
        report["signals"].as_str().unwrap_or("?"),
        report["landlock_abi"],
        if report["seccomp"] == true {
            "on"
        } else {
            "off"
        }
    )
}

pub fn show(tool: &Tool, json: bool) {
    if json {
        let out = json!({
            "definition": tool.to_catalog_value(Secrets::Redact),
            "input_schema": tool_schema(tool),
            "sandbox": toolsmith_exec::sandbox::tool_report(tool),
        });
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return;
    }
    match &tool.title {
        Some(title) => outln!("{} — {title}", tool.name),
        None => outln!("{}", tool.name),
    }
    outln!("{}\n", tool.description.trim_end());
    let executor = match &tool.executor {
        toolsmith_core::model::Executor::Command(c) => format!("command: {}", c.argv.join(" ")),
        toolsmith_core::model::Executor::Script(s) => format!(
            "script: {} ({} lines)",
            s.interpreter,
            s.source.lines().count()
        ),
        toolsmith_core::model::Executor::Builtin(b) => format!("builtin: {b}"),
        toolsmith_core::model::Executor::Mcp(t) => {
            format!("mcp: tool `{}` of server `{}`", t.tool, t.server)
        }
        toolsmith_core::model::Executor::Http(h) => format!("http: {} {}", h.method, h.url),
    };
    outln!("  executor:  {executor}");
    if let Some(report) = toolsmith_exec::sandbox::tool_report(tool) {
        outln!("  sandbox:   {}", sandbox_line(&report));
    }
    outln!(
        "  danger:    {}    timeout: {} ms    {}",
        if tool.is_dangerous() {
            "dangerous"
        } else {
            "safe"
        },
        tool.timeout_ms,
        if tool.enabled { "enabled" } else { "disabled" }
    );
    if !tool.tags.is_empty() {
        outln!("  tags:      {}", tool.tags.join(", "));
    }
    if let Some(given) = &tool.input_schema {
        outln!(
            "  arguments: {}",
            toolsmith_core::pipeline::parameter_summary(tool)
        );
        outln!("  input schema (as given): {given}");
    } else if tool.parameters.is_empty() {
        outln!("  parameters: none");
    } else {
        outln!("  parameters:");
        for p in &tool.parameters {
            outln!("    {}", parameter_line(p, tool));
        }
    }
    if !tool.config_schema.is_empty() {
        outln!("  config:");
        for p in &tool.config_schema {
            let value = match tool.config.get(&p.name) {
                Some(_) if p.secret => "***".to_string(),
                Some(v) => v.to_string(),
                None => "(not set)".into(),
            };
            outln!(
                "    {} = {value}{}",
                p.name,
                if p.secret { "  (secret)" } else { "" }
            );
        }
    }
}

fn parameter_line(p: &Parameter, tool: &Tool) -> String {
    let need = match (&p.default, p.required) {
        (Some(d), _) => format!("optional, default {d}"),
        (None, true) => "required".into(),
        (None, false) => "optional".into(),
    };
    let how = match &tool.executor {
        Executor::Command(c) => {
            let place = c.place(&p.name);
            match place.inject_as {
                InjectAs::Option => {
                    format!("  [option {}]", place.option_name.as_deref().unwrap_or("?"))
                }
                InjectAs::Stdin => "  [stdin]".into(),
                InjectAs::Env => "  [env]".into(),
                InjectAs::Argument => String::new(),
            }
        }
        Executor::Http(call) => {
            let part = call.place(&p.name).inject_as;
            format!("  [{} {}]", part.as_str(), call.wire_name(&p.name))
        }
        _ => String::new(),
    };
    let desc = p
        .description
        .as_deref()
        .map(|d| format!(" — {}", first_line(d, 60)))
        .unwrap_or_default();
    format!("{} ({}, {need}){how}{desc}", p.name, p.type_summary())
}

pub fn call_result(result: &ToolResult, json: bool) {
    if json {
        outln!("{}", result.to_json());
        return;
    }
    if let Some(error) = &result.error {
        eprintln!(
            "error ({}): {}",
            serde_json::to_value(error.kind)
                .unwrap_or_default()
                .as_str()
                .unwrap_or(""),
            error.message
        );
        return;
    }
    let data = result.data.clone().unwrap_or_default();
    if data.get("argv").is_none() {
        // A real run: the tool's output as it is.
        match (&data["stdout"], &data["exit_code"]) {
            (Value::String(out), Value::Number(_)) => {
                out!("{out}");
                eprint!("{}", data["stderr"].as_str().unwrap_or_default());
            }
            _ => outln!(
                "{}",
                serde_json::to_string_pretty(&data).unwrap_or_default()
            ),
        }
        return;
    }
    outln!(
        "tool:      {} (version {})",
        result.meta.tool,
        result.meta.version
    );
    if let Some(b) = data.get("builtin").and_then(Value::as_str) {
        outln!("builtin:   {b}");
    }
    outln!("arguments: {}", data["arguments"]);
    if let Some(argv) = data["argv"].as_array().filter(|a| !a.is_empty()) {
        let words: Vec<String> = argv
            .iter()
            .map(|a| shell_quote(a.as_str().unwrap_or_default()))
            .collect();
        outln!("argv:      {}", words.join(" "));
    }
    match data["stdin"].as_str() {
        Some(s) => outln!("stdin:     {}", first_line(s, 200)),
        None => outln!("stdin:     (empty)"),
    }
    if let Some(env) = data["env"].as_object().filter(|e| !e.is_empty()) {
        for (k, v) in env {
            outln!("env:       {k}={}", v.as_str().unwrap_or_default());
        }
    }
    if !result.meta.coerced.is_empty() {
        outln!("coerced:   {}", result.meta.coerced.join(", "));
    }
}

/// Quotes a word for display the way a POSIX shell would need it.
fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn first_line(s: &str, max: usize) -> String {
    let line = s.lines().next().unwrap_or_default();
    if line.chars().count() > max {
        format!("{}…", line.chars().take(max - 1).collect::<String>())
    } else {
        line.to_owned()
    }
}

pub fn import_report(file: &Path, r: &toolsmith_store::ImportReport, json: bool) {
    if json {
        outln!("{}", serde_json::to_value(r).unwrap_or_default());
        return;
    }
    outln!(
        "imported {}: {} created, {} updated, {} unchanged, {} deleted",
        file.display(),
        r.created.len(),
        r.updated.len(),
        r.unchanged.len(),
        r.deleted.len()
    );
    for (what, names) in [
        ("created", &r.created),
        ("updated", &r.updated),
        ("deleted", &r.deleted),
    ] {
        // The names of a large import would flood the terminal: the first ones, then a count
        // (`--json` lists them all).
        const SHOWN: usize = 20;
        if !names.is_empty() {
            let more = names.len().saturating_sub(SHOWN);
            let list = names
                .iter()
                .take(SHOWN)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            match more {
                0 => outln!("  {what}: {list}"),
                n => outln!("  {what}: {list} … and {n} more (--json lists them all)"),
            }
        }
    }
}

pub fn history(versions: &[toolsmith_store::VersionRecord], json: bool) {
    if json {
        // Secret config values never leave through a view.
        let rows: Vec<Value> = versions
            .iter()
            .map(|v| {
                let definition = toolsmith_store::definition_to_tool(&v.definition)
                    .map(|t| t.to_catalog_value(Secrets::Redact))
                    .unwrap_or(Value::Null);
                json!({"version": v.version, "created_at_ms": v.created_at_ms, "author": v.author, "summary": v.summary, "definition": definition})
            })
            .collect();
        outln!("{}", Value::Array(rows));
        return;
    }
    for v in versions {
        outln!(
            "v{:<4} {}  {:<12} {}",
            v.version,
            utc(v.created_at_ms),
            v.author,
            v.summary
        );
    }
}

pub fn runs(runs: &[toolsmith_store::RunRecord], json: bool) {
    if json {
        outln!("{}", serde_json::to_value(runs).unwrap_or_default());
        return;
    }
    for r in runs {
        let upstream = r
            .upstream
            .as_ref()
            .map(|u| format!("  (MCP server {u})"))
            .unwrap_or_default();
        let guarded = r
            .guardrails
            .as_ref()
            .map(|g| format!("  guardrails {g}"))
            .unwrap_or_default();
        outln!(
            "{}  {:<20} v{:<3} {:<18} {:>9.1} ms  {}{upstream}{guarded}",
            utc(r.started_at_ms),
            r.tool,
            r.version,
            r.kind,
            r.duration_ms,
            r.caller
        );
    }
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of Unix milliseconds.
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Writes to stdout; when the reader has gone away (a closed pipe), exits at once with
/// status 0, as `head` expects of the programs it reads from.
pub fn write_stdout(args: std::fmt::Arguments<'_>, newline: bool) {
    use std::io::{IsTerminal, Write};
    let mut out = std::io::stdout().lock();
    let text = args.to_string();
    // On a terminal, text from a tool, an upstream or a document cannot drive it (set the
    // title, write the clipboard with OSC 52, hide lines): its control characters are shown
    // escaped. Into a pipe or a file the bytes go as they are.
    let text = match out.is_terminal() {
        true => terminal_safe(&text),
        false => std::borrow::Cow::Borrowed(text.as_str()),
    };
    let written = out.write_all(text.as_bytes()).and_then(|()| {
        if newline {
            out.write_all(b"\n")
        } else {
            Ok(())
        }
    });
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("error: writing to stdout: {e}");
            std::process::exit(2);
        }
    }
}

/// `text` with every control character a terminal would act on written out instead — C0
/// controls but newline and tab (`\x1b`, `\r`, `\x07`…), DEL, C1 controls (`\u{9b}`) —
/// and the invisible characters that reorder or hide text (bidi controls, zero-width, Unicode
/// tags) as `\u{…}`. Borrowed when there is nothing to escape.
pub fn terminal_safe(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        '\u{feff}' | '\u{e0000}'..='\u{e007f}' => true,
        _ => false,
    };
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !unsafe_char(c) => shown.push(c),
            '\r' => shown.push_str("\\r"),
            c if (c as u32) < 0x80 => shown.push_str(&format!("\\x{:02x}", c as u32)),
            c => shown.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    std::borrow::Cow::Owned(shown)
}

/// Whether notes go out as JSON log lines (`--log-format json`).
static JSON_LOGS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sends the command's own notes ([`say!`]) through the JSON log from now on.
pub fn notes_as_json() {
    JSON_LOGS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// One note: `toolsmith: ...` on stderr, or an `info` line of the JSON log.
pub fn say(message: std::fmt::Arguments<'_>) {
    if JSON_LOGS.load(std::sync::atomic::Ordering::Relaxed) {
        tracing::info!(target: "toolsmith", "{message}");
    } else {
        eprintln!("toolsmith: {}", stderr_safe(&message.to_string()));
    }
}

/// `text` for stderr: [`terminal_safe`] when stderr is a terminal.
pub fn stderr_safe(text: &str) -> std::borrow::Cow<'_, str> {
    use std::io::IsTerminal;
    match std::io::stderr().is_terminal() {
        true => terminal_safe(text),
        false => std::borrow::Cow::Borrowed(text),
    }
}

/// A registry address fit for logs: the password of a URL replaced by `***`.
pub(crate) fn redact_url(address: &str) -> String {
    match (address.find("://"), address.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &address[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => {
                    format!("{}{user}:***{}", &address[..scheme + 3], &address[at..])
                }
                None => address.to_owned(),
            }
        }
        _ => address.to_owned(),
    }
}

/// The changes an import held for approval, per OpenAPI source (on stderr for servers).
pub fn say_held(held: &[(String, toolsmith_store::held::HeldReport)], stderr: bool) {
    let say = |line: String| {
        if stderr {
            say!("{line}");
        } else {
            outln!("  {line}");
        }
    };
    for (source, r) in held {
        if !r.held.is_empty() {
            say(format!(
                "held {} change(s) of {source} until approved: {} (toolsmith servers changes {source})",
                r.held.len(),
                r.held.join(", ")
            ));
        }
        for t in &r.taken {
            say(format!("{source}: skipped {}: {}", t.operation, t.reason));
        }
    }
}

/// What the guardrail scanner finds in each tool as a model would see it, one warning per
/// finding (a local catalog or an imported document is the operator's choice: nothing is
/// held, only shown). Tools of one catalog or document may name each other, so shadowing is
/// not looked for here.
pub(crate) fn guardrail_warnings(tools: &[toolsmith_core::Tool]) -> Vec<String> {
    let none = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for t in tools {
        for f in toolsmith_core::guard::scan_tool(t, &none) {
            let finding = serde_json::to_value(&f).unwrap_or_default();
            out.push(format!(
                "tool `{}`: guardrail finding{}",
                t.name,
                finding_line(&finding).trim_start_matches("  !")
            ));
        }
    }
    out
}

/// `  ! hold concealment at /description [value 12..40]: …before«matched»after…` — one
/// finding as a line, its span's hidden characters spelled out.
pub(crate) fn finding_line(f: &Value) -> String {
    let s = |k: &str| f[k].as_str().unwrap_or_default().to_owned();
    format!(
        "  ! {} {} at {} ({} {}..{}): {}«{}»{}",
        s("severity"),
        s("rule"),
        match s("path").as_str() {
            "" => "/".to_owned(),
            p => p.to_owned(),
        },
        s("part"),
        f["start"],
        f["end"],
        s("before").replace('\n', "⏎"),
        s("matched").replace('\n', "⏎"),
        s("after").replace('\n', "⏎"),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn control_characters_are_shown_not_obeyed() {
        use super::terminal_safe;
        assert_eq!(terminal_safe("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            terminal_safe("\x1b]52;c;cHduZWQ=\x07\x1b[31mRED\r\u{9b}2J"),
            "\\x1b]52;c;cHduZWQ=\\x07\\x1b[31mRED\\r\\u{9b}2J"
        );
        assert_eq!(
            terminal_safe("a\u{202e}b\u{200b}c\u{e0041}"),
            "a\\u{202e}b\\u{200b}c\\u{e0041}"
        );
        assert_eq!(terminal_safe("\x7f"), "\\x7f");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00");
        assert_eq!(super::utc(1_795_000_000_000), "2026-11-18 11:06:40");
        assert_eq!(super::utc(951_782_400_000), "2000-02-29 00:00:00");
    }
}
