// What the Overview says in words and bars, as pure functions (tested in overview.test.ts):
// the text alternative of the calls chart, and bar lengths relative to the largest.

import type { Overview } from './api';

/** The calls chart in words, for screen readers and as its caption. */
export function callsSummary(o: Overview): string {
  const minutes = o.window_ms / 60_000;
  const span = minutes >= 1440 ? 'day' : 'hour';
  if (o.total === 0) return `No calls in the last ${span}.`;
  const perBucket = o.buckets.map((_, i) => o.series.reduce((n, s) => n + (s.counts[i] ?? 0), 0));
  const peak = Math.max(...perBucket);
  const at = o.buckets[perBucket.indexOf(peak)] ?? 0;
  const failed = o.series.filter((s) => s.outcome !== 'ok').map((s) => `${s.counts.reduce((a, b) => a + b, 0)} ${s.outcome}`);
  const bucket = o.bucket_ms >= 3_600_000 ? `${o.bucket_ms / 3_600_000} h` : `${o.bucket_ms / 60_000} min`;
  return `${o.total} calls in the last ${span}, ${o.errors} failed${failed.length ? ` (${failed.join(', ')})` : ''}; the busiest ${bucket} had ${peak}, from ${new Date(at).toLocaleTimeString()}.`;
}

/** A bar's length in percent of the largest value (at least 1 % for anything above zero). */
export function barPercent(value: number, largest: number): number {
  if (largest <= 0 || value <= 0) return 0;
  return Math.max(1, Math.round((value / largest) * 100));
}

/** Milliseconds for people: "0.42 ms", "12 ms", "1.3 s". */
export function ms(v: number): string {
  if (v >= 1000) return `${(v / 1000).toFixed(1)} s`;
  if (v >= 10) return `${Math.round(v)} ms`;
  return `${v.toFixed(2)} ms`;
}
