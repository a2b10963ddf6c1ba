import { describe, expect, it } from 'vitest';
import { changeSummary, diffRows, emptyServer, fieldName, importRows, needsValues, serverDefinition, sideText, statusText, statusTone, unfilledFields, uptime, visible, withTags, withValues } from './servers';

describe('servers', () => {
  it('spells out what a reviewer would not see, as the server does', () => {
    expect(visible('a\u200bb')).toBe('a⟨U+200B⟩b');
    expect(visible('\u001b[2Kx')).toBe('⟨ESC⟩[2Kx');
    const tagged = [...'hi'].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
    expect(visible(`ok${tagged}.`)).toBe('ok⟨tags:"hi"⟩.');
    expect(visible('plain — ünïcode\n\ttab')).toBe('plain — ünïcode\n\ttab');
    expect(diffRows([{ path: 'description', from: 'a', to: 'a\u202eb' }])[0]!.after).toBe('a⟨U+202E⟩b');
  });

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

describe('the Add server form', () => {
  it('makes a stdio definition with a secret variable', () => {
    const def = serverDefinition({
      ...emptyServer(),
      name: ' gh ',
      prefix: 'git',
      command: ['npx', ' -y ', '', '@modelcontextprotocol/server-github'],
      env: [
        { key: 'LOG_LEVEL', value: 'info', secret: false },
        { key: 'GITHUB_TOKEN', value: 'ghp_x', secret: true },
        { key: ' ', value: 'ignored', secret: false },
      ],
    });
    expect(def).toEqual({
      name: 'gh',
      prefix: 'git',
      command: ['npx', '-y', '@modelcontextprotocol/server-github'],
      env_allowlist: ['PATH', 'HOME', 'LANG'],
      env: { LOG_LEVEL: 'info' },
      config_schema: [{ name: 'github_token', secret: true, env_name: 'GITHUB_TOKEN' }],
      config: { github_token: 'ghp_x' },
    });
  });

  it('makes an http definition with a secret header', () => {
    const def = serverDefinition({
      ...emptyServer(),
      kind: 'http',
      name: 'web',
      url: ' https://mcp.example/mcp ',
      headers: [
        { key: 'Authorization', value: 'Bearer t0k', secret: true },
        { key: 'X-Team', value: 'a', secret: false },
      ],
    });
    expect(def).toEqual({
      name: 'web',
      url: 'https://mcp.example/mcp',
      headers: { Authorization: '{authorization}', 'X-Team': 'a' },
      config_schema: [{ name: 'authorization', secret: true }],
      config: { authorization: 'Bearer t0k' },
    });
    expect(fieldName('X-Api-Key')).toBe('x_api_key');
  });

  it('makes an OAuth server, shared or each user\'s own', () => {
    const base = { ...emptyServer(), kind: 'http' as const, name: 'notion', url: 'https://mcp.notion.com/mcp' };
    expect(serverDefinition({ ...base, auth: 'oauth' })).toEqual({ name: 'notion', url: 'https://mcp.notion.com/mcp', auth: 'oauth' });
    expect(serverDefinition({ ...base, auth: 'oauth_per_user' }).auth).toEqual({ type: 'oauth', connection: 'per_user' });
    expect(serverDefinition({ ...base, auth: 'none' }).auth).toBeUndefined();
  });

  it('finds the config fields a definition still waits for, and fills them in', () => {
    const def = {
      name: 'acme',
      command: ['acme-mcp', '--region', '{region}'],
      env: { ACME_KEY: '{api_key}' },
      config_schema: [
        { name: 'region', description: 'Which region' },
        { name: 'api_key', secret: true },
        { name: 'unused' },
        { name: 'token', secret: true },
      ],
      config: { token: '***' },
    };
    expect(unfilledFields(def)).toEqual([
      { name: 'region', description: 'Which region', secret: false },
      { name: 'api_key', description: undefined, secret: true },
    ]);
    const filled = withValues(def, { region: 'eu', api_key: 'k' });
    expect(filled.config).toEqual({ token: '***', region: 'eu', api_key: 'k' });
    expect(unfilledFields(filled)).toEqual([]);
  });

  it('tells a definition that still names a variable', () => {
    expect(needsValues({ config: { token: '${GH}' } })).toBe(true);
    expect(needsValues({ config: { token: 'abc' } })).toBe(false);
  });
});

describe('the OpenAPI import preview', () => {
  const answer = {
    tools: [
      { name: 'api_get_issue', danger: 'safe', tags: ['issues'], http: { method: 'GET', url: 'http://x/repos/{owner}' } },
      { name: 'api_create_item', danger: 'dangerous', tags: ['items'], http: { method: 'POST', url: 'http://x/items' } },
      { name: 'api_text', http: { url: 'http://x/text' } },
    ],
    updated: ['api_create_item'],
    unchanged: ['api_text'],
  };
  it('makes a row per tool, saying what is new', () => {
    const rows = importRows(answer);
    expect(rows.map((r) => [r.name, r.method, r.state, r.danger])).toEqual([
      ['api_get_issue', 'GET', 'new', 'safe'],
      ['api_create_item', 'POST', 'changed', 'dangerous'],
      ['api_text', 'GET', 'unchanged', 'safe'],
    ]);
  });
  it('selects by tag', () => {
    expect(withTags(importRows(answer), ['items'])).toEqual(['api_create_item']);
    expect(withTags(importRows(answer), [])).toEqual([]);
  });
});
