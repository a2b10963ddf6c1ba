// Add server: an upstream MCP server from a form (stdio: the command as rows, environment
// variables, secrets; HTTP: the URL and headers), tried with "Test connection" before it is
// saved — it starts apart and lists the tools it would add, or says why not with its stderr —
// or from a client's configuration file pasted in ("Paste config"), each entry shown as the
// definition it becomes.

import { useState } from 'react';
import { useNavigate } from 'react-router';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { Alert, Button, Checkbox, Form, Input, Radio, Space, Table, Tabs, Typography } from 'antd';
import { ApiError, allows, api, type ConfigEntry, type Probe } from '../api';
import { useMe } from '../context';
import { Pill } from '../Pill';
import { emptyServer, needsValues, serverDefinition, unfilledFields, type KeyValue, type ServerFields } from '../servers';

export default function AddServerPage() {
  const me = useMe();
  const admin = allows(me?.role, 'admin') && (me?.toolsets ?? []).length === 0;
  return (
    <main style={{ maxWidth: 900 }}>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Add server
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        Its tools are served once it is saved; the first listing is approved, later changes wait on its page. Try it first: Test connection starts it without saving anything.
      </Typography.Paragraph>
      {!admin && me && <Alert type="info" showIcon title="Adding servers needs an admin token that is not limited to toolsets" style={{ marginBottom: 12 }} />}
      <Tabs
        items={[
          { key: 'form', label: 'Form', children: <ServerForm admin={admin} /> },
          { key: 'paste', label: 'Paste config', children: <PasteConfig admin={admin} /> },
        ]}
      />
    </main>
  );
}

function useSave() {
  const client = useQueryClient();
  const navigate = useNavigate();
  return useMutation({
    mutationFn: (definition: Record<string, unknown>) => api.createServer(definition),
    onSuccess: (saved) => {
      void client.invalidateQueries({ queryKey: ['servers'] });
      void client.invalidateQueries({ queryKey: ['tools'] });
      navigate(`/servers/${encodeURIComponent(saved.name)}`);
    },
  });
}

function Problems({ error }: { error: Error | null }) {
  if (!error) return null;
  const details = error instanceof ApiError ? (error.details as { path: string; message: string }[]) : [];
  return (
    <Alert
      type="error"
      showIcon
      title={error.message}
      description={details.length > 0 && <ul style={{ margin: 0 }}>{details.map((d) => <li key={d.path + d.message}>{d.path ? <code>{d.path}</code> : null} {d.message}</li>)}</ul>}
      style={{ marginBottom: 12 }}
    />
  );
}

