import { describe, expect, it } from 'vitest';
import { functionsOf, outcomeOf, starterProgram, unconfirmed } from './code';

const module = {
  module: 'tools.github',
  path: 'tools/github.py',
  source: 'from typing import Literal\n\n\ndef search_issues(*, q: str) -> dict:\n    """Search."""\n    return _call("github__search_issues", {"q": q})\n\n\nasync def search_issues_async(*, q: str) -> dict:\n    return await _acall("x", {})\n\n\ndef get_issue(*, n: int) -> dict:\n    return _call("y", {})\n',
};

describe('code mode', () => {
  it('finds the sync functions of a stub module, in order', () => {
    expect(functionsOf(module.source)).toEqual(['search_issues', 'get_issue']);
    expect(functionsOf('')).toEqual([]);
  });

  it('starts from a program that imports the first tool and prints its documentation', () => {
    const p = starterProgram([{ module: 'tools.empty', path: 'tools/empty.py', source: '' }, module]);
    expect(p).toContain('from tools.github import search_issues\n');
    expect(p).toContain('print(search_issues.__doc__)');
    expect(starterProgram([])).toContain('no tools');
  });

  it('reads what a program printed, returned and raised', () => {
    const meta = { tool: 'run_code', version: 1 };
    expect(outcomeOf({ success: true, data: { output: 'hi\n', cut: false, value: { n: 2 }, error: null }, meta })).toEqual({ output: 'hi\n', cut: false, value: { n: 2 } });
    expect(outcomeOf({ success: true, data: { output: '', cut: true, value: null, error: 'Traceback …\nToolError: no' }, meta })).toEqual({ output: '', cut: true, traceback: 'Traceback …\nToolError: no' });
    // Stopped by the sandbox: the kind and message, and what it printed before.
    const stopped = outcomeOf({ success: false, error: { kind: 'timeout', message: 'ran past 1000 ms', output: { stdout: 'tick\n', stderr: '' } } as never, meta });
    expect(stopped).toEqual({ output: 'tick\n', cut: false, stopped: { kind: 'timeout', message: 'ran past 1000 ms' } });
  });

  it('lists the dangerous tools a run was refused, once each', () => {
    const calls = [
      { tool: 'rm', outcome: 'needs_confirmation', duration_ms: 0 },
      { tool: 'ls', outcome: 'ok', duration_ms: 3 },
      { tool: 'rm', outcome: 'needs_confirmation', duration_ms: 0 },
      { tool: 'drop', outcome: 'needs_confirmation', duration_ms: 0 },
    ];
    expect(unconfirmed(calls)).toEqual(['rm', 'drop']);
    expect(unconfirmed([])).toEqual([]);
  });
});
