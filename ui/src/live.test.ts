import { describe, expect, it } from 'vitest';
import { splitEvents } from './live';

describe('server-sent events', () => {
  it('splits complete events and keeps the rest, comments and CRLF included', () => {
    const seen: [string, string][] = [];
    const rest = splitEvents(': keep-alive\r\n\r\nevent: changed\r\ndata: {"generation":1}\r\n\r\nevent: chan', (n, d) => seen.push([n, d]));
    expect(seen).toEqual([['changed', '{"generation":1}']]);
    expect(rest).toBe('event: chan');
    const more = splitEvents(rest + 'ged\ndata: {"generation":2}\n\n', (n, d) => seen.push([n, d]));
    expect(seen[1]).toEqual(['changed', '{"generation":2}']);
    expect(more).toBe('');
  });
});
