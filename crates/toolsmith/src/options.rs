//! What the long-running commands (`serve`, `mcp`, `chat`) share about running tools.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use toolsmith_exec::EngineConfig;

/// Whether processes run in the kernel sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum SandboxSwitch {
    /// Every process in its tool's policy (`workspace` when it gives none).
    #[default]
    On,
    /// No sandbox at all (for debugging): tools reach all this user can.
    Off,
}

/// How a long-running command (serve, mcp, chat) runs tool processes.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Do not put each call in its own pids cgroup.
    #[arg(long)]
    pub no_cgroups: bool,
    /// Start a fresh interpreter for every call of a Python script tool, except tools that
    /// say `warm: true`. By default those that do not say `warm: false` are forked from a
    /// resident interpreter (the warm runtime: a few ms instead of tens).
    #[arg(long)]
    pub cold_python: bool,
    /// The kernel sandbox (Landlock, seccomp) of tool processes, sessions and stdio
    /// upstreams; `off` only for debugging.
    #[arg(long, value_enum, default_value_t = SandboxSwitch::On)]
    pub sandbox: SandboxSwitch,
}

impl RunArgs {
    /// The engine's configuration for tools confined to `workspace`, with `protected` (and
    /// toolsmith's data folder) out of every sandboxed process's reach.
    pub fn engine_config(&self, workspace: &Path, protected: Vec<PathBuf>) -> EngineConfig {
        let mut config = EngineConfig::new(workspace);
        config.use_cgroups = !self.no_cgroups;
        config.warm_python = !self.cold_python;
        config.sandbox.enabled = self.sandbox == SandboxSwitch::On;
        config.sandbox.protected = protected_paths(protected);
        config
    }
}

/// What no sandboxed process may reach: toolsmith's data folder (registry, key, transcripts,
/// chat history; its runtime environment stays reachable) and `more`.
pub fn protected_paths(more: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out = vec![toolsmith_exec::runtime::data_dir()];
    out.extend(more);
    out
}

/// An SQLite registry's files (the database, its WAL, shared memory and journal); nothing
/// for a PostgreSQL address.
pub fn registry_files(address: &str) -> Vec<PathBuf> {
    if address.starts_with("postgres://") || address.starts_with("postgresql://") {
        return Vec::new();
    }
    let db = PathBuf::from(address);
    let mut out = vec![db.clone()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        out.push(PathBuf::from(name));
    }
    out
}

/// Says at start what the sandbox is on this kernel — loudly when it is off.
pub fn say_sandbox(engine: &toolsmith_exec::Engine) {
    let sandbox = engine.sandbox();
    if !sandbox.enabled() {
        say!(
            "WARNING: --sandbox off: tools, sessions and stdio upstreams run with everything this user can reach (the registry, tokens, other calls' folders)"
        );
        return;
    }
    say!("{}", sandbox.kernel().describe());
    for note in sandbox.notes() {
        say!("note: {note}");
    }
}

