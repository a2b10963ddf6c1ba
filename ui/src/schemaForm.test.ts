import { describe, expect, it } from 'vitest';
import { argumentsFromValues, fieldOfPointer, fieldsFromSchema, parseNumberInput, valuesFromArguments } from './schemaForm';

// The input schema toolsmith renders for the example catalog's git_log, plus the other shapes.
const schema = {
  type: 'object',
  properties: {
    limit: { type: 'integer', description: 'How many commits to show.', minimum: 1, maximum: 200, default: 10 },
    author: { type: 'string', description: 'Only commits by this author.' },
    paths: { type: 'array', items: { type: 'string' } },
    order: { type: 'string', enum: ['asc', 'desc'] },
    level: { type: ['integer', 'null'], enum: [1, 2, 3, null] },
    verbose: { type: 'boolean' },
    opts: { type: 'object', properties: { depth: { type: 'integer' }, tag: { type: 'string' } }, required: ['depth'], additionalProperties: false },
    free: { type: 'object', additionalProperties: true },
    rows: { type: 'array', items: { type: 'object', properties: { a: { type: 'string' } } } },
    ratio: { type: ['number', 'null'], exclusiveMinimum: 0 },
  },
  required: ['author'],
  additionalProperties: false,
};

describe('fieldsFromSchema', () => {
  const fields = fieldsFromSchema(schema);
  const by = Object.fromEntries(fields.map((f) => [f.name, f]));

  it('keeps declaration order and required flags', () => {
    expect(fields.map((f) => f.name)).toEqual(['limit', 'author', 'paths', 'order', 'level', 'verbose', 'opts', 'free', 'rows', 'ratio']);
    expect(by.author?.required).toBe(true);
    expect(by.limit?.required).toBe(false);
  });

  it('types each field, with constraints in words', () => {
    expect(by.limit).toMatchObject({ kind: 'integer', default: 10, hint: '1 to 200' });
    expect(by.paths).toMatchObject({ kind: 'array', item: { kind: 'string' } });
    expect(by.order).toMatchObject({ kind: 'string', enumValues: ['asc', 'desc'] });
    expect(by.level).toMatchObject({ kind: 'integer', nullable: true, enumValues: [1, 2, 3] });
    expect(by.verbose?.kind).toBe('boolean');
    expect(by.ratio).toMatchObject({ kind: 'number', nullable: true, hint: 'above 0' });
  });

  it('nests closed objects and falls back to JSON text for free-form values', () => {
    expect(by.opts?.kind).toBe('object');
    if (by.opts?.kind === 'object') {
      expect(by.opts.fields.map((f) => [f.name, f.required])).toEqual([['depth', true], ['tag', false]]);
    }
    expect(by.free?.kind).toBe('json');
    expect(by.rows?.kind).toBe('json');
  });

  it('handles a tool without parameters', () => {
    expect(fieldsFromSchema({ type: 'object', additionalProperties: false })).toEqual([]);
  });
});

describe('arguments and values', () => {
  const fields = fieldsFromSchema(schema);

  it('leaves empty optional fields out and parses JSON text', () => {
    const args = argumentsFromValues(fields, {
      limit: 5,
      author: 'ann',
      paths: ['src', '', undefined],
      order: undefined,
      opts: { depth: 2, tag: '' },
      free: '{"k": [1, 2]}',
      rows: 'not json',
    });
    expect(args).toEqual({ limit: 5, author: 'ann', paths: ['src'], opts: { depth: 2 }, free: { k: [1, 2] }, rows: 'not json' });
  });

  it('round-trips arguments through the form', () => {
    const args = { limit: 3, author: 'bo', paths: ['a', 'b'], verbose: false, opts: { depth: 1 }, free: { x: 1 } };
    const values = valuesFromArguments(fields, args);
    expect(values.free).toBe('{\n  "x": 1\n}');
    expect(argumentsFromValues(fields, values)).toEqual(args);
    expect(valuesFromArguments(fields, 'nonsense')).toEqual({});
  });
});

describe('small parsers', () => {
  it('maps pointers to their top-level field', () => {
    expect(fieldOfPointer('/paths/1')).toBe('paths');
    expect(fieldOfPointer('/a~1b')).toBe('a/b');
    expect(fieldOfPointer('')).toBeUndefined();
  });

  it('reads numbers typed into a field, keeping what is not one as text', () => {
    expect(parseNumberInput('42', true)).toBe(42);
    expect(parseNumberInput(' 2.5 ', false)).toBe(2.5);
    expect(parseNumberInput('2.5', true)).toBe('2.5');
    expect(parseNumberInput('', true)).toBeUndefined();
    expect(parseNumberInput('12abc', false)).toBe('12abc');
    // Beyond 2^53 a JavaScript number would change the value: it goes as text.
    expect(parseNumberInput('9007199254740993', true)).toBe('9007199254740993');
  });
});
