// One tool: its definition read-only, the test panel, its history with field-level diffs,
// and how each provider sees it.

import { Suspense, lazy, useState } from 'react';
import { Link, useLocation, useNavigate, useParams, useSearchParams } from 'react-router';
import { useQueryClient } from '@tanstack/react-query';
import YAML from 'yaml';
import { useQuery } from '@tanstack/react-query';
import { Alert, App as AntApp, Button, Descriptions, Empty, Input, Modal, Segmented, Select, Space, Spin, Table, Tabs, Typography } from 'antd';
import { allows, api, type Definition, type Difference, type JsonSchema, type ParameterDef, type SandboxReport } from '../api';
import { useDark, useMe } from '../context';
import { schemaToParams } from '../definition';
import { DangerTag, EnabledSwitch } from './Tools';
import { TestPanel } from '../TestPanel';
import { Pill } from '../Pill';
import { Findings } from '../Findings';
import { statusText, statusTone } from '../servers';

const code: React.CSSProperties = { fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-all', margin: 0 };

function typeOf(p: ParameterDef): string {
  const t = p.type ?? 'string';
  if (t === 'array') {
    const items = typeof p.items === 'string' ? p.items : (p.items?.type ?? 'string');
    return `array of ${items}`;
  }
  if (t === 'enum') return `enum: ${(p.values ?? []).map((v) => JSON.stringify(v)).join(' | ')}`;
  return t + (p.nullable ? ' | null' : '');
}

const CONSTRAINTS = ['min_length', 'max_length', 'pattern', 'format', 'minimum', 'maximum', 'exclusive_minimum', 'exclusive_maximum', 'multiple_of', 'min_items', 'max_items', 'unique_items', 'workspace_path'];

function constraintsOf(p: ParameterDef): string {
  return CONSTRAINTS.filter((k) => p[k] !== undefined)
    .map((k) => `${k}: ${JSON.stringify(p[k])}`)
    .join(', ');
}

function injectionOf(p: ParameterDef, executor: string): string {
  if (executor === 'mcp') return 'JSON, sent to the MCP server';
  if (executor === 'http') return `${p.inject_as ?? 'query or body'} ${p.http_name ?? p.name ?? ''}${p.array_style ? ` (${p.array_style})` : ''}`;
  if (executor !== 'command') return 'JSON (stdin of the script, or the built-in)';
  const how = p.inject_as ?? 'argument';
  switch (how) {
    case 'option':
      return `option ${p.option_name ?? ''}${p.option_style === 'equals' ? '=value' : ' value'}${p.boolean_style ? ` (${p.boolean_style})` : ''}${p.array_style ? ` (${p.array_style})` : ''}`;
    case 'env':
      return `environment ${p.env_name ?? (p.name ?? '').toUpperCase()}`;
    default:
      return how + (p.array_style ? ` (${p.array_style})` : '');
  }
}

function executorOf(d: Definition): string {
  return d.command ? 'command' : d.script ? 'script' : d.builtin ? 'builtin' : d.mcp ? 'mcp' : d.http ? 'http' : 'unknown';
}

/** What a tool's processes may reach, and what this server's kernel enforces of it. */
function SandboxSection({ report }: { report: SandboxReport }) {
  const policy = typeof report.policy === 'string' ? report.policy : JSON.stringify(report.policy);
  const rows: [string, string | undefined][] = [
    ['Files', report.filesystem],
    ['Network', report.network],
    ['Signals and ptrace', report.signals],
  ];
  return (
    <section aria-label="Sandbox">
      <Typography.Title level={4}>Sandbox</Typography.Title>
      <Descriptions bordered size="small" column={1}>
        <Descriptions.Item label="Policy">
          <Typography.Text code>{policy}</Typography.Text>
          {policy === 'none' || policy === 'off' ? ' — its processes run with the server user\'s full reach' : ''}
        </Descriptions.Item>
        {rows
          .filter(([, v]) => v !== undefined)
          .map(([label, v]) => (
            <Descriptions.Item key={label} label={label}>
              <Pill>{v}</Pill>
            </Descriptions.Item>
          ))}
        {report.landlock_abi !== undefined && (
          <Descriptions.Item label="This kernel">
            Landlock ABI {report.landlock_abi}, seccomp {report.seccomp ? 'on' : 'off'}
            {report.capabilities === 'dropped' ? ', capabilities dropped' : ''}
          </Descriptions.Item>
        )}
        {report.missing && <Descriptions.Item label="Not enforced here">{report.missing.join('; ')}</Descriptions.Item>}
      </Descriptions>
    </section>
  );
}

/** Where an upstream tool comes from: its server's page, and the server's live status (when
 *  the caller may read servers). */
function UpstreamOf({ tool, server }: { tool: string; server: string }) {
  const status = useQuery({ queryKey: ['servers', server], queryFn: () => api.server(server), refetchInterval: 1500, retry: false });
  const st = status.data?.status?.status;
  return (
    <span>
      tool <Typography.Text code>{tool}</Typography.Text> of the MCP server{' '}
      <Link className="ts-text-link" to={`/servers/${encodeURIComponent(server)}`}>
        {server}
      </Link>{' '}
      {status.data && (
        <span aria-label={`Server status: ${statusText(st)}`}>
          <Pill tone={statusTone(st)}>{statusText(st)}</Pill>
        </span>
      )}
      (its definition comes from the server; changes it makes wait for approval on the server&apos;s page, or{' '}
      <Typography.Text code>toolsmith servers changes {server}</Typography.Text>)
    </span>
  );
}

function Definition({ d, schema }: { d: Definition; schema: JsonSchema }) {
  const executor = executorOf(d);
  // A built-in's parameters are its own, an upstream tool's its server's: both come from the
  // schema (which, for an upstream, may say more than a table can: it is shown as well).
  const fromSchema = executor === 'builtin' || executor === 'mcp';
  const params = fromSchema ? schemaToParams(schema).params : (d.parameters ?? []);
  return (
    <Space direction="vertical" style={{ width: '100%' }} size="large">
      <Descriptions bordered size="small" column={1}>
        <Descriptions.Item label="Description">{d.description}</Descriptions.Item>
        <Descriptions.Item label="Executor">
          {executor === 'command' && <pre style={code}>{(d.command ?? []).join(' ')}</pre>}
          {executor === 'builtin' && <span>built-in {d.builtin}</span>}
          {executor === 'http' && (
            <div>
              <pre style={code}>{`${d.http?.method ?? 'GET'} ${d.http?.url ?? ''}`}</pre>
              {d.http?.auth && <div>credentials: {Object.keys(d.http.auth).join(', ')} (from secret config fields)</div>}
              {d.http?.allow_hosts && <div>may reach only: {d.http.allow_hosts.join(', ')}</div>}
            </div>
          )}
          {executor === 'mcp' && d.mcp && <UpstreamOf tool={d.mcp.tool} server={d.mcp.server} />}
          {executor === 'script' && (
            <div>
              <div>
                script, interpreter {d.script?.interpreter ?? 'python3'}
                {/python/.test(d.script?.interpreter ?? 'python3') && <>, {warmLabel(d.script?.warm)}</>}
              </div>
              <pre tabIndex={0} aria-label="Script source" style={{ ...code, maxHeight: 320, overflow: 'auto', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 }}>{d.script?.source}</pre>
            </div>
          )}
        </Descriptions.Item>
        {d.end_of_options && <Descriptions.Item label="End of options">{d.end_of_options}</Descriptions.Item>}
        <Descriptions.Item label="Danger">
          <DangerTag danger={d.danger ?? 'safe'} />
        </Descriptions.Item>
        <Descriptions.Item label="Annotations">
          {d.annotations && Object.keys(d.annotations).length
            ? Object.entries(d.annotations).map(([k, v]) => (
                <Pill key={k}>{k}: {String(v)}</Pill>
              ))
            : 'none'}
        </Descriptions.Item>
        <Descriptions.Item label="Timeout">{d.timeout_ms ?? 30000} ms</Descriptions.Item>
        <Descriptions.Item label="Limits">{d.limits ? JSON.stringify(d.limits) : 'the server defaults'}</Descriptions.Item>
        {d.working_dir && <Descriptions.Item label="Working folder">{d.working_dir} (in the workspace)</Descriptions.Item>}
        {d.env_allowlist && <Descriptions.Item label="Environment allowlist">{d.env_allowlist.join(', ')}</Descriptions.Item>}
        {d.env && <Descriptions.Item label="Environment">{Object.entries(d.env).map(([k, v]) => `${k}=${v}`).join(', ')}</Descriptions.Item>}
        <Descriptions.Item label="Tags">{(d.tags ?? []).map((t) => <Pill key={t}>{t}</Pill>)}</Descriptions.Item>
      </Descriptions>
      <div>
        <Typography.Title level={4}>Parameters</Typography.Title>
        <Table<ParameterDef>
          rowKey={(p) => p.name ?? ''}
          size="small"
          pagination={false}
          dataSource={params}
          scroll={{ x: 'max-content' }}
          locale={{ emptyText: 'This tool takes no parameters.' }}
          columns={[
            { title: 'Name', dataIndex: 'name', render: (n: string, p) => <span><Typography.Text code>{n}</Typography.Text>{p.description && <div><Typography.Text type="secondary">{p.description}</Typography.Text></div>}</span> },
            { title: 'Type', render: (_, p) => typeOf(p) },
            { title: 'Required', render: (_, p) => (p.required === false || p.default !== undefined ? 'no' : 'yes') },
            { title: 'Default', render: (_, p) => (p.default === undefined ? '—' : <Typography.Text code>{JSON.stringify(p.default)}</Typography.Text>) },
            { title: 'Constraints', render: (_, p) => constraintsOf(p) || '—' },
            { title: 'Injected as', render: (_, p) => injectionOf(p, executor) },
          ]}
        />
        {executor === 'mcp' && (
          <details style={{ marginTop: 8 }}>
            <summary>The input schema, as the server gave it</summary>
            <pre tabIndex={0} aria-label="Input schema" style={{ ...code, maxHeight: 320, overflow: 'auto' }}>{JSON.stringify(schema, null, 2)}</pre>
          </details>
        )}
      </div>
      {(d.config_schema ?? []).length > 0 && (
        <div>
          <Typography.Title level={4}>Config</Typography.Title>
          <Table<ParameterDef>
            rowKey={(p) => p.name ?? ''}
            size="small"
            pagination={false}
            dataSource={d.config_schema}
            columns={[
              { title: 'Field', dataIndex: 'name', render: (n: string) => <Typography.Text code>{n}</Typography.Text> },
              { title: 'Type', render: (_, p) => typeOf(p) },
              { title: 'Secret', render: (_, p) => (p.secret ? <Pill tone="info">secret</Pill> : 'no') },
              { title: 'Value', render: (_, p) => <Typography.Text code>{JSON.stringify(d.config?.[p.name ?? ''] ?? p.default ?? null)}</Typography.Text> },
            ]}
          />
        </div>
      )}
    </Space>
  );
}

const TextDiff = lazy(() => import('../CodeEditor').then((m) => ({ default: m.TextDiff })));

function History({ name, current }: { name: string; current: number }) {
  const versions = useQuery({ queryKey: ['versions', name], queryFn: () => api.versions(name) });
  const me = useMe();
  const dark = useDark();
  const client = useQueryClient();
  const { message, modal } = AntApp.useApp();
  const [asText, setAsText] = useState(false);
  const restore = (v: number) =>
    modal.confirm({
      title: `Restore version ${v}?`,
      content: `Version ${v}'s definition becomes version ${current + 1}; nothing is lost — every version stays in the history.`,
      okText: 'Restore',
      onOk: async () => {
        try {
          const r = await api.restore(name, v);
          void message.success(`version ${v} restored as version ${r.version}`);
        } catch (e) {
          void message.error(`version ${v} was not restored: ${e instanceof Error ? e.message : String(e)}`);
        }
        // The dialog closes on the outcome; the page catches up in the background (awaiting
        // every query's refetch kept the dialog open as long as the slowest one took).
        void client.invalidateQueries();
      },
    });
  const [from, setFrom] = useState<number | undefined>();
  const [to, setTo] = useState<number | undefined>();
  const a = from ?? Math.max(1, current - 1);
  const b = to ?? current;
  const diff = useQuery({ queryKey: ['diff', name, a, b], queryFn: () => api.diff(name, a, b), enabled: a !== b });
  if (versions.isPending) return <Spin />;
  if (versions.error) return <Alert type="error" showIcon title="The history could not be read" description={versions.error.message} />;
  const list = [...versions.data.versions].reverse();
  const options = list.map((v) => ({ value: v.version, label: `version ${v.version}` }));
  return (
    <Space direction="vertical" style={{ width: '100%' }} size="large">
      <Table
        rowKey="version"
        size="small"
        pagination={list.length > 20 ? { pageSize: 20 } : false}
        dataSource={list}
        columns={[
          { title: 'Version', dataIndex: 'version', render: (v: number) => (v === current ? <span>{v} <Pill tone="info">current</Pill></span> : v) },
          { title: 'Time', dataIndex: 'created_at_ms', render: (ms: number) => new Date(ms).toLocaleString() },
          { title: 'Author', dataIndex: 'author' },
          { title: 'Summary', dataIndex: 'summary' },
          {
            title: '',
            key: 'restore',
            render: (_: unknown, v: { version: number }) =>
              v.version !== current && allows(me?.role, 'admin') ? (
                <Button size="small" onClick={() => restore(v.version)} aria-label={`Restore version ${v.version}`}>
                  Restore
                </Button>
              ) : null,
          },
        ]}
      />
      <div>
        <Typography.Title level={4}>Compare</Typography.Title>
        <Space wrap style={{ marginBottom: 8 }}>
          <Select aria-label="Compare from version" value={a} onChange={setFrom} options={options} style={{ width: 140 }} />
          <span>→</span>
          <Select aria-label="Compare to version" value={b} onChange={setTo} options={options} style={{ width: 140 }} />
        </Space>
        <Button size="small" style={{ marginLeft: 8 }} onClick={() => setAsText((x) => !x)} disabled={a === b}>
          {asText ? 'Compare field by field' : 'Compare as text'}
        </Button>
        {a !== b && asText ? (
          <Suspense fallback={<Spin />}>
            <VersionsAsText name={name} a={a} b={b} dark={dark} TextDiff={TextDiff} />
          </Suspense>
        ) : a === b ? (
          <Typography.Paragraph type="secondary">Choose two different versions.</Typography.Paragraph>
        ) : diff.error ? (
          <Alert type="error" showIcon title="The difference could not be computed" description={diff.error.message} />
        ) : (
          <Table<Difference>
            rowKey="path"
            size="small"
            loading={diff.isPending}
            pagination={false}
            dataSource={diff.data?.changes ?? []}
            locale={{ emptyText: `Versions ${a} and ${b} are the same.` }}
            scroll={{ x: 'max-content' }}
            columns={[
              { title: 'Field', dataIndex: 'path', render: (p: string) => <Typography.Text code>{p}</Typography.Text> },
              { title: `Version ${a}`, dataIndex: 'from', render: (v: unknown) => <pre style={code}>{v === null ? '(absent)' : JSON.stringify(v, null, 1)}</pre> },
              { title: `Version ${b}`, dataIndex: 'to', render: (v: unknown) => <pre style={code}>{v === null ? '(absent)' : JSON.stringify(v, null, 1)}</pre> },
            ]}
          />
        )}
      </div>
    </Space>
  );
}

function VersionsAsText({ name, a, b, dark, TextDiff }: { name: string; a: number; b: number; dark: boolean; TextDiff: React.ComponentType<{ left: string; right: string; dark: boolean; labels: [string, string] }> }) {
  const left = useQuery({ queryKey: ['version', name, a], queryFn: () => api.version(name, a) });
  const right = useQuery({ queryKey: ['version', name, b], queryFn: () => api.version(name, b) });
  if (!left.data || !right.data) return <Spin />;
  return <TextDiff left={YAML.stringify(left.data.definition)} right={YAML.stringify(right.data.definition)} dark={dark} labels={[`version ${a}`, `version ${b}`]} />;
}

function DeleteButton({ name }: { name: string }) {
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState('');
  const navigate = useNavigate();
  const client = useQueryClient();
  const { message } = AntApp.useApp();
  return (
    <>
      <Button onClick={() => setOpen(true)}>
        Delete
      </Button>
      <Modal
        open={open}
        title={`Delete ${name}?`}
        onCancel={() => setOpen(false)}
        okText="Delete"
        okButtonProps={{ disabled: typed !== name }}
        onOk={async () => {
          setOpen(false);
          // Leave before deleting: the server's change event for the deletion would make this
          // page ask for the deleted tool again (a 404) if it were still open.
          navigate('/tools');
          client.removeQueries({ queryKey: ['tool', name] });
          try {
            await api.remove(name);
            void message.success(`${name} deleted`);
          } catch (e) {
            void message.error(`${name} was not deleted: ${e instanceof Error ? e.message : String(e)}`);
            navigate(`/tools/${encodeURIComponent(name)}`);
          }
          void client.invalidateQueries({ queryKey: ['tools'] });
        }}
      >
        <Typography.Paragraph>
          The tool is no longer listed or callable. Its history stays, and a tool created again under this name continues its version numbers.
        </Typography.Paragraph>
        <label htmlFor="delete-name">Type <Typography.Text code>{name}</Typography.Text> to confirm</label>
        <Input id="delete-name" aria-label="Tool name to delete" value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" />
      </Modal>
    </>
  );
}

export const FORMATS: { key: string; label: string; format: string; strict?: boolean }[] = [
  { key: 'openai', label: 'OpenAI', format: 'openai' },
  { key: 'openai-strict', label: 'OpenAI strict', format: 'openai', strict: true },
  { key: 'openai-responses', label: 'Responses', format: 'openai-responses' },
  { key: 'anthropic', label: 'Anthropic', format: 'anthropic' },
  { key: 'gemini', label: 'Gemini', format: 'gemini' },
  { key: 'mcp', label: 'MCP', format: 'mcp' },
  { key: 'xml', label: 'XML', format: 'xml' },
];

export function renderedText(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <Button
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => {
          setDone(true);
          setTimeout(() => setDone(false), 1500);
        });
      }}
    >
      {done ? 'Copied' : label}
    </Button>
  );
}

