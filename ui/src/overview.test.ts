import { describe, expect, it } from 'vitest';
import type { Overview } from './api';
import { barPercent, callsSummary, ms } from './overview';

const base: Overview = {
  window_ms: 3_600_000,
  bucket_ms: 60_000,
  buckets: [0, 60_000, 120_000],
  series: [
    { outcome: 'ok', counts: [1, 5, 0] },
    { outcome: 'timeout', counts: [0, 2, 0] },
  ],
  total: 8,
  errors: 2,
  busiest: [],
  failing: [],
  warm_cold: { warm: 0, cold: 0 },
  upstreams: [],
  truncated: false,
};

describe('overview', () => {
  it('says the calls chart in words', () => {
    const text = callsSummary(base);
    expect(text).toContain('8 calls in the last hour, 2 failed (2 timeout)');
    expect(text).toContain('the busiest 1 min had 7');
    expect(callsSummary({ ...base, total: 0, window_ms: 86_400_000 })).toBe('No calls in the last day.');
  });
  it('sizes bars and reads durations', () => {
    expect(barPercent(5, 10)).toBe(50);
    expect(barPercent(0.01, 100)).toBe(1);
    expect(barPercent(3, 0)).toBe(0);
    expect(ms(0.421)).toBe('0.42 ms');
    expect(ms(12.4)).toBe('12 ms');
    expect(ms(1340)).toBe('1.3 s');
  });
});