function ServerForm({ admin }: { admin: boolean }) {
  const [f, setF] = useState<ServerFields>(emptyServer());
  const probe = useMutation({ mutationFn: () => api.checkServer(serverDefinition(f)) });
  const save = useSave();
  const set = <K extends keyof ServerFields>(k: K, v: ServerFields[K]) => setF({ ...f, [k]: v });
  return (
    <Form layout="vertical" onFinish={() => save.mutate(serverDefinition(f))}>
      <Form.Item label="Name" htmlFor="srv-name" required extra="Letters, digits, _ and -; the prefix of its tools' names unless Prefix says otherwise.">
        <Input id="srv-name" value={f.name} onChange={(e) => set('name', e.target.value)} />
      </Form.Item>
      <Form.Item label="Prefix" htmlFor="srv-prefix" extra="Its tools are named PREFIX__tool (empty: the name).">
        <Input id="srv-prefix" value={f.prefix} onChange={(e) => set('prefix', e.target.value)} />
      </Form.Item>
      <Form.Item label="Transport">
        <Radio.Group value={f.kind} onChange={(e) => set('kind', e.target.value as ServerFields['kind'])} optionType="button" options={[{ label: 'stdio (a command)', value: 'stdio' }, { label: 'HTTP (a URL)', value: 'http' }]} />
      </Form.Item>
      {f.kind === 'stdio' ? (
        <>
          <fieldset style={{ border: 0, padding: 0, margin: '0 0 16px' }}>
            <legend style={{ fontSize: 14, marginBottom: 8 }}>Command</legend>
            {f.command.map((arg, i) => (
              <Space key={i} style={{ display: 'flex', marginBottom: 6 }}>
                <Input
                  aria-label={i === 0 ? 'Command' : `Argument ${i}`}
                  placeholder={i === 0 ? 'the program, e.g. npx' : 'an argument'}
                  value={arg}
                  onChange={(e) => set('command', f.command.map((a, j) => (j === i ? e.target.value : a)))}
                  style={{ width: 420, maxWidth: '70vw' }}
                />
                {i > 0 && <Button onClick={() => set('command', f.command.filter((_, j) => j !== i))} aria-label={`Remove argument ${i}`}>Remove</Button>}
              </Space>
            ))}
            <Button onClick={() => set('command', [...f.command, ''])}>Add an argument</Button>
          </fieldset>
          <Rows title="Env" what="variable" rows={f.env} onChange={(env) => set('env', env)} />
        </>
      ) : (
        <>
          <Form.Item label="URL" htmlFor="srv-url" required>
            <Input id="srv-url" value={f.url} onChange={(e) => set('url', e.target.value)} placeholder="https://mcp.example.com/mcp" />
          </Form.Item>
          <Rows title="Headers" what="header" rows={f.headers} onChange={(headers) => set('headers', headers)} />
          <Form.Item
            label="Authorization"
            extra={
              f.auth === 'oauth'
                ? 'OAuth 2.1: once saved, Connect on its page opens the server’s consent page; every call goes as that one connection.'
                : f.auth === 'oauth_per_user'
                  ? 'OAuth 2.1, each user’s own account: an admin connects once (to list its tools), then each user connects theirs under My connections; their calls go as them.'
                  : 'None, or a header above (a server that answers 401 naming its authorization server is found to use OAuth anyway).'
            }
          >
            <Radio.Group
              value={f.auth}
              onChange={(e) => set('auth', e.target.value as ServerFields['auth'])}
              optionType="button"
              options={[
                { label: 'None / headers', value: 'none' },
                { label: 'OAuth (shared)', value: 'oauth' },
                { label: 'OAuth (each user)', value: 'oauth_per_user' },
              ]}
            />
          </Form.Item>
        </>
      )}
      <Space wrap style={{ marginBottom: 12 }}>
        <Button onClick={() => probe.mutate()} loading={probe.isPending} disabled={!admin}>
          Test connection
        </Button>
        <Button type="primary" htmlType="submit" loading={save.isPending} disabled={!admin}>
          Save
        </Button>
      </Space>
      <Problems error={probe.error ?? save.error} />
      {probe.data && <ProbeResult probe={probe.data} />}
    </Form>
  );
}

