import { describe, expect, it } from 'vitest';
import { changeSummary, diffRows, sideText, statusText, statusTone, uptime } from './servers';

describe('servers', () => {
  it('gives each status a tone and words', () => {
    expect(statusTone('ready')).toBe('ok');
    expect(statusTone('failed')).toBe('danger');
    expect(statusTone('starting')).toBe('info');
    expect(statusTone(undefined)).toBe('neutral');
    expect(statusText(undefined)).toBe('not running here');
    expect(statusText('failed')).toBe('failed');
  });

  it('reads uptimes', () => {
    expect(uptime(undefined)).toBe('—');
    expect(uptime(12_400)).toBe('12 s');
    expect(uptime(125_000)).toBe('2 min 5 s');
    expect(uptime(3 * 3600_000 + 4 * 60_000)).toBe('3 h 4 min');
  });

  it('lays a change out side by side', () => {
    const rows = diffRows([
      { path: 'description', from: 'Answers pong.', to: 'Answers PONG.' },
      { path: 'inputSchema.properties.loud', from: { type: 'boolean' }, to: undefined },
      { path: '', from: null, to: { name: 'x' } },
    ]);
    expect(rows[0]).toEqual({ path: 'description', before: 'Answers pong.', after: 'Answers PONG.' });
    expect(rows[1]!.before).toBe('{\n  "type": "boolean"\n}');
    expect(rows[1]!.after).toBe('—');
    expect(rows[2]!.path).toBe('(the whole tool)');
    expect(sideText(3)).toBe('3');
  });

  it('sums a change up', () => {
    expect(changeSummary('added', [])).toBe('added');
    expect(
      changeSummary('changed', [
        { path: 'description', from: 'a', to: 'b' },
        { path: 'inputSchema.properties.q', from: 1, to: 2 },
        { path: 'inputSchema.required', from: 1, to: 2 },
      ]),
    ).toBe('description, inputSchema changed');
  });
});
