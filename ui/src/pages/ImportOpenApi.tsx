// Import OpenAPI: an OpenAPI 3.0/3.1 document (by URL, fetched by the server; a file; or its
// text pasted) previewed as the
// tools it would make — name, method, URL, danger, whether each is new, changed or the same
// as what exists (a changed one opens to its current and new definitions side by side) — and
// the operations it cannot map, each with its reason; tools chosen by tag or one by one, then
// imported. Nothing is written before Import.

import { useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Alert, Button, Form, Input, Select, Space, Table, Typography } from 'antd';
import { allows, api, type ImportAnswer } from '../api';
import { useMe } from '../context';
import { Pill } from '../Pill';
import { importRows, withTags, type ImportRow } from '../servers';

export default function ImportOpenApiPage() {
  const me = useMe();
  const admin = allows(me?.role, 'admin') && (me?.toolsets ?? []).length === 0;
  const client = useQueryClient();
  const [text, setText] = useState('');
  const [url, setUrl] = useState('');
  const [file, setFile] = useState<string | null>(null);
  const [prefix, setPrefix] = useState('');
  const [baseUrl, setBaseUrl] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [tags, setTags] = useState<string[]>([]);
  const body = (dryRun: boolean, only: string[] = []) => ({
    ...(text.trim() === '' && url.trim() !== '' ? { spec_url: url.trim() } : { spec: text }),
    prefix,
    ...(baseUrl.trim() ? { base_url: baseUrl.trim() } : {}),
    dry_run: dryRun,
    ...(only.length > 0 ? { only } : {}),
  });
  const preview = useMutation({
    mutationFn: () => api.importOpenApi(body(true)),
    onSuccess: (a) => setChosen(importRows(a).filter((r) => r.state !== 'unchanged').map((r) => r.name)),
  });
  const run = useMutation({
    mutationFn: () => api.importOpenApi(body(false, chosen)),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['tools'] });
      preview.reset();
    },
  });
  const rows = preview.data ? importRows(preview.data) : [];
  const allTags = [...new Set(rows.flatMap((r) => r.tags))].sort();
  return (
    <main style={{ maxWidth: 1100 }}>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Import OpenAPI
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        Each operation of an OpenAPI 3.0 or 3.1 document becomes an <code>http</code> tool. Preview first: nothing is written until Import.
      </Typography.Paragraph>
      {!admin && me && <Alert type="info" showIcon title="Importing needs an admin token that is not limited to toolsets" style={{ marginBottom: 12 }} />}
      <Form layout="vertical">
        <Form.Item label="Document URL" htmlFor="oa-url" extra="The server fetches it (http or https, up to 10 MiB)">
          <Input id="oa-url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://api.example.com/openapi.json" disabled={text.trim() !== ''} />
        </Form.Item>
        <Form.Item label="Document file" htmlFor="oa-file" extra={file ? `Read ${file}` : 'JSON or YAML'}>
          <input
            id="oa-file"
            type="file"
            accept=".json,.yaml,.yml,application/json,application/yaml"
            onChange={(e) => {
              const f = e.target.files?.[0];
              if (!f) return;
              void f.text().then((t) => {
                setText(t);
                setFile(f.name);
              });
            }}
          />
        </Form.Item>
        <Form.Item label="Document" htmlFor="oa-text">
          <Input.TextArea id="oa-text" rows={6} value={text} onChange={(e) => setText(e.target.value)} placeholder="or paste it here" style={{ fontFamily: 'monospace' }} />
        </Form.Item>
        <Space wrap>
          <Form.Item label="Prefix" htmlFor="oa-prefix" extra="Put before every tool name, e.g. gh_">
            <Input id="oa-prefix" value={prefix} onChange={(e) => setPrefix(e.target.value)} style={{ width: 200 }} />
          </Form.Item>
          <Form.Item label="Base URL" htmlFor="oa-base" extra="Default: the document's first server URL">
            <Input id="oa-base" value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)} style={{ width: 360 }} />
          </Form.Item>
        </Space>
        <Button onClick={() => preview.mutate()} loading={preview.isPending} disabled={!admin || (text.trim() === '' && url.trim() === '')}>
          Preview
        </Button>
      </Form>
      {(preview.error ?? run.error) && <Alert type="error" showIcon title="The document was refused" description={(preview.error ?? run.error)?.message} style={{ marginTop: 12 }} />}
      {run.data && (
        <Alert
          type="success"
          showIcon
          style={{ marginTop: 12 }}
          title={`Imported ${run.data.title}: ${run.data.created.length} created, ${run.data.updated.length} updated, ${run.data.unchanged.length} unchanged`}
          description={
            <span>
              {[...run.data.created, ...run.data.updated].map((n, i) => (
                <span key={n}>
                  {i > 0 && ', '}
                  <Link to={`/tools/${encodeURIComponent(n)}`}>{n}</Link>
                </span>
              ))}
            </span>
          }
        />
      )}
      {preview.data && <Preview answer={preview.data} rows={rows} allTags={allTags} tags={tags} setTags={setTags} chosen={chosen} setChosen={setChosen} onImport={() => run.mutate()} importing={run.isPending} admin={admin} />}
    </main>
  );
}

