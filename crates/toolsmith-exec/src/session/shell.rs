//! `session_exec`: a shell command (the wrapped here-document and its completion record),
//! or input, keys and end of input for any session.

use super::state::{describe_exit, exit_json, matched, put_exit, put_output};
use super::*;

impl Sessions {
    pub(super) async fn exec(
        &self,
        args: &Map<String, Value>,
        ctx: &Ctx<'_>,
        max_wait: Duration,
    ) -> Result<Value> {
        let s = match self.find(args, ctx).await? {
            Found::Live(s) => s,
            Found::Tomb(t) => return Err(t.gone()),
        };
        let until = until_arg(args)?;
        let command = str_arg(args, "command");
        let input = str_arg(args, "input");
        let keys: Vec<&str> = args
            .get("keys")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let eof = args.get("eof").and_then(Value::as_bool).unwrap_or(false);
        let given = [command.is_some(), input.is_some(), !keys.is_empty(), eof];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err(SessionError::Invalid(
                "give exactly one of `command`, `input`, `keys` or `eof`".into(),
            ));
        }
        let wait = Duration::from_millis(u64_arg(args, "timeout_ms", 10_000)).min(max_wait);
        let max_bytes = u64_arg(args, "max_bytes", 65536) as usize;
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + wait;
        if let Some(ex) = s.exit() {
            return Err(SessionError::session(
                "session_ended",
                format!(
                    "session {} has exited ({}); read its output with session_read, or end it and start another",
                    s.id,
                    describe_exit(Some(&ex))
                ),
            ));
        }
        if let Some(command) = command {
            return self
                .run_command(&s, command, until.as_ref(), deadline, max_bytes, started)
                .await;
        }
        let from = lock(&s.state).ends();
        if let Some(text) = input {
            write_input(&s, text.as_bytes()).await?;
        } else if eof {
            close_input(&s).await?;
        } else {
            send_keys(&s, &keys).await?;
        }
        // Return on exit, on `until`, or once output that began after the input settles.
        s.wait(deadline, |st| {
            if st.exit.is_some() {
                return Check::Done;
            }
            if let Some(re) = &until {
                return match matched(st, re, from) {
                    true => Check::Done,
                    false => Check::Pending,
                };
            }
            if st.ends() == from {
                return Check::Pending;
            }
            match st.last_output {
                Some(t) if t.elapsed() >= SETTLE => Check::Done,
                Some(t) => Check::Again(Some(tokio::time::Instant::from_std(t + SETTLE))),
                None => Check::Again(Some(tokio::time::Instant::now() + SETTLE)),
            }
        })
        .await;
        let mut st = lock(&s.state);
        let (out, err) = st.output(from, None, max_bytes, false);
        let mut v = json!({
            "session_id": s.id,
            "status": st.status(),
            "elapsed_ms": started.elapsed().as_millis() as u64,
        });
        put_output(&mut v, s.kind, &out, &err);
        put_exit(&mut v, st.exit.as_ref());
        Ok(v)
    }

    pub(super) async fn run_command(
        &self,
        s: &Arc<Session>,
        command: &str,
        until: Option<&Regex>,
        deadline: tokio::time::Instant,
        max_bytes: usize,
        started: Instant,
    ) -> Result<Value> {
        if s.kind != Kind::Shell {
            return Err(SessionError::Invalid(format!(
                "session {} runs `{}`, not a shell: send it `input` (with a newline to submit a line) or `keys` instead of a `command`",
                s.id,
                s.command.join(" ")
            )));
        }
        if command.contains('\0') {
            return Err(SessionError::Invalid(
                "command: contains a NUL character".into(),
            ));
        }
        // A command whose output has all arrived may be a moment from its completion record:
        // give it that moment before calling the session busy.
        let moment = tokio::time::Instant::now() + Duration::from_millis(250);
        s.wait(moment.min(deadline), |st| {
            match st.running.is_none() || st.exit.is_some() {
                true => Check::Done,
                false => Check::Pending,
            }
        })
        .await;
        let (seq, from) = {
            let mut st = lock(&s.state);
            if let Some(r) = &st.running {
                let out = st.out.read(r.from.out, u64::MAX, 2000, true, false);
                return Err(SessionError::session(
                    "session_busy",
                    format!(
                        "session {} is still running `{}` (for {} s; a shell session runs one command at a time). Wait with session_read, or interrupt it with session_exec keys [\"C-c\"]. Its output so far ends with: {}",
                        s.id,
                        r.command,
                        r.started.elapsed().as_secs(),
                        out.text
                    ),
                ));
            }
            st.seq += 1;
            let from = st.ends();
            st.running = Some(Running {
                seq: st.seq,
                command: command.chars().take(200).collect(),
                started: Instant::now(),
                from,
            });
            (st.seq, from)
        };
        let script = spawn::wrap(command, &s.nonce, seq);
        if let Err(e) = write_input(s, script.as_bytes()).await {
            lock(&s.state).running = None;
            return Err(e);
        }
        s.wait(deadline, |st| {
            let done = st.exit.is_some() || st.done.as_ref().is_some_and(|d| d.seq == seq);
            match until {
                _ if done => Check::Done,
                Some(re) if matched(st, re, from) => Check::Done,
                _ => Check::Pending,
            }
        })
        .await;
        let mut st = lock(&s.state);
        let done = st
            .done
            .as_ref()
            .filter(|d| d.seq == seq)
            .map(|d| (d.code, d.upto));
        let upto = done.map(|(_, u)| u);
        let (out, err) = st.output(from, upto, max_bytes, false);
        let mut v = json!({
            "session_id": s.id,
            "elapsed_ms": started.elapsed().as_millis() as u64,
        });
        let m = v.as_object_mut().expect("object");
        match (done, &st.exit) {
            (Some((code, _)), _) => {
                m.insert("status".into(), "completed".into());
                m.insert("exit_code".into(), code.into());
                m.insert("cwd".into(), st.cwd.to_string_lossy().into());
            }
            (None, Some(ex)) => {
                m.insert("status".into(), "session_ended".into());
                let (code, signal) = exit_json(Some(ex));
                m.insert("exit_code".into(), code);
                m.insert("signal".into(), signal);
                m.insert(
                    "hint".into(),
                    "the shell exited (`exit`, or `set -e` and a failing command): start a new session".into(),
                );
            }
            (None, None) => {
                m.insert("status".into(), "running".into());
                m.insert(
                    "hint".into(),
                    "still running: call session_read with this cursor (and a timeout_ms) to wait for more, or session_exec with keys [\"C-c\"] to interrupt it".into(),
                );
            }
        }
        put_output(&mut v, s.kind, &out, &err);
        Ok(v)
    }
}

