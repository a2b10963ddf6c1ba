//! `session_start`: the session's kind, folder, environment and limits, its processes
//! started and its pump running.

use super::state::{matched, put_exit, put_output};
use super::*;

impl Sessions {
    pub(super) async fn start(
        &self,
        args: &Map<String, Value>,
        ctx: &Ctx<'_>,
        max_wait: Duration,
    ) -> Result<Value> {
        let config = &ctx.tool.config;
        let command: Option<Vec<String>> = args.get("command").and_then(Value::as_array).map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_owned())
                .collect()
        });
        let tty = args.get("tty").and_then(Value::as_bool).unwrap_or(false);
        let kind = match (&command, tty) {
            (None, false) => Kind::Shell,
            (_, true) => Kind::Terminal,
            (Some(_), false) => Kind::Process,
        };
        let argv = command.clone().unwrap_or_else(|| {
            let mut shell = vec!["bash".to_string(), "--noprofile".into(), "--norc".into()];
            if tty {
                shell.push("-i".into());
            }
            shell
        });
        let until = until_arg(args)?;
        let cwd_arg = str_arg(args, "cwd").unwrap_or(".");
        let cwd = ctx
            .workspace
            .resolve(cwd_arg, true)
            .map_err(|e| SessionError::Invalid(format!("cwd: {e}")))?;
        if !cwd.is_dir() {
            return Err(SessionError::Invalid(format!(
                "cwd: {cwd_arg:?} is not a folder"
            )));
        }
        let env = environment(ctx.tool, args.get("env"))?;
        let admitted = self.admit(ctx)?;

        let ring_bytes = u64_arg(config, "ring_bytes", 1 << 20) as usize;
        let idle_timeout =
            Duration::from_millis(u64_arg(config, "idle_timeout_ms", 30 * 60 * 1000));
        let lifetime = Duration::from_millis(u64_arg(config, "max_lifetime_ms", 8 * 3600 * 1000));
        let size = (
            u64_arg(args, "cols", 120).min(1000) as u16,
            u64_arg(args, "rows", 40).min(1000) as u16,
        );
        let path = env.get("PATH").map(String::as_str);
        let Some(name) = argv.first().map(String::as_str) else {
            return Err(SessionError::Invalid(
                "cannot start the session: the command is empty".into(),
            ));
        };
        let program = crate::programs::resolve_program(name, path).ok_or_else(|| {
            SessionError::Invalid(format!(
                "cannot start the session: program {name:?} not found in PATH={}",
                path.unwrap_or("")
            ))
        })?;
        let cx = crate::sandbox::Context {
            workdir: &cwd,
            program: Some(&program),
            files: Vec::new(),
        };
        let confined = ctx
            .sandbox
            .confine(ctx.tool.sandbox.as_ref(), &cx)
            .map_err(|e| {
                SessionError::Invalid(format!("cannot start the session: sandbox: {e}"))
            })?;
        let spec = spawn::Spec {
            argv: &argv,
            program: &program,
            env,
            cwd: &cwd,
            tty: tty.then_some(size),
            limits: ctx.limits,
            niceness: ctx.niceness,
            shell: kind == Kind::Shell,
            confinement: confined.confinement,
        };
        let started = spawn::start(spec, ctx.cgroups)
            .await
            .map_err(|e| SessionError::Invalid(format!("cannot start the session: {e}")))?;
        let id = format!("s-{}-{}", self.inner.replica, random_hex(16));
        let session = Arc::new(Session {
            id: id.clone(),
            owner: ctx.caller.to_owned(),
            kind,
            command: argv.clone(),
            pid: started.pid,
            started_ms: now_ms(),
            started: Instant::now(),
            idle_timeout,
            lifetime,
            state: Mutex::new(State {
                out: Ring::new(ring_bytes),
                err: Ring::new(ring_bytes),
                read: Cursor::default(),
                last_used: Instant::now(),
                last_output: None,
                cwd: cwd.clone(),
                seq: 0,
                running: None,
                done: None,
                exit: None,
                ending: None,
            }),
            changed: watch::Sender::new(0),
            input: tokio::sync::Mutex::new(started.input),
            cgroup: Mutex::new(started.cgroup),
            nonce: random_hex(16),
            ledger: self.inner.ledger.clone(),
        });
        // Written down before the pump can see the leader exit and strike it off.
        if let Some(l) = &self.inner.ledger {
            l.add(session.pid);
        }
        tokio::spawn(spawn::pump(
            session.clone(),
            started.child,
            started.out,
            started.err,
            started.records,
            started.replies,
        ));
        lock(&self.inner.live).insert(id.clone(), session.clone());
        drop(admitted);
        self.start_reaper();
        self.note(DirectoryEvent::Started {
            id: id.clone(),
            replica: self.inner.replica.clone(),
            owner: ctx.caller.to_owned(),
            command: argv.join(" "),
        });
        tracing::info!(session = %id, owner = ctx.caller, command = %argv.join(" "), "session started");

        let wait = Duration::from_millis(u64_arg(args, "wait_ms", 0)).min(max_wait);
        if !wait.is_zero() {
            let deadline = tokio::time::Instant::now() + wait;
            let from = Cursor::default();
            session
                .wait(deadline, |st| match &until {
                    _ if st.exit.is_some() => Check::Done,
                    Some(re) if matched(st, re, from) => Check::Done,
                    Some(_) => Check::Pending,
                    None if st.ends() != from => Check::Done,
                    None => Check::Pending,
                })
                .await;
        }
        let mut st = lock(&session.state);
        let (out, err) = st.output(Cursor::default(), None, 65536, false);
        let mut v = json!({
            "session_id": id,
            "kind": kind.name(),
            "command": argv,
            "pid": session.pid,
            "cwd": cwd.to_string_lossy(),
            "status": st.status(),
            "expires": {
                "idle_ms": idle_timeout.as_millis() as u64,
                "at_ms": session.started_ms + lifetime.as_millis() as u64,
            },
            "sandbox": confined.report,
        });
        put_output(&mut v, kind, &out, &err);
        put_exit(&mut v, st.exit.as_ref());
        Ok(v)
    }
}

