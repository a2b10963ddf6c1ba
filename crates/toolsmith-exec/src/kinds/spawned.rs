//! What command and script tools share: one process (or a warm Python call) with the tool's
//! environment, working folder and limits, and its result read by the executor's contract.

use super::*;

impl Engine {
    /// Runs `invocation` as one process of `t` (its argv decided by the kind); `python`, for a
    /// Python script: its interpreter and file, and whether it asked to run warm; `talk`, a
    /// conversation with it over its stdin and stdout ([`crate::talk`]).
    pub(crate) async fn spawn(
        &self,
        t: &Tool,
        invocation: Process,
        python: Option<(PathBuf, PathBuf, bool)>,
        mut meta: Meta,
        talk: Option<Arc<crate::talk::Talk>>,
    ) -> ToolResult {
        let mut argv = invocation.argv;
        // Only allowlisted variables of the server's environment, then the tool's own.
        let mut env = crate::sandbox::inherited(t.env_allowlist.iter().map(String::as_str));
        env.extend(t.env.clone());
        // The program is looked up in the operator's PATH, before parameters are injected
        // (the catalog refuses a parameter named PATH too; this holds whatever it allows).
        let searched = env
            .get("PATH")
            .cloned()
            .unwrap_or_else(|| crate::programs::DEFAULT_PATH.to_owned());
        env.extend(invocation.env.into_iter().map(|v| (v.name, v.value)));

        let (cwd, temp) = match &t.working_dir {
            Some(dir) => match self.workspace.resolve(dir, true) {
                Ok(p) => (p, None),
                Err(e) => {
                    return ToolResult::err(
                        ErrorKind::SpawnFailed,
                        format!("working_dir: {e}"),
                        Vec::new(),
                        meta,
                    );
                }
            },
            None => match self.folders.take() {
                Ok(d) => (d.path().to_path_buf(), Some(d)),
                Err(e) => {
                    return ToolResult::err(
                        ErrorKind::Internal,
                        format!("creating a working folder: {e}"),
                        Vec::new(),
                        meta,
                    );
                }
            },
        };
        let limits = t.limits.or(self.config.default_limits);
        // `PYTHON*` variables of the tool's own change how Python starts: those tools run
        // cold and without -I, which would ignore them.
        let python = python.filter(|_| !env.keys().any(|k| k.starts_with("PYTHON")));
        let program = match &python {
            Some((interpreter, ..)) => Some(interpreter.clone()),
            None => argv
                .first()
                .and_then(|p| crate::programs::resolve_program(p, Some(&searched))),
        };
        let cx = crate::sandbox::Context {
            workdir: &cwd,
            program: program.as_deref(),
            // A script's file (its interpreter's first argument).
            files: match &t.executor {
                Executor::Script(_) => argv.get(1).map(PathBuf::from).into_iter().collect(),
                _ => Vec::new(),
            },
        };
        let confined = match self.sandbox.confine(t.sandbox.as_ref(), &cx) {
            Ok(c) => c,
            Err(why) => {
                meta.sandbox = Some(
                    self.sandbox
                        .assess(self.sandbox.policy(t.sandbox.as_ref()))
                        .0,
                );
                if let Some(folder) = temp {
                    self.folders.give_back(folder, true);
                }
                return ToolResult::err(
                    ErrorKind::Sandbox,
                    format!("`{}` was not run: {why}", t.name),
                    Vec::new(),
                    meta,
                );
            }
        };
        meta.sandbox = Some(confined.report);
        let confinement = confined.confinement;
        if let Some((interpreter, file, true)) = &python
            && let Some(warm) = &self.warm
        {
            let call = warm::Call {
                interpreter,
                base: self.sandbox.base(self.sandbox.policy(t.sandbox.as_ref())),
                script: file,
                stdin: invocation.stdin.as_deref(),
                env: &env,
                cwd: &cwd,
                timeout: Duration::from_millis(t.timeout_ms),
                limits,
                niceness: self.config.tool_niceness,
                sandbox: confinement.as_ref(),
                talk: talk.as_deref(),
            };
            if let Some(done) = warm.run(&call, self.cgroups.as_ref()).await {
                return self.finished(t, done, temp, meta, limits, &searched);
            }
        }
        if python.is_some() {
            // Isolated mode, as the warm runtime runs: no PYTHON* variables, no user site.
            argv.insert(1, "-I".into());
        }
        let spec = process::Spec {
            argv: &argv,
            program,
            stdin: invocation.stdin.as_deref(),
            env,
            cwd,
            timeout: Duration::from_millis(t.timeout_ms),
            limits,
            niceness: self.config.tool_niceness,
            confinement,
            talk,
        };
        let done = process::run(spec, self.cgroups.as_ref()).await;
        self.finished(t, done, temp, meta, limits, &searched)
    }

