//! Script tools: the interpreter resolved (pyenv shims included), the source written to its
//! content-addressed file, and Python scripts run warm unless they or the engine say not to.

use super::*;
use toolsmith_core::model::Script;

impl Engine {
    /// Runs a script tool: its interpreter on its file, the arguments as JSON on stdin.
    pub(crate) async fn run_script(
        &self,
        t: &Tool,
        s: &Script,
        mut invocation: Process,
        meta: Meta,
        talk: Option<Arc<crate::talk::Talk>>,
    ) -> ToolResult {
        let interpreter = match self.scripts.interpreter(&s.interpreter) {
            Ok(p) => p,
            Err(e) => return ToolResult::err(ErrorKind::SpawnFailed, e, Vec::new(), meta),
        };
        let file = match self.scripts.file(&s.source, &s.interpreter) {
            Ok(p) => p,
            Err(e) => {
                return ToolResult::err(
                    ErrorKind::Internal,
                    format!("writing the script: {e}"),
                    Vec::new(),
                    meta,
                );
            }
        };
        invocation.argv = vec![
            interpreter.to_string_lossy().into_owned(),
            file.to_string_lossy().into_owned(),
        ];
        let base = Path::new(&s.interpreter)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let python = base
            .starts_with("python")
            .then(|| (interpreter, file, self.runs_warm(t)));
        let warm = python.as_ref().is_some_and(|p| p.2);
        tracing::Span::current().record("runtime", if warm { "warm" } else { "cold" });
        self.spawn(t, invocation, python, meta, talk).await
    }
}
