import { describe, expect, it } from 'vitest';
import type { Definition, JsonSchema, ParameterDef } from './api';
import examples from './fixtures/examples.json';
import {
  cleanDefinition,
  emptyDefinition,
  executorKind,
  injectionExample,
  problemsAt,
  schemaToParams,
  withExecutor,
  withType,
} from './definition';

const tools = examples as unknown as { definition: Definition; input_schema: JsonSchema }[];

/** What JSON Schema says of a parameter: injection and the rest are the catalog's own. */
function schemaPart(p: ParameterDef): ParameterDef {
  const drop = ['inject_as', 'option_name', 'option_style', 'boolean_style', 'array_style', 'separator', 'env_name', 'secret', 'workspace_path'];
  const out: ParameterDef = {};
  for (const [k, v] of Object.entries(p)) {
    if (drop.includes(k)) continue;
    if (k === 'items') out.items = schemaPart(typeof v === 'string' ? { type: v } : (v as ParameterDef));
    else if (k === 'properties') out.properties = (v as ParameterDef[]).map(schemaPart);
    else if (k === 'type' && v === 'string') continue;
    else out[k] = v;
  }
  if (out.items && (out.items as ParameterDef).type === undefined) (out.items as ParameterDef).type = 'string';
  return out;
}

describe('every example tool', () => {
  it('loads into the editor and saves back unchanged', () => {
    expect(tools.length).toBeGreaterThan(10);
    for (const { definition } of tools) {
      expect(cleanDefinition(structuredClone(definition)), definition.name).toEqual(definition);
      // Switching the executor there and back keeps it too.
      const kind = executorKind(definition);
      expect(withExecutor(withExecutor(definition, kind), kind), definition.name).toEqual(definition);
    }
  });

  it("comes back from the server's JSON Schema as the same parameters", () => {
    for (const { definition, input_schema } of tools) {
      const { params, unsupported } = schemaToParams(input_schema);
      expect(unsupported, definition.name).toEqual([]);
      if (executorKind(definition) === 'builtin') {
        // A built-in brings its own parameters; the definition does not list them.
        expect(params.length, definition.name).toBeGreaterThan(0);
        continue;
      }
      expect(params.map(schemaPart), definition.name).toEqual((definition.parameters ?? []).map(schemaPart));
    }
  });
});

describe('pasting a JSON Schema', () => {
  it('keeps what the parameter model says and lists the rest', () => {
    const { params, unsupported } = schemaToParams({
      type: 'object',
      properties: {
        q: { type: 'string', minLength: 1, description: 'Query.' },
        n: { type: ['integer', 'null'], default: 5, maximum: 50 },
        mode: { type: 'string', enum: ['fast', 'slow'] },
        tags: { type: 'array', items: { type: 'string' }, uniqueItems: true },
        opts: { type: 'object', properties: { deep: { type: 'boolean' } }, required: ['deep'] },
        either: { anyOf: [{ type: 'string' }, { type: 'number' }] },
      },
      required: ['q', 'mode'],
      $defs: {},
    });
    expect(params).toEqual([
      { name: 'q', description: 'Query.', min_length: 1 },
      { name: 'n', type: 'integer', nullable: true, required: false, default: 5, maximum: 50 },
      { name: 'mode', type: 'enum', values: ['fast', 'slow'] },
      { name: 'tags', type: 'array', required: false, items: { type: 'string' }, unique_items: true },
      { name: 'opts', type: 'object', required: false, properties: [{ name: 'deep', type: 'boolean' }] },
      { name: 'either', required: false },
    ]);
    expect(unsupported).toEqual([
      'either: no type; taken as a string',
      'either: anyOf is not supported and was left out',
      '$defs (at the top) is not supported and was left out',
    ]);
    expect(schemaToParams({ type: 'string' }).unsupported[0]).toContain('not an object');
  });
});

describe('editing', () => {
  it('drops what no longer applies when a type changes', () => {
    expect(withType({ name: 'x', min_length: 2, default: 'a', description: 'd' }, 'integer')).toEqual({ name: 'x', description: 'd', type: 'integer' });
    expect(withType({ name: 'x' }, 'array')).toEqual({ name: 'x', type: 'array', items: { type: 'string' } });
    expect(withType({ name: 'x' }, 'enum')).toEqual({ name: 'x', type: 'enum', values: [] });
  });

  it('starts new tools as commands, and executors switch cleanly', () => {
    const d = emptyDefinition();
    expect(executorKind(d)).toBe('command');
    const s = withExecutor({ ...d, end_of_options: '--' }, 'script');
    expect(s.command).toBeUndefined();
    expect(s.end_of_options).toBeUndefined();
    expect(s.script?.source).toContain('json.load(sys.stdin)');
    expect(withExecutor(s, 'builtin')).toMatchObject({ builtin: 'read_file' });
  });

  it('shows how each injection reaches the command', () => {
    const git = tools.find((t) => t.definition.name === 'git_log')?.definition;
    const limit = git?.parameters?.find((p) => p.name === 'limit');
    expect(limit && injectionExample(limit)).toBe('--max-count=10');
    expect(injectionExample({ name: 'f', type: 'array', inject_as: 'option', option_name: '--file' })).toBe('--file value --file value2');
    expect(injectionExample({ name: 'f', type: 'array', inject_as: 'option', option_name: '--f', array_style: 'join', separator: ';' })).toBe("--f 'value;value2'");
    expect(injectionExample({ name: 'v', type: 'boolean', inject_as: 'option', option_name: '--verbose' })).toContain('present when true');
    expect(injectionExample({ name: 'tz', inject_as: 'env', default: 'UTC' })).toBe('env TZ=UTC');
    expect(injectionExample({ name: 'text', inject_as: 'stdin' })).toBe('stdin: value');
    expect(injectionExample({ name: 'paths', type: 'array', items: 'string' })).toBe('value value2');
  });

  it('finds the problems of a field', () => {
    const problems = [
      { path: 'parameters[1].pattern', message: 'invalid regular expression' },
      { path: 'parameters[1]', message: 'bad' },
      { path: 'parameters[10].type', message: 'unknown type' },
      { path: 'description', message: 'missing' },
    ];
    expect(problemsAt(problems, 'parameters[1]')).toEqual(['pattern: invalid regular expression', 'bad']);
    expect(problemsAt(problems, 'parameters[1]', true)).toEqual(['bad']);
    expect(problemsAt(problems, 'description')).toEqual(['missing']);
  });
});
