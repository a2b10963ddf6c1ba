//! Secrets at rest (SPEC §13): each secret config value of a stored definition (a tool's, an
//! MCP server's, a held change's) is encrypted with XChaCha20-Poly1305 under the registry's
//! key and stored as `tsenc:v1:<base64 of nonce and ciphertext>`; everything else of the
//! definition stays readable. Definitions are sealed where they are written and opened where
//! they are read ([`seal`], [`open`]), with the key this process uses ([`use_key`]); a
//! registry copied without its key yields no secret.
//!
//! The key is 32 random bytes, written as 64 hex digits (a key file, or
//! `TOOLSMITH_SECRET_KEY`). `registry_secrets` holds a value sealed with it, so a wrong key
//! is told at start, and says the registry's secrets were sealed (see [`crate::reseal`]).

use std::sync::{Arc, RwLock};

use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde_json::Value;

use crate::{Result, StoreError};

/// What a sealed value starts with.
pub const MARK: &str = "tsenc:v1:";
/// Bound to every ciphertext: a value sealed by something else does not open here.
const AAD: &[u8] = b"toolsmith secret v1";
/// What `registry_secrets.key_check` holds, sealed.
pub(crate) const CHECK: &str = "toolsmith registry key";

/// A registry's key.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(***)")
    }
}

/// A secret key's text that is not one: how many characters it has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a secret key is 64 hex digits (32 bytes); this has {0} characters")]
pub struct KeyError(pub usize);

impl SecretKey {
    /// A new random key (the kernel's random source).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        fill_random(&mut bytes);
        Self(bytes)
    }

    /// A key from its text: 64 hex digits (surrounding whitespace ignored).
    pub fn from_text(text: &str) -> std::result::Result<Self, KeyError> {
        let text = text.trim();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(KeyError(text.len()));
        }
        let bytes = unhex(text).ok_or(KeyError(text.len()))?;
        Ok(Self(bytes.try_into().map_err(|_| KeyError(text.len()))?))
    }

    /// The key as 64 hex digits.
    pub fn to_text(&self) -> String {
        hex(&self.0)
    }

    /// `plain`, sealed.
    pub fn seal_text(&self, plain: &str) -> String {
        format!(
            "{MARK}{}",
            base64::engine::general_purpose::STANDARD
                .encode(self.seal_bytes(plain.as_bytes(), AAD))
        )
    }

    /// The nonce and the ciphertext of `plain`, bound to `aad`.
    fn seal_bytes(&self, plain: &[u8], aad: &[u8]) -> Vec<u8> {
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        let mut nonce = [0u8; 24];
        fill_random(&mut nonce);
        let sealed = cipher
            .encrypt(&XNonce::from(nonce), Payload { msg: plain, aad })
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    /// What [`Self::seal_bytes`] sealed under `aad`; `None` when it was sealed otherwise.
    fn open_bytes(&self, bytes: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        if bytes.len() < 24 {
            return None;
        }
        let (nonce, ct) = bytes.split_at(24);
        let nonce: [u8; 24] = nonce.try_into().ok()?;
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        cipher
            .decrypt(&XNonce::from(nonce), Payload { msg: ct, aad })
            .ok()
    }

    /// A sealed value opened; an error when it was sealed with another key or damaged.
    pub fn open_text(&self, sealed: &str) -> Result<String> {
        let wrong = || {
            StoreError::Invalid(
                "a stored secret does not open with this key: the registry was sealed with another key (give the key it was written with: --secret-key-file or TOOLSMITH_SECRET_KEY)".into(),
            )
        };
        let body = sealed.strip_prefix(MARK).ok_or_else(wrong)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|_| wrong())?;
        let plain = self.open_bytes(&bytes, AAD).ok_or_else(wrong)?;
        String::from_utf8(plain).map_err(|_| wrong())
    }
}

