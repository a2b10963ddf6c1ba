// Servers: the upstream MCP servers behind toolsmith. The list with each one's status (colour
// and word), tools, restarts, held changes and last error, kept live; a server's page with its
// definition (secrets as ***), status, pid and uptime, the end of its stderr (following new
// lines, copyable), its tools, Refresh and Restart, and the changes its upstream made that
// wait for a decision (tools, prompts and resource templates) — each with its differences
// side by side and what the guardrail scanner found in it (a held one is approved only with
// "Allow and approve"), approved or rejected one by one or all at once; its resources and
// prompts with a panel that reads one or renders one (ServerOffers.tsx).

import { Suspense, lazy, useEffect, useRef, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Alert, Button, Descriptions, Form, Input, Space, Spin, Table, Typography, App as AntApp } from 'antd';
import { allows, api, type ChangeView, type ServerView } from '../api';
import { useDark, useMe } from '../context';
import { CopyButton } from './Tool';
import { Pill } from '../Pill';
import { Findings, holds } from '../Findings';
import { ServerOffers } from './ServerOffers';
import { changeSummary, diffRows, statusText, statusTone, unfilledFields, uptime, withValues, type DiffRow, type Unfilled } from '../servers';

// Monaco loads only when a schema diff is opened.
const TextDiff = lazy(() => import('../CodeEditor').then((m) => ({ default: m.TextDiff })));

/** How often the status is read again while a page shows it. */
const LIVE_MS = 1500;

export default function ServersPage() {
  const { name } = useParams();
  const navigate = useNavigate();
  const list = useQuery({ queryKey: ['servers'], queryFn: api.servers, refetchInterval: LIVE_MS });
  return (
    <main>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Servers
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        The MCP servers whose tools, resources and prompts toolsmith serves. A change an upstream makes to a tool, prompt or resource template is held here until someone approves it: models see only approved definitions.
      </Typography.Paragraph>
      {list.error && <Alert type="error" showIcon title="The servers could not be read" description={list.error.message} style={{ marginBottom: 12 }} />}
      <Space style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={() => navigate('/new-server')}>
          Add server
        </Button>
      </Space>
      <Table
        rowKey="name"
        size="small"
        loading={list.isPending}
        dataSource={list.data?.servers ?? []}
        pagination={false}
        scroll={{ x: true }}
        columns={[
          { title: 'Name', dataIndex: 'name', render: (n: string) => <Link to={`/servers/${encodeURIComponent(n)}`}>{n}</Link> },
          { title: 'Kind', dataIndex: 'kind' },
          { title: 'Status', key: 'status', render: (_: unknown, s: ServerView) => <Pill tone={statusTone(s.status?.status)}>{statusText(s.status?.status)}</Pill> },
          { title: 'Tools', key: 'tools', align: 'right', render: (_: unknown, s: ServerView) => s.status?.tools ?? '—' },
          { title: 'Restarts', key: 'restarts', align: 'right', render: (_: unknown, s: ServerView) => s.status?.restarts ?? '—' },
          { title: 'Pending', dataIndex: 'pending', align: 'right', render: (n: number) => (n > 0 ? <Pill tone="warn">{n}</Pill> : 0) },
          { title: 'Last error', key: 'error', render: (_: unknown, s: ServerView) => <Typography.Text type="secondary">{s.status?.last_error ?? ''}</Typography.Text> },
        ]}
        locale={{ emptyText: 'No MCP servers yet: declare them under mcp_servers: in a catalog, or import a client configuration with toolsmith import --mcp-config.' }}
        style={{ marginBottom: 24 }}
      />
      {name && <ServerDetail key={name} name={name} />}
    </main>
  );
}

