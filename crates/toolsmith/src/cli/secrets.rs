//! `secrets rotate-key`: every secret of the registry re-sealed with a new key.

use super::*;
use crate::secret_key::Origin;

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// Make a new key and re-seal every stored secret with it, in one transaction (SQLite: the
    /// file then compacted, so nothing sealed with the old key stays in free pages or the
    /// WAL). The key file is replaced; a key given in $TOOLSMITH_SECRET_KEY is printed, to be
    /// set on every replica. Stop the servers using the registry first: they hold the old key.
    RotateKey {
        #[command(flatten)]
        db: DbArg,
        #[arg(long)]
        json: bool,
    },
}

pub(super) fn run(command: SecretsCommand) -> Result<ExitCode> {
    let SecretsCommand::RotateKey { db, json } = command;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let (origin, key, sealed) = rt.block_on(crate::secret_key::rotate(
        &db.address(),
        db.secret_key_file.as_deref(),
    ))?;
    let (file, printed) = match &origin {
        Origin::File(path) => (Some(path.display().to_string()), None),
        Origin::Env => (None, Some(key.to_text())),
    };
    if json {
        outln!(
            "{}",
            serde_json::json!({"resealed": sealed, "key_file": file, "new_key": printed})
        );
    } else {
        eprintln!("toolsmith: re-sealed {sealed} secret value(s) with a new key");
        match (file, printed) {
            (Some(path), _) => eprintln!("toolsmith: the new key is in {path}"),
            (None, Some(text)) => {
                eprintln!(
                    "toolsmith: the key came from {}: set it to this new key wherever the registry is used",
                    crate::secret_key::ENV
                );
                outln!("{text}");
            }
            (None, None) => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}
