//! `runtime setup` and `runtime status`: the Python runtime script tools use.

use super::*;

pub(super) fn runtime(command: RuntimeCommand) -> Result<ExitCode> {
    let at = |dir: Option<PathBuf>| {
        dir.map(|dir| Runtime { dir })
            .unwrap_or_else(Runtime::default_location)
    };
    match command {
        RuntimeCommand::Setup { with, python, dir } => {
            let rt = at(dir);
            rt.setup(&python, &with, &mut |line| eprintln!("runtime: {line}"))
                .map_err(anyhow::Error::msg)?;
            outln!("runtime ready: {}", rt.dir.display());
            Ok(ExitCode::SUCCESS)
        }
        RuntimeCommand::Status { dir, json } => {
            let rt = at(dir);
            let packages = rt.packages();
            if json {
                let list: Vec<Value> = packages
                    .as_ref()
                    .map(|p| {
                        p.iter()
                            .map(|(n, v)| serde_json::json!({"name": n, "version": v}))
                            .collect()
                    })
                    .unwrap_or_default();
                outln!(
                    "{}",
                    serde_json::json!({"dir": rt.dir, "exists": rt.exists(), "packages": list})
                );
                return Ok(ExitCode::SUCCESS);
            }
            match packages {
                Ok(list) => {
                    outln!(
                        "runtime: {} (used by python3 script tools)",
                        rt.dir.display()
                    );
                    for (name, version) in list {
                        outln!("  {name} {version}");
                    }
                }
                Err(e) => outln!("runtime: not set up — {e}"),
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
