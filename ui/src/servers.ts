// What the Servers pages show, as pure functions (tested in servers.test.ts): a status's
// tone and words, an uptime, and a held change's differences as rows of before and after.

import type { Tone } from './Pill';
import type { Difference } from './api';

export type UpstreamStatus = 'starting' | 'ready' | 'failed' | 'stopped';

/** The colour of a status (always shown beside its word, never alone). */
export function statusTone(status: UpstreamStatus | undefined): Tone {
  switch (status) {
    case 'ready':
      return 'ok';
    case 'starting':
      return 'info';
    case 'failed':
      return 'danger';
    case 'stopped':
      return 'warn';
    default:
      return 'neutral';
  }
}

/** `status` for people: "not running here" when this server runs no upstream of the name. */
export function statusText(status: UpstreamStatus | undefined): string {
  return status ?? 'not running here';
}

/** A duration in milliseconds as "3 h 4 min", "2 min 5 s" or "12 s". */
export function uptime(ms: number | undefined): string {
  if (ms === undefined) return '—';
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${s % 60} s`;
  return `${s} s`;
}

/** One row of a change's diff: where, and the two sides as text. */
export interface DiffRow {
  path: string;
  before: string;
  after: string;
}

/** A value as it reads in a diff: strings as they are, anything else as JSON, absent as "—". */
export function sideText(v: unknown): string {
  if (v === undefined || v === null) return '—';
  if (typeof v === 'string') return v;
  return JSON.stringify(v, null, 2);
}

/** The rows of a change: its differences, path by path, in the server's order. */
export function diffRows(diff: Difference[]): DiffRow[] {
  return diff.map((d) => ({ path: d.path === '' ? '(the whole tool)' : d.path, before: sideText(d.from), after: sideText(d.to) }));
}

/** What a pending change is, in a few words: "description changed", "added", "removed". */
export function changeSummary(kind: string, diff: Difference[]): string {
  if (kind !== 'changed') return kind;
  const paths = diff.map((d) => d.path.split('.')[0] ?? d.path);
  const unique = [...new Set(paths)];
  return `${unique.join(', ')} changed`;
}
