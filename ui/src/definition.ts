// Editing a tool definition (the catalog form, SPEC §2): the executor, the parameter model,
// JSON Schema brought in as parameters, a one-line example of how a parameter reaches the
// command, and where the checker's problems belong. Pure functions, tested without a DOM.
// The JSON Schema *of* a definition always comes from the server (`POST /v1/check`): there is
// one schema generator, in toolsmith-core.

import type { Definition, JsonSchema, ParameterDef } from './api';

export type ExecutorKind = 'command' | 'script' | 'builtin';

export const BUILTINS = ['read_file', 'write_file', 'list_dir', 'glob', 'http_request'];

export const TYPES = ['string', 'integer', 'number', 'boolean', 'enum', 'array', 'object'] as const;

/** Seed 001's contract: the arguments as JSON on stdin, one JSON value on stdout. */
export const SCRIPT_TEMPLATE = `import json
import sys

args = json.load(sys.stdin)          # the validated arguments (and "config", if any)

result = {"echo": args}              # compute something

json.dump(result, sys.stdout)        # one JSON value on stdout becomes the result's data
`;

export function executorKind(d: Definition): ExecutorKind {
  if (d.script !== undefined) return 'script';
  if (d.builtin !== undefined) return 'builtin';
  return 'command';
}

/** The definition with another executor (the others' keys removed). */
export function withExecutor(d: Definition, kind: ExecutorKind): Definition {
  const { command: _c, script: _s, builtin: _b, end_of_options: _e, ...rest } = d;
  switch (kind) {
    case 'command':
      return { ...rest, command: d.command ?? [''], ...(d.end_of_options ? { end_of_options: d.end_of_options } : {}) };
    case 'script':
      return { ...rest, script: d.script ?? { interpreter: 'python3', source: SCRIPT_TEMPLATE } };
    case 'builtin':
      return { ...rest, builtin: d.builtin ?? 'read_file' };
  }
}

/** A new tool to start from. */
export function emptyDefinition(): Definition {
  return { name: '', description: '', command: [''] };
}

const OPTIONAL_LISTS = ['tags', 'parameters', 'config_schema', 'env_allowlist'] as const;

/**
 * The definition as it is sent: fields left empty in the form are left out, so the server's
 * defaults apply and a definition loaded and saved without changes is the same definition.
 */
export function cleanDefinition(d: Definition): Definition {
  const out: Definition = { ...d };
  for (const k of Object.keys(out)) {
    const v = out[k];
    if (v === undefined || v === null || (v === '' && k !== 'description' && k !== 'name')) delete out[k];
  }
  for (const k of OPTIONAL_LISTS) {
    const v = out[k];
    if (Array.isArray(v) && v.length === 0) delete out[k];
  }
  for (const k of ['annotations', 'limits', 'env', 'config'] as const) {
    const v = out[k];
    if (v && typeof v === 'object' && Object.keys(v).length === 0) delete out[k];
  }
  if (out.parameters) out.parameters = out.parameters.map(cleanParam);
  if (out.config_schema) out.config_schema = out.config_schema.map(cleanParam);
  return out;
}

export function cleanParam(p: ParameterDef): ParameterDef {
  const out: ParameterDef = {};
  for (const [k, v] of Object.entries(p)) {
    if (v === undefined || v === '' || (Array.isArray(v) && v.length === 0 && k !== 'values')) continue;
    if (k === 'items' && v && typeof v === 'object') out.items = cleanParam(v as ParameterDef);
    else if (k === 'properties' && Array.isArray(v)) out.properties = (v as ParameterDef[]).map(cleanParam);
    else out[k] = v;
  }
  return out;
}

/** A parameter's items as an object (`items: string` is shorthand for `{type: string}`). */
export function itemsOf(p: ParameterDef): ParameterDef {
  if (typeof p.items === 'string') return { type: p.items };
  return p.items ?? { type: 'string' };
}