/** Rows of keys and values (environment variables, headers), each may be marked secret. */
function Rows({ title, what, rows, onChange }: { title: string; what: string; rows: KeyValue[]; onChange: (r: KeyValue[]) => void }) {
  const edit = (i: number, patch: Partial<KeyValue>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  return (
    <fieldset style={{ border: 0, padding: 0, margin: '0 0 16px' }}>
      <legend style={{ fontSize: 14, marginBottom: 8 }}>{title}</legend>
      {rows.map((r, i) => (
        <Space key={i} wrap style={{ display: 'flex', marginBottom: 6 }}>
          <Input aria-label={`${title} ${i + 1} name`} placeholder="NAME" value={r.key} onChange={(e) => edit(i, { key: e.target.value })} style={{ width: 200 }} />
          {r.secret ? (
            <Input.Password aria-label={`${title} ${i + 1} value`} placeholder="value" value={r.value} onChange={(e) => edit(i, { value: e.target.value })} style={{ width: 260 }} />
          ) : (
            <Input aria-label={`${title} ${i + 1} value`} placeholder="value" value={r.value} onChange={(e) => edit(i, { value: e.target.value })} style={{ width: 260 }} />
          )}
          <Checkbox checked={r.secret} onChange={(e) => edit(i, { secret: e.target.checked })}>
            secret
          </Checkbox>
          <Button onClick={() => onChange(rows.filter((_, j) => j !== i))} aria-label={`Remove ${what} ${i + 1}`}>
            Remove
          </Button>
        </Space>
      ))}
      <Button onClick={() => onChange([...rows, { key: '', value: '', secret: false }])}>Add a {what}</Button>
    </fieldset>
  );
}

function ProbeResult({ probe }: { probe: Probe }) {
  return (
    <section aria-label="Connection test" style={{ marginTop: 12 }}>
      {probe.ok ? (
        <Alert type="success" showIcon title={`It started and lists ${probe.tools.length} tool(s); nothing was saved`} style={{ marginBottom: 12 }} />
      ) : (
        <Alert type="error" showIcon title="It did not start" description={probe.error} style={{ marginBottom: 12 }} />
      )}
      {probe.ok && (
        <Table
          rowKey="upstream"
          size="small"
          pagination={false}
          dataSource={probe.tools}
          aria-label="Tools it would add"
          columns={[
            { title: 'Name here', dataIndex: 'name' },
            { title: 'Its name upstream', dataIndex: 'upstream' },
            { title: 'Danger', dataIndex: 'danger', render: (d: string) => <Pill tone={d === 'dangerous' ? 'danger' : 'neutral'}>{d}</Pill> },
            { title: 'Served', key: 'served', render: (_: unknown, t: Probe['tools'][number]) => (t.excluded ? 'no (excluded)' : (t.problem ?? 'yes')) },
            { title: 'Description', dataIndex: 'description' },
          ]}
          style={{ marginBottom: 12 }}
        />
      )}
      <Typography.Text strong>Its stderr</Typography.Text>
      <pre tabIndex={0} aria-label="Its stderr" style={{ fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-all', maxHeight: 200, overflow: 'auto', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 }}>
        {probe.log || 'Nothing written.'}
      </pre>
    </section>
  );
}

function PasteConfig({ admin }: { admin: boolean }) {
  const [text, setText] = useState('');
  const [parseError, setParseError] = useState<string | null>(null);
  const read = useMutation({ mutationFn: (doc: unknown) => api.readMcpConfig(doc) });
  return (
    <section aria-label="Paste config">
      <Typography.Paragraph type="secondary">
        A <code>claude_desktop_config.json</code>, Claude Code&apos;s <code>.mcp.json</code> or VS Code&apos;s <code>mcp.json</code>: each entry is shown as the server it becomes. Variables it reads (<code>{'${NAME}'}</code>) stay named: put their values in before adding.
      </Typography.Paragraph>
      <Form layout="vertical">
        <Form.Item label="Configuration file" htmlFor="srv-config">
          <Input.TextArea id="srv-config" rows={8} value={text} onChange={(e) => setText(e.target.value)} placeholder='{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}}}' style={{ fontFamily: 'monospace' }} />
        </Form.Item>
        <Button
          onClick={() => {
            try {
              setParseError(null);
              read.mutate(JSON.parse(text) as unknown);
            } catch (e) {
              setParseError(`Not JSON: ${(e as Error).message}`);
            }
          }}
          loading={read.isPending}
          disabled={!admin || text.trim() === ''}
        >
          Read
        </Button>
      </Form>
      {parseError && <Alert type="error" showIcon title={parseError} style={{ marginTop: 12 }} />}
      <div style={{ marginTop: 12 }}>
        <Problems error={read.error} />
      </div>
      {(read.data?.entries ?? []).map((e) => (
        <ConfigEntryView key={e.entry} entry={e} admin={admin} />
      ))}
    </section>
  );
}

function ConfigEntryView({ entry, admin }: { entry: ConfigEntry; admin: boolean }) {
  const [text, setText] = useState(entry.server ? JSON.stringify(entry.server, null, 2) : '');
  const save = useSave();
  let parsed: Record<string, unknown> | null = null;
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    parsed = null;
  }
  return (
    <article aria-label={`Entry ${entry.entry}`} style={{ border: '1px solid rgba(128,128,128,.3)', borderRadius: 6, padding: 12, marginBottom: 12 }}>
      <Space wrap style={{ marginBottom: 8 }}>
        <Typography.Text strong>{entry.entry}</Typography.Text>
        {entry.skipped ? <Pill tone="warn">skipped</Pill> : <Pill tone="info">becomes {String(entry.server?.name)}</Pill>}
      </Space>
      {entry.skipped ? (
        <Typography.Paragraph>{entry.skipped}</Typography.Paragraph>
      ) : (
        <>
          <Input.TextArea aria-label={`Definition of ${entry.entry}`} rows={8} value={text} onChange={(e) => setText(e.target.value)} style={{ fontFamily: 'monospace', marginBottom: 8 }} />
          {parsed && needsValues(parsed) && <Alert type="warning" showIcon title="It names variables: replace each ${NAME} with its value before adding it" style={{ marginBottom: 8 }} />}
          {parsed && unfilledFields(parsed).length > 0 && (
            <Alert type="info" showIcon title={`It asks for ${unfilledFields(parsed).map((f) => f.name).join(', ')}: fill them in on its page once it is added`} style={{ marginBottom: 8 }} />
          )}
          <Button type="primary" disabled={!admin || !parsed || needsValues(parsed)} loading={save.isPending} onClick={() => parsed && save.mutate(parsed)}>
            Add {String(parsed?.name ?? '')}
          </Button>
          <div style={{ marginTop: 8 }}>
            <Problems error={save.error} />
          </div>
        </>
      )}
    </article>
  );
}
