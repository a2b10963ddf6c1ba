//! The registry's secret key (SPEC §13): from `--secret-key-file`, else
//! `TOOLSMITH_SECRET_KEY`, else the key file in toolsmith's data folder — made (0600) the
//! first time a registry whose secrets were never sealed is opened. Every command that opens
//! a registry opens it here, so its secrets are sealed with the key and read with it; and
//! `toolsmith secrets rotate-key` re-seals them with a new one.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use toolsmith_store::Registry;
use toolsmith_store::secrets::SecretKey;

/// The variable a key may be given in (64 hex digits; replicas share it).
pub const ENV: &str = "TOOLSMITH_SECRET_KEY";

/// `<data folder>/secret.key`.
pub fn default_file() -> PathBuf {
    toolsmith_exec::runtime::data_dir().join("secret.key")
}

/// Where the key came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Env,
}

/// The key given (`--secret-key-file`, else the variable, else the default file if it
/// exists), with where it came from; `None` when there is none.
pub fn load(file: Option<&Path>) -> Result<Option<(SecretKey, Origin)>> {
    let read = |path: &Path| -> Result<SecretKey> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the secret key {}", path.display()))?;
        SecretKey::from_text(&text)
            .map_err(|e| anyhow::anyhow!("the secret key {}: {e}", path.display()))
    };
    if let Some(path) = file {
        return Ok(Some((read(path)?, Origin::File(path.to_path_buf()))));
    }
    if let Ok(text) = std::env::var(ENV) {
        let key = SecretKey::from_text(&text).map_err(|e| anyhow::anyhow!("{ENV}: {e}"))?;
        return Ok(Some((key, Origin::Env)));
    }
    let path = default_file();
    match path.exists() {
        true => Ok(Some((read(&path)?, Origin::File(path)))),
        false => Ok(None),
    }
}

/// Writes `key` to a new file at `path`, readable by this user only: written whole beside it,
/// then linked into place, so a process reading `path` never sees half a key, and of two
/// processes making it at once one wins (the other gets `AlreadyExists`).
pub fn create(path: &Path, key: &SecretKey) -> std::io::Result<()> {
    write_new(path, &key.to_text())
}

/// Writes `text` and a newline to a new file at `path` as [`create`] does (0600, whole or not
/// at all, `AlreadyExists` when another process made it first).
pub fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = tempfile::Builder::new()
        .prefix(".secret-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .tempfile_in(dir)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .mode(0o600)
        .open(tmp.path())?;
    f.write_all(format!("{text}\n").as_bytes())?;
    f.sync_all()?;
    std::fs::hard_link(tmp.path(), path)
}

/// A rotation's new key, written beside the key file before the registry is re-sealed.
pub fn pending(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".new");
    PathBuf::from(name)
}

/// Opens the registry at `address` with its key, sealing what is not sealed yet.
pub async fn open_registry(address: &str, file: Option<&Path>) -> Result<Registry> {
    let shown = crate::output::redact_url(address);
    let store = Registry::open(address)
        .await
        .with_context(|| format!("opening the registry {shown}"))?;
    let key = match load(file)? {
        Some((key, origin)) => finish_rotation(&store, key, &origin).await?,
        None if store.is_sealed().await? => bail!(
            "the registry {shown} holds sealed secrets and no key was found: give the key it was written with (--secret-key-file FILE, or {ENV}); {} does not exist",
            default_file().display()
        ),
        None => {
            let path = default_file();
            let key = SecretKey::generate();
            match create(&path, &key) {
                Ok(()) => {
                    say!(
                        "made the secret key {} (0600): keep it with the registry; without it, the registry's secrets cannot be read",
                        path.display()
                    );
                    key
                }
                // Another process made it first: that one is the key.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    load(None)?
                        .context("the secret key made by another process")?
                        .0
                }
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("making the secret key {}", path.display()));
                }
            }
        }
    };
    toolsmith_store::secrets::use_key(Some(key.clone()));
    if let Some(done) = store
        .secure(&key)
        .await
        .with_context(|| format!("the registry {shown}"))?
        && done.secrets > 0
    {
        say!(
            "sealed {} secret value(s) in {} stored definition(s) of {shown}; no plain copy is left in the file",
            done.secrets,
            done.definitions
        );
    }
    Ok(store)
}

/// A key file whose rotation was cut short (its `.new` sealed the registry, the rename did
/// not happen): the new key is put in place. Otherwise `key` itself.
async fn finish_rotation(store: &Registry, key: SecretKey, origin: &Origin) -> Result<SecretKey> {
    let Origin::File(path) = origin else {
        return Ok(key);
    };
    let next = pending(path);
    if !next.exists() || store.secure(&key).await.is_ok() {
        return Ok(key);
    }
    let (new, _) = load(Some(&next))?.context("reading the rotated key")?;
    store.secure(&new).await.with_context(|| {
        format!(
            "neither {} nor {} opens the registry's secrets",
            path.display(),
            next.display()
        )
    })?;
    std::fs::rename(&next, path).with_context(|| format!("putting {} in place", next.display()))?;
    say!("finished a key rotation: {} is the key now", path.display());
    Ok(new)
}

/// `toolsmith secrets rotate-key`: a new key; every secret re-sealed with it; the key file
/// replaced (or, for a key from the variable, the new key printed to set everywhere).
pub async fn rotate(address: &str, file: Option<&Path>) -> Result<(Origin, SecretKey, usize)> {
    let store = open_registry(address, file).await?;
    let (old, origin) = load(file)?.context("the registry has no key to rotate")?;
    let new = SecretKey::generate();
    if let Origin::File(path) = &origin {
        let next = pending(path);
        let _ = std::fs::remove_file(&next);
        create(&next, &new).with_context(|| format!("writing the new key {}", next.display()))?;
    }
    let done = store
        .reseal(Some(&old), &new)
        .await
        .context("re-sealing the registry's secrets")?;
    if let Origin::File(path) = &origin {
        std::fs::rename(pending(path), path)
            .with_context(|| format!("putting the new key in place at {}", path.display()))?;
    }
    Ok((origin, new, done.secrets))
}
