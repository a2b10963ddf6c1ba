// The parameter builder: add, remove and reorder parameters; for each, its type and the
// constraints that apply to it, nested items and properties, and — for command tools — how
// it is injected, with a live one-line example. Config fields add `secret` and `env_name`.
// Problems from the checker are shown at the parameter they belong to.

import { memo, useCallback, useEffect, useRef, useState } from 'react';
import { Button, Checkbox, Input, InputNumber, Select, Space, Tooltip, Typography } from 'antd';
import type { ParameterDef } from './api';
import { TYPES, injectionExample, itemsOf, problemsAt, withType } from './definition';

export type Place = 'argument' | 'config' | 'property' | 'items';

interface Props {
  params: ParameterDef[];
  onChange: (params: ParameterDef[]) => void;
  /** The path of the list in the definition (`parameters`, `config_schema`, …). */
  path: string;
  problems: { path: string; message: string }[];
  place: Place;
  /** Command tools: show injection settings. */
  command: boolean;
}

const FORMATS = ['date-time', 'date', 'time', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uri', 'uri-reference', 'uuid', 'regex'];

export const ParamBuilder = memo(function ParamBuilder({ params, onChange, path, problems, place, command }: Props) {
  const [open, setOpen] = useState<number[]>([]);
  // One stable setter for every row, so a change to one row re-renders only that row (the
  // rows are memoized): with fifty parameters open, typing stays immediate.
  const latest = useRef({ params, onChange });
  useEffect(() => {
    latest.current = { params, onChange };
  });
  const setAt = useCallback((i: number, p: ParameterDef) => {
    const { params: ps, onChange: change } = latest.current;
    change(ps.map((x, j) => (j === i ? p : x)));
  }, []);
  const move = useCallback((i: number, d: number) => {
    const { params: ps, onChange: change } = latest.current;
    const j = i + d;
    if (j < 0 || j >= ps.length) return;
    const next = [...ps];
    [next[i], next[j]] = [next[j]!, next[i]!];
    change(next);
    setOpen((o) => o.map((k) => (k === i ? j : k === j ? i : k)));
  }, []);
  const remove = useCallback((i: number) => {
    const { params: ps, onChange: change } = latest.current;
    change(ps.filter((_, j) => j !== i));
    setOpen((o) => o.filter((k) => k !== i).map((k) => (k > i ? k - 1 : k)));
  }, []);
  const toggle = useCallback((i: number) => setOpen((o) => (o.includes(i) ? o.filter((k) => k !== i) : [...o, i])), []);
  const add = () => {
    onChange([...params, { name: `param_${params.length + 1}` }]);
    setOpen((o) => [...o, params.length]);
  };
  return (
    <div>
      {params.length === 0 && <Typography.Paragraph type="secondary">No {place === 'config' ? 'config fields' : 'parameters'} yet.</Typography.Paragraph>}
      <div style={{ border: params.length ? '1px solid rgba(128,128,128,.3)' : undefined, borderRadius: 6 }}>
        {params.map((p, i) => {
          const at = `${path}[${i}]`;
          const errs = problemsAt(problems, at);
          return (
            <Item
              key={i}
              p={p}
              index={i}
              count={params.length}
              at={at}
              problems={errs.length ? problems : NONE}
              errorCount={errs.length}
              open={open.includes(i) || errs.length > 0}
              toggle={toggle}
              move={move}
              remove={remove}
              setAt={setAt}
              place={place}
              command={command}
            />
          );
        })}
      </div>
      <Button style={{ marginTop: 8 }} onClick={add}>
        {place === 'config' ? 'Add config field' : place === 'property' ? 'Add property' : 'Add parameter'}
      </Button>
    </div>
  );
});

const NONE: { path: string; message: string }[] = [];

/** One parameter: a header that opens it, its actions, and (when open) its settings. */
const Item = memo(function Item({
  p,
  index,
  count,
  at,
  problems,
  errorCount,
  open,
  toggle,
  move,
  remove,
  setAt,
  place,
  command,
}: {
  p: ParameterDef;
  index: number;
  count: number;
  at: string;
  problems: { path: string; message: string }[];
  errorCount: number;
  open: boolean;
  toggle: (i: number) => void;
  move: (i: number, d: number) => void;
  remove: (i: number) => void;
  setAt: (i: number, p: ParameterDef) => void;
  place: Place;
  command: boolean;
}) {
  return (
    <div style={{ borderTop: index > 0 ? '1px solid rgba(128,128,128,.3)' : undefined }}>
      <div style={{ display: 'flex', alignItems: 'center', gap: 8, padding: '6px 8px' }}>
        <button
          type="button"
          aria-expanded={open}
          onClick={() => toggle(index)}
          style={{ flex: 1, textAlign: 'left', background: 'none', border: 'none', cursor: 'pointer', color: 'inherit', font: 'inherit', padding: 4 }}
        >
          <span aria-hidden>{open ? '▾' : '▸'} </span>
          <Typography.Text code>{p.name || '(unnamed)'}</Typography.Text> {p.type ?? 'string'}
          {p.required === false || p.default !== undefined ? ' · optional' : ''}
          {errorCount > 0 && <Typography.Text type="danger"> · {errorCount} problem{errorCount > 1 ? 's' : ''}</Typography.Text>}
        </button>
        <Space size={4}>
          <Button size="small" aria-label={`Move ${p.name} up`} disabled={index === 0} onClick={() => move(index, -1)}>
            ↑
          </Button>
          <Button size="small" aria-label={`Move ${p.name} down`} disabled={index === count - 1} onClick={() => move(index, 1)}>
            ↓
          </Button>
          <Button size="small" aria-label={`Remove ${p.name}`} onClick={() => remove(index)}>
            Remove
          </Button>
        </Space>
      </div>
      {open && (
        <div style={{ padding: '4px 12px 12px' }}>
          <ParamRow p={p} index={index} setAt={setAt} at={at} problems={problems} place={place} command={command} />
        </div>
      )}
    </div>
  );
});

function Field({ label, children, errors, hint }: { label: string; children: React.ReactNode; errors?: string[]; hint?: string }) {
  return (
    <label style={{ display: 'block', marginBottom: 8 }}>
      <Typography.Text style={{ display: 'block', fontSize: 12 }}>{label}</Typography.Text>
      {children}
      {hint && <Typography.Text type="secondary" style={{ display: 'block', fontSize: 12 }}>{hint}</Typography.Text>}
      {errors?.map((e) => (
        <Typography.Text key={e} type="danger" style={{ display: 'block', fontSize: 12 }} role="alert">
          {e}
        </Typography.Text>
      ))}
    </label>
  );
}

function parseJsonish(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const ParamRow = memo(function ParamRow({
  p,
  index,
  setAt,
  at,
  problems,
  place,
  command,
}: {
  p: ParameterDef;
  index: number;
  setAt: (i: number, p: ParameterDef) => void;
  at: string;
  problems: { path: string; message: string }[];
  place: Place;
  command: boolean;
}) {
  const type = p.type ?? 'string';
  const onChange = (np: ParameterDef) => setAt(index, np);
  const put = (key: string, value: unknown) => {
    const next = { ...p };
    if (value === undefined || value === '' || value === null) delete next[key];
    else next[key] = value;
    onChange(next);
  };
  const err = (key: string) => problemsAt(problems, `${at}.${key}`, true);
  const num = (key: string, label: string) => (
    <Field label={label} errors={err(key)}>
      <InputNumber aria-label={label} value={typeof p[key] === 'number' ? (p[key] as number) : null} onChange={(v) => put(key, v ?? undefined)} style={{ width: 140 }} />
    </Field>
  );
  const [defaultText, setDefaultText] = useState(p.default === undefined ? '' : JSON.stringify(p.default));
  return (
    <div>
      {problemsAt(problems, at, true).map((e) => (
        <Typography.Text key={e} type="danger" role="alert" style={{ display: 'block' }}>
          {e}
        </Typography.Text>
      ))}
      <Space wrap align="start">
        {place !== 'items' && (
          <Field label="Parameter name" errors={err('name')}>
            <Input aria-label="Parameter name" value={p.name ?? ''} onChange={(e) => put('name', e.target.value)} style={{ width: 200, fontFamily: 'monospace' }} />
          </Field>
        )}
        <Field label="Type" errors={err('type')}>
          <Select aria-label="Type" value={type} onChange={(t) => onChange(withType(p, t))} options={TYPES.map((t) => ({ value: t, label: t }))} style={{ width: 130 }} />
        </Field>
        {place !== 'items' && (
          <Field label="Required" errors={err('required')}>
            <Checkbox aria-label="Required" checked={p.required !== false && p.default === undefined} disabled={p.default !== undefined} onChange={(e) => put('required', e.target.checked ? undefined : false)}>
              required
            </Checkbox>
          </Field>
        )}
        <Field label="Nullable">
          <Checkbox aria-label="Nullable" checked={p.nullable === true} onChange={(e) => put('nullable', e.target.checked || undefined)}>
            may be null
          </Checkbox>
        </Field>
        {place === 'config' && (
          <Field label="Secret" hint="write-only: shown as ***">
            <Checkbox aria-label="Secret" checked={p.secret === true} onChange={(e) => put('secret', e.target.checked || undefined)}>
              secret
            </Checkbox>
          </Field>
        )}
      </Space>
      <Field label="Description" errors={err('description')}>
        <Input.TextArea aria-label="Parameter description" autoSize={{ minRows: 1, maxRows: 4 }} value={p.description ?? ''} onChange={(e) => put('description', e.target.value)} />
      </Field>
      {place !== 'items' && (
        <Field label="Default (JSON)" errors={err('default')} hint={p.default !== undefined ? 'with a default, the parameter is optional' : undefined}>
          <Input
            aria-label="Default"
            value={defaultText}
            placeholder="none"
            onChange={(e) => {
              setDefaultText(e.target.value);
              put('default', e.target.value.trim() === '' ? undefined : parseJsonish(e.target.value));
            }}
            style={{ width: 280, fontFamily: 'monospace' }}
          />
        </Field>
      )}
      {type === 'enum' && (
        <Field label="Values" errors={err('values')} hint="all strings, or all integers">
          <Select
            aria-label="Values"
            mode="tags"
            value={(p.values ?? []).map(String)}
            onChange={(vs: string[]) => {
              const ints = vs.length > 0 && vs.every((v) => /^-?\d+$/.test(v));
              put('values', ints ? vs.map(Number) : vs);
            }}
            style={{ minWidth: 280 }}
          />
        </Field>
      )}
      {type === 'string' && (
        <Space wrap align="start">
          {num('min_length', 'Min length')}
          {num('max_length', 'Max length')}
          <Field label="Pattern (regex)" errors={err('pattern')}>
            <Input aria-label="Pattern" value={(p.pattern as string) ?? ''} onChange={(e) => put('pattern', e.target.value)} style={{ width: 220, fontFamily: 'monospace' }} />
          </Field>
          <Field label="Format" errors={err('format')}>
            <Select aria-label="Format" allowClear value={p.format as string | undefined} onChange={(v) => put('format', v)} options={FORMATS.map((f) => ({ value: f, label: f }))} style={{ width: 150 }} />
          </Field>
          <Field label="Workspace path" hint="relative, no .., no symlink out">
            <Checkbox aria-label="Workspace path" checked={p.workspace_path === true} onChange={(e) => put('workspace_path', e.target.checked || undefined)}>
              a path in the workspace
            </Checkbox>
          </Field>
        </Space>
      )}
      {(type === 'integer' || type === 'number') && (
        <Space wrap align="start">
          {num('minimum', 'Minimum')}
          {num('maximum', 'Maximum')}
          {num('exclusive_minimum', 'Exclusive minimum')}
          {num('exclusive_maximum', 'Exclusive maximum')}
          {num('multiple_of', 'Multiple of')}
        </Space>
      )}
      {type === 'array' && (
        <div>
          <Space wrap align="start">
            {num('min_items', 'Min items')}
            {num('max_items', 'Max items')}
            <Field label="Unique items">
              <Checkbox aria-label="Unique items" checked={p.unique_items === true} onChange={(e) => put('unique_items', e.target.checked || undefined)}>
                no repeats
              </Checkbox>
            </Field>
          </Space>
          <Typography.Text strong>Items</Typography.Text>
          <div style={{ borderLeft: '2px solid rgba(128,128,128,.3)', paddingLeft: 12 }}>
            <ParamRow p={itemsOf(p)} index={0} setAt={(_, item) => put('items', item)} at={`${at}.items`} problems={problems} place="items" command={false} />
          </div>
        </div>
      )}
      {type === 'object' && (
        <div>
          <Field label="Additional properties">
            <Checkbox
              aria-label="Additional properties"
              checked={p.additional_properties ?? (p.properties ?? []).length === 0}
              onChange={(e) => put('additional_properties', e.target.checked)}
            >
              other keys allowed
            </Checkbox>
          </Field>
          <Typography.Text strong>Properties</Typography.Text>
          <div style={{ borderLeft: '2px solid rgba(128,128,128,.3)', paddingLeft: 12 }}>
            <ParamBuilder params={p.properties ?? []} onChange={(ps) => put('properties', ps.length ? ps : undefined)} path={`${at}.properties`} problems={problems} place="property" command={false} />
          </div>
        </div>
      )}
      {command && place === 'argument' && <Injection p={p} put={put} err={err} />}
      {place === 'config' && (
        <Field label="Environment variable" errors={err('env_name')} hint="how command tools receive it (default: the name in capitals)">
          <Input aria-label="Environment variable" value={p.env_name ?? ''} onChange={(e) => put('env_name', e.target.value)} style={{ width: 220, fontFamily: 'monospace' }} />
        </Field>
      )}
    </div>
  );
});

function Injection({ p, put, err }: { p: ParameterDef; put: (k: string, v: unknown) => void; err: (k: string) => string[] }) {
  const how = p.inject_as ?? 'argument';
  const type = p.type ?? 'string';
  return (
    <div style={{ marginTop: 8 }}>
      <Space wrap align="start">
        <Field label="Injected as" errors={err('inject_as')}>
          <Select
            aria-label="Injected as"
            value={how}
            onChange={(v) => put('inject_as', v === 'argument' ? undefined : v)}
            options={['argument', 'option', 'stdin', 'env'].map((v) => ({ value: v, label: v }))}
            style={{ width: 130 }}
          />
        </Field>
        {how === 'option' && (
          <>
            <Field label="Option name" errors={err('option_name')}>
              <Input aria-label="Option name" placeholder="--name" value={p.option_name ?? ''} onChange={(e) => put('option_name', e.target.value)} style={{ width: 160, fontFamily: 'monospace' }} />
            </Field>
            <Field label="Option style">
              <Select aria-label="Option style" value={p.option_style ?? 'separate'} onChange={(v) => put('option_style', v === 'separate' ? undefined : v)} options={[{ value: 'separate', label: '--name value' }, { value: 'equals', label: '--name=value' }]} style={{ width: 160 }} />
            </Field>
            {type === 'boolean' && (
              <Field label="Boolean style">
                <Select aria-label="Boolean style" value={p.boolean_style ?? 'flag'} onChange={(v) => put('boolean_style', v === 'flag' ? undefined : v)} options={[{ value: 'flag', label: 'flag' }, { value: 'value', label: 'value' }]} style={{ width: 120 }} />
              </Field>
            )}
          </>
        )}
        {how === 'env' && (
          <Field label="Environment variable" errors={err('env_name')}>
            <Input aria-label="Environment variable" value={p.env_name ?? ''} onChange={(e) => put('env_name', e.target.value)} style={{ width: 180, fontFamily: 'monospace' }} />
          </Field>
        )}
        {type === 'array' && (
          <>
            <Field label="Array style">
              <Select
                aria-label="Array style"
                allowClear
                value={p.array_style}
                onChange={(v) => put('array_style', v)}
                options={['repeat', 'separate', 'join'].map((v) => ({ value: v, label: v }))}
                style={{ width: 130 }}
              />
            </Field>
            <Field label="Separator">
              <Input aria-label="Separator" placeholder="," value={p.separator ?? ''} onChange={(e) => put('separator', e.target.value)} style={{ width: 80 }} />
            </Field>
          </>
        )}
      </Space>
      <Tooltip title="With a sample value (the default, when there is one)">
        <Typography.Text type="secondary" style={{ display: 'block' }}>
          Reaches the command as: <Typography.Text code data-testid="injection-example">{injectionExample(p)}</Typography.Text>
        </Typography.Text>
      </Tooltip>
    </div>
  );
}
