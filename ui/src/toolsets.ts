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

/** The selectors after the first (kept as they were: the editor shows only the first). */
function rest(s: Selector | Selector[] | undefined): Selector[] {
  return Array.isArray(s) ? s.slice(1) : [];
}

/** One edited selector and the others kept, in the catalog's form (one, or a list). */
function joined(edited: Selector, kept: Selector[]): Selector | Selector[] {
  return kept.length ? [edited, ...kept] : edited;
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
  prompts: string;
  resources: string;
  exclude_names: string;
  exclude_tags: string;
  discovery: 'all' | 'search' | 'code';
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
    prompts: (inc.prompts ?? []).join(', '),
    resources: (inc.resources ?? []).join(', '),
    exclude_names: (exc.names ?? []).join(', '),
    exclude_tags: (exc.tags ?? []).join(', '),
    discovery: def?.discovery ?? 'all',
  };
}

/** The definition of the fields; `base` (the definition edited) gives the selectors the
 * editor does not show, kept as they were, and the first selectors' keys it has no field for. */
export function definitionOf(f: Fields, base: ToolsetDef | null = null): ToolsetDef {
  const include: Selector = first(base?.include).danger ? { danger: first(base?.include).danger } : {};
  if (words(f.names).length) include.names = words(f.names);
  if (words(f.tags).length) include.tags = words(f.tags);
  if (f.kinds.length) include.kinds = f.kinds;
  if (words(f.servers).length) include.servers = words(f.servers);
  if (words(f.prompts).length) include.prompts = words(f.prompts);
  if (words(f.resources).length) include.resources = words(f.resources);
  // The first exclude selector's other keys (kinds, servers, ...) are kept; names and tags
  // are the fields'.
  const exclude: Selector = { ...first(base?.exclude) };
  delete exclude.names;
  delete exclude.tags;
  if (words(f.exclude_names).length) exclude.names = words(f.exclude_names);
  if (words(f.exclude_tags).length) exclude.tags = words(f.exclude_tags);
  const def: ToolsetDef = { name: f.name.trim(), include: joined(include, rest(base?.include)) };
  if (f.description.trim()) def.description = f.description.trim();
  // An empty exclude selector would take out every tool: left out instead.
  const excludes = Object.keys(exclude).length ? [exclude, ...rest(base?.exclude)] : rest(base?.exclude);
  if (excludes.length) def.exclude = excludes.length === 1 ? excludes[0]! : excludes;
  if (f.discovery !== 'all') def.discovery = f.discovery;
  return def;
}

