//! Command tools (SPEC §5, §5.2): what a `command` executor declares — the program and its
//! fixed arguments — and where each parameter goes on the command line (an argument, an
//! option, stdin or an environment variable). The places belong to the executor, not to the
//! shared [`Parameter`](crate::model::Parameter), so a request's place (`http`'s `header`,
//! `query`, …) cannot be given to a command's parameter.
//!
//! Reading it from a catalog is in `catalog::executor::command`, the process a call starts in
//! `plan::command`.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Serialize;

use crate::place::ArrayStyle;

/// `command: [exe, fixed args...]`, run directly, never through a shell.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Command {
    /// The program, then the fixed arguments.
    pub argv: Vec<String>,
    /// Each parameter's place, by parameter name; a parameter not named here is a
    /// positional argument ([`CommandPlace::default`]).
    pub places: BTreeMap<String, CommandPlace>,
}

impl Command {
    /// A command whose parameters are all positional arguments.
    pub fn new(argv: Vec<String>) -> Self {
        Self {
            argv,
            places: BTreeMap::new(),
        }
    }

    /// Where the parameter `name` goes.
    pub fn place(&self, name: &str) -> &CommandPlace {
        static ARGUMENT: LazyLock<CommandPlace> = LazyLock::new(CommandPlace::default);
        self.places.get(name).unwrap_or(&ARGUMENT)
    }
}

/// The catalog form is the argv alone (`command: [git, log]`); each place is written on its
/// parameter (see [`crate::model::Tool::to_catalog_value`]).
impl Serialize for Command {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.argv.serialize(s)
    }
}

/// How a parameter reaches a command (SPEC §5.2).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct CommandPlace {
    #[serde(skip_serializing_if = "InjectAs::is_default")]
    pub inject_as: InjectAs,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option_name: Option<String>,
    #[serde(skip_serializing_if = "OptionStyle::is_default")]
    pub option_style: OptionStyle,
    /// `None` means the default for the injection: `flag` for options, `value` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boolean_style: Option<BooleanStyle>,
    /// `None` means the default: `repeat` for options, `separate` for arguments, `join`
    /// for env.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub array_style: Option<ArrayStyle>,
    /// For `array_style: join`; `,` when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
    /// For `inject_as: env`; the upper-cased name when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_name: Option<String>,
    /// For `inject_as: env`: the operator accepts that the model's value sets a variable
    /// that changes how programs load or start (`LD_PRELOAD`, `PYTHONPATH`, …), which the
    /// catalog otherwise refuses.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_dangerous_env: bool,
}

/// Where on the command line a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectAs {
    #[default]
    Argument,
    Option,
    Stdin,
    Env,
}

impl InjectAs {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionStyle {
    /// `--name value`
    #[default]
    Separate,
    /// `--name=value`
    Equals,
}

impl OptionStyle {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BooleanStyle {
    /// The option alone when true, nothing when false.
    Flag,
    /// `true` / `false` as text.
    Value,
}
