// Toolsets in the editor's terms: the form's fields from a definition and back, and how MCP
// clients are told about a toolset's endpoint.

import type { Selector, ToolsetDef } from './api';

export const KINDS = ['command', 'script', 'builtin', 'mcp', 'http'];

/** Words separated by commas or spaces. */
function words(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((w) => w.trim())
    .filter(Boolean);
}

/** The first selector of a definition (the editor edits one include and one exclude). */
function first(s: Selector | Selector[] | undefined): Selector {
  return (Array.isArray(s) ? s[0] : s) ?? {};
}

/** How MCP clients are told about a toolset's endpoint. */
export function snippets(name: string, url: string, withToken: boolean): { key: string; label: string; text: string }[] {
  const id = `toolsmith-${name}`;
  const headers = withToken ? { Authorization: 'Bearer YOUR_TOKEN' } : undefined;
  const json = (v: unknown) => JSON.stringify(v, null, 2);
  return [
    {
      key: 'claude-desktop',
      label: 'Claude Desktop',
      text: json({ mcpServers: { [id]: { command: 'npx', args: ['mcp-remote', url, ...(withToken ? ['--header', 'Authorization: Bearer YOUR_TOKEN'] : [])] } } }),
    },
    {
      key: 'claude-code',
      label: 'Claude Code',
      text: `claude mcp add --transport http ${id} ${url}${withToken ? ' --header "Authorization: Bearer YOUR_TOKEN"' : ''}`,
    },
    { key: 'cursor', label: 'Cursor', text: json({ mcpServers: { [id]: { url, ...(headers ? { headers } : {}) } } }) },
    { key: 'vscode', label: 'VS Code', text: json({ servers: { [id]: { type: 'http', url, ...(headers ? { headers } : {}) } } }) },
  ];
}

export interface Fields {
  name: string;
  description: string;
  names: string;
  tags: string;
  kinds: string[];
  servers: string;
  exclude_names: string;
  exclude_tags: string;
  discovery: 'all' | 'search';
}

/** The fields of a definition, and back. */
export function fieldsOf(def: ToolsetDef | null): Fields {
  const inc = first(def?.include);
  const exc = first(def?.exclude);
  return {
    name: def?.name ?? '',
    description: def?.description ?? '',
    names: (inc.names ?? []).join(', '),
    tags: (inc.tags ?? []).join(', '),
    kinds: inc.kinds ?? [],
    servers: (inc.servers ?? []).join(', '),
    exclude_names: (exc.names ?? []).join(', '),
    exclude_tags: (exc.tags ?? []).join(', '),
    discovery: def?.discovery ?? 'all',
  };
}

export function definitionOf(f: Fields): ToolsetDef {
  const include: Selector = {};
  if (words(f.names).length) include.names = words(f.names);
  if (words(f.tags).length) include.tags = words(f.tags);
  if (f.kinds.length) include.kinds = f.kinds;
  if (words(f.servers).length) include.servers = words(f.servers);
  const exclude: Selector = {};
  if (words(f.exclude_names).length) exclude.names = words(f.exclude_names);
  if (words(f.exclude_tags).length) exclude.tags = words(f.exclude_tags);
  const def: ToolsetDef = { name: f.name.trim(), include };
  if (f.description.trim()) def.description = f.description.trim();
  if (Object.keys(exclude).length) def.exclude = exclude;
  if (f.discovery === 'search') def.discovery = 'search';
  return def;
}

