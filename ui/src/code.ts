// Code mode in the console: what a toolset's stubs offer, a starting program, and what a
// program's run says — its output, value or traceback, and the tool calls it made in order.
// Pure functions; the playground (pages/CodePlayground.tsx) draws them.

import type { InnerCall, StubModule, ToolResult } from './api';

/** The functions a module defines (its sync forms; each has an `_async` twin). */
export function functionsOf(source: string): string[] {
  return [...source.matchAll(/^def ([A-Za-z_][A-Za-z0-9_]*)\(/gm)].flatMap((m) => (m[1] ? [m[1]] : []));
}

/** A program that runs as it stands: imports the first function it finds and prints its
 * documentation — or says there is nothing to call. */
export function starterProgram(modules: StubModule[]): string {
  for (const m of modules) {
    const f = functionsOf(m.source)[0];
    if (f) {
      return [
        `# Each tool of this toolset is a Python function: see the stubs. A call goes through`,
        `# the gateway as yours (checked, confirmed if dangerous, in the run log).`,
        `from ${m.module} import ${f}`,
        ``,
        `print(${f}.__doc__)`,
        `# result = ${f}(...)`,
        `# result  # the last expression is the program's value`,
        ``,
      ].join('\n');
    }
  }
  return '# This toolset has no tools to call yet.\nprint("hello")\n';
}

/** What a program printed and returned, when it ran to its end (`data`), or why the sandbox
 * stopped it (`stopped`). */
export interface Outcome {
  output: string;
  /** True when the output was cut to the cap (the output says so too). */
  cut: boolean;
  /** The value of the last expression (absent when it was None). */
  value?: unknown;
  /** The traceback of the exception that ended it. */
  traceback?: string;
  /** The program did not run to its end: the error's kind and message. */
  stopped?: { kind: string; message: string };
}

export function outcomeOf(result: ToolResult): Outcome {
  const d = result.data as { output?: unknown; cut?: unknown; value?: unknown; error?: unknown } | undefined;
  if (result.success && d && typeof d === 'object') {
    return {
      output: typeof d.output === 'string' ? d.output : '',
      cut: d.cut === true,
      ...(d.value === null || d.value === undefined ? {} : { value: d.value }),
      ...(typeof d.error === 'string' && d.error ? { traceback: d.error } : {}),
    };
  }
  const e = result.error ?? { kind: 'internal', message: 'no result' };
  const streams = (e as { output?: { stdout?: unknown } }).output;
  return {
    output: typeof streams?.stdout === 'string' ? streams.stdout : '',
    cut: false,
    stopped: { kind: e.kind, message: e.message },
  };
}

/** The dangerous tools a run was refused because nobody confirmed them (each once, in
 * order) — what "Confirm and run again" offers. */
export function unconfirmed(calls: InnerCall[]): string[] {
  return [...new Set(calls.filter((c) => c.outcome === 'needs_confirmation').map((c) => c.tool))];
}