/** Keys that apply to each parameter type (the others are dropped when the type changes). */
const BY_TYPE: Record<string, string[]> = {
  string: ['min_length', 'max_length', 'pattern', 'format', 'workspace_path'],
  integer: ['minimum', 'maximum', 'exclusive_minimum', 'exclusive_maximum', 'multiple_of'],
  number: ['minimum', 'maximum', 'exclusive_minimum', 'exclusive_maximum', 'multiple_of'],
  boolean: ['boolean_style'],
  enum: ['values'],
  array: ['items', 'min_items', 'max_items', 'unique_items', 'array_style', 'separator'],
  object: ['properties', 'additional_properties'],
};
const TYPED = new Set(Object.values(BY_TYPE).flat());

/** The parameter with another type: constraints of the old type go, `default` too. */
export function withType(p: ParameterDef, type: string): ParameterDef {
  const out: ParameterDef = {};
  for (const [k, v] of Object.entries(p)) {
    if (k === 'default' || (TYPED.has(k) && !(BY_TYPE[type] ?? []).includes(k))) continue;
    out[k] = v;
  }
  out.type = type;
  if (type === 'enum' && !out.values) out.values = [];
  if (type === 'array' && !out.items) out.items = { type: 'string' };
  return out;
}

function sampleOf(p: ParameterDef): unknown {
  if (p.default !== undefined) return p.default;
  switch (p.type ?? 'string') {
    case 'integer':
      return typeof p.minimum === 'number' ? p.minimum : 10;
    case 'number':
      return 2.5;
    case 'boolean':
      return true;
    case 'enum':
      return p.values?.[0] ?? 'value';
    case 'array': {
      const item = itemsOf(p);
      const one = sampleOf({ ...item, name: '' });
      return [one, item.type === 'integer' || item.type === 'number' ? 2 : `${String(one)}2`];
    }
    case 'object':
      return { key: 'value' };
    default:
      return 'value';
  }
}

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

function quote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * How a parameter reaches a command, shown with a sample value: `--max-count=10`,
 * `--file a --file b`, `stdin: …`, `env TZ=UTC`. The same rules as the planner (SPEC §5.2).
 */
export function injectionExample(p: ParameterDef): string {
  const v = sampleOf(p);
  const how = p.inject_as ?? 'argument';
  const name = p.option_name ?? '--option';
  const sep = p.separator ?? ',';
  const joined = Array.isArray(v) ? v.map(text).join(sep) : text(v);
  switch (how) {
    case 'option': {
      const one = (x: string) => (p.option_style === 'equals' ? [`${name}=${x}`] : [name, x]);
      if (typeof v === 'boolean' && p.boolean_style !== 'value') return `${name}   (present when true, absent when false)`;
      if (Array.isArray(v)) {
        const style = p.array_style ?? 'repeat';
        if (style === 'separate') return [name, ...v.map(text)].map(quote).join(' ');
        if (style === 'join') return one(joined).map(quote).join(' ');
        return v.flatMap((x) => one(text(x))).map(quote).join(' ');
      }
      return one(text(v)).map(quote).join(' ');
    }
    case 'stdin':
      return `stdin: ${Array.isArray(v) && p.array_style === 'join' ? joined : text(v)}`;
    case 'env':
      return `env ${p.env_name ?? (p.name ?? 'NAME').toUpperCase().replace(/[^A-Z0-9]/g, '_')}=${joined}`;
    default:
      if (Array.isArray(v)) return p.array_style === 'join' ? quote(joined) : v.map((x) => quote(text(x))).join(' ');
      return quote(text(v));
  }
}

/** The problems whose path is `path` or lies under it (`parameters[1]` takes `parameters[1].type`). */
export function problemsAt(problems: { path: string; message: string }[], path: string, exact = false): string[] {
  return problems
    .filter((p) => p.path === path || (!exact && (p.path.startsWith(`${path}.`) || p.path.startsWith(`${path}[`))))
    .map((p) => (p.path === path ? p.message : `${p.path.slice(path.length).replace(/^\./, '')}: ${p.message}`));
}

