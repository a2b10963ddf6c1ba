// The editor (`/ui/new`, `/ui/tools/NAME/edit`): a form over the definition (or its YAML/JSON
// source), checked by the server as you type — each problem shown at its field — with a
// preview of what the model and the process will get. Saving names the version the edit
// started from; a conflict never loses the edit; leaving with unsaved changes asks first.

import { Suspense, lazy, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Link, useBlocker, useNavigate, useParams } from 'react-router';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Alert, App as AntApp, Button, Card, Checkbox, Col, Input, InputNumber, Modal, Radio, Row, Segmented, Select, Space, Spin, Switch, Table, Tabs, Typography } from 'antd';
import YAML from 'yaml';
import { ApiError, allows, api, type CheckResult, type Definition, type Difference, type ParameterDef } from '../api';
import { useDark, useMe } from '../context';
import { BUILTINS, SCRIPT_TEMPLATE, cleanDefinition, emptyDefinition, executorKind, problemsAt, schemaToParams, withExecutor } from '../definition';
import { ParamBuilder } from '../ParamBuilder';
import { PlanView } from '../TestPanel';
import { useDebounced } from './Tools';
import { FORMATS, renderedText } from './Tool';

const CodeEditor = lazy(() => import('../CodeEditor'));

type Problems = { path: string; message: string }[];

const NO_PARAMS: ParameterDef[] = [];

function Field({ label, errors, children, hint, htmlFor }: { label: string; errors?: string[]; children: React.ReactNode; hint?: React.ReactNode; htmlFor?: string }) {
  return (
    <div style={{ marginBottom: 12 }}>
      <label htmlFor={htmlFor} style={{ display: 'block', fontWeight: 500, marginBottom: 4 }}>
        {label}
      </label>
      {children}
      {hint && <Typography.Text type="secondary" style={{ display: 'block', fontSize: 12 }}>{hint}</Typography.Text>}
      {errors?.map((e) => (
        <Typography.Text key={e} type="danger" role="alert" style={{ display: 'block', fontSize: 13 }}>
          {e}
        </Typography.Text>
      ))}
    </div>
  );
}

/** The top-level keys of `mine` that differ from `base`, applied onto `onto`. */
function reapply(base: Definition, mine: Definition, onto: Definition): Definition {
  const out: Definition = { ...onto };
  const keys = new Set([...Object.keys(base), ...Object.keys(mine)]);
  for (const k of keys) {
    if (JSON.stringify(base[k]) !== JSON.stringify(mine[k])) {
      if (mine[k] === undefined) delete out[k];
      else out[k] = mine[k];
    }
  }
  return out;
}

export default function EditorPage() {
  const { name } = useParams();
  const isNew = name === undefined;
  const me = useMe();
  const tool = useQuery({ queryKey: ['tool', name], queryFn: () => api.tool(name ?? ''), enabled: !isNew, refetchOnMount: 'always' });
  if (me && !allows(me.role, 'admin')) {
    return <Alert type="warning" showIcon title="Your role cannot edit tools" description="An admin token can." />;
  }
  if (isNew) return <Editor key="new" name={undefined} start={{ version: 0, definition: emptyDefinition() }} />;
  if (tool.isPending) return <Spin />;
  if (tool.error) return <Alert type="error" showIcon title={tool.error.message} />;
  return <Editor key={name} name={name} start={{ version: tool.data.version, definition: tool.data.definition }} />;
}

