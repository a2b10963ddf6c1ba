//! The `toolsmith` command line: argument parsing and dispatch only; the work is done by the
//! library crates.
//!
//! Exit codes: 0 success; 1 the tool call returned an error result; 2 a usage or catalog
//! error.

/// `print!` to stdout, except that a closed pipe (`toolsmith list | head`) ends the program
/// quietly instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*), false)
    };
}

/// `println!`, with [`out!`]'s handling of a closed pipe.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::write_stdout(format_args!($($arg)*), true)
    };
}

/// A note of the command's own on stderr: `toolsmith: ...`, or with `--log-format json` one
/// JSON log line like every other.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::say(format_args!($($arg)*))
    };
}

mod argv;
mod chat;
mod chat_code;
mod cli;
mod local_admin;
mod options;
mod output;
mod secret_key;
mod seed;
mod source;
mod telemetry;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // Not dumpable: its environment (tokens, API keys) and memory (secret config values) are
    // then out of reach of the tools it runs as the same user — no /proc/PID/mem, environ or
    // ptrace — and no core dump carries them. (Root keeps CAP_SYS_PTRACE: see docs/security.md.)
    if let Err(e) = toolsmith_exec::not_dumpable() {
        eprintln!("warning: {}", output::stderr_safe(&e.to_string()));
    }
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", output::stderr_safe(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}
