// The tool list: server-side search as you type, a tag filter, disabled tools on demand,
// cursor pages of a chosen size. The page never loads more than one page of tools.

import { useEffect, useRef, useState } from 'react';
import { Link, useLocation, useNavigate, useSearchParams } from 'react-router';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Alert, App, Button, Empty, Input, Space, Switch, Table, Typography, type InputRef } from 'antd';
import { allows, api, type ToolSummary } from '../api';
import { useMe } from '../context';
import { Pill } from '../Pill';
import { Pager } from '../Pager';

export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

export function DangerTag({ danger }: { danger: string }) {
  return danger === 'dangerous' ? <Pill tone="danger">dangerous</Pill> : <Pill tone="ok">safe</Pill>;
}

export function EnabledSwitch({ name, enabled, size }: { name: string; enabled: boolean; size?: 'small' | 'default' }) {
  const me = useMe();
  const client = useQueryClient();
  const { message } = App.useApp();
  const toggle = useMutation({
    mutationFn: (on: boolean) => api.setEnabled(name, on),
    onSuccess: (view) => {
      void message.success(`${name} ${view.definition.enabled === false ? 'disabled' : 'enabled'} (version ${view.version})`);
      void client.invalidateQueries({ queryKey: ['tools'] });
      void client.invalidateQueries({ queryKey: ['tool', name] });
    },
    onError: (e) => void message.error(`${name}: ${e.message}`),
  });
  const canEdit = allows(me?.role, 'admin');
  return (
    <Switch
      size={size}
      aria-label="Enabled"
      checked={enabled}
      loading={toggle.isPending}
      disabled={!canEdit}
      title={canEdit ? undefined : 'Your role cannot change tools'}
      onChange={(on) => toggle.mutate(on)}
    />
  );
}

function NewToolButton() {
  const me = useMe();
  const navigate = useNavigate();
  if (!allows(me?.role, 'admin')) return null;
  return (
    <Button type="primary" onClick={() => navigate('/new')}>
      New tool
    </Button>
  );
}

export function ToolsPage() {
  const [params, setParams] = useSearchParams();
  const location = useLocation();
  const search = useRef<InputRef>(null);
  const [text, setText] = useState(params.get('q') ?? '');
  const [tag, setTag] = useState(params.get('tag') ?? '');
  const showDisabled = params.get('disabled') === '1';
  const [limit, setLimit] = useState(50);
  const q = useDebounced(text.trim(), 250);
  const t = useDebounced(tag.trim(), 250);
  // The pages walked so far, for one search; a new search starts again at the first page.
  const searchKey = JSON.stringify([q, t, showDisabled, limit]);
  const [walked, setWalked] = useState<{ key: string; cursors: (string | null)[] }>({ key: searchKey, cursors: [null] });
  const cursors = walked.key === searchKey ? walked.cursors : [null];
  const setCursors = (f: (c: (string | null)[]) => (string | null)[]) => setWalked({ key: searchKey, cursors: f(cursors) });

  useEffect(() => {
    if ((location.state as { focusSearch?: boolean } | null)?.focusSearch) search.current?.focus();
  }, [location.state]);
  // The search is kept in the address, for deep links.
  useEffect(() => {
    setParams(
      (p) => {
        const next = new URLSearchParams(p);
        for (const [k, v] of [['q', q], ['tag', t]] as const) {
          if (v) next.set(k, v);
          else next.delete(k);
        }
        return next;
      },
      { replace: true },
    );
  }, [q, t, setParams]);

  const cursor = cursors[cursors.length - 1] ?? null;
  const page = useQuery({
    queryKey: ['tools', { q, t, showDisabled, limit, cursor }],
    queryFn: () => api.tools({ q, tag: t, limit, cursor, include_disabled: showDisabled }),
    placeholderData: keepPreviousData,
  });

  const columns = [
    {
      title: 'Name',
      dataIndex: 'name',
      key: 'name',
      render: (name: string) => (
        <Link to={`/tools/${encodeURIComponent(name)}`} style={{ fontFamily: 'monospace' }}>
          {name}
        </Link>
      ),
    },
    { title: 'Title', dataIndex: 'title', key: 'title', responsive: ['lg' as const] },
    {
      title: 'Description',
      dataIndex: 'description',
      key: 'description',
      ellipsis: true,
    },
    { title: 'Executor', dataIndex: 'executor', key: 'executor', responsive: ['md' as const] },
    {
      title: 'Danger',
      dataIndex: 'danger',
      key: 'danger',
      render: (d: string) => <DangerTag danger={d} />,
    },
    {
      title: 'Tags',
      dataIndex: 'tags',
      key: 'tags',
      responsive: ['md' as const],
      render: (tags: string[]) => (
        <Space size={[0, 4]} wrap>
          {tags.map((x) => (
            <Pill key={x} onClick={() => setTag(x)}>{x}</Pill>
          ))}
        </Space>
      ),
    },
    {
      title: 'Enabled',
      dataIndex: 'enabled',
      key: 'enabled',
      render: (enabled: boolean, row: ToolSummary) => <EnabledSwitch name={row.name} enabled={enabled} size="small" />,
    },
    { title: 'Version', dataIndex: 'version', key: 'version', width: 90 },
  ];

  return (
    <main>
      <Space style={{ width: '100%', justifyContent: 'space-between' }} align="center" wrap>
        <Typography.Title level={2} style={{ marginTop: 0 }}>
          Tools
        </Typography.Title>
        <NewToolButton />
      </Space>
      <Space wrap style={{ marginBottom: 12 }}>
        <Input.Search
          id="tool-search"
          ref={search}
          aria-label="Search tools"
          placeholder="Search tools (press /)"
          allowClear
          value={text}
          onChange={(e) => setText(e.target.value)}
          style={{ width: 320, maxWidth: '100%' }}
        />
        <Input
          aria-label="Filter by tag"
          placeholder="Tag"
          allowClear
          value={tag}
          onChange={(e) => setTag(e.target.value)}
          style={{ width: 160 }}
        />
        <label>
          <Space>
            <Switch
              size="small"
              checked={showDisabled}
              aria-label="Show disabled"
              onChange={(on) =>
                setParams((p) => {
                  const next = new URLSearchParams(p);
                  if (on) next.set('disabled', '1');
                  else next.delete('disabled');
                  return next;
                })
              }
            />
            Show disabled
          </Space>
        </label>
      </Space>
      {page.error && <Alert type="error" showIcon title="The tools could not be listed" description={page.error.message} style={{ marginBottom: 12 }} />}
      <Table<ToolSummary>
        rowKey="name"
        size="middle"
        loading={page.isFetching && !page.data}
        dataSource={page.data?.tools ?? []}
        columns={columns}
        pagination={false}
        scroll={{ x: 'max-content' }}
        locale={{
          emptyText: (
            <Empty
              description={
                q || t ? `No tool matches ${[q && `“${q}”`, t && `tag “${t}”`].filter(Boolean).join(' and ')}` : 'No tools yet: import a catalog with `toolsmith import`'
              }
            />
          ),
        }}
      />
      <Pager
        noun="Tools"
        page={cursors.length}
        next={page.data?.next_cursor}
        onPrevious={() => setCursors((c) => c.slice(0, -1))}
        onNext={(next) => setCursors((c) => [...c, next])}
        limit={limit}
        onLimit={setLimit}
      />
    </main>
  );
}
