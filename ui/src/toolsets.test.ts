import { describe, expect, it } from 'vitest';
import { definitionOf, fieldsOf, snippets } from './toolsets';

describe('the toolset editor', () => {
  it('writes only the keys given, and reads them back', () => {
    const def = definitionOf({ name: ' ops ', description: '', names: 'gh_*, read_*', tags: '', kinds: ['http'], servers: '', prompts: '', resources: '', exclude_names: '', exclude_tags: 'admin', discovery: 'search' });
    expect(def).toEqual({ name: 'ops', include: { names: ['gh_*', 'read_*'], kinds: ['http'] }, exclude: { tags: ['admin'] }, discovery: 'search' });
    expect(fieldsOf(def).names).toBe('gh_*, read_*');
    expect(definitionOf(fieldsOf(def))).toEqual(def);
    // Code mode is kept as given.
    const code = definitionOf({ ...fieldsOf(def), discovery: 'code' });
    expect(code.discovery).toBe('code');
    expect(fieldsOf(code).discovery).toBe('code');
    // Nothing given: every tool.
    expect(definitionOf(fieldsOf(null)).include).toEqual({});
  });

  it('keeps the selectors and keys it does not show, and picks prompts and resources', () => {
    const base = {
      name: 'docs',
      include: [{ servers: ['docs'], danger: 'safe' as const }, { prompts: ['docs__*'] }],
      exclude: [{ names: ['rm_*'], kinds: ['command'] }, { resources: ['secret://*'] }],
    };
    const fields = { ...fieldsOf(base), resources: 'file:///docs/*', exclude_names: '' };
    expect(definitionOf(fields, base)).toEqual({
      name: 'docs',
      include: [{ servers: ['docs'], danger: 'safe', resources: ['file:///docs/*'] }, { prompts: ['docs__*'] }],
      exclude: [{ kinds: ['command'] }, { resources: ['secret://*'] }],
    });
    // An exclude left with nothing is dropped, not kept empty (which would take out everything).
    const single = { name: 's', include: {}, exclude: { names: ['x'] } };
    expect(definitionOf({ ...fieldsOf(single), exclude_names: '' }, single).exclude).toBeUndefined();
  });

  it('gives each client its configuration, with a token header when the server asks for one', () => {
    const url = 'http://127.0.0.1:7700/mcp/ops';
    const open = snippets('ops', url, false);
    expect(open.map((s) => s.label)).toEqual(['Claude Desktop', 'Claude Code', 'Cursor', 'VS Code']);
    expect(JSON.parse(open[3]!.text)).toEqual({ servers: { 'toolsmith-ops': { type: 'http', url } } });
    expect(open[1]!.text).toBe(`claude mcp add --transport http toolsmith-ops ${url}`);
    const closed = snippets('ops', url, true);
    expect(JSON.parse(closed[2]!.text).mcpServers['toolsmith-ops'].headers).toEqual({ Authorization: 'Bearer YOUR_TOKEN' });
  });
});
