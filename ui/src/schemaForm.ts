// A tool's input schema (the canonical JSON Schema toolsmith renders, SPEC §3.1) as form
// fields, and the form's values back as arguments. Pure functions: tested without a DOM.

import type { JsonSchema } from './api';

export type Scalar = 'string' | 'integer' | 'number' | 'boolean';

interface Common {
  /** The property name (the field's label). */
  name: string;
  description?: string;
  required: boolean;
  nullable: boolean;
  default?: unknown;
  /** Constraints in words: "1 to 200", "at most 64 characters", "date". */
  hint?: string;
}

export type Field =
  | (Common & { kind: Scalar; enumValues?: (string | number)[] })
  | (Common & { kind: 'array'; item: Field })
  | (Common & { kind: 'object'; fields: Field[] })
  /** Free-form values (an open object, an array of objects): edited as JSON text. */
  | (Common & { kind: 'json' });

function types(schema: JsonSchema): string[] {
  const t = schema.type;
  if (Array.isArray(t)) return t.filter((x): x is string => typeof x === 'string');
  return typeof t === 'string' ? [t] : [];
}

function hintOf(s: JsonSchema): string | undefined {
  const parts: string[] = [];
  const num = (k: string) => (typeof s[k] === 'number' ? (s[k] as number) : undefined);
  const min = num('minimum');
  const max = num('maximum');
  if (min !== undefined && max !== undefined) parts.push(`${min} to ${max}`);
  else if (min !== undefined) parts.push(`at least ${min}`);
  else if (max !== undefined) parts.push(`at most ${max}`);
  if (num('exclusiveMinimum') !== undefined) parts.push(`above ${num('exclusiveMinimum')}`);
  if (num('exclusiveMaximum') !== undefined) parts.push(`below ${num('exclusiveMaximum')}`);
  if (num('multipleOf') !== undefined) parts.push(`a multiple of ${num('multipleOf')}`);
  const minL = num('minLength');
  const maxL = num('maxLength');
  if (minL !== undefined && maxL !== undefined) parts.push(`${minL} to ${maxL} characters`);
  else if (minL !== undefined) parts.push(`at least ${minL} character${minL === 1 ? '' : 's'}`);
  else if (maxL !== undefined) parts.push(`at most ${maxL} characters`);
  if (typeof s.pattern === 'string') parts.push(`matching ${s.pattern}`);
  if (typeof s.format === 'string') parts.push(s.format);
  const minI = num('minItems');
  const maxI = num('maxItems');
  if (minI !== undefined) parts.push(`at least ${minI} item${minI === 1 ? '' : 's'}`);
  if (maxI !== undefined) parts.push(`at most ${maxI} items`);
  if (s.uniqueItems === true) parts.push('no repeats');
  return parts.length ? parts.join(', ') : undefined;
}

/** One schema node as a field. */
export function fieldOf(name: string, schema: JsonSchema, required: boolean): Field {
  const ts = types(schema);
  const nullable = ts.includes('null');
  const base = ts.find((t) => t !== 'null');
  const common: Common = {
    name,
    required,
    nullable,
    ...(schema.description ? { description: schema.description } : {}),
    ...(schema.default !== undefined ? { default: schema.default } : {}),
    ...(hintOf(schema) ? { hint: hintOf(schema) } : {}),
  };
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.filter((v): v is string | number => typeof v === 'string' || typeof v === 'number');
    return { ...common, kind: base === 'integer' ? 'integer' : 'string', enumValues: values };
  }
  switch (base) {
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
      return { ...common, kind: base };
    case 'array': {
      const item = schema.items ? fieldOf('', schema.items, true) : undefined;
      if (item && item.kind !== 'json' && item.kind !== 'object' && item.kind !== 'array') {
        return { ...common, kind: 'array', item };
      }
      return { ...common, kind: 'json' };
    }
    case 'object': {
      const props = schema.properties ?? {};
      if (Object.keys(props).length === 0 || schema.additionalProperties === true) {
        return { ...common, kind: 'json' };
      }
      const req = new Set(schema.required ?? []);
      return {
        ...common,
        kind: 'object',
        fields: Object.entries(props).map(([k, v]) => fieldOf(k, v, req.has(k))),
      };
    }
    default:
      return { ...common, kind: 'json' };
  }
}

/** The fields of a tool's input schema, in declaration order. */
export function fieldsFromSchema(schema: JsonSchema): Field[] {
  const root = fieldOf('', { ...schema, type: 'object' }, true);
  if (root.kind === 'object') return root.fields;
  return [];
}

/** Whether a form value counts as "left empty". */
export function isEmpty(v: unknown): boolean {
  return v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
}

/**
 * The arguments for a call from the form's values: empty optional fields are left out (the
 * server fills defaults), JSON-text fields are parsed (text that does not parse is sent as
 * it is, for the server to explain), nested objects likewise.
 */
export function argumentsFromValues(fields: Field[], values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.name];
    if (isEmpty(v)) continue;
    if (f.kind === 'json' && typeof v === 'string') {
      try {
        out[f.name] = JSON.parse(v);
      } catch {
        out[f.name] = v;
      }
    } else if (f.kind === 'object' && v && typeof v === 'object' && !Array.isArray(v)) {
      const nested = argumentsFromValues(f.fields, v as Record<string, unknown>);
      if (Object.keys(nested).length > 0 || f.required) out[f.name] = nested;
    } else if (f.kind === 'array' && Array.isArray(v)) {
      out[f.name] = v.filter((x) => !isEmpty(x));
    } else {
      out[f.name] = v;
    }
  }
  return out;
}

/** Form values from arguments (a run to replay, the last call): the inverse of the above. */
export function valuesFromArguments(fields: Field[], args: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!args || typeof args !== 'object' || Array.isArray(args)) return out;
  const a = args as Record<string, unknown>;
  for (const f of fields) {
    if (!(f.name in a)) continue;
    const v = a[f.name];
    if (f.kind === 'json') out[f.name] = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
    else if (f.kind === 'object') out[f.name] = valuesFromArguments(f.fields, v);
    else out[f.name] = v;
  }
  return out;
}

/** A problem's JSON pointer as the top-level field it belongs to (`/paths/1` → `paths`). */
export function fieldOfPointer(pointer: string): string | undefined {
  const first = pointer.split('/')[1];
  return first === undefined || first === '' ? undefined : first.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** A value typed into a number field: the number, or the text when it is not one. */
export function parseNumberInput(text: string, integer: boolean): number | string | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t)) return text;
  const n = Number(t);
  if (!Number.isFinite(n)) return text;
  if (integer && !Number.isInteger(n)) return text;
  // Integers beyond 2^53 stay text: the server reads them exactly and says what it thinks.
  if (integer && !Number.isSafeInteger(n)) return text;
  return n;
}
