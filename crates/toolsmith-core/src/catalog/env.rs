//! Which environment variables a model's argument may set (`inject_as: env`).
//!
//! A parameter injected as a variable hands its name to the model's value. Three kinds of
//! names are refused for it, each with a message naming the rule:
//! - a variable the operator already sets: a config field (above all a secret one), the
//!   tool's `env`, or one passed through from the server's environment by `env_allowlist`
//!   (`PATH`, `HOME`, …) — the model's value would silently replace the operator's;
//! - a variable that changes how programs are found, loaded or started ([`dangerous`]):
//!   `LD_PRELOAD` runs code of the model's choosing in the tool, `PYTHONPATH` or
//!   `NODE_OPTIONS` in its interpreter, `GIT_SSH_COMMAND` in git — unless the parameter says
//!   `allow_dangerous_env: true`.

use std::collections::BTreeMap;

use crate::command::{Command, InjectAs};
use crate::form::{Errs, Fields};
use crate::model::{Parameter, default_env_name};

/// A mapping's `env_allowlist`, each entry naming one of the gateway's own secrets refused
/// ([`crate::sandbox::GATEWAY_VARIABLES`]).
pub(super) fn read_allowlist(f: &Fields, e: &mut Errs) -> Option<Vec<String>> {
    let list = f.strings("env_allowlist", e)?;
    for (i, name) in list.iter().enumerate() {
        if let Err(why) = crate::sandbox::check_allowlisted(name) {
            e.push(&format!("{}[{i}]", f.at("env_allowlist")), why);
        }
    }
    Some(list)
}

/// Names that change how a program is found, loaded or started, each with the reason: exact
/// names, then prefixes (ending in `_` or `*`).
const DANGEROUS: &[(&str, &str)] = &[
    ("PATH", "decides which program runs"),
    (
        "HOME",
        "decides which configuration files programs read (.gitconfig, .bashrc, …)",
    ),
    (
        "XDG_CONFIG_HOME",
        "decides which configuration files programs read",
    ),
    ("LD_*", "makes the dynamic loader run other code"),
    ("DYLD_*", "makes the dynamic loader run other code"),
    ("GCONV_PATH", "makes glibc load other code"),
    ("LOCPATH", "makes glibc read other locale data"),
    ("NLSPATH", "makes programs read other message catalogs"),
    ("BASH_ENV", "runs a file in every bash script"),
    ("ENV", "runs a file in every sh script"),
    ("BASH_FUNC_*", "defines bash functions"),
    ("SHELLOPTS", "changes how bash runs scripts"),
    ("BASHOPTS", "changes how bash runs scripts"),
    ("PS4", "is run by bash when tracing"),
    ("PROMPT_COMMAND", "is run by interactive bash"),
    ("IFS", "changes how shells split words"),
    ("ZDOTDIR", "decides which files zsh runs"),
    ("SHELL", "decides which shell programs start"),
    ("EDITOR", "decides which program is started to edit"),
    ("VISUAL", "decides which program is started to edit"),
    ("PAGER", "decides which program pages output"),
    ("LESSOPEN", "runs a command when less opens a file"),
    ("LESSCLOSE", "runs a command when less closes a file"),
    (
        "PYTHON*",
        "changes how Python starts (PYTHONPATH, PYTHONSTARTUP, …)",
    ),
    ("NODE_OPTIONS", "changes how Node starts (--require)"),
    ("NODE_PATH", "decides which modules Node loads"),
    (
        "NPM_CONFIG_*",
        "changes npm's configuration (scripts, registry)",
    ),
    ("PERL5OPT", "changes how Perl starts"),
    ("PERL5LIB", "decides which modules Perl loads"),
    ("PERLLIB", "decides which modules Perl loads"),
    ("RUBYOPT", "changes how Ruby starts"),
    ("RUBYLIB", "decides which libraries Ruby loads"),
    ("JAVA_TOOL_OPTIONS", "changes how the JVM starts (agents)"),
    ("_JAVA_OPTIONS", "changes how the JVM starts (agents)"),
    ("JDK_JAVA_OPTIONS", "changes how the JVM starts (agents)"),
    ("CLASSPATH", "decides which classes the JVM loads"),
    (
        "GIT_*",
        "changes which programs and configuration git uses (GIT_SSH_COMMAND, GIT_CONFIG_*, GIT_DIR, …)",
    ),
];