/// `serve`'s JWT identity: tokens from an organisation's OpenID provider (SPEC §14).
#[derive(Debug, clap::Args, Default)]
pub struct JwtArgs {
    /// Accept JWTs issued by this issuer (its `iss`); keys from its
    /// /.well-known/openid-configuration `jwks_uri` (or --jwks-url). https, or http on the
    /// loopback interface. Needs --jwt-audience.
    #[arg(long, value_name = "URL", requires = "jwt_audience")]
    pub jwt_issuer: Option<String>,
    /// The audience tokens must be for (their `aud`).
    #[arg(long, value_name = "AUD", requires = "jwt_issuer")]
    pub jwt_audience: Option<String>,
    /// Where the issuer's keys are (a JWK set), instead of its OpenID configuration.
    #[arg(long, value_name = "URL", requires = "jwt_issuer")]
    pub jwks_url: Option<String>,
    /// Algorithms accepted, comma-separated [default: RS256,ES256,EdDSA]. `none` never is;
    /// HS256 only with --jwt-hs256-secret-file.
    #[arg(
        long,
        value_name = "ALGS",
        value_delimiter = ',',
        requires = "jwt_issuer"
    )]
    pub jwt_algorithms: Vec<String>,
    /// A file holding the shared secret of HS256 tokens (accepts HS256 with it, and only it).
    #[arg(long, value_name = "FILE", requires = "jwt_issuer")]
    pub jwt_hs256_secret_file: Option<PathBuf>,
    /// The claim naming the caller.
    #[arg(long, value_name = "CLAIM", default_value = "sub")]
    pub jwt_name_claim: String,
    /// The claim giving the role (read, call or admin); without it, OAuth scopes
    /// toolsmith:read|call|admin decide.
    #[arg(long, value_name = "CLAIM", default_value = "toolsmith_role")]
    pub jwt_role_claim: String,
    /// The claim limiting the caller to toolsets (a list, or comma-separated names).
    #[arg(long, value_name = "CLAIM", default_value = "toolsmith_toolsets")]
    pub jwt_toolsets_claim: String,
    /// The least time between two fetches of the issuer's keys caused by tokens naming an
    /// unknown key, in seconds.
    #[arg(long, value_name = "S", default_value_t = 30)]
    pub jwks_refresh_interval: u64,
    /// The URL clients reach this server at (behind a proxy): for the OAuth protected
    /// resource metadata, and where authorization servers send browsers back when an
    /// `auth: oauth` upstream is connected (`/oauth/callback`; https also serves toolsmith's
    /// client metadata document) [default: http:// and the request's Host].
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
}

impl JwtArgs {
    /// The verifier, when an issuer is given; its keys are fetched now.
    pub async fn verifier(
        &self,
    ) -> anyhow::Result<Option<std::sync::Arc<toolsmith_gateway::jwt::JwtVerifier>>> {
        use anyhow::Context;
        use toolsmith_gateway::jwt::{JwtConfig, JwtVerifier, parse_algorithm};
        let (Some(issuer), Some(audience)) = (&self.jwt_issuer, &self.jwt_audience) else {
            return Ok(None);
        };
        let mut config = JwtConfig::new(issuer, audience);
        config.jwks_url = self.jwks_url.clone();
        if !self.jwt_algorithms.is_empty() {
            config.algorithms = self
                .jwt_algorithms
                .iter()
                .map(|a| parse_algorithm(a.trim()))
                .collect::<Result<_, _>>()
                .map_err(|e| anyhow::anyhow!("--jwt-algorithms: {e}"))?;
        }
        if let Some(file) = &self.jwt_hs256_secret_file {
            let secret = std::fs::read(file)
                .with_context(|| format!("--jwt-hs256-secret-file {}", file.display()))?;
            let secret = secret.trim_ascii().to_vec();
            if secret.len() < 32 {
                anyhow::bail!(
                    "--jwt-hs256-secret-file {}: the secret has {} bytes; HS256 needs at least 32",
                    file.display(),
                    secret.len()
                );
            }
            config.hs256_secret = Some(secret);
        } else if config.algorithms.contains(&jsonwebtoken_hs256()) {
            anyhow::bail!(
                "--jwt-algorithms: HS256 needs its shared secret (--jwt-hs256-secret-file)"
            );
        }
        config.name_claim = self.jwt_name_claim.clone();
        config.role_claim = self.jwt_role_claim.clone();
        config.toolsets_claim = self.jwt_toolsets_claim.clone();
        config.refresh_interval = std::time::Duration::from_secs(self.jwks_refresh_interval);
        let verifier = JwtVerifier::start(config)
            .await
            .map_err(anyhow::Error::msg)?;
        Ok(Some(std::sync::Arc::new(verifier)))
    }
}

/// HS256, named through the server crate's parser (the CLI does not depend on jsonwebtoken).
fn jsonwebtoken_hs256() -> toolsmith_gateway::jwt::Algorithm {
    toolsmith_gateway::jwt::Algorithm::HS256
}