function Formats({ name, enabled }: { name: string; enabled: boolean }) {
  const [key, setKey] = useState('openai');
  const chosen = FORMATS.find((f) => f.key === key) ?? FORMATS[0]!;
  const out = useQuery({
    queryKey: ['formats', name, key],
    queryFn: () => api.export({ format: chosen.format, strict: chosen.strict, name }),
    enabled,
  });
  if (!enabled) return <Empty description="Disabled tools are not shown to models; enable it to see how each provider would see it." />;
  const text = out.data === undefined ? '' : renderedText(out.data);
  return (
    <Space direction="vertical" style={{ width: '100%' }}>
      <Space wrap>
        <Segmented aria-label="Provider format" value={key} onChange={(v) => setKey(String(v))} options={FORMATS.map((f) => ({ value: f.key, label: f.label }))} />
        <CopyButton text={text} />
      </Space>
      {out.error ? (
        <Alert type="error" showIcon title="The tool could not be rendered" description={out.error.message} />
      ) : (
        <pre tabIndex={0} aria-label={`${chosen.label} rendering`} style={{ ...code, maxHeight: 560, overflow: 'auto', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 }}>
          {out.isPending ? 'rendering…' : text}
        </pre>
      )}
    </Space>
  );
}

export default function ToolPage() {
  const { name = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const location = useLocation();
  const replay = (location.state as { args?: unknown } | null)?.args;
  const tab = params.get('tab') ?? (replay !== undefined ? 'test' : 'definition');
  const tool = useQuery({ queryKey: ['tool', name], queryFn: () => api.tool(name) });
  const me = useMe();
  const navigate = useNavigate();

  if (tool.isPending) return <Spin />;
  if (tool.error) {
    return (
      <Alert
        type="error"
        showIcon
        title={tool.error.message}
        description={
          <span>
            Back to the <Link to="/tools">tool list</Link>.
          </span>
        }
      />
    );
  }
  const t = tool.data;
  const d = t.definition;
  return (
    <main>
      <Space align="center" wrap style={{ marginBottom: 8 }}>
        <Typography.Title level={2} style={{ margin: 0, fontFamily: 'monospace' }}>
          {t.name}
        </Typography.Title>
        {d.title && <Typography.Text type="secondary">{d.title}</Typography.Text>}
        <DangerTag danger={d.danger ?? 'safe'} />
        <Pill>{executorOf(d)}</Pill>
        <Pill>version {t.version}</Pill>
        <label>
          <Space>
            <EnabledSwitch name={t.name} enabled={d.enabled !== false} />
            {d.enabled === false ? 'disabled' : 'enabled'}
          </Space>
        </label>
      </Space>
      <Space wrap style={{ marginBottom: 8 }}>
        <Typography.Text type="secondary">
          Last changed by {t.updated_by} on {new Date(t.updated_at_ms).toLocaleString()}
        </Typography.Text>
        {allows(me?.role, 'admin') && (
          <>
            {!d.mcp && <Button onClick={() => navigate(`/tools/${encodeURIComponent(t.name)}/edit`)}>Edit</Button>}
            <DeleteButton name={t.name} />
          </>
        )}
      </Space>
      <Tabs
        activeKey={tab}
        onChange={(k) => setParams({ tab: k }, { replace: true, state: location.state })}
        items={[
          {
            key: 'definition',
            label: 'Definition',
            children: (
              <Space direction="vertical" style={{ width: '100%' }} size="large">
                <Definition d={d} schema={t.input_schema} />
                <Findings findings={t.findings} />
                {t.sandbox && <SandboxSection report={t.sandbox} />}
              </Space>
            ),
          },
          { key: 'test', label: 'Test', children: <TestPanel key={t.name} tool={t} initialArguments={replay} /> },
          { key: 'history', label: 'History', children: <History name={t.name} current={t.version} /> },
          { key: 'formats', label: 'Formats', children: <Formats name={t.name} enabled={d.enabled !== false} /> },
        ]}
      />
    </main>
  );
}

/** How a Python script tool runs, as its definition says (`warm` absent: the server's default). */
function warmLabel(warm: boolean | undefined): string {
  if (warm === true) return 'warm runtime (always)';
  if (warm === false) return 'a fresh interpreter per call (warm: false)';
  return "warm runtime (the default; a server started with --cold-python runs it cold)";
}
