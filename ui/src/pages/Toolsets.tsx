// Toolsets: named subsets of the registry, each served at /mcp/{toolset}. The list with
// member counts; a toolset's members (and why each is in), its MCP URL and client config
// snippets; and an editor whose fields are named after the catalog keys they fill.

import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Alert, Button, Form, Input, Select, Space, Table, Tabs, Typography, App as AntApp } from 'antd';
import { ApiError, allows, api, type ToolsetView } from '../api';
import { KINDS, definitionOf, fieldsOf, snippets, type Fields } from '../toolsets';
import { useMe } from '../context';
import { CopyButton } from './Tool';
import { Pill } from '../Pill';
import CodePlayground from './CodePlayground';

export default function ToolsetsPage() {
  const { name } = useParams();
  const me = useMe();
  const list = useQuery({ queryKey: ['toolsets'], queryFn: api.toolsets });
  const [editing, setEditing] = useState<ToolsetView | 'new' | null>(null);
  const canEdit = allows(me?.role, 'admin') && (me?.toolsets ?? []).length === 0;
  return (
    <main>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Toolsets
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        Named subsets of the tools, each served as its own MCP endpoint. Membership is computed from the selectors: a tool added later with the right tag joins.
      </Typography.Paragraph>
      {list.error && <Alert type="error" showIcon title="The toolsets could not be read" description={list.error.message} style={{ marginBottom: 12 }} />}
      <Space style={{ marginBottom: 12 }}>
        <Button type="primary" onClick={() => setEditing('new')} disabled={!canEdit} title={canEdit ? undefined : 'Your role cannot change toolsets'}>
          New toolset
        </Button>
      </Space>
      {editing && <ToolsetEditor key={editing === 'new' ? 'new' : `${editing.name}@${editing.version}`} current={editing === 'new' ? null : editing} onDone={() => setEditing(null)} />}
      <Table
        rowKey="name"
        size="small"
        loading={list.isPending}
        dataSource={list.data?.toolsets ?? []}
        pagination={false}
        columns={[
          { title: 'Name', dataIndex: 'name', render: (n: string) => <Link to={`/toolsets/${encodeURIComponent(n)}`}>{n}</Link> },
          { title: 'Description', dataIndex: 'description' },
          { title: 'Members', dataIndex: 'members', align: 'right' },
          { title: 'Discovery', dataIndex: 'discovery', render: (d: string) => <Pill>{d}</Pill> },
        ]}
        locale={{ emptyText: 'No toolsets yet: declare them under toolsets: in a catalog, or make one here.' }}
        style={{ marginBottom: 24 }}
      />
      {name && <ToolsetDetail name={name} canEdit={canEdit} onEdit={setEditing} />}
    </main>
  );
}

