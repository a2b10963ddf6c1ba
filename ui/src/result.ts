// What a ToolResult shows: the process's output streams (from a command's data, or from an
// error's output), structured data, and the facts of `meta`. Pure functions.

import type { Guardrails, ToolResult } from './api';

export interface Streams {
  stdout: string;
  stderr: string;
}

function streamsIn(v: unknown): Streams | undefined {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o.stdout === 'string' && typeof o.stderr === 'string') {
    return { stdout: o.stdout, stderr: o.stderr };
  }
  return undefined;
}

/** The output streams, when the result has them (command tools, or a failed process). */
export function streamsOf(r: ToolResult): Streams | undefined {
  const error = r.error as (ToolResult['error'] & { output?: unknown }) | undefined;
  return streamsIn(r.data) ?? streamsIn(error?.output);
}

/** Structured data worth a tree: anything but a command's `{stdout, stderr, exit_code}`. */
export function structuredData(r: ToolResult): unknown {
  if (!r.success || r.data === undefined) return undefined;
  return streamsIn(r.data) ? undefined : r.data;
}

/** The `…[N bytes omitted]…` marker the engine puts where output was cut. */
export const OMITTED = /…\[(\d+) bytes omitted\]…/;

/** Where a stream was cut, if it was: the number of bytes left out. */
export function omittedBytes(text: string): number | undefined {
  const m = OMITTED.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** `12.3 ms`, `1.20 s`. */
export function duration(ms: number | undefined): string {
  if (ms === undefined) return '—';
  return ms < 1000 ? `${ms.toFixed(1)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** A one-line summary: `ok in 12.3 ms` or `timeout after 30.00 s`. */
export function summary(r: ToolResult): string {
  const took = duration(r.meta.duration_ms);
  return r.success ? `ok in ${took}` : `${r.error?.kind ?? 'error'} after ${took}`;
}

/** What the result guardrails did, in words: `scrubbed aws_access_key ×1; cut 50.0 MiB → 1.0 MiB`; `—` for nothing. */
export function guardrailsText(g: Guardrails | undefined): string {
  if (!g) return '—';
  const parts: string[] = [];
  const scrubbed = Object.entries(g.scrubbed ?? {});
  if (scrubbed.length > 0) parts.push(`scrubbed ${scrubbed.map(([rule, n]) => `${rule} ×${n}`).join(', ')}`);
  if (g.cut) parts.push(`cut ${bytes(g.cut.from_bytes)} → ${bytes(g.cut.to_bytes)} (max_result_bytes ${g.cut.max_result_bytes})`);
  return parts.length > 0 ? parts.join('; ') : '—';
}

/** `1.5 KiB` and so on. */
export function bytes(n: number | undefined): string {
  if (n === undefined) return '—';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
