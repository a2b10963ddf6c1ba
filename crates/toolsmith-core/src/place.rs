//! What the executors' parameter places share (`command`'s in [`crate::command`], `http`'s in
//! [`crate::http`]): how an array value is written.

use serde::Serialize;

/// How an array argument is written where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArrayStyle {
    /// `--file a --file b`
    Repeat,
    /// `a b c` as separate arguments (after the option name for options)
    Separate,
    /// `a,b,c` as one value
    Join,
}