function ToolsetDetail({ name, canEdit, onEdit }: { name: string; canEdit: boolean; onEdit: (t: ToolsetView) => void }) {
  const me = useMe();
  const navigate = useNavigate();
  const client = useQueryClient();
  const { message } = AntApp.useApp();
  const set = useQuery({ queryKey: ['toolsets', name], queryFn: () => api.toolset(name) });
  const remove = useMutation({
    mutationFn: () => api.removeToolset(name),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ['toolsets'] });
      void message.success(`Deleted ${name}`);
      navigate('/toolsets');
    },
  });
  if (set.error) return <Alert type="error" showIcon title={`The toolset ${name} could not be read`} description={set.error.message} />;
  if (!set.data) return null;
  const url = `${window.location.origin}/mcp/${encodeURIComponent(name)}`;
  const t = set.data;
  return (
    <section aria-labelledby="toolset-heading">
      <Typography.Title level={3} id="toolset-heading">
        {t.name} <Pill>version {t.version}</Pill>
      </Typography.Title>
      <Space wrap style={{ marginBottom: 12 }}>
        <Typography.Text>MCP URL</Typography.Text>
        <Typography.Text code aria-label="MCP URL">
          {url}
        </Typography.Text>
        <CopyButton text={url} label="Copy MCP URL" />
        <Button onClick={() => onEdit(t)} disabled={!canEdit}>
          Edit
        </Button>
        <Button danger onClick={() => remove.mutate()} disabled={!canEdit} loading={remove.isPending}>
          Delete
        </Button>
      </Space>
      {remove.error && <Alert type="error" showIcon title="The toolset could not be deleted" description={remove.error.message} style={{ marginBottom: 12 }} />}
      <Typography.Title level={4}>Client configuration</Typography.Title>
      <Tabs
        items={snippets(t.name, url, me?.auth_required ?? false).map((s) => ({
          key: s.key,
          label: s.label,
          children: (
            <Space direction="vertical" style={{ width: '100%' }}>
              <pre tabIndex={0} aria-label={`${s.label} configuration`} style={{ fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-all', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6, margin: 0 }}>
                {s.text}
              </pre>
              <CopyButton text={s.text} label={`Copy ${s.label} configuration`} />
            </Space>
          ),
        }))}
      />
      <Typography.Title level={4}>Members ({t.members.length})</Typography.Title>
      <Table
        rowKey="name"
        size="small"
        dataSource={t.members}
        pagination={t.members.length > 50 ? { pageSize: 50 } : false}
        columns={[
          { title: 'Tool', dataIndex: 'name', render: (n: string) => <Link to={`/tools/${encodeURIComponent(n)}`}>{n}</Link> },
          { title: 'Why', dataIndex: 'why' },
        ]}
        locale={{ emptyText: 'No tool matches these selectors now.' }}
      />
      <CodePlayground toolset={t.name} members={t.members.map((m) => m.name)} />
      <Typography.Title level={4}>Definition</Typography.Title>
      <pre tabIndex={0} aria-label="Definition" style={{ fontFamily: 'monospace', whiteSpace: 'pre-wrap', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 }}>
        {JSON.stringify(t.definition, null, 2)}
      </pre>
    </section>
  );
}

function ToolsetEditor({ current, onDone }: { current: ToolsetView | null; onDone: () => void }) {
  const client = useQueryClient();
  const navigate = useNavigate();
  const [fields, setFields] = useState<Fields>(fieldsOf(current?.definition ?? null));
  const save = useMutation({
    mutationFn: () => {
      const def = definitionOf(fields, current?.definition ?? null);
      return current ? api.updateToolset(current.name, def, current.version) : api.createToolset(def);
    },
    onSuccess: (saved) => {
      void client.invalidateQueries({ queryKey: ['toolsets'] });
      onDone();
      navigate(`/toolsets/${encodeURIComponent(saved.name)}`);
    },
  });
  const set = (k: keyof Fields) => (e: { target: { value: string } }) => setFields({ ...fields, [k]: e.target.value });
  const problems = save.error instanceof ApiError ? (save.error.details as { path: string; message: string }[]) : [];
  return (
    <section aria-label={current ? `Edit ${current.name}` : 'New toolset'} style={{ marginBottom: 24, maxWidth: 720 }}>
      <Typography.Title level={3}>{current ? `Edit ${current.name}` : 'New toolset'}</Typography.Title>
      <Form layout="vertical" onFinish={() => save.mutate()}>
        <Form.Item label="Name" htmlFor="ts-name" required>
          <Input id="ts-name" value={fields.name} onChange={set('name')} disabled={current !== null} />
        </Form.Item>
        <Form.Item label="Description" htmlFor="ts-description">
          <Input id="ts-description" value={fields.description} onChange={set('description')} />
        </Form.Item>
        <Typography.Text strong>Include (every field given must match; leave all empty for every tool)</Typography.Text>
        <Form.Item label="Names" htmlFor="ts-names" extra="Name globs, comma-separated: gh_*, read_*">
          <Input id="ts-names" value={fields.names} onChange={set('names')} />
        </Form.Item>
        <Form.Item label="Tags" htmlFor="ts-tags">
          <Input id="ts-tags" value={fields.tags} onChange={set('tags')} />
        </Form.Item>
        <Form.Item label="Kinds" htmlFor="ts-kinds">
          <Select id="ts-kinds" mode="multiple" allowClear value={fields.kinds} onChange={(kinds: string[]) => setFields({ ...fields, kinds })} options={KINDS.map((k) => ({ value: k, label: k }))} />
        </Form.Item>
        <Form.Item label="Servers" htmlFor="ts-servers" extra="Upstream MCP server names">
          <Input id="ts-servers" value={fields.servers} onChange={set('servers')} />
        </Form.Item>
        <Form.Item label="Prompts" htmlFor="ts-prompts" extra="Upstream prompts by served name (globs); with these or resources, this selector holds no tool">
          <Input id="ts-prompts" value={fields.prompts} onChange={set('prompts')} />
        </Form.Item>
        <Form.Item label="Resources" htmlFor="ts-resources" extra="Upstream resources by URI or URI template (globs): file:///docs/*">
          <Input id="ts-resources" value={fields.resources} onChange={set('resources')} />
        </Form.Item>
        <Typography.Text strong>Exclude</Typography.Text>
        <Form.Item label="Exclude names" htmlFor="ts-exclude-names">
          <Input id="ts-exclude-names" value={fields.exclude_names} onChange={set('exclude_names')} />
        </Form.Item>
        <Form.Item label="Exclude tags" htmlFor="ts-exclude-tags">
          <Input id="ts-exclude-tags" value={fields.exclude_tags} onChange={set('exclude_tags')} />
        </Form.Item>
        <Form.Item label="Discovery" htmlFor="ts-discovery" extra="search: served as search_tools and call_tool, for big toolsets; code: search_tools and run_code, a program that calls the tools">
          <Select id="ts-discovery" value={fields.discovery} onChange={(discovery: 'all' | 'search' | 'code') => setFields({ ...fields, discovery })} options={[{ value: 'all', label: 'all' }, { value: 'search', label: 'search' }, { value: 'code', label: 'code' }]} />
        </Form.Item>
        {save.error && (
          <Alert
            type="error"
            showIcon
            title="The toolset was not saved"
            description={
              <div>
                {save.error.message}
                {problems.map((p) => (
                  <div key={p.path}>
                    <code>{p.path}</code>: {p.message}
                  </div>
                ))}
              </div>
            }
            style={{ marginBottom: 12 }}
          />
        )}
        <Space>
          <Button type="primary" htmlType="submit" loading={save.isPending} disabled={fields.name.trim() === ''}>
            {current ? 'Save' : 'Create'}
          </Button>
          <Button onClick={onDone}>Cancel</Button>
        </Space>
      </Form>
    </section>
  );
}