const KEYWORDS: Record<string, string> = {
  minLength: 'min_length',
  maxLength: 'max_length',
  pattern: 'pattern',
  format: 'format',
  minimum: 'minimum',
  maximum: 'maximum',
  exclusiveMinimum: 'exclusive_minimum',
  exclusiveMaximum: 'exclusive_maximum',
  multipleOf: 'multiple_of',
  minItems: 'min_items',
  maxItems: 'max_items',
  uniqueItems: 'unique_items',
};
const UNDERSTOOD = new Set(['type', 'description', 'default', 'enum', 'items', 'properties', 'required', 'additionalProperties', 'title', '$schema', ...Object.keys(KEYWORDS)]);

/**
 * A JSON Schema object (a tool's `inputSchema`, `parameters`, `input_schema`) as parameters.
 * What the parameter model cannot express is left out and listed, with where it was.
 */
export function schemaToParams(schema: JsonSchema): { params: ParameterDef[]; unsupported: string[] } {
  const unsupported: string[] = [];
  const root = (schema as { type?: unknown }).type;
  if (root !== undefined && root !== 'object') {
    return { params: [], unsupported: [`the schema is of type ${JSON.stringify(root)}, not an object of parameters`] };
  }
  const params = objectParams(schema, '', unsupported);
  for (const k of Object.keys(schema)) {
    if (!UNDERSTOOD.has(k)) unsupported.push(`${k} (at the top) is not supported and was left out`);
  }
  return { params, unsupported };
}

function objectParams(schema: JsonSchema, at: string, unsupported: string[]): ParameterDef[] {
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(schema.properties ?? {}).map(([name, s]) => {
    const p = paramOf(s, `${at}${name}`, unsupported);
    p.name = name;
    if (!required.has(name)) p.required = false;
    // Keys in the catalog's own order: name first.
    const { name: n, ...rest } = p;
    return { name: n, ...rest };
  });
}

function paramOf(s: JsonSchema, at: string, unsupported: string[]): ParameterDef {
  const p: ParameterDef = {};
  let types = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === 'string' ? [s.type] : [];
  if (types.includes('null')) {
    p.nullable = true;
    types = types.filter((t) => t !== 'null');
  }
  if (types.length > 1) unsupported.push(`${at}: a choice of types (${types.join(', ')}) is not supported; the first was kept`);
  let type = types[0];
  if (Array.isArray(s.enum)) {
    const values = s.enum.filter((v) => v !== null);
    if (values.every((v) => typeof v === 'string') || values.every((v) => Number.isInteger(v))) {
      type = 'enum';
      p.values = values;
    } else {
      unsupported.push(`${at}: an enum of mixed values is not supported and was left out`);
    }
  }
  if (type === undefined) {
    unsupported.push(`${at}: no type; taken as a string`);
    type = 'string';
  }
  if (type !== 'string') p.type = type;
  if (typeof s.description === 'string') p.description = s.description;
  if (s.default !== undefined) p.default = s.default;
  for (const [kw, key] of Object.entries(KEYWORDS)) {
    if (s[kw] !== undefined) p[key] = s[kw];
  }
  if (type === 'array' && s.items && typeof s.items === 'object') {
    const item = paramOf(s.items, `${at}[]`, unsupported);
    if (item.type === undefined) item.type = 'string';
    p.items = item;
  }
  if (type === 'object') {
    const props = objectParams(s, `${at}.`, unsupported);
    if (props.length) p.properties = props;
    const additional = s.additionalProperties;
    if (typeof additional === 'boolean' && additional !== (props.length === 0)) p.additional_properties = additional;
    if (additional && typeof additional === 'object') unsupported.push(`${at}: a schema for additional properties is not supported; any are allowed`);
  }
  for (const k of Object.keys(s)) {
    if (!UNDERSTOOD.has(k)) unsupported.push(`${at}: ${k} is not supported and was left out`);
  }
  return p;
}
