// The execution log, newest first: filter by tool, outcome and caller; a run's detail with
// its arguments, and a way to try them again in the test panel.

import { useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Alert, Button, Descriptions, Input, Select, Space, Table, Typography } from 'antd';
import { api, type Guardrails, type RunRecord, type SandboxReport } from '../api';
import { duration, guardrailsText } from '../result';
import { useDebounced } from './Tools';
import { Pill } from '../Pill';
import { Pager } from '../Pager';

const KINDS = ['ok', 'invalid_arguments', 'unknown_tool', 'disabled', 'needs_confirmation', 'timeout', 'exit_status', 'output_limit', 'spawn_failed', 'bad_output', 'cancelled', 'session', 'upstream', 'tool_error', 'http_status', 'network', 'sandbox', 'rate_limited', 'internal'];

/** A run's sandbox in a few words: the policy, and what was not enforced if anything. */
export function sandboxText(s?: SandboxReport): string {
  if (!s) return '—';
  const policy = typeof s.policy === 'string' ? s.policy : 'custom';
  if (s.filesystem === undefined) return policy;
  const weak = (['filesystem', 'network', 'signals'] as const).filter((k) => s[k] && s[k] !== 'enforced' && s[k] !== 'unrestricted');
  return weak.length ? `${policy} (${weak.map((k) => `${k} ${s[k]}`).join(', ')})` : `${policy}, enforced`;
}

export function KindTag({ kind }: { kind: string }) {
  return <Pill tone={kind === 'ok' ? 'ok' : kind === 'needs_confirmation' ? 'warn' : 'danger'}>{kind}</Pill>;
}

