import { describe, expect, it } from 'vitest';
import { definitionOf, fieldsOf, snippets } from './toolsets';

describe('the toolset editor', () => {
  it('writes only the keys given, and reads them back', () => {
    const def = definitionOf({ name: ' ops ', description: '', names: 'gh_*, read_*', tags: '', kinds: ['http'], servers: '', exclude_names: '', exclude_tags: 'admin', discovery: 'search' });
    expect(def).toEqual({ name: 'ops', include: { names: ['gh_*', 'read_*'], kinds: ['http'] }, exclude: { tags: ['admin'] }, discovery: 'search' });
    expect(fieldsOf(def).names).toBe('gh_*, read_*');
    expect(definitionOf(fieldsOf(def))).toEqual(def);
    // Nothing given: every tool.
    expect(definitionOf(fieldsOf(null)).include).toEqual({});
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
