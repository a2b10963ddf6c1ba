import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, allows, api, errorOf, token } from './api';

afterEach(() => {
  vi.unstubAllGlobals();
  token.set(null);
});

function respond(status: number, body: string, type = 'application/json') {
  return vi.fn(async () => new Response(body, { status, headers: { 'content-type': type } }));
}

describe('the API client', () => {
  it('reads the error shape into an ApiError', async () => {
    const e = await errorOf(
      new Response(JSON.stringify({ error: { code: 'conflict', message: 'tool "x" is at version 3', current_version: 3 } }), { status: 409 }),
    );
    expect(e).toBeInstanceOf(ApiError);
    expect([e.status, e.code, e.message, e.currentVersion]).toEqual([409, 'conflict', 'tool "x" is at version 3', 3]);
  });

  it('keeps a body that is not JSON as the message', async () => {
    const e = await errorOf(new Response('bad gateway', { status: 502, statusText: 'Bad Gateway' }));
    expect([e.status, e.code, e.message]).toEqual([502, 'error', 'bad gateway']);
  });

  it('sends the token and says when one is needed', async () => {
    const fetch = respond(401, JSON.stringify({ error: { code: 'unauthorized', message: 'a valid bearer token is required' } }));
    vi.stubGlobal('fetch', fetch);
    token.set('s3cret-token');
    const e = await api.whoami().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).needsToken).toBe(true);
    const init = fetch.mock.calls[0] as unknown as [string, RequestInit];
    expect(init[0]).toBe('/v1/whoami');
    expect((init[1].headers as Record<string, string>).authorization).toBe('Bearer s3cret-token');
  });

  it('builds queries without empty parameters and posts JSON bodies', async () => {
    const fetch = respond(200, JSON.stringify({ tools: [], next_cursor: null }));
    vi.stubGlobal('fetch', fetch);
    await api.tools({ q: 'git', tag: '', limit: 50, cursor: null, include_disabled: false });
    expect((fetch.mock.calls[0] as unknown as [string])[0]).toBe('/v1/tools?q=git&limit=50');
    await api.call('x y', '{"a": 1}', true);
    const [url, init] = fetch.mock.calls[1] as unknown as [string, RequestInit];
    expect(url).toBe('/v1/tools/x%20y/call');
    expect(JSON.parse(init.body as string)).toEqual({ arguments: '{"a": 1}', confirm: true });
  });

  it('reports an unreachable server plainly', async () => {
    vi.stubGlobal('fetch', vi.fn(async () => { throw new TypeError('Failed to fetch'); }));
    const e = (await api.whoami().catch((x: unknown) => x)) as ApiError;
    expect([e.status, e.code]).toEqual([0, 'unreachable']);
  });

  it('ranks roles', () => {
    expect(allows('admin', 'call')).toBe(true);
    expect(allows('read', 'call')).toBe(false);
    expect(allows(undefined, 'read')).toBe(false);
  });
});