export default function RunsPage() {
  const navigate = useNavigate();
  // A link may name the tool and the outcome (the Overview's failing tools do).
  const [params] = useSearchParams();
  const [tool, setTool] = useState(params.get('tool') ?? '');
  const [caller, setCaller] = useState('');
  const [kind, setKind] = useState<string | undefined>(params.get('kind') ?? undefined);
  // A program's calls (`?parent=`, the code playground links them), or one call (`?call_id=`).
  const parent = params.get('parent') ?? undefined;
  const callId = params.get('call_id') ?? undefined;
  const [limit, setLimit] = useState(50);
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const t = useDebounced(tool.trim(), 250);
  const c = useDebounced(caller.trim(), 250);
  const cursor = cursors[cursors.length - 1] ?? null;
  const page = useQuery({
    queryKey: ['runs', { t, c, kind, limit, cursor, parent, callId }],
    queryFn: () => api.runs({ tool: t || undefined, caller: c || undefined, kind, limit, cursor, parent, call_id: callId }),
    placeholderData: keepPreviousData,
  });
  const reset = () => setCursors([null]);

  return (
    <main>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Runs
      </Typography.Title>
      <Space wrap style={{ marginBottom: 12 }}>
        <Input aria-label="Filter by tool" placeholder="Tool" allowClear value={tool} onChange={(e) => { setTool(e.target.value); reset(); }} style={{ width: 200 }} />
        <Select
          aria-label="Filter by outcome"
          placeholder="Any outcome"
          allowClear
          value={kind}
          onChange={(v) => { setKind(v); reset(); }}
          options={KINDS.map((k) => ({ value: k, label: k }))}
          style={{ width: 200 }}
        />
        <Input aria-label="Filter by caller" placeholder="Caller" allowClear value={caller} onChange={(e) => { setCaller(e.target.value); reset(); }} style={{ width: 160 }} />
      </Space>
      {(parent || callId) && (
        <Alert
          type="info"
          showIcon
          style={{ marginBottom: 12 }}
          title={parent ? `Only the calls made by the program ${parent}` : `Only the call ${callId ?? ''}`}
          action={<Button onClick={() => { navigate('/runs'); reset(); }}>Show every run</Button>}
        />
      )}
      {page.error && <Alert type="error" showIcon title="The execution log could not be read" description={page.error.message} style={{ marginBottom: 12 }} />}
      <Table<RunRecord>
        rowKey="id"
        size="middle"
        loading={page.isFetching && !page.data}
        dataSource={page.data?.runs ?? []}
        pagination={false}
        scroll={{ x: 'max-content' }}
        locale={{ emptyText: 'No calls yet' }}
        expandable={{
          expandedRowRender: (r) => (
            <Descriptions size="small" column={1} bordered>
              <Descriptions.Item label="Arguments">
                <pre style={{ margin: 0, fontFamily: 'monospace', whiteSpace: 'pre-wrap' }}>{JSON.stringify(r.arguments, null, 2)}</pre>
              </Descriptions.Item>
              <Descriptions.Item label="Outcome"><KindTag kind={r.kind} /></Descriptions.Item>
              <Descriptions.Item label="Duration">{duration(r.duration_ms)}</Descriptions.Item>
              <Descriptions.Item label="Exit code">{r.exit_code ?? '—'}</Descriptions.Item>
              {r.upstream && <Descriptions.Item label="MCP server">{r.upstream}</Descriptions.Item>}
              <Descriptions.Item label="Version that ran">{r.version}</Descriptions.Item>
              <Descriptions.Item label="Output truncated">{r.truncated ? 'yes' : 'no'}</Descriptions.Item>
              {r.guardrails && <Descriptions.Item label="Guardrails">{guardrailsText(r.guardrails)}</Descriptions.Item>}
              {r.call_id && <Descriptions.Item label="Call id">{r.call_id}</Descriptions.Item>}
              {r.parent_call_id && (
                <Descriptions.Item label="Made by the program">
                  <Link className="ts-text-link" to={`/runs?call_id=${encodeURIComponent(r.parent_call_id)}`}>Its run</Link> <Typography.Text code>{r.parent_call_id}</Typography.Text>
                </Descriptions.Item>
              )}
              {r.tool === 'run_code' && r.call_id && (
                <Descriptions.Item label="The program's calls">
                  <Link to={`/runs?parent=${encodeURIComponent(r.call_id)}`}>Show them</Link>
                </Descriptions.Item>
              )}
              <Descriptions.Item label="Try again">
                <Button onClick={() => navigate(`/tools/${encodeURIComponent(r.tool)}?tab=test`, { state: { args: r.arguments } })}>
                  Open in Test panel with these arguments
                </Button>
              </Descriptions.Item>
            </Descriptions>
          ),
        }}
        columns={[
          { title: 'Time', dataIndex: 'started_at_ms', render: (ms: number) => new Date(ms).toLocaleString() },
          { title: 'Tool', dataIndex: 'tool', render: (n: string) => <Link to={`/tools/${encodeURIComponent(n)}`}>{n}</Link> },
          { title: 'Upstream', dataIndex: 'upstream', render: (u?: string) => u ?? '—' },
          { title: 'Version', dataIndex: 'version' },
          { title: 'Caller', dataIndex: 'caller' },
          { title: 'Outcome', dataIndex: 'kind', render: (k: string) => <KindTag kind={k} /> },
          { title: 'Duration', dataIndex: 'duration_ms', render: (ms: number) => duration(ms) },
          { title: 'Exit code', dataIndex: 'exit_code', render: (c: number | null) => c ?? '—' },
          { title: 'Sandbox', dataIndex: 'sandbox', render: (s?: SandboxReport) => sandboxText(s) },
          { title: 'Guardrails', dataIndex: 'guardrails', render: (g?: Guardrails) => guardrailsText(g) },
        ]}
      />
      <Pager
        noun="Runs"
        page={cursors.length}
        next={page.data?.next_cursor}
        onPrevious={() => setCursors((x) => x.slice(0, -1))}
        onNext={(next) => setCursors((x) => [...x, next])}
        limit={limit}
        onLimit={(v) => {
          setLimit(v);
          reset();
        }}
      />
    </main>
  );
}