function Editor({ name, start }: { name: string | undefined; start: { version: number; definition: Definition } }) {
  const isNew = name === undefined;
  const dark = useDark();
  const navigate = useNavigate();
  const client = useQueryClient();
  const { message } = AntApp.useApp();

  // The version the edit started from, and the edit.
  const [base, setBase] = useState<{ version: number; definition: Definition }>(start);
  const [draft, setDraft] = useState<Definition>(start.definition);

  const clean = useMemo(() => cleanDefinition(draft), [draft]);
  const dirty = JSON.stringify(clean) !== JSON.stringify(cleanDefinition(base.definition));
  const [saving, setSaving] = useState(false);

  // Leaving with unsaved changes asks first (in the app, and when closing the tab).
  const blocker = useBlocker(({ currentLocation, nextLocation }) => dirty && !saving && currentLocation.pathname !== nextLocation.pathname);
  useEffect(() => {
    if (!dirty) return;
    const warn = (e: BeforeUnloadEvent) => e.preventDefault();
    window.addEventListener('beforeunload', warn);
    return () => window.removeEventListener('beforeunload', warn);
  }, [dirty]);

  // The server's checker on the draft, as you type.
  const [format, setFormat] = useState('openai');
  const [sample, setSample] = useState('{}');
  const checked = useDebounced(JSON.stringify({ clean, format, sample }), 350);
  const check = useQuery({
    queryKey: ['check', checked],
    queryFn: () => {
      const { clean: definition, format: f, sample: s } = JSON.parse(checked) as { clean: Definition; format: string; sample: string };
      const chosen = FORMATS.find((x) => x.key === f) ?? FORMATS[0]!;
      return api.check({ definition, format: chosen.format, strict: chosen.strict, arguments: s.trim() === '' ? undefined : s });
    },
    placeholderData: (prev) => prev,
  });
  const [saveProblems, setSaveProblems] = useState<Problems>([]);
  const problems: Problems = check.data?.problems ?? saveProblems;
  const at = (path: string, exact = true) => problemsAt(problems, path, exact);

  // 409: what changed on the server, and the choice.
  const [conflict, setConflict] = useState<{ current: number; changes: Difference[] } | undefined>();

  const save = useCallback(
    async (overwriteAt?: number) => {
      if (saving) return;
      setSaving(true);
      try {
        const saved = isNew ? await api.create(clean) : await api.update(name ?? '', clean, overwriteAt ?? base.version);
        setBase({ version: saved.version, definition: saved.definition });
        setDraft(saved.definition);
        setConflict(undefined);
        void client.invalidateQueries();
        void message.success(`${saved.name} saved as version ${saved.version}`);
        // Let the blocker see the saved state before leaving.
        setTimeout(() => navigate(`/tools/${encodeURIComponent(saved.name)}`), 0);
      } catch (e) {
        if (e instanceof ApiError && e.code === 'conflict' && e.currentVersion !== undefined && name) {
          const diff = await api.diff(name, base.version, e.currentVersion).catch(() => ({ changes: [] as Difference[] }));
          setConflict({ current: e.currentVersion, changes: diff.changes });
        } else if (e instanceof ApiError && e.status === 422) {
          setSaveProblems((e.details as Problems) ?? []);
          void message.error(`Not saved: ${e.message}`);
        } else {
          void message.error(`Not saved: ${e instanceof Error ? e.message : String(e)}`);
        }
      } finally {
        setSaving(false);
      }
    },
    [base, saving, isNew, clean, name, client, message, navigate],
  );

  // Ctrl/⌘+S saves.
  const saveRef = useRef(save);
  useEffect(() => {
    saveRef.current = save;
  });
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key.toLowerCase() === 's' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        void saveRef.current();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);

  const [reloading, setReloading] = useState(false);
  const reload = async () => {
    if (!name) return;
    setReloading(true);
    try {
      const current = await api.tool(name);
      setDraft(reapply(base.definition, draft, current.definition));
      setBase({ version: current.version, definition: current.definition });
      setConflict(undefined);
      void message.info(`Your changes were re-applied on version ${current.version}; check them and save`);
    } catch (e) {
      // The dialog stays, the draft with it: say why, so the person can try again.
      void message.error(`The tool could not be read again: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      setReloading(false);
    }
  };

  const kind = executorKind(draft);
  // An http tool has no form: its tab stays on the source.
  const [tab, setTab] = useState('form');
  const set = useCallback((k: string, v: unknown) => setDraft((d) => ({ ...d, [k]: v })), []);

  return (
    <main>
      <Space align="center" wrap style={{ marginBottom: 12, width: '100%', justifyContent: 'space-between' }}>
        <Typography.Title level={2} style={{ margin: 0 }}>
          {isNew ? 'New tool' : <>Edit <span style={{ fontFamily: 'monospace' }}>{name}</span></>}
        </Typography.Title>
        <Space wrap>
          {!isNew && <Typography.Text type="secondary">editing version {base.version}</Typography.Text>}
          {dirty ? <Typography.Text>unsaved changes</Typography.Text> : <Typography.Text type="secondary">no changes</Typography.Text>}
          <Link to={isNew ? '/tools' : `/tools/${encodeURIComponent(name ?? '')}`}>Cancel</Link>
          <Button type="primary" onClick={() => void save()} loading={saving} disabled={!dirty || check.data?.valid === false}>
            Save
          </Button>
        </Space>
      </Space>
      {check.data?.valid === false && (
        <Alert type="error" showIcon style={{ marginBottom: 12 }} title={`${problems.length} problem${problems.length > 1 ? 's' : ''} to fix before saving`} description={<ul style={{ margin: 0, paddingLeft: 18 }}>{problems.map((p) => <li key={p.path + p.message}><Typography.Text code>{p.path || '(definition)'}</Typography.Text> {p.message}</li>)}</ul>} />
      )}
      <Row gutter={16}>
        <Col xs={24} xl={15}>
          <Tabs
            activeKey={draft.http ? 'source' : tab}
            onChange={setTab}
            items={[
              {
                key: 'form',
                // The form knows command, script and built-in tools; an http tool is edited
                // in its source.
                disabled: draft.http !== undefined,
                label: draft.http ? 'Form (http tools: use Source)' : 'Form',
                children: <DefinitionForm draft={draft} set={set} setDraft={setDraft} at={at} problems={problems} isNew={isNew} kind={kind} dark={dark} onSave={() => void saveRef.current()} />,
              },
              {
                key: 'source',
                label: 'Source',
                children: <SourceView draft={clean} setDraft={setDraft} dark={dark} onSave={() => void saveRef.current()} />,
              },
            ]}
          />
        </Col>
        <Col xs={24} xl={9}>
          <Preview check={check.data} format={format} setFormat={setFormat} sample={sample} setSample={setSample} pending={check.isFetching} />
        </Col>
      </Row>
      <Modal
        open={conflict !== undefined}
        title="The tool changed on the server since you started"
        onCancel={() => setConflict(undefined)}
        footer={[
          <Button key="cancel" onClick={() => setConflict(undefined)}>
            Keep editing
          </Button>,
          <Button key="reload" onClick={() => void reload()} loading={reloading}>
            Reload and re-apply my changes
          </Button>,
          <Button key="overwrite" onClick={() => conflict && void save(conflict.current)}>
            Overwrite version {conflict?.current}
          </Button>,
        ]}
      >
        <Typography.Paragraph>
          You started from version {base.version}; the server is at version {conflict?.current}. Your edit is kept. What changed there:
        </Typography.Paragraph>
        <Table<Difference>
          size="small"
          rowKey="path"
          pagination={false}
          dataSource={conflict?.changes ?? []}
          columns={[
            { title: 'Field', dataIndex: 'path', render: (p: string) => <Typography.Text code>{p}</Typography.Text> },
            { title: `Version ${base.version}`, dataIndex: 'from', render: (v: unknown) => <code>{JSON.stringify(v)}</code> },
            { title: `Version ${conflict?.current}`, dataIndex: 'to', render: (v: unknown) => <code>{JSON.stringify(v)}</code> },
          ]}
        />
      </Modal>
      <Modal
        open={blocker.state === 'blocked'}
        title="Leave without saving?"
        onCancel={() => blocker.reset?.()}
        footer={[
          <Button key="stay" type="primary" onClick={() => blocker.reset?.()}>
            Stay
          </Button>,
          <Button key="leave" onClick={() => blocker.proceed?.()}>
            Leave and lose the changes
          </Button>,
        ]}
      >
        Your changes to this tool are not saved.
      </Modal>
    </main>
  );
}

function DefinitionForm({
  draft,
  set,
  setDraft,
  at,
  problems,
  isNew,
  kind,
  dark,
  onSave,
}: {
  draft: Definition;
  set: (k: string, v: unknown) => void;
  setDraft: (f: (d: Definition) => Definition) => void;
  at: (path: string, exact?: boolean) => string[];
  problems: Problems;
  isNew: boolean;
  kind: ReturnType<typeof executorKind>;
  dark: boolean;
  onSave: () => void;
}) {
  const [pasting, setPasting] = useState(false);
  const setParameters = useCallback((ps: ParameterDef[]) => set('parameters', ps), [set]);
  const setConfigSchema = useCallback((ps: ParameterDef[]) => set('config_schema', ps), [set]);
  const argv = draft.command ?? [''];
  const annotations = draft.annotations ?? {};
  const limits = draft.limits ?? {};
  return (
    <div>
      <Card size="small" title="The tool" style={{ marginBottom: 12 }}>
        <Row gutter={12}>
          <Col xs={24} md={12}>
            <Field label="Name" errors={at('name')} htmlFor="tool-name" hint={isNew ? 'letters, digits and _, starting with a letter' : 'a tool keeps its name; create a new one to rename'}>
              <Input id="tool-name" aria-label="Name" value={draft.name} disabled={!isNew} onChange={(e) => set('name', e.target.value)} style={{ fontFamily: 'monospace' }} />
            </Field>
          </Col>
          <Col xs={24} md={12}>
            <Field label="Title" errors={at('title')} htmlFor="tool-title">
              <Input id="tool-title" value={draft.title ?? ''} onChange={(e) => set('title', e.target.value)} />
            </Field>
          </Col>
        </Row>
        <Field label="Description" errors={at('description')} htmlFor="tool-description" hint="what the tool does — the model reads this">
          <Input.TextArea id="tool-description" aria-label="Description" autoSize={{ minRows: 2, maxRows: 8 }} value={draft.description} onChange={(e) => set('description', e.target.value)} />
        </Field>
        <Space wrap size="large" align="start">
          <Field label="Danger" errors={at('danger')}>
            <Radio.Group aria-label="Danger" value={draft.danger ?? 'safe'} onChange={(e) => set('danger', e.target.value)} options={[{ value: 'safe', label: 'safe' }, { value: 'dangerous', label: 'dangerous (asks before running)' }]} />
          </Field>
          <Field label="Status">
            <Space>
              <Switch aria-label="Enabled" checked={draft.enabled !== false} onChange={(on) => set('enabled', on)} />
              {draft.enabled === false ? 'disabled' : 'enabled'}
            </Space>
          </Field>
        </Space>
        <Field label="Annotations" errors={at('annotations', false)}>
          <Space wrap>
            {(['read_only', 'idempotent', 'open_world'] as const).map((k) => (
              <Checkbox key={k} checked={annotations[k] === true} onChange={(e) => set('annotations', { ...annotations, [k]: e.target.checked || undefined })}>
                {k}
              </Checkbox>
            ))}
          </Space>
        </Field>
        <Field label="Tags" errors={at('tags', false)}>
          <Select aria-label="Tags" mode="tags" value={draft.tags ?? []} onChange={(v: string[]) => set('tags', v)} style={{ width: '100%' }} />
        </Field>
      </Card>

      <Card size="small" title="What it runs" style={{ marginBottom: 12 }}>
        <Field label="Executor">
          <Radio.Group aria-label="Executor" value={kind} onChange={(e) => setDraft((d) => withExecutor(d, e.target.value))} options={[{ value: 'command', label: 'command' }, { value: 'script', label: 'script' }, { value: 'builtin', label: 'built-in' }]} optionType="button" />
        </Field>
        {kind === 'command' && (
          <>
            <Field label="Command" errors={at('command', false)} hint="one row per fixed argument — never a shell string; parameters are added after these">
              <Space direction="vertical" style={{ width: '100%' }}>
                {argv.map((a, i) => (
                  <Space.Compact key={i} style={{ width: '100%' }}>
                    <Input aria-label={i === 0 ? 'Command' : `Argument ${i}`} placeholder={i === 0 ? 'program, e.g. git' : 'fixed argument'} value={a} onChange={(e) => set('command', argv.map((x, j) => (j === i ? e.target.value : x)))} style={{ fontFamily: 'monospace' }} />
                    {i > 0 && (
                      <Button aria-label={`Remove argument ${i}`} onClick={() => set('command', argv.filter((_, j) => j !== i))}>
                        Remove
                      </Button>
                    )}
                  </Space.Compact>
                ))}
                <Button size="small" onClick={() => set('command', [...argv, ''])}>
                  Add argument
                </Button>
              </Space>
            </Field>
            <Space wrap size="large">
              <Field label="End of options" errors={at('end_of_options')} hint="put before the first positional value">
                <Select aria-label="End of options" allowClear placeholder="none" value={draft.end_of_options} onChange={(v) => set('end_of_options', v)} options={[{ value: '--', label: '--' }, { value: '--end-of-options', label: '--end-of-options' }]} style={{ width: 180 }} />
              </Field>
              <Field label="Output">
                <Select aria-label="Output" value={draft.output ?? 'text'} onChange={(v) => set('output', v === 'text' ? undefined : v)} options={[{ value: 'text', label: 'text' }, { value: 'json', label: 'json' }]} style={{ width: 120 }} />
              </Field>
            </Space>
          </>
        )}
        {kind === 'script' && (
          <>
            <Space wrap size="large">
              <Field label="Interpreter" errors={at('script.interpreter')} htmlFor="tool-interpreter">
                <Input
                  id="tool-interpreter"
                  value={draft.script?.interpreter ?? 'python3'}
                  onChange={(e) => {
                    // `warm: true` is for Python only: it goes when the interpreter stops being one.
                    const { warm, ...rest } = draft.script ?? {};
                    const keep = warm !== true || /python/.test(e.target.value);
                    set('script', { ...rest, ...(keep && warm !== undefined ? { warm } : {}), interpreter: e.target.value });
                  }}
                  style={{ width: 240, fontFamily: 'monospace' }}
                />
              </Field>
              {/python/.test(draft.script?.interpreter ?? 'python3') && (
                <Field label="Warm runtime" errors={at('script.warm')} hint="fork each call from a resident interpreter">
                  <Select
                    aria-label="Warm runtime"
                    value={draft.script?.warm === undefined ? 'default' : draft.script.warm ? 'on' : 'off'}
                    onChange={(v) => {
                      const { warm: _, ...rest } = draft.script ?? {};
                      set('script', v === 'default' ? rest : { ...rest, warm: v === 'on' });
                    }}
                    options={[
                      { value: 'default', label: "default (warm unless the server says --cold-python)" },
                      { value: 'on', label: 'always warm' },
                      { value: 'off', label: 'off: a fresh interpreter per call' },
                    ]}
                    style={{ width: 380 }}
                  />
                </Field>
              )}
            </Space>
            <Field label="Script" errors={at('script', false)} hint="reads the arguments as JSON on stdin, prints one JSON value">
              <Suspense fallback={<Spin />}>
                <CodeEditor
                  label="Script"
                  language={/python/.test(draft.script?.interpreter ?? 'python3') ? 'python' : /node/.test(draft.script?.interpreter ?? '') ? 'javascript' : 'shell'}
                  value={draft.script?.source ?? ''}
                  onChange={(v) => set('script', { ...draft.script, source: v })}
                  dark={dark}
                  onSave={onSave}
                />
              </Suspense>
              <Button size="small" style={{ marginTop: 6 }} onClick={() => set('script', { ...draft.script, source: SCRIPT_TEMPLATE })}>
                New script
              </Button>
            </Field>
          </>
        )}
        {kind === 'builtin' && (
          <Field label="Built-in" errors={at('builtin')}>
            <Select aria-label="Built-in" value={draft.builtin} onChange={(v) => set('builtin', v)} options={BUILTINS.map((b) => ({ value: b, label: b }))} style={{ width: 200 }} />
          </Field>
        )}
      </Card>

      {kind !== 'builtin' ? (
        <Card
          size="small"
          title="Parameters"
          style={{ marginBottom: 12 }}
          extra={
            <Button size="small" onClick={() => setPasting(true)}>
              Paste JSON Schema
            </Button>
          }
        >
          <ParamBuilder params={draft.parameters ?? NO_PARAMS} onChange={setParameters} path="parameters" problems={problems} place="argument" command={kind === 'command'} />
        </Card>
      ) : (
        <Alert type="info" showIcon style={{ marginBottom: 12 }} title="A built-in brings its own parameters" description="Its description, danger (never less than the built-in's) and config can be set here." />
      )}

      {kind !== 'builtin' ? (
        <Card size="small" title="Config (set by the operator, never shown to the model)" style={{ marginBottom: 12 }}>
          <ParamBuilder params={draft.config_schema ?? NO_PARAMS} onChange={setConfigSchema} path="config_schema" problems={problems} place="config" command={false} />
          <ConfigValues fields={draft.config_schema ?? []} values={draft.config ?? {}} onChange={(v) => set('config', v)} errors={(f) => at(`config.${f}`, false)} />
        </Card>
      ) : (
        <Card size="small" title="Config" style={{ marginBottom: 12 }}>
          <JsonField label="Config values (JSON)" value={draft.config ?? {}} onChange={(v) => set('config', v)} errors={at('config', false)} />
        </Card>
      )}

      <Card size="small" title="Limits and environment" style={{ marginBottom: 12 }}>
        <Space wrap align="start">
          <Field label="Timeout (ms)" errors={at('timeout_ms')}>
            <InputNumber aria-label="Timeout (ms)" min={1} value={draft.timeout_ms ?? null} placeholder="30000" onChange={(v) => set('timeout_ms', v ?? undefined)} style={{ width: 140 }} />
          </Field>
          <Field label="Max concurrent calls" errors={at('max_concurrency')}>
            <InputNumber aria-label="Max concurrent calls" min={1} value={draft.max_concurrency ?? null} onChange={(v) => set('max_concurrency', v ?? undefined)} style={{ width: 140 }} />
          </Field>
          {(['output_bytes', 'memory_bytes', 'processes', 'file_size_bytes', 'cpu_seconds'] as const).map((k) => (
            <Field key={k} label={k.replace(/_/g, ' ')} errors={at(`limits.${k}`)}>
              <InputNumber aria-label={`Limit ${k}`} min={0} value={limits[k] ?? null} placeholder="default" onChange={(v) => set('limits', { ...limits, [k]: v ?? undefined })} style={{ width: 150 }} />
            </Field>
          ))}
        </Space>
        {kind !== 'builtin' && (
          <>
            <Field label="Environment allowlist" errors={at('env_allowlist', false)} hint="variables of the server's environment the tool may see">
              <Select aria-label="Environment allowlist" mode="tags" value={draft.env_allowlist ?? []} onChange={(v: string[]) => set('env_allowlist', v)} style={{ width: '100%' }} />
            </Field>
            <Field label="Working folder" errors={at('working_dir')} htmlFor="tool-workdir" hint="relative to the workspace; empty: a fresh temporary folder per call">
              <Input id="tool-workdir" value={draft.working_dir ?? ''} onChange={(e) => set('working_dir', e.target.value)} style={{ width: 240, fontFamily: 'monospace' }} />
            </Field>
          </>
        )}
        <Checkbox checked={draft.strict_arguments === true} onChange={(e) => set('strict_arguments', e.target.checked || undefined)}>
          strict arguments (no repair of what models send)
        </Checkbox>
      </Card>
      <PasteSchema open={pasting} onClose={() => setPasting(false)} onImport={(ps) => set('parameters', ps)} />
    </div>
  );
}

/** Config values, by field; a secret shows `***` and stays unchanged unless retyped. */
function ConfigValues({ fields, values, onChange, errors }: { fields: ParameterDef[]; values: Record<string, unknown>; onChange: (v: Record<string, unknown>) => void; errors: (f: string) => string[] }) {
  if (fields.length === 0) return null;
  return (
    <div style={{ marginTop: 12 }}>
      <Typography.Text strong>Values</Typography.Text>
      {fields.map((f) => {
        const name = f.name ?? '';
        const v = values[name];
        const put = (x: unknown) => {
          const next = { ...values };
          if (x === undefined || x === '') delete next[name];
          else next[name] = x;
          onChange(next);
        };
        return (
          <Field key={name} label={name} errors={errors(name)} hint={f.secret ? 'secret: write-only; *** keeps the stored value' : undefined}>
            {f.secret ? (
              <Input.Password aria-label={`Config ${name}`} value={typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v)} onChange={(e) => put(e.target.value)} autoComplete="new-password" style={{ width: 320 }} />
            ) : (
              <Input aria-label={`Config ${name}`} value={typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v)} placeholder={f.default !== undefined ? `default: ${JSON.stringify(f.default)}` : undefined} onChange={(e) => {
                const t = e.target.value;
                if (f.type && f.type !== 'string' && t.trim() !== '') {
                  try {
                    put(JSON.parse(t));
                    return;
                  } catch {
                    // kept as text: the checker says what is wrong
                  }
                }
                put(t);
              }} style={{ width: 320, fontFamily: 'monospace' }} />
            )}
          </Field>
        );
      })}
    </div>
  );
}

function JsonField({ label, value, onChange, errors }: { label: string; value: unknown; onChange: (v: Record<string, unknown>) => void; errors: string[] }) {
  const [text, setText] = useState(JSON.stringify(value, null, 2));
  const [bad, setBad] = useState<string | undefined>();
  return (
    <Field label={label} errors={[...errors, ...(bad ? [bad] : [])]}>
      <Input.TextArea aria-label={label} value={text} autoSize={{ minRows: 2, maxRows: 10 }} style={{ fontFamily: 'monospace' }} onChange={(e) => {
        setText(e.target.value);
        try {
          const v = JSON.parse(e.target.value || '{}') as unknown;
          if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('a JSON object is needed');
          setBad(undefined);
          onChange(v as Record<string, unknown>);
        } catch (err) {
          setBad(String(err instanceof Error ? err.message : err));
        }
      }} />
    </Field>
  );
}

function PasteSchema({ open, onClose, onImport }: { open: boolean; onClose: () => void; onImport: (ps: ParameterDef[]) => void }) {
  const [text, setText] = useState('');
  const parsed = useMemo(() => {
    if (!text.trim()) return undefined;
    try {
      const v = JSON.parse(text) as Record<string, unknown>;
      // A whole tool (OpenAI, Anthropic, MCP) works too: its schema is taken.
      const fn = (v.function ?? v) as Record<string, unknown>;
      const schema = (fn.parameters ?? fn.input_schema ?? fn.inputSchema ?? v) as Record<string, unknown>;
      return schemaToParams(schema);
    } catch (e) {
      return { params: [], unsupported: [`not JSON: ${e instanceof Error ? e.message : String(e)}`], error: true };
    }
  }, [text]);
  return (
    <Modal
      open={open}
      title="Paste a JSON Schema"
      onCancel={onClose}
      okText="Use these parameters"
      okButtonProps={{ disabled: !parsed || parsed.params.length === 0 }}
      onOk={() => {
        if (parsed) onImport(parsed.params);
        setText('');
        onClose();
      }}
    >
      <Typography.Paragraph>An object schema (or a whole tool in OpenAI, Anthropic or MCP form). Its properties replace the parameters.</Typography.Paragraph>
      <Input.TextArea aria-label="JSON Schema" value={text} onChange={(e) => setText(e.target.value)} autoSize={{ minRows: 8, maxRows: 20 }} style={{ fontFamily: 'monospace' }} />
      {parsed && (
        <div style={{ marginTop: 8 }}>
          <Typography.Text>{parsed.params.length} parameter{parsed.params.length === 1 ? '' : 's'}: {parsed.params.map((p) => p.name).join(', ')}</Typography.Text>
          {parsed.unsupported.length > 0 && (
            <Alert type="warning" showIcon style={{ marginTop: 8 }} title="Not expressible, left out" description={<ul style={{ margin: 0, paddingLeft: 18 }}>{parsed.unsupported.map((u) => <li key={u}>{u}</li>)}</ul>} />
          )}
        </div>
      )}
    </Modal>
  );
}

/** The definition as YAML or JSON, editable; switching back to the form keeps both in step. */
function SourceView({ draft, setDraft, dark, onSave }: { draft: Definition; setDraft: (f: (d: Definition) => Definition) => void; dark: boolean; onSave: () => void }) {
  const [lang, setLang] = useState<'yaml' | 'json'>('yaml');
  const write = (d: Definition, l: 'yaml' | 'json') => (l === 'yaml' ? YAML.stringify(d) : JSON.stringify(d, null, 2));
  const [text, setText] = useState(() => write(draft, 'yaml'));
  const [error, setError] = useState<string | undefined>();
  return (
    <div>
      <Space style={{ marginBottom: 8 }} wrap>
        <Segmented aria-label="Source format" value={lang} onChange={(v) => { const l = v as 'yaml' | 'json'; setLang(l); setText(write(draft, l)); setError(undefined); }} options={[{ value: 'yaml', label: 'YAML' }, { value: 'json', label: 'JSON' }]} />
        <Typography.Text type="secondary">A catalog file's tool can be pasted here (one tool, not the `tools:` list).</Typography.Text>
      </Space>
      {error && <Alert type="error" showIcon title="The source does not parse; the form keeps the last good version" description={error} style={{ marginBottom: 8 }} />}
      <Suspense fallback={<Spin />}>
        <CodeEditor
          label="Definition source"
          language={lang}
          value={text}
          height={560}
          dark={dark}
          onSave={onSave}
          onChange={(t) => {
            setText(t);
            try {
              const v = (lang === 'yaml' ? YAML.parse(t) : JSON.parse(t)) as unknown;
              const one = Array.isArray((v as { tools?: unknown })?.tools) ? ((v as { tools: unknown[] }).tools[0] as unknown) : v;
              if (!one || typeof one !== 'object' || Array.isArray(one)) throw new Error('a tool is a mapping (name, description, …)');
              setError(undefined);
              setDraft(() => one as Definition);
            } catch (e) {
              setError(e instanceof Error ? e.message : String(e));
            }
          }}
        />
      </Suspense>
    </div>
  );
}

function Preview({ check, format, setFormat, sample, setSample, pending }: { check: CheckResult | undefined; format: string; setFormat: (f: string) => void; sample: string; setSample: (s: string) => void; pending: boolean }) {
  const pre: React.CSSProperties = { fontFamily: 'monospace', fontSize: 12, whiteSpace: 'pre-wrap', wordBreak: 'break-all', maxHeight: 320, overflow: 'auto', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 };
  return (
    <aside aria-label="Checks and preview" style={{ position: 'sticky', top: 16 }}>
      <Card size="small" title={<span>Checks {pending && <Spin size="small" />}</span>} style={{ marginBottom: 12 }}>
        {check === undefined ? (
          <Typography.Text type="secondary">checking…</Typography.Text>
        ) : check.valid ? (
          <Typography.Text>✓ No problems: this definition can be saved.</Typography.Text>
        ) : (
          <Typography.Text type="danger">{check.problems.length} problem{check.problems.length > 1 ? 's' : ''}, each shown at its field.</Typography.Text>
        )}
      </Card>
      <Card size="small" title="As the model sees it" style={{ marginBottom: 12 }}>
        <Segmented size="small" aria-label="Preview format" value={format} onChange={(v) => setFormat(String(v))} options={FORMATS.map((f) => ({ value: f.key, label: f.label }))} style={{ marginBottom: 8, flexWrap: 'wrap' }} />
        <pre tabIndex={0} aria-label="Rendered tool" style={pre}>
          {check?.rendered !== undefined ? renderedText(check.rendered) : check?.valid === false ? '(fix the problems first)' : '…'}
        </pre>
      </Card>
      <Card size="small" title="What a call would run">
        <label htmlFor="sample-args">
          <Typography.Text>Sample arguments (JSON)</Typography.Text>
        </label>
        <Input.TextArea id="sample-args" value={sample} onChange={(e) => setSample(e.target.value)} autoSize={{ minRows: 2, maxRows: 8 }} style={{ fontFamily: 'monospace', marginBottom: 8 }} />
        {check?.plan ? (
          check.plan.success ? (
            <PlanView plan={check.plan.data as never} coerced={check.plan.meta.coerced} />
          ) : (
            <Alert type="warning" showIcon title={check.plan.error?.kind ?? 'error'} description={check.plan.error?.message} />
          )
        ) : null}
        {check?.input_schema && (
          <details style={{ marginTop: 8 }}>
            <summary>JSON Schema of the arguments</summary>
            <pre tabIndex={0} aria-label="JSON Schema of the arguments" style={pre}>{JSON.stringify(check.input_schema, null, 2)}</pre>
          </details>
        )}
      </Card>
    </aside>
  );
}
