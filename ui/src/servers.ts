// What the Servers pages show, as pure functions (tested in servers.test.ts): a status's
// tone and words, an uptime, and a held change's differences as rows of before and after.

import type { Tone } from './Pill';
import type { Difference } from './api';

export type UpstreamStatus = 'starting' | 'ready' | 'failed' | 'stopped';

/** The colour of a status (always shown beside its word, never alone). */
export function statusTone(status: UpstreamStatus | undefined): Tone {
  switch (status) {
    case 'ready':
      return 'ok';
    case 'starting':
      return 'info';
    case 'failed':
      return 'danger';
    case 'stopped':
      return 'warn';
    default:
      return 'neutral';
  }
}

/** `status` for people: "not running here" when this server runs no upstream of the name. */
export function statusText(status: UpstreamStatus | undefined): string {
  return status ?? 'not running here';
}

/** A duration in milliseconds as "3 h 4 min", "2 min 5 s" or "12 s". */
export function uptime(ms: number | undefined): string {
  if (ms === undefined) return '—';
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (h > 0) return `${h} h ${m} min`;
  if (m > 0) return `${m} min ${s % 60} s`;
  return `${s} s`;
}

/** One row of a change's diff: where, and the two sides as text. */
export interface DiffRow {
  path: string;
  before: string;
  after: string;
}

/** A value as it reads in a diff: strings as they are, anything else as JSON, absent as "—". */
export function sideText(v: unknown): string {
  if (v === undefined || v === null) return '—';
  if (typeof v === 'string') return visible(v);
  return visible(JSON.stringify(v, null, 2));
}

/** Whether a code point renders as nothing or reorders text (as the server's guardrail scanner says). */
function hidden(code: number): boolean {
  return (
    (code >= 0x200b && code <= 0x200f) ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2060 && code <= 0x2064) ||
    (code >= 0x2066 && code <= 0x2069) ||
    code === 0xfeff ||
    code === 0x180e ||
    code === 0x115f ||
    code === 0x1160 ||
    code === 0x3164 ||
    code === 0xffa0 ||
    (code >= 0xfff9 && code <= 0xfffb) ||
    (code >= 0xe0100 && code <= 0xe01ef) ||
    code === 0xad
  );
}

/** Whether a code point is a control character a terminal acts on (not tab or a line break). */
function control(code: number): boolean {
  return code <= 0x08 || code === 0x0b || code === 0x0c || (code >= 0x0e && code <= 0x1f) || (code >= 0x7f && code <= 0x9f);
}

/**
 * `text` with what a reviewer would not see spelled out, as the server spells it in findings:
 * `⟨U+200B⟩`, `⟨ESC⟩`, and a run of Unicode tag characters as the ASCII it hides, `⟨tags:"…"⟩`.
 */
export function visible(text: string): string {
  let out = '';
  let tags = '';
  const flush = () => {
    if (tags) out += `⟨tags:${JSON.stringify(tags)}⟩`;
    tags = '';
  };
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 0;
    if (code >= 0xe0000 && code <= 0xe007f) {
      const t = code - 0xe0000;
      tags += t >= 0x20 && t < 0x7f ? String.fromCharCode(t) : '?';
      continue;
    }
    flush();
    if (code === 0x1b) out += '⟨ESC⟩';
    else if (hidden(code) || control(code)) out += `⟨U+${code.toString(16).toUpperCase().padStart(4, '0')}⟩`;
    else out += ch;
  }
  flush();
  return out;
}

/** The rows of a change: its differences, path by path, in the server's order. */
export function diffRows(diff: Difference[]): DiffRow[] {
  return diff.map((d) => ({ path: d.path === '' ? '(the whole tool)' : d.path, before: sideText(d.from), after: sideText(d.to) }));
}

/** What a pending change is, in a few words: "description changed", "added", "removed". */
export function changeSummary(kind: string, diff: Difference[]): string {
  if (kind !== 'changed') return kind;
  const paths = diff.map((d) => d.path.split('.')[0] ?? d.path);
  const unique = [...new Set(paths)];
  return `${unique.join(', ')} changed`;
}

/** A row of keys and values in the Add server form; a secret one becomes a secret config field. */
export interface KeyValue {
  key: string;
  value: string;
  secret: boolean;
}

/** The Add server form's fields, named after the catalog keys they fill. */
export interface ServerFields {
  name: string;
  prefix: string;
  kind: 'stdio' | 'http';
  /** The program and its arguments, one per row. */
  command: string[];
  env: KeyValue[];
  url: string;
  headers: KeyValue[];
  /** An HTTP server's authorization: none (or headers), OAuth with one shared connection, or
   * OAuth with each user's own account. */
  auth: 'none' | 'oauth' | 'oauth_per_user';
}