fn fill_random(buf: &mut [u8]) {
    let mut filled = 0;
    while filled < buf.len() {
        match rustix::rand::getrandom(&mut buf[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => panic!("the kernel's random source failed: {e}"),
        }
    }
}

static KEY: RwLock<Option<Arc<SecretKey>>> = RwLock::new(None);

/// The key this process seals and opens stored secrets with (`None`: stored as given, and a
/// sealed value cannot be read). Set once at start, before the registry is opened.
pub fn use_key(key: Option<SecretKey>) {
    *KEY.write().unwrap_or_else(|e| e.into_inner()) = key.map(Arc::new);
}

pub(crate) fn key() -> Option<Arc<SecretKey>> {
    KEY.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Bound to a call's state sealed for a client ([`seal_state`]): a sealed secret does not
/// open as one, nor one as a secret.
const STATE_AAD: &[u8] = b"toolsmith request state v1";

/// The key of [`seal_state`] when the process has none: its own, so state sealed here opens
/// only here (replicas share the registry's key, and so each other's state).
static PROCESS_KEY: std::sync::OnceLock<SecretKey> = std::sync::OnceLock::new();

fn state_key() -> Arc<SecretKey> {
    key().unwrap_or_else(|| Arc::new(PROCESS_KEY.get_or_init(SecretKey::generate).clone()))
}

/// `plain` sealed for a client to hold and send back (a relayed call's `requestState`):
/// encrypted and authenticated under the registry's key (XChaCha20-Poly1305), as URL-safe
/// base64. The client can neither read it nor change it unnoticed; any replica with the key
/// opens it.
pub fn seal_state(plain: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(state_key().seal_bytes(plain.as_bytes(), STATE_AAD))
}

/// What [`seal_state`] sealed; `None` for anything else (changed, made up, sealed with
/// another key).
pub fn open_state(sealed: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(sealed)
        .ok()?;
    String::from_utf8(state_key().open_bytes(&bytes, STATE_AAD)?).ok()
}

/// Whether this process has a key ([`use_key`]).
pub fn has_key() -> bool {
    key().is_some()
}

/// What proves a forwarded session call came from a replica sharing this registry (and so
/// its key), for that one request only: HMAC-SHA256 under the key of the method, the path,
/// the time (ms since the epoch), a nonce and the SHA-256 of the body, as hex. `None`
/// without a key.
pub fn peer_proof(
    method: &str,
    path: &str,
    at_ms: i64,
    nonce: &str,
    body: &[u8],
) -> Option<String> {
    let key = key()?;
    let mac = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key.0);
    let tag = ring::hmac::sign(&mac, &peer_message(method, path, at_ms, nonce, body));
    Some(hex(tag.as_ref()))
}

/// Whether `proof` is [`peer_proof`] of this request under this process's key (compared in
/// constant time). `false` without a key.
pub fn peer_proof_holds(
    method: &str,
    path: &str,
    at_ms: i64,
    nonce: &str,
    body: &[u8],
    proof: &str,
) -> bool {
    let (Some(key), Some(tag)) = (key(), unhex(proof)) else {
        return false;
    };
    let mac = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key.0);
    ring::hmac::verify(&mac, &peer_message(method, path, at_ms, nonce, body), &tag).is_ok()
}

/// A fresh nonce for [`peer_proof`]: 16 random bytes as hex.
pub fn peer_nonce() -> String {
    let mut bytes = [0u8; 16];
    fill_random(&mut bytes);
    hex(&bytes)
}

fn peer_message(method: &str, path: &str, at_ms: i64, nonce: &str, body: &[u8]) -> Vec<u8> {
    let digest = ring::digest::digest(&ring::digest::SHA256, body);
    format!(
        "toolsmith replica forward v2\n{method}\n{path}\n{at_ms}\n{nonce}\n{}",
        hex(digest.as_ref())
    )
    .into_bytes()
}