/// The session's environment: PATH, HOME and the user's names from the server's, the tool's
/// allowlisted variables and `env`, settings that keep programs from paging or colouring,
/// then the caller's `env`.
pub(super) fn environment(tool: &Tool, extra: Option<&Value>) -> Result<BTreeMap<String, String>> {
    let mut env = crate::sandbox::inherited(
        ["PATH", "HOME", "USER", "LOGNAME"]
            .into_iter()
            .chain(tool.env_allowlist.iter().map(String::as_str)),
    );
    env.entry("PATH".into())
        .or_insert_with(|| crate::programs::DEFAULT_PATH.into());
    env.extend(tool.env.clone());
    for (k, v) in [
        ("TERM", "dumb"),
        ("NO_COLOR", "1"),
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("GH_PAGER", "cat"),
        ("HISTFILE", "/dev/null"),
    ] {
        env.insert(k.into(), v.into());
    }
    if !env.contains_key("LANG") && !env.contains_key("LC_ALL") {
        env.insert("LANG".into(), "C.UTF-8".into());
    }
    if let Some(Value::Object(extra)) = extra {
        for (k, v) in extra {
            let Some(v) = v.as_str() else {
                return Err(SessionError::Invalid(format!("env.{k}: values are text")));
            };
            if k.is_empty() || k.contains(['=', '\0']) || v.contains('\0') {
                return Err(SessionError::Invalid(format!(
                    "env.{k}: names are non-empty without `=`, and neither holds a NUL"
                )));
            }
            env.insert(k.clone(), v.to_owned());
        }
    }
    Ok(env)
}