export const emptyServer = (): ServerFields => ({
  name: '',
  prefix: '',
  kind: 'stdio',
  command: [''],
  env: [],
  url: '',
  headers: [],
  auth: 'none',
});

/** A config field's name for a variable or header: lower case, `_` for anything else. */
export function fieldName(key: string): string {
  return key.trim().toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** The server definition (catalog form, an `mcp_servers` entry) the form describes. A
 * secret environment variable becomes a secret config field injected under its name; a
 * secret header a secret config field the header's value names (`{field}`). */
export function serverDefinition(f: ServerFields): Record<string, unknown> {
  const def: Record<string, unknown> = { name: f.name.trim() };
  if (f.prefix.trim()) def.prefix = f.prefix.trim();
  const schema: Record<string, unknown>[] = [];
  const config: Record<string, string> = {};
  const rows = (r: KeyValue[]) => r.filter((e) => e.key.trim() !== '');
  if (f.kind === 'stdio') {
    def.command = f.command.map((a) => a.trim()).filter((a) => a !== '');
    def.env_allowlist = ['PATH', 'HOME', 'LANG'];
    const env: Record<string, string> = {};
    for (const e of rows(f.env)) {
      if (e.secret) {
        schema.push({ name: fieldName(e.key), secret: true, env_name: e.key.trim() });
        config[fieldName(e.key)] = e.value;
      } else {
        env[e.key.trim()] = e.value;
      }
    }
    if (Object.keys(env).length > 0) def.env = env;
  } else {
    def.url = f.url.trim();
    const headers: Record<string, string> = {};
    for (const h of rows(f.headers)) {
      if (h.secret) {
        schema.push({ name: fieldName(h.key), secret: true });
        config[fieldName(h.key)] = h.value;
        headers[h.key.trim()] = `{${fieldName(h.key)}}`;
      } else {
        headers[h.key.trim()] = h.value;
      }
    }
    if (Object.keys(headers).length > 0) def.headers = headers;
    if (f.auth === 'oauth') def.auth = 'oauth';
    if (f.auth === 'oauth_per_user') def.auth = { type: 'oauth', connection: 'per_user' };
  }
  if (schema.length > 0) {
    def.config_schema = schema;
    def.config = config;
  }
  return def;
}

/** Whether a definition read from a configuration file still names a variable to fill in. */
export function needsValues(definition: unknown): boolean {
  return /\$\{[^}]+\}/.test(JSON.stringify(definition));
}

/** A row of an OpenAPI import's preview: one tool it would make. */
export interface ImportRow {
  name: string;
  method: string;
  url: string;
  danger: string;
  tags: string[];
  /** `new`, `changed` (a different definition exists) or `unchanged`. */
  state: 'new' | 'changed' | 'unchanged';
  definition: Record<string, unknown>;
}

/** The preview's rows from a dry run's answer. */
export function importRows(answer: { tools: Record<string, unknown>[]; updated: string[]; unchanged: string[] }): ImportRow[] {
  return answer.tools.map((t) => {
    const name = String(t.name);
    const http = (t.http ?? {}) as { method?: string; url?: string };
    return {
      name,
      method: http.method ?? 'GET',
      url: http.url ?? '',
      danger: String(t.danger ?? 'safe'),
      tags: Array.isArray(t.tags) ? t.tags.map(String) : [],
      state: answer.updated.includes(name) ? 'changed' : answer.unchanged.includes(name) ? 'unchanged' : 'new',
      definition: t,
    };
  });
}

/** The names of the rows carrying any of `tags`. */
export function withTags(rows: ImportRow[], tags: string[]): string[] {
  return rows.filter((r) => r.tags.some((t) => tags.includes(t))).map((r) => r.name);
}

/** A config field a definition asks for but has no value for yet (a VS Code `${input:…}`). */
export interface Unfilled {
  name: string;
  description?: string;
  secret: boolean;
}

/** The config fields of a definition (catalog form) with no value that its command, env, URL
 * or headers name as `{field}`: the server waits for them. */
export function unfilledFields(definition: Record<string, unknown>): Unfilled[] {
  const schema = Array.isArray(definition.config_schema) ? (definition.config_schema as Record<string, unknown>[]) : [];
  const config = (definition.config ?? {}) as Record<string, unknown>;
  const { config_schema: _schema, config: _config, ...rest } = definition;
  const text = JSON.stringify(rest);
  return schema
    .filter((p) => typeof p.name === 'string' && !(p.name in config) && text.includes(`{${p.name}}`))
    .map((p) => ({ name: p.name as string, description: typeof p.description === 'string' ? p.description : undefined, secret: p.secret === true }));
}

/** The definition with `values` filled into its config (secrets already set stay `***`, which
 * the server keeps). */
export function withValues(definition: Record<string, unknown>, values: Record<string, string>): Record<string, unknown> {
  return { ...definition, config: { ...((definition.config ?? {}) as Record<string, unknown>), ...values } };
}

