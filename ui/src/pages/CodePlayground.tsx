// A toolset's code playground: its typed Python stubs beside an editor; Run sends the program
// to `POST /v1/code/run` in the toolset's view, as the signed-in caller, and shows what it
// printed, returned or raised, and its tool calls as a timeline linked to the run log. A
// dangerous tool the program called unconfirmed did not run; "Confirm and run again" names it.

import { Suspense, lazy, useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Alert, Button, Col, Row, Select, Space, Spin, Timeline, Typography } from 'antd';
import { allows, api, type CodeRun } from '../api';
import { outcomeOf, starterProgram, unconfirmed } from '../code';
import { useDark, useMe } from '../context';
import { duration } from '../result';
import { KindTag } from './Runs';

const CodeEditor = lazy(() => import('../CodeEditor'));

const pre = { fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-word', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6, margin: 0 } as const;

export default function CodePlayground({ toolset, members }: { toolset: string; members: string[] }) {
  const me = useMe();
  const dark = useDark();
  const stubs = useQuery({ queryKey: ['code-stubs', toolset], queryFn: () => api.codeStubs(toolset) });
  const modules = stubs.data?.modules ?? [];
  const [shown, setShown] = useState<string | undefined>();
  // Until the user edits it, the program is the one written from the stubs.
  const [edited, setProgram] = useState<string | undefined>();
  const program = edited ?? (stubs.data ? starterProgram(stubs.data.modules) : undefined);
  const [confirm, setConfirm] = useState<string[]>([]);
  const run = useMutation({ mutationFn: (c: string[]) => api.runCode(toolset, { code: program ?? '', confirm: c }) });
  const canRun = allows(me?.role, 'call');
  const go = (c: string[] = confirm) => {
    if (canRun && !run.isPending) run.mutate(c);
  };
  const module = modules.find((m) => m.module === shown) ?? modules[0];

  return (
    <section aria-labelledby="playground-heading">
      <Typography.Title level={4} id="playground-heading">
        Code playground
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        A Python program calling this toolset&apos;s tools as functions (code mode), run in the warm runtime under the sandbox. Each call goes through the gateway as yours: checked, repaired, confirmed when dangerous, and in the run log.
      </Typography.Paragraph>
      {stubs.error && <Alert type="error" showIcon title="The stubs could not be read" description={stubs.error.message} style={{ marginBottom: 12 }} />}
      <Row gutter={[16, 16]}>
        <Col xs={24} lg={12}>
          <Space style={{ marginBottom: 8 }} wrap>
            <Typography.Text>Stubs</Typography.Text>
            <Select
              aria-label="Stub module"
              value={module?.module}
              onChange={setShown}
              options={modules.map((m) => ({ value: m.module, label: m.module }))}
              style={{ minWidth: 220 }}
              notFoundContent="No tools"
            />
          </Space>
          <Suspense fallback={<Spin />}>
            <CodeEditor label="Stubs" language="python" value={module?.source ?? '# No tools in this toolset.\n'} readOnly dark={dark} height={360} />
          </Suspense>
        </Col>
        <Col xs={24} lg={12}>
          <Space style={{ marginBottom: 8 }} wrap>
            <Typography.Text>Program</Typography.Text>
            <Typography.Text type="secondary">(Ctrl+S runs it)</Typography.Text>
          </Space>
          <Suspense fallback={<Spin />}>
            {program === undefined ? <Spin /> : <CodeEditor label="Program" language="python" value={program} onChange={setProgram} onSave={() => go()} dark={dark} height={360} />}
          </Suspense>
        </Col>
      </Row>
      <Space wrap style={{ margin: '12px 0' }}>
        <Select
          mode="multiple"
          aria-label="Dangerous tools it may call"
          placeholder="Dangerous tools it may call"
          value={confirm}
          onChange={setConfirm}
          options={members.map((m) => ({ value: m, label: m }))}
          style={{ minWidth: 280 }}
        />
        <Button type="primary" onClick={() => go()} loading={run.isPending} disabled={!canRun || program === undefined} title={canRun ? undefined : 'Your role cannot call tools'}>
          Run
        </Button>
      </Space>
      {run.error && <Alert type="error" showIcon title="The program was not run" description={run.error.message} />}
      {run.data && (
        <RunView
          ran={run.data}
          onConfirm={(tools) => {
            const all = [...new Set([...confirm, ...tools])];
            setConfirm(all);
            go(all);
          }}
        />
      )}
    </section>
  );
}

function RunView({ ran, onConfirm }: { ran: CodeRun; onConfirm: (tools: string[]) => void }) {
  const o = outcomeOf(ran.result);
  const refused = unconfirmed(ran.calls);
  const id = ran.result.meta.call_id;
  return (
    <Space direction="vertical" style={{ width: '100%' }} aria-label="Program run">
      <Typography.Text type="secondary">
        Ran in {duration(ran.result.meta.duration_ms)}, {ran.calls.length} tool call{ran.calls.length === 1 ? '' : 's'}.
        {id && (
          <>
            {' '}
            <Link className="ts-text-link" to={`/runs?parent=${encodeURIComponent(id)}`}>Its calls in the run log</Link>
          </>
        )}
      </Typography.Text>
      {o.stopped && <Alert type="error" showIcon title={`Stopped: ${o.stopped.kind}`} description={o.stopped.message} />}
      {refused.length > 0 && (
        <Alert
          type="warning"
          showIcon
          title={`Not confirmed, so not run: ${refused.join(', ')}`}
          description="A dangerous tool runs in a program only when you allow it."
          action={<Button onClick={() => onConfirm(refused)}>Confirm and run again</Button>}
        />
      )}
      <Typography.Text strong>Output{o.cut ? ' (cut)' : ''}</Typography.Text>
      <pre tabIndex={0} aria-label="Program output" style={pre}>
        {o.output || '(nothing printed)'}
      </pre>
      {o.value !== undefined && (
        <>
          <Typography.Text strong>Value</Typography.Text>
          <pre tabIndex={0} aria-label="Program value" style={pre}>
            {JSON.stringify(o.value, null, 2)}
          </pre>
        </>
      )}
      {o.traceback && (
        <>
          <Typography.Text strong type="danger">
            Exception
          </Typography.Text>
          <pre tabIndex={0} aria-label="Traceback" style={pre}>
            {o.traceback}
          </pre>
        </>
      )}
      <Typography.Text strong>Tool calls</Typography.Text>
      {ran.calls.length === 0 ? (
        <Typography.Text type="secondary">The program called no tool.</Typography.Text>
      ) : (
        <div role="group" aria-label="Tool calls">
          <Timeline
            items={ran.calls.map((c, i) => ({
              key: `${i}`,
              color: c.outcome === 'ok' ? 'green' : c.outcome === 'needs_confirmation' ? 'orange' : 'red',
              content: (
                <span>
                  <Link className="ts-text-link" to={`/tools/${encodeURIComponent(c.tool)}`}>{c.tool}</Link> <KindTag kind={c.outcome} /> {duration(c.duration_ms)}
                  {c.call_id && (
                    <>
                      {' · '}
                      <Link className="ts-text-link" to={`/runs?call_id=${encodeURIComponent(c.call_id)}`} aria-label={`${c.tool} in the run log`}>
                        run log
                      </Link>
                    </>
                  )}
                </span>
              ),
            }))}
          />
        </div>
      )}
    </Space>
  );
}