function ServerDetail({ name }: { name: string }) {
  const me = useMe();
  const admin = allows(me?.role, 'admin') && (me?.toolsets ?? []).length === 0;
  const client = useQueryClient();
  const { message } = AntApp.useApp();
  const server = useQuery({ queryKey: ['servers', name], queryFn: () => api.server(name), refetchInterval: LIVE_MS });
  const log = useQuery({ queryKey: ['servers', name, 'log'], queryFn: () => api.serverLog(name), refetchInterval: LIVE_MS });
  const changes = useQuery({ queryKey: ['servers', name, 'changes'], queryFn: () => api.serverChanges(name), refetchInterval: LIVE_MS * 2 });
  const refresh = useMutation({
    mutationFn: () => api.refreshServer(name),
    onSuccess: () => {
      void message.success(`Asked ${name} for its tools`);
      setTimeout(() => void client.invalidateQueries({ queryKey: ['servers', name] }), 500);
    },
  });
  const restart = useMutation({
    mutationFn: () => api.restartServer(name),
    onSuccess: () => {
      void message.success(`Restarting ${name}`);
      void client.invalidateQueries({ queryKey: ['servers'] });
    },
  });
  // OAuth: the consent page opens in a tab of its own; it comes back to the server's
  // callback, and this page (kept live) shows the server connected.
  const [consent, setConsent] = useState<string | undefined>();
  const connect = useMutation({
    mutationFn: () => api.connectServer(name),
    onSuccess: (started) => {
      setConsent(started.authorization_url);
      window.open(started.authorization_url, '_blank', 'noopener');
    },
  });
  const disconnect = useMutation({
    mutationFn: () => api.disconnectServer(name),
    onSuccess: () => {
      setConsent(undefined);
      void message.success(`${name}: its tokens are forgotten`);
      void client.invalidateQueries({ queryKey: ['servers'] });
    },
  });
  if (server.error) return <Alert type="error" showIcon title={`The server ${name} could not be read`} description={server.error.message} />;
  if (!server.data) return null;
  const s = server.data;
  const st = s.status;
  const failure = refresh.error ?? restart.error ?? connect.error ?? disconnect.error;
  return (
    <section aria-labelledby="server-heading">
      <Typography.Title level={3} id="server-heading">
        {s.name} <Pill tone={statusTone(st?.status)}>{statusText(st?.status)}</Pill> <Pill>version {s.version}</Pill>
        {st?.last_error?.startsWith('needs authorization') && <> <Pill tone="warn">needs authorization</Pill></>}
      </Typography.Title>
      <Space wrap style={{ marginBottom: 12 }}>
        <Button onClick={() => refresh.mutate()} loading={refresh.isPending} disabled={!admin} title={admin ? 'Ask the server to list its tools again' : 'Your role cannot refresh servers'}>
          Refresh
        </Button>
        <Button onClick={() => restart.mutate()} loading={restart.isPending} disabled={!admin} title={admin ? 'Stop the server and start it again' : 'Your role cannot restart servers'}>
          Restart
        </Button>
        {s.oauth && (
          <Button
            type={s.oauth.connected ? 'default' : 'primary'}
            onClick={() => connect.mutate()}
            loading={connect.isPending}
            disabled={!admin}
            title={admin ? 'Authorize toolsmith with the server (opens its consent page)' : 'Your role cannot connect servers'}
          >
            {s.oauth.connected ? 'Connect again' : 'Connect'}
          </Button>
        )}
        {s.oauth?.connected && (
          <Button onClick={() => disconnect.mutate()} loading={disconnect.isPending} disabled={!admin} title={admin ? 'Forget its tokens' : 'Your role cannot disconnect servers'}>
            Disconnect
          </Button>
        )}
      </Space>
      {failure && <Alert type="error" showIcon title="The server did not take that" description={failure.message} style={{ marginBottom: 12 }} />}
      {s.oauth && !s.oauth.connected && consent && (
        <Alert
          type="info"
          showIcon
          style={{ marginBottom: 12 }}
          title="Waiting for the consent"
          description={
            <>
              Consent in the tab that opened (or <Typography.Link href={consent} target="_blank" rel="noopener">open the consent page</Typography.Link>); this page shows the server connected once it comes back.
            </>
          }
        />
      )}
      {unfilledFields(s.definition).length > 0 && <FillIn server={s} fields={unfilledFields(s.definition)} admin={admin} />}
      <Descriptions
        size="small"
        bordered
        column={{ xs: 1, sm: 2, lg: 3 }}
        style={{ marginBottom: 16 }}
        items={[
          { key: 'kind', label: 'Kind', children: s.kind },
          { key: 'pid', label: 'Process', children: st?.pid ?? '—' },
          { key: 'uptime', label: 'Up for', children: uptime(st?.up_ms) },
          { key: 'restarts', label: 'Restarts', children: st?.restarts ?? '—' },
          { key: 'tools', label: 'Tools listed', children: st?.tools ?? '—' },
          { key: 'error', label: 'Last error', children: st?.last_error ?? 'none' },
          ...(s.oauth
            ? [
                { key: 'oauth', label: 'OAuth', children: s.oauth.connected ? `connected ${s.oauth.at_ms ? new Date(s.oauth.at_ms).toLocaleString() : ''}` : 'not connected' },
                ...(s.oauth.per_user
                  ? [
                      {
                        key: 'per_user',
                        label: 'Each user',
                        children: (
                          <span>
                            connects their own account ({s.oauth.users ?? 0} have; <Link to="/connections">My connections</Link>)
                          </span>
                        ),
                      },
                    ]
                  : []),
              ]
            : []),
        ]}
      />
      {s.problems.length > 0 && (
        <Alert type="warning" showIcon title="Tools of this server that are not served" description={<ul style={{ margin: 0 }}>{s.problems.map((p) => <li key={p}>{p}</li>)}</ul>} style={{ marginBottom: 16 }} />
      )}
      <PendingChanges name={name} changes={changes.data?.changes ?? []} admin={admin} error={changes.error?.message} />
      <Typography.Title level={4}>Its tools</Typography.Title>
      {(s.tools ?? []).length === 0 ? (
        <Typography.Paragraph type="secondary">None in the registry yet.</Typography.Paragraph>
      ) : (
        <ul aria-label="Its tools">
          {(s.tools ?? []).map((t) => (
            <li key={t}>
              <Link to={`/tools/${encodeURIComponent(t)}`}>{t}</Link>
            </li>
          ))}
        </ul>
      )}
      <ServerOffers name={name} canCall={allows(me?.role, 'call')} />
      <StderrTail text={log.data?.log ?? ''} kind={s.kind} />
      <Typography.Title level={4}>Definition</Typography.Title>
      <pre tabIndex={0} aria-label="Definition" style={{ fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-all', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 }}>
        {JSON.stringify(s.definition, null, 2)}
      </pre>
    </section>
  );
}

/** The end of the server's stderr, scrolled to its last line as lines arrive. */
function StderrTail({ text, kind }: { text: string; kind: string }) {
  const box = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (box.current) box.current.scrollTop = box.current.scrollHeight;
  }, [text]);
  return (
    <section aria-label="Standard error">
      <Space style={{ marginTop: 8 }}>
        <Typography.Title level={4} style={{ margin: 0 }}>
          Standard error
        </Typography.Title>
        <CopyButton text={text} label="Copy stderr" />
      </Space>
      <pre
        ref={box}
        tabIndex={0}
        aria-label="stderr"
        style={{ fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-all', maxHeight: 280, overflow: 'auto', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 }}
      >
        {text || (kind === 'http' ? 'An HTTP server has no stderr here.' : 'Nothing written yet.')}
      </pre>
    </section>
  );
}

function PendingChanges({ name, changes, admin, error }: { name: string; changes: ChangeView[]; admin: boolean; error?: string }) {
  const client = useQueryClient();
  const { message } = AntApp.useApp();
  const pending = changes.filter((c) => c.status === 'pending');
  const decide = useMutation({
    mutationFn: ({ decision, tools, allow }: { decision: 'approve' | 'reject'; tools: string[]; allow?: boolean }) =>
      api.decide(name, decision, tools, allow),
    onSuccess: (done, { decision }) => {
      void message.success(`${decision === 'approve' ? 'Approved' : 'Rejected'}: ${done.tools.join(', ') || 'nothing'}`);
      void client.invalidateQueries({ queryKey: ['servers'] });
      void client.invalidateQueries({ queryKey: ['tools'] });
    },
  });
  return (
    <section aria-label="Pending changes" style={{ marginBottom: 16 }}>
      <Space wrap style={{ marginBottom: 8 }}>
        <Typography.Title level={4} style={{ margin: 0 }}>
          Pending changes ({pending.length})
        </Typography.Title>
        {pending.length > 1 && (
          <>
            <Button type="primary" disabled={!admin} loading={decide.isPending} onClick={() => decide.mutate({ decision: 'approve', tools: [] })}>
              Approve all
            </Button>
            <Button disabled={!admin} loading={decide.isPending} onClick={() => decide.mutate({ decision: 'reject', tools: [] })}>
              Reject all
            </Button>
          </>
        )}
      </Space>
      {error && <Alert type="error" showIcon title="The changes could not be read" description={error} />}
      {decide.error && <Alert type="error" showIcon title="The decision was refused" description={decide.error.message} style={{ marginBottom: 8 }} />}
      {pending.length === 0 && <Typography.Paragraph type="secondary">Nothing waits: models see what the upstream offers now.</Typography.Paragraph>}
      {pending.map((c) => (
        <article key={c.tool} aria-label={`Change of ${c.tool}`} style={{ border: '1px solid rgba(128,128,128,.3)', borderRadius: 6, padding: 12, marginBottom: 12 }}>
          <Space wrap style={{ marginBottom: 8 }}>
            <Typography.Text strong>{c.tool}</Typography.Text>
            <Pill tone={c.kind === 'removed' ? 'danger' : c.kind === 'added' ? 'info' : 'warn'}>{changeSummary(c.kind, c.diff)}</Pill>
            <Typography.Text type="secondary">seen {new Date(c.detected_at_ms).toLocaleString()}</Typography.Text>
            {holds(c.findings) ? (
              <Button danger size="small" disabled={!admin} onClick={() => decide.mutate({ decision: 'approve', tools: [c.tool], allow: true })}>
                Allow and approve
              </Button>
            ) : (
              <Button type="primary" size="small" disabled={!admin} onClick={() => decide.mutate({ decision: 'approve', tools: [c.tool] })}>
                Approve
              </Button>
            )}
            <Button size="small" disabled={!admin} onClick={() => decide.mutate({ decision: 'reject', tools: [c.tool] })}>
              Reject
            </Button>
          </Space>
          {holds(c.findings) && (
            <Alert
              type="warning"
              showIcon
              style={{ marginBottom: 8 }}
              title="Held by the guardrail scanner"
              description="Its text has what attacks on models hide in definitions; it is not served until someone who read the findings allows it."
            />
          )}
          <Findings findings={c.findings} />
          <Table<DiffRow>
            rowKey="path"
            size="small"
            pagination={false}
            dataSource={diffRows(c.diff)}
            scroll={{ x: true }}
            columns={[
              { title: 'Field', dataIndex: 'path', width: '20%' },
              { title: 'Approved (served now)', dataIndex: 'before', render: (t: string) => <pre style={{ margin: 0, whiteSpace: 'pre-wrap', fontFamily: 'monospace' }}>{t}</pre> },
              { title: 'The upstream now', dataIndex: 'after', render: (t: string) => <pre style={{ margin: 0, whiteSpace: 'pre-wrap', fontFamily: 'monospace' }}>{t}</pre> },
            ]}
          />
          {c.diff.some((d) => d.path.startsWith('inputSchema')) && <SchemaDiff change={c} />}
        </article>
      ))}
    </section>
  );
}

/** A changed input schema in a diff editor: what is served now against what the upstream says. */
function SchemaDiff({ change }: { change: ChangeView }) {
  const dark = useDark();
  const [open, setOpen] = useState(false);
  const text = (d?: Record<string, unknown>) => (d?.inputSchema === undefined ? '' : JSON.stringify(d.inputSchema, null, 2));
  return (
    <div style={{ marginTop: 8 }}>
      <Button size="small" onClick={() => setOpen(!open)} aria-expanded={open}>
        {open ? 'Hide the schema diff' : 'Show the schema diff'}
      </Button>
      {open && (
        <Suspense fallback={<Spin />}>
          <div style={{ marginTop: 8 }}>
            <TextDiff left={text(change.before)} right={text(change.now)} dark={dark} labels={['the schema served now', 'the upstream schema']} language="json" />
          </div>
        </Suspense>
      )}
    </div>
  );
}

/** The values a server waits for (config fields its definition names and has none for, such
 * as a VS Code `${input:…}` imported): filled in and saved as a new version, which starts it. */
function FillIn({ server, fields, admin }: { server: ServerView; fields: Unfilled[]; admin: boolean }) {
  const client = useQueryClient();
  const { message } = AntApp.useApp();
  const [values, setValues] = useState<Record<string, string>>({});
  const save = useMutation({
    mutationFn: () => api.updateServer(server.name, server.version, withValues(server.definition, values)),
    onSuccess: () => {
      void message.success(`${server.name}: saved; it starts with them`);
      setValues({});
      void client.invalidateQueries({ queryKey: ['servers'] });
    },
  });
  const complete = fields.every((f) => (values[f.name] ?? '') !== '');
  return (
    <section aria-labelledby="fill-in" style={{ marginBottom: 16 }}>
      <Alert
        type="warning"
        showIcon
        style={{ marginBottom: 12 }}
        title={<span id="fill-in">It waits for {fields.length === 1 ? 'a value' : 'values'} to fill in</span>}
        description="Its command, environment, URL or headers name these config fields, which have no value yet (a VS Code ${input:…} it was imported with asks for them). Secret ones are stored sealed and shown as ***."
      />
      <Form layout="vertical" onFinish={() => save.mutate()} style={{ maxWidth: 520 }}>
        {fields.map((f) => (
          <Form.Item key={f.name} label={f.name} htmlFor={`fill-${f.name}`} extra={f.description}>
            {f.secret ? (
              <Input.Password id={`fill-${f.name}`} value={values[f.name] ?? ''} onChange={(e) => setValues({ ...values, [f.name]: e.target.value })} autoComplete="off" />
            ) : (
              <Input id={`fill-${f.name}`} value={values[f.name] ?? ''} onChange={(e) => setValues({ ...values, [f.name]: e.target.value })} />
            )}
          </Form.Item>
        ))}
        <Button type="primary" htmlType="submit" loading={save.isPending} disabled={!admin || !complete} title={admin ? undefined : 'Your role cannot change servers'}>
          Save and start
        </Button>
      </Form>
      {save.error && <Alert type="error" showIcon title="The server did not take that" description={save.error.message} style={{ marginTop: 12 }} />}
    </section>
  );
}

