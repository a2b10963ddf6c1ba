// The test panel's form, generated from a tool's input schema: one labelled control per
// parameter (the label is the parameter's name), nested fieldsets for objects, lists for
// arrays, JSON text for free-form values; problems from the server shown at their field.

import { Button, Form, Input, Select, Space, Typography } from 'antd';
import type { Field } from './schemaForm';
import { parseNumberInput } from './schemaForm';

interface Props {
  fields: Field[];
  values: Record<string, unknown>;
  onChange: (values: Record<string, unknown>) => void;
  /** Problems by top-level field name. */
  problems?: Record<string, string[]>;
  /** Prefix for element ids (nested forms). */
  idPrefix?: string;
}

function describe(f: Field): string {
  const kind = f.kind === 'array' ? `list of ${f.item.kind}` : f.kind === 'json' ? 'JSON' : f.kind;
  const parts = [kind, f.required ? 'required' : 'optional'];
  if (f.default !== undefined) parts.push(`default ${JSON.stringify(f.default)}`);
  if (f.hint) parts.push(f.hint);
  return parts.join(' · ');
}

export function SchemaForm({ fields, values, onChange, problems = {}, idPrefix = 'arg' }: Props) {
  if (fields.length === 0) {
    return <Typography.Text type="secondary">This tool takes no arguments.</Typography.Text>;
  }
  const set = (name: string, v: unknown) => {
    const next = { ...values };
    if (v === undefined) delete next[name];
    else next[name] = v;
    onChange(next);
  };
  return (
    <div>
      {fields.map((f) => {
        const id = `${idPrefix}-${f.name}`;
        const errs = problems[f.name];
        return (
          <Form.Item
            key={f.name}
            label={<span style={{ fontFamily: 'monospace' }}>{f.name}</span>}
            htmlFor={f.kind === 'object' || f.kind === 'array' ? undefined : id}
            required={f.required}
            validateStatus={errs ? 'error' : undefined}
            help={errs ? errs.join('; ') : undefined}
            extra={
              <span>
                {f.description && <span>{f.description} </span>}
                <Typography.Text type="secondary">({describe(f)})</Typography.Text>
              </span>
            }
            layout="vertical"
            style={{ marginBottom: 16 }}
          >
            <Control field={f} id={id} value={values[f.name]} onChange={(v) => set(f.name, v)} />
          </Form.Item>
        );
      })}
    </div>
  );
}

function Control({ field: f, id, value, onChange }: { field: Field; id: string; value: unknown; onChange: (v: unknown) => void }) {
  const placeholder = f.default !== undefined ? `default: ${JSON.stringify(f.default)}` : undefined;
  switch (f.kind) {
    case 'boolean':
      return (
        <Select
          id={id}
          aria-label={f.name}
          allowClear={!f.required}
          placeholder={placeholder ?? 'true or false'}
          value={typeof value === 'boolean' ? String(value) : undefined}
          onChange={(v?: string) => onChange(v === undefined ? undefined : v === 'true')}
          options={[
            { value: 'true', label: 'true' },
            { value: 'false', label: 'false' },
          ]}
          style={{ width: 200 }}
        />
      );
    case 'string':
    case 'integer':
    case 'number':
      if (f.enumValues) {
        return (
          <Select
            id={id}
            aria-label={f.name}
            allowClear
            placeholder={placeholder ?? 'choose'}
            value={value as string | number | undefined}
            onChange={(v) => onChange(v ?? undefined)}
            options={f.enumValues.map((v) => ({ value: v, label: String(v) }))}
            style={{ minWidth: 200 }}
          />
        );
      }
      if (f.kind === 'string') {
        const long = (f.hint ?? '').includes('characters') || f.name.includes('text') || f.name.includes('content');
        return long ? (
          <Input.TextArea id={id} aria-label={f.name} autoSize={{ minRows: 2, maxRows: 12 }} placeholder={placeholder} value={(value as string) ?? ''} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)} />
        ) : (
          <Input id={id} aria-label={f.name} placeholder={placeholder} value={(value as string) ?? ''} onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)} />
        );
      }
      return (
        <Input
          id={id}
          aria-label={f.name}
          inputMode="decimal"
          placeholder={placeholder}
          value={value === undefined ? '' : String(value)}
          onChange={(e) => onChange(parseNumberInput(e.target.value, f.kind === 'integer'))}
          style={{ width: 240 }}
        />
      );
    case 'array': {
      const items = Array.isArray(value) ? value : [];
      return (
        <fieldset id={id} style={{ border: 'none', padding: 0, margin: 0 }}>
          <legend className="visually-hidden">{f.name}</legend>
          <Space direction="vertical" style={{ width: '100%' }}>
            {items.map((item, i) => (
              <Space key={i} align="start">
                <Control
                  field={{ ...f.item, name: `${f.name}[${i}]` }}
                  id={`${id}-${i}`}
                  value={item}
                  onChange={(v) => onChange(items.map((x, j) => (j === i ? v : x)))}
                />
                <Button aria-label={`Remove ${f.name} item ${i + 1}`} onClick={() => onChange(items.filter((_, j) => j !== i))}>
                  Remove
                </Button>
              </Space>
            ))}
            <Button size="small" onClick={() => onChange([...items, undefined])}>
              Add {f.name} item
            </Button>
          </Space>
        </fieldset>
      );
    }
    case 'object':
      return (
        <fieldset id={id} style={{ borderLeft: '2px solid rgba(128,128,128,.3)', paddingLeft: 12, margin: 0 }}>
          <legend className="visually-hidden">{f.name}</legend>
          <SchemaForm
            fields={f.fields}
            values={(value as Record<string, unknown>) ?? {}}
            onChange={(v) => onChange(Object.keys(v).length ? v : undefined)}
            idPrefix={id}
          />
        </fieldset>
      );
    case 'json':
      return (
        <Input.TextArea
          id={id}
          aria-label={f.name}
          autoSize={{ minRows: 2, maxRows: 12 }}
          style={{ fontFamily: 'monospace' }}
          placeholder={placeholder ?? 'JSON'}
          value={typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value)}
          onChange={(e) => onChange(e.target.value === '' ? undefined : e.target.value)}
        />
      );
  }
}