function Preview(p: {
  answer: ImportAnswer;
  rows: ImportRow[];
  allTags: string[];
  tags: string[];
  setTags: (t: string[]) => void;
  chosen: string[];
  setChosen: (c: string[]) => void;
  onImport: () => void;
  importing: boolean;
  admin: boolean;
}) {
  const { answer, rows } = p;
  return (
    <section aria-label="Preview" style={{ marginTop: 16 }}>
      <Typography.Title level={3}>
        {answer.title} {answer.version && <Pill>version {answer.version}</Pill>}
      </Typography.Title>
      <Space wrap style={{ marginBottom: 12 }}>
        <label htmlFor="oa-tags">Choose by tag</label>
        <Select
          id="oa-tags"
          mode="multiple"
          aria-label="Choose by tag"
          style={{ minWidth: 240 }}
          value={p.tags}
          options={p.allTags.map((t) => ({ label: t, value: t }))}
          onChange={(t: string[]) => {
            p.setTags(t);
            p.setChosen(t.length > 0 ? withTags(rows, t) : rows.map((r) => r.name));
          }}
          placeholder="every tag"
        />
        <Button type="primary" onClick={p.onImport} loading={p.importing} disabled={!p.admin || p.chosen.length === 0}>
          Import {p.chosen.length} tool(s)
        </Button>
      </Space>
      <Table<ImportRow>
        rowKey="name"
        size="small"
        pagination={rows.length > 50 ? { pageSize: 50 } : false}
        dataSource={rows}
        style={{ overflowX: 'auto' }}
        rowSelection={{ selectedRowKeys: p.chosen, onChange: (keys) => p.setChosen(keys.map(String)), getCheckboxProps: (r) => ({ 'aria-label': `Import ${r.name}` }) }}
        expandable={{ rowExpandable: (r) => r.state === 'changed', expandedRowRender: (r) => <Changed row={r} /> }}
        columns={[
          { title: 'Name', dataIndex: 'name' },
          { title: 'Method', dataIndex: 'method' },
          { title: 'URL', dataIndex: 'url', render: (u: string) => <code style={{ wordBreak: 'break-all' }}>{u}</code> },
          { title: 'Danger', dataIndex: 'danger', render: (d: string) => <Pill tone={d === 'dangerous' ? 'danger' : 'neutral'}>{d}</Pill> },
          { title: 'Tags', dataIndex: 'tags', render: (t: string[]) => t.join(', ') },
          { title: 'Here', dataIndex: 'state', render: (s: string) => <Pill tone={s === 'new' ? 'info' : s === 'changed' ? 'warn' : 'neutral'}>{s}</Pill> },
        ]}
      />
      <section aria-label="Operations not mapped">
      <Typography.Title level={4}>Not mapped ({answer.skipped.length})</Typography.Title>
      {answer.skipped.length === 0 ? (
        <Typography.Paragraph type="secondary">Every operation maps to a tool.</Typography.Paragraph>
      ) : (
        <Table
          rowKey={(s) => `${s.method} ${s.path}`}
          size="small"
          pagination={false}
          dataSource={answer.skipped}
          columns={[
            { title: 'Operation', dataIndex: 'operation' },
            { title: 'Method', dataIndex: 'method' },
            { title: 'Path', dataIndex: 'path' },
            { title: 'Why', dataIndex: 'reason' },
          ]}
        />
      )}
      </section>
      {answer.notes.length > 0 && (
        <>
          <Typography.Title level={4}>Notes</Typography.Title>
          <ul>
            {answer.notes.map((n) => (
              <li key={n.tool + n.message}>
                <code>{n.tool}</code>: {n.message}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** A changed tool: what exists and what the import would make, side by side. */
function Changed({ row }: { row: ImportRow }) {
  const now = useQuery({ queryKey: ['tools', row.name], queryFn: () => api.tool(row.name) });
  const current = now.data?.definition ?? null;
  const pre = { margin: 0, whiteSpace: 'pre-wrap' as const, fontFamily: 'monospace', fontSize: 12 };
  return (
    <Space align="start" style={{ width: '100%' }} wrap>
      <div style={{ minWidth: 300 }}>
        <Typography.Text strong>Now</Typography.Text>
        <pre style={pre}>{current ? JSON.stringify(current, null, 2) : '…'}</pre>
      </div>
      <div style={{ minWidth: 300 }}>
        <Typography.Text strong>After the import</Typography.Text>
        <pre style={pre}>{JSON.stringify(row.definition, null, 2)}</pre>
      </div>
    </Space>
  );
}