pub(super) async fn write_input(s: &Session, bytes: &[u8]) -> Result<()> {
    let mut input = s.input.lock().await;
    let r = match &mut *input {
        Input::Pipe(Some(w)) => w.write_all(bytes).await,
        Input::Shell(w) => w.write_all(bytes).await,
        Input::Pipe(None) => {
            return Err(SessionError::Invalid(format!(
                "session {}'s input was closed (eof)",
                s.id
            )));
        }
        Input::Terminal(w) => w.write_all(bytes).await,
    };
    r.map_err(|e| {
        SessionError::session(
            "session_ended",
            format!("session {}: writing its input: {e}", s.id),
        )
    })
}

pub(super) async fn close_input(s: &Session) -> Result<()> {
    if s.kind == Kind::Shell {
        return Err(SessionError::Invalid(
            "a shell session's input carries its commands; end it with session_end".into(),
        ));
    }
    let mut input = s.input.lock().await;
    match &mut *input {
        Input::Pipe(w) => {
            w.take();
            Ok(())
        }
        Input::Shell(_) => Err(SessionError::Invalid(
            "a shell session's input carries its commands; end it with session_end".into(),
        )),
        Input::Terminal(w) => w.write_all(&[4]).await.map_err(|e| {
            SessionError::session("session_ended", format!("writing to the terminal: {e}"))
        }),
    }
}

pub(super) async fn send_keys(s: &Session, keys: &[&str]) -> Result<()> {
    use rustix::process::Signal;
    for key in keys {
        let bytes = term::key_bytes(key).ok_or_else(|| {
            SessionError::Invalid(format!(
                "keys: unknown key {key:?} (known: C-c, C-d, C-z, C-\\, C-<letter>, Enter, Tab, Esc, Backspace, Up, Down, Left, Right, Home, End, PageUp, PageDown, Delete)"
            ))
        })?;
        if s.kind == Kind::Terminal {
            write_input(s, &bytes).await?;
            continue;
        }
        // Without a terminal, control keys become what a terminal would make of them.
        match bytes.as_slice() {
            [3] => s.signal_job(Signal::INT),
            [0x1c] => s.signal_job(Signal::QUIT),
            [0x1a] => s.signal_job(Signal::TSTP),
            [4] => close_input(s).await?,
            [b'\r'] if s.kind != Kind::Shell => write_input(s, b"\n").await?,
            _ if s.kind == Kind::Shell => {
                return Err(SessionError::Invalid(format!(
                    "keys: a shell session takes only C-c, C-\\ and C-z (its commands read no input); {key:?} needs a process or tty session"
                )));
            }
            _ => write_input(s, &bytes).await?,
        }
    }
    Ok(())
}
