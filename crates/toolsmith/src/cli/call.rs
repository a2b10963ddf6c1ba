//! `call`: one tool call from the command line, with the arguments as JSON or `-a key=value`.

use super::catalog::unknown_tool;
use super::*;

/// Why `toolsmith call` refuses the session built-ins.
const SESSIONS_NEED_A_SERVER: &str = "sessions outlive a call, and `toolsmith call` runs one call \
     per process: use them through `toolsmith serve` (REST or MCP over HTTP), `toolsmith mcp` \
     or `toolsmith chat`";

pub(super) fn call(args: CallArgs) -> Result<ExitCode> {
    let catalog = load_catalog(&args.catalog.catalog)?;
    let Some(tool) = catalog.get(&args.name) else {
        bail!("{}", unknown_tool(&catalog, &args.name))
    };
    let raw = call_arguments(&args, tool)?;
    let compiled = CompiledTool::new(tool.clone(), 1).map_err(anyhow::Error::msg)?;
    let result = if args.dry_run {
        let mut plan = plan::dry_run(&compiled, raw);
        plan.meta.sandbox = toolsmith_exec::sandbox::tool_report(tool);
        plan
    } else if matches!(&tool.executor, toolsmith_core::model::Executor::Builtin(b) if toolsmith_core::builtin::is_session(b))
    {
        ToolResult::err(
            ErrorKind::Session,
            format!("sessions_unavailable: {SESSIONS_NEED_A_SERVER}"),
            Vec::new(),
            compiled.meta(Vec::new()),
        )
    } else {
        let confirmed = args.yes || (compiled.tool.is_dangerous() && confirm(&compiled.tool)?);
        let mut config = EngineConfig::new(&args.workspace);
        config.use_cgroups = !args.no_cgroups;
        config.sandbox.protected = crate::options::protected_paths(Vec::new());
        // One call: a warm runtime would cost its start and save nothing.
        config.warm_runtime = false;
        config.sessions_unavailable = Some(SESSIONS_NEED_A_SERVER.into());
        let engine = Engine::new(config).map_err(|e| anyhow::anyhow!("--workspace: {e}"))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting the runtime")?;
        rt.block_on(async {
            tokio::select! {
                r = engine.call(&compiled, raw, CallOptions::new("cli", confirmed)) => r,
                // Dropping the call kills its process group.
                _ = tokio::signal::ctrl_c() => ToolResult::err(
                    ErrorKind::Cancelled, "cancelled by Ctrl-C; the tool's processes were killed", Vec::new(), compiled.meta(Vec::new())),
            }
        })
    };
    output::call_result(&result, args.json);
    Ok(if result.success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Asks on the terminal whether to run a dangerous tool. Without a terminal the answer is no,
/// and the result says `needs_confirmation` (use `--yes`).
fn confirm(tool: &toolsmith_core::Tool) -> Result<bool> {
    use std::io::{IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!(
        "`{}` is dangerous: {}\nRun it? [y/N] ",
        tool.name,
        tool.description.lines().next().unwrap_or_default()
    );
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("reading the answer")?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// `--args JSON`, `--args -` or `-a key=value ...` as one JSON value.
fn call_arguments(args: &CallArgs, tool: &toolsmith_core::Tool) -> Result<Value> {
    if let Some(text) = &args.args {
        let text = if text == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading --args from stdin")?;
            s
        } else {
            text.clone()
        };
        // Handed to the pipeline as text so a JSON error is reported like a model's would be.
        return Ok(Value::String(text));
    }
    let mut map = Map::new();
    for pair in &args.arg {
        let (key, value) = if let Some((k, v)) = pair.split_once(":=") {
            let parsed = serde_json::from_str(v)
                .with_context(|| format!("-a {pair}: the value after := is not JSON"))?;
            (k, parsed)
        } else if let Some((k, v)) = pair.split_once('=') {
            (k, Value::String(v.to_owned()))
        } else {
            bail!("-a {pair}: expected key=value or key:=json");
        };
        if key.is_empty() {
            bail!("-a {pair}: the key is empty");
        }
        let is_array = tool
            .parameters
            .iter()
            .any(|p| p.name == key && p.ty == toolsmith_core::model::ParamType::Array);
        match map.get_mut(key) {
            // For an array parameter, each -a adds one item (a `:=` JSON array is taken whole).
            None if is_array && !value.is_array() => {
                map.insert(key.to_owned(), Value::Array(vec![value]));
            }
            Some(Value::Array(list)) => list.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
            None => {
                map.insert(key.to_owned(), value);
            }
        }
    }
    Ok(Value::Object(map))
}