/// Harmless names under a dangerous prefix.
const HARMLESS: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
];

/// Why a model's value must not set `name`, when it must not.
pub fn dangerous(name: &str) -> Option<&'static str> {
    if HARMLESS.contains(&name) {
        return None;
    }
    DANGEROUS.iter().find_map(|(pattern, why)| {
        let hit = match pattern.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == *pattern,
        };
        hit.then_some(*why)
    })
}

/// Checks the variables a tool's parameters set (see the module's rules).
pub(super) fn check_targets(
    params: &[Parameter],
    command: &Command,
    config_schema: &[Parameter],
    env: &BTreeMap<String, String>,
    allowlist: &[String],
    f: &Fields<'_>,
    e: &mut Errs,
) {
    let env_name = |name: &str, given: &Option<String>| {
        given.clone().unwrap_or_else(|| default_env_name(name))
    };
    for (i, p) in params
        .iter()
        .enumerate()
        .filter(|(_, p)| command.place(&p.name).inject_as == InjectAs::Env)
    {
        let place = command.place(&p.name);
        let name = env_name(&p.name, &place.env_name);
        let at = format!("{}[{i}].env_name", f.at("parameters"));
        let clash = if let Some(c) = config_schema
            .iter()
            .find(|c| env_name(&c.name, &c.env_name) == name)
        {
            Some(format!(
                "{}config field {:?}",
                if c.secret { "the secret " } else { "" },
                c.name
            ))
        } else if env.contains_key(&name) {
            Some("the tool's `env`".to_string())
        } else if allowlist.contains(&name) {
            Some("the server's environment (`env_allowlist`)".to_string())
        } else {
            None
        };
        if let Some(clash) = clash {
            e.push(
                &at,
                format!(
                    "environment variable {name:?} is already set by {clash}; a model's argument would replace it. \
                     Give the parameter another env_name"
                ),
            );
        } else if let Some(why) = dangerous(&name)
            && !place.allow_dangerous_env
        {
            e.push(
                &at,
                format!(
                    "a model's argument may not set environment variable {name:?}: it {why}. \
                     Give the parameter another env_name, or say `allow_dangerous_env: true` if the model may decide it"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::dangerous;

    #[test]
    fn the_gateways_own_secrets_cannot_be_allowlisted() {
        let text = "defaults: {env_allowlist: [TOOLSMITH_TOKEN]}\ntools:\n  - {name: t, description: d, command: [true], env_allowlist: [PATH, TOOLSMITH_SECRET_KEY]}\nmcp_servers:\n  - {name: s, command: [x], env_allowlist: [TOOLSMITH_DB]}\n";
        let errors = crate::catalog::load("c.yaml", &crate::catalog::TextSource(text.into()))
            .expect_err("refused")
            .to_string();
        for needle in [
            "defaults.env_allowlist[0]: TOOLSMITH_TOKEN is the gateway's own secret",
            "env_allowlist[1]: TOOLSMITH_SECRET_KEY is the gateway's own secret",
            "env_allowlist[0]: TOOLSMITH_DB is the gateway's own secret",
        ] {
            assert!(errors.contains(needle), "{needle} not in {errors}");
        }
    }

    #[test]
    fn dangerous_names_by_exact_name_and_prefix() {
        for name in [
            "PATH",
            "LD_PRELOAD",
            "LD_AUDIT",
            "BASH_ENV",
            "ENV",
            "PYTHONPATH",
            "NODE_OPTIONS",
            "PERL5OPT",
            "GIT_SSH_COMMAND",
            "GIT_CONFIG_KEY_0",
            "BASH_FUNC_x%%",
        ] {
            assert!(dangerous(name).is_some(), "{name}");
        }
        for name in [
            "MODE",
            "ENVIRONMENT",
            "PATHS",
            "GIT_AUTHOR_NAME",
            "PYTHONUNBUFFERED",
            "LANG",
        ] {
            assert!(dangerous(name).is_none(), "{name}");
        }
    }
}
