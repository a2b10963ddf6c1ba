//! `toolsmith connections`: the caller's own OAuth connections to the servers that connect
//! each user's account (`connection: per_user`), through a running server as the token's
//! holder — list them, connect one (prints where to consent and waits), forget one.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::servers::Live;

#[derive(Debug, Subcommand)]
pub enum ConnectionsCommand {
    /// The servers that connect each user's own account, and whether you connected each.
    List {
        /// Every user's connections (admin only): which exist, never their tokens.
        #[arg(long)]
        all: bool,
    },
    /// Connect your own account with a per-user server: prints the URL to open in a
    /// browser, then waits until the consent comes back to the running server.
    Connect {
        server: String,
        /// How long to wait for the consent, in seconds.
        #[arg(long, default_value_t = 900, value_name = "SECONDS")]
        wait: u64,
    },
    /// Forget your own tokens for a server (other users' connections stay).
    Disconnect { server: String },
}

#[derive(Debug, Args, Default)]
pub struct ConnectionsArgs {
    #[command(flatten)]
    live: Live,
}

pub fn run(command: Option<ConnectionsCommand>, args: ConnectionsArgs) -> Result<ExitCode> {
    let live = &args.live;
    match command.unwrap_or(ConnectionsCommand::List { all: false }) {
        ConnectionsCommand::List { all } => {
            let v = live
                .live(
                    "GET",
                    &format!("/connections{}", if all { "?all=true" } else { "" }),
                )
                .map_err(|e| anyhow::anyhow!("connections asks the running server: {e}"))?;
            if live.json {
                outln!("{v}");
                return Ok(ExitCode::SUCCESS);
            }
            let servers = v["servers"].as_array().cloned().unwrap_or_default();
            let me = v["subject"].as_str().unwrap_or("?");
            if servers.is_empty() {
                outln!(
                    "no server connects each user's own account here (an OAuth server with `connection: per_user`)"
                );
            }
            for s in &servers {
                let server = s["server"].as_str().unwrap_or_default();
                match s["connected"] == true {
                    true => outln!("{server:<24} connected as {me}"),
                    false => outln!(
                        "{server:<24} not connected (`toolsmith connections connect {server}`)"
                    ),
                }
            }
            for c in v["all"].as_array().into_iter().flatten() {
                let subject = match c["subject"].as_str().unwrap_or_default() {
                    "" => "(shared)",
                    s => s,
                };
                outln!("{:<24} {subject}", c["server"].as_str().unwrap_or_default());
            }
            Ok(ExitCode::SUCCESS)
        }
        ConnectionsCommand::Connect { server, wait } => {
            let started = live
                .live_within(
                    "POST",
                    &format!("/connections/{server}"),
                    Duration::from_secs(60),
                )
                .map_err(|e| anyhow::anyhow!("connect asks the running server: {e}"))?;
            Ok(live.await_consent(
                &started,
                wait,
                |live| {
                    live.live("GET", "/connections").is_ok_and(|v| {
                        v["servers"].as_array().into_iter().flatten().any(|s| {
                            s["server"].as_str() == Some(server.as_str()) && s["connected"] == true
                        })
                    })
                },
                (&server, &format!("toolsmith connections connect {server}")),
            ))
        }
        ConnectionsCommand::Disconnect { server } => {
            let v = live
                .live("DELETE", &format!("/connections/{server}"))
                .map_err(|e| anyhow::anyhow!("disconnect asks the running server: {e}"))?;
            if live.json {
                outln!("{v}");
            } else if v["disconnected"] == true {
                outln!(
                    "{server}: your tokens are forgotten; your next call asks you to connect again"
                );
            } else {
                outln!("{server}: you had not connected it");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