/// `bytes` as lower-case hex digits.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of hex digits `text`; `None` when it is not that.
pub(crate) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// The names of `definition`'s secret config fields.
fn secret_fields(definition: &Value) -> Vec<String> {
    definition["config_schema"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["secret"] == true)
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

/// Seals each secret config value of `definition` not sealed yet with `key`; how many.
pub fn seal_with(definition: &mut Value, key: &SecretKey) -> usize {
    let fields = secret_fields(definition);
    let Some(config) = definition.get_mut("config").and_then(Value::as_object_mut) else {
        return 0;
    };
    let mut sealed = 0;
    for name in fields {
        if let Some(Value::String(v)) = config.get_mut(&name)
            && !v.starts_with(MARK)
        {
            *v = key.seal_text(v);
            sealed += 1;
        }
    }
    sealed
}

/// Opens each sealed config value of `definition` with `key`.
pub fn open_with(definition: &mut Value, key: Option<&SecretKey>) -> Result<()> {
    let Some(config) = definition.get_mut("config").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    for v in config.values_mut() {
        if let Value::String(s) = v
            && s.starts_with(MARK)
        {
            let key = key.ok_or_else(|| {
                StoreError::Invalid(
                    "the registry's secrets are sealed and this process has no key (give --secret-key-file or TOOLSMITH_SECRET_KEY)".into(),
                )
            })?;
            *s = key.open_text(s)?;
        }
    }
    Ok(())
}

/// `definition` as stored: its secrets sealed with this process's key (as given without one).
pub(crate) fn seal(definition: &Value) -> String {
    match key() {
        Some(key) => {
            let mut v = definition.clone();
            seal_with(&mut v, &key);
            v.to_string()
        }
        None => definition.to_string(),
    }
}

/// A stored definition read back, its secrets opened.
pub(crate) fn open(mut definition: Value) -> Result<Value> {
    open_with(&mut definition, key().as_deref())?;
    Ok(definition)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sealed_state_opens_only_unchanged_and_never_as_a_secret() {
        let sealed = seal_state(r#"{"tool":"a"}"#);
        assert!(!sealed.contains("tool"), "{sealed}");
        assert_eq!(open_state(&sealed).as_deref(), Some(r#"{"tool":"a"}"#));
        // Each byte changed, the state does not open.
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&sealed)
            .expect("base64");
        for i in [0, 23, 24, bytes.len() - 1] {
            let mut changed = bytes.clone();
            changed[i] ^= 1;
            let text = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(changed);
            assert_eq!(open_state(&text), None, "byte {i} changed");
        }
        assert_eq!(open_state("not state"), None);
        assert_eq!(open_state(""), None);
        // A secret sealed with the same key is no state, and state no secret.
        let key = state_key();
        let secret = key.seal_text("x");
        let body = secret.strip_prefix(MARK).expect("mark");
        let as_state = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
            base64::engine::general_purpose::STANDARD
                .decode(body)
                .expect("base64"),
        );
        assert_eq!(open_state(&as_state), None);
        let as_secret = format!(
            "{MARK}{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        );
        assert!(key.open_text(&as_secret).is_err());
    }

    #[test]
    fn only_secret_fields_are_sealed_and_they_open_only_with_their_key() {
        let key = SecretKey::generate();
        let mut def = json!({
            "name": "t",
            "config_schema": [{"name": "token", "type": "string", "secret": true}, {"name": "region", "type": "string"}],
            "config": {"token": "hunter2", "region": "eu"},
        });
        assert_eq!(seal_with(&mut def, &key), 1);
        let sealed = def["config"]["token"].as_str().expect("text").to_owned();
        assert!(
            sealed.starts_with(MARK) && !sealed.contains("hunter2"),
            "{sealed}"
        );
        assert_eq!(def["config"]["region"], "eu");
        // Sealing again leaves it; a second seal of the same text differs (random nonce).
        assert_eq!(seal_with(&mut def, &key), 0);
        assert_ne!(key.seal_text("hunter2"), key.seal_text("hunter2"));
        let other = SecretKey::generate();
        let err = open_with(&mut def.clone(), Some(&other)).expect_err("wrong key");
        assert!(err.to_string().contains("another key"), "{err}");
        let err = open_with(&mut def.clone(), None).expect_err("no key");
        assert!(err.to_string().contains("no key"), "{err}");
        open_with(&mut def, Some(&key)).expect("opens");
        assert_eq!(def["config"]["token"], "hunter2");
    }

    #[test]
    fn keys_read_back_from_their_text_and_bad_text_is_named() {
        let key = SecretKey::generate();
        assert_eq!(
            SecretKey::from_text(&format!(" {}\n", key.to_text())),
            Ok(key)
        );
        assert!(
            SecretKey::from_text("abc")
                .expect_err("short")
                .to_string()
                .contains("64 hex digits")
        );
        assert!(format!("{:?}", SecretKey::generate()) == "SecretKey(***)");
    }
}