    /// The result of a process run: the folder given back, the meta filled in, the output
    /// read by the executor's contract.
    pub(crate) fn finished(
        &self,
        t: &Tool,
        done: Result<process::Finished, process::SpawnError>,
        temp: Option<folders::Folder>,
        mut meta: Meta,
        limits: Limits,
        searched: &str,
    ) -> ToolResult {
        let done = match done {
            Ok(d) => d,
            Err(process::SpawnError::NotFound(program)) => {
                let place = match program.contains('/') {
                    true => String::new(),
                    false => format!(" in the tool's PATH={searched}"),
                };
                return ToolResult::err(
                    ErrorKind::SpawnFailed,
                    format!(
                        "cannot run `{}`: program {program:?} not found{place}",
                        t.name
                    ),
                    Vec::new(),
                    meta,
                );
            }
            Err(process::SpawnError::Sandbox(e)) => {
                if let Some(folder) = temp {
                    self.folders.give_back(folder, false);
                }
                return ToolResult::err(
                    ErrorKind::Sandbox,
                    format!("`{}` was not run: {e}", t.name),
                    Vec::new(),
                    meta,
                );
            }
            Err(process::SpawnError::Other(e)) => {
                // Refused at exec: the sandbox, when the program's `#!` interpreter is out of
                // its reach, says so and what to change.
                let hint = t
                    .executor
                    .program()
                    .filter(|_| e.contains("Permission denied"))
                    .and_then(|p| self.sandbox.program_hint(t.sandbox.as_ref(), p, searched));
                return ToolResult::err(
                    ErrorKind::SpawnFailed,
                    match hint {
                        Some(hint) => format!("cannot run `{}`: {e} — {hint}", t.name),
                        None => format!("cannot run `{}`: {e}", t.name),
                    },
                    Vec::new(),
                    meta,
                );
            }
        };
        let mut done = done;
        if let Some(folder) = temp {
            match done.settled.take() {
                // Answered before its process ended: the folder once its slot is clean.
                Some(settled) => {
                    let folders = self.folders.clone();
                    tokio::spawn(async move {
                        let contained = settled.await.unwrap_or(false);
                        folders.give_back(folder, contained);
                    });
                }
                None => self.folders.give_back(folder, done.contained),
            }
        }
        meta.exit_code = done.exit_code;
        meta.stdout_bytes = Some(done.stdout.total);
        meta.stderr_bytes = Some(done.stderr.total);
        meta.truncated = Some(done.stdout.truncated || done.stderr.truncated);
        meta.lossy = (done.stdout.lossy || done.stderr.lossy).then_some(true);
        let hint = (done.exit_code != Some(0))
            .then(|| {
                self.sandbox
                    .denial_hint(t.sandbox.as_ref(), &done.stderr.text, searched)
            })
            .flatten();
        let mut result = finish(t, done, meta, limits);
        if let (Some(hint), Some(error)) = (hint, result.error.as_mut()) {
            error.message = format!("{} — {hint}", error.message);
        }
        result
    }
}

/// The result of a process run, by the executor's contract.
fn finish(t: &Tool, done: process::Finished, meta: Meta, limits: Limits) -> ToolResult {
    let output = json!({"stdout": done.stdout.text, "stderr": done.stderr.text});
    if done.timed_out {
        return ToolResult::err(
            ErrorKind::Timeout,
            format!(
                "tool `{}` did not finish within {} ms; its processes were killed",
                t.name, t.timeout_ms
            ),
            Vec::new(),
            meta,
        )
        .with_output(output);
    }
    let status = match (done.exit_code, done.signal) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("exited with status {code}")),
        (None, Some(sig)) => Some(format!("was killed by signal {sig}{}", signal_hint(sig))),
        (None, None) => Some("ended without a status".to_string()),
    };
    let json_output = matches!(t.executor, Executor::Script(_)) || t.output == OutputMode::Json;
    if let Some(status) = status {
        let tail = tail(&done.stderr.text, 2000);
        let message = if tail.is_empty() {
            format!("tool `{}` {status}", t.name)
        } else {
            format!("tool `{}` {status}; stderr: {tail}", t.name)
        };
        return ToolResult::err(ErrorKind::ExitStatus, message, Vec::new(), meta)
            .with_output(output);
    }
    if !json_output {
        let data = json!({"stdout": done.stdout.text, "stderr": done.stderr.text, "exit_code": done.exit_code});
        return ToolResult::ok(data, meta);
    }
    if done.stdout.truncated {
        return ToolResult::err(
            ErrorKind::OutputLimit,
            format!(
                "tool `{}` wrote {} bytes of JSON, over its output limit of {} bytes",
                t.name,
                done.stdout.total,
                limits.output_bytes.unwrap_or(0)
            ),
            Vec::new(),
            meta,
        )
        .with_output(output);
    }
    match serde_json::from_str::<Value>(done.stdout.text.trim()) {
        Ok(data) => ToolResult::ok(data, meta),
        Err(e) => {
            let head: String = done.stdout.text.chars().take(200).collect();
            ToolResult::err(
                ErrorKind::BadOutput,
                format!(
                    "tool `{}` did not print one JSON value on stdout ({e}); it printed: {head:?}",
                    t.name
                ),
                Vec::new(),
                meta,
            )
            .with_output(output)
        }
    }
}

fn signal_hint(sig: i32) -> &'static str {
    match sig {
        9 => " (killed: a limit was reached, or the call was cancelled)",
        11 => " (segmentation fault)",
        24 => " (CPU time limit)",
        25 => " (file size limit)",
        _ => "",
    }
}
