// Overview: how the tools behave, from the server's own run log (GET /v1/overview) — calls
// per minute by outcome over the last hour or day (a uPlot chart, said in words beside it
// and as a table on demand), the busiest tools' p50/p95 latency and the tools with the most
// errors (bars with their numbers; the failing ones link to their runs), warm and cold Python
// calls, and the upstream servers' status. The tool list stays one click away.

import { useEffect, useRef, useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from '@tanstack/react-query';
import { Alert, Card, Col, Radio, Row, Space, Typography, theme } from 'antd';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, type Overview } from '../api';
import { Pill } from '../Pill';
import { barPercent, callsSummary, ms } from '../overview';
import { statusText, statusTone, type UpstreamStatus } from '../servers';
import { useDark } from '../context';

/** Outcome colours: readable on light and dark backgrounds, ok always green. */
const COLOURS = ['#389e0d', '#cf1322', '#d46b08', '#531dab', '#0958d9', '#c41d7f', '#08979c', '#7c8a00'];

export default function OverviewPage() {
  const [window, setWindow] = useState<'1h' | '24h'>('1h');
  const o = useQuery({ queryKey: ['overview', window], queryFn: () => api.overview(window), refetchInterval: 10_000 });
  return (
    <main>
      <Space wrap style={{ justifyContent: 'space-between', width: '100%' }}>
        <Typography.Title level={2} style={{ marginTop: 0 }}>
          Overview
        </Typography.Title>
        <Space wrap>
          <Radio.Group value={window} onChange={(e) => setWindow(e.target.value as '1h' | '24h')} optionType="button" aria-label="Window" options={[{ label: 'Last hour', value: '1h' }, { label: 'Last day', value: '24h' }]} />
          <Link to="/tools">All tools</Link>
        </Space>
      </Space>
      {o.error && <Alert type="error" showIcon title="The overview could not be read" description={o.error.message} />}
      {o.data && <Charts o={o.data} />}
    </main>
  );
}

function Charts({ o }: { o: Overview }) {
  const largestP95 = Math.max(0, ...o.busiest.map((t) => t.p95_ms));
  const largestErrors = Math.max(0, ...o.failing.map((t) => t.errors));
  const python = o.warm_cold.warm + o.warm_cold.cold;
  return (
    <Row gutter={[16, 16]}>
      <Col span={24}>
        <Card title="Calls by outcome" size="small">
          <figure style={{ margin: 0 }} aria-label="Calls by outcome">
            <CallsChart o={o} />
            <figcaption>
              <Typography.Paragraph style={{ marginTop: 8, marginBottom: 0 }}>{callsSummary(o)}</Typography.Paragraph>
            </figcaption>
          </figure>
          {o.truncated && <Typography.Text type="secondary">Only the newest 50,000 calls are counted.</Typography.Text>}
        </Card>
      </Col>
      <Col xs={24} lg={12}>
        <Card title="Latency of the busiest tools" size="small">
          <section aria-label="Latency of the busiest tools">
            {o.busiest.length === 0 && <Typography.Text type="secondary">No calls yet.</Typography.Text>}
            {o.busiest.map((t) => (
              <Bar key={t.tool} label={<Link to={`/tools/${encodeURIComponent(t.tool)}`}>{t.tool}</Link>} value={`${t.calls} calls · p50 ${ms(t.p50_ms)} · p95 ${ms(t.p95_ms)}`} percent={barPercent(t.p95_ms, largestP95)} inner={barPercent(t.p50_ms, largestP95)} />
            ))}
          </section>
        </Card>
      </Col>
      <Col xs={24} lg={12}>
        <Card title="Tools with the most errors" size="small">
          <section aria-label="Tools with the most errors">
            {o.failing.length === 0 && <Typography.Text type="secondary">No failed calls in this window.</Typography.Text>}
            {o.failing.map((t) => (
              <Bar key={t.tool} label={<Link to={`/runs?tool=${encodeURIComponent(t.tool)}`}>{t.tool}</Link>} value={`${t.errors} of ${t.calls} failed`} percent={barPercent(t.errors, largestErrors)} colour="#cf1322" />
            ))}
          </section>
        </Card>
      </Col>
      <Col xs={24} lg={12}>
        <Card title="Python calls since the server started" size="small">
          <section aria-label="Python calls">
            <Bar label="warm" value={`${o.warm_cold.warm}`} percent={barPercent(o.warm_cold.warm, python)} />
            <Bar label="cold" value={`${o.warm_cold.cold}`} percent={barPercent(o.warm_cold.cold, python)} colour="#d46b08" />
          </section>
        </Card>
      </Col>
      <Col xs={24} lg={12}>
        <Card title="Upstream servers" size="small">
          <section aria-label="Upstream servers">
            {o.upstreams.length === 0 && <Typography.Text type="secondary">None.</Typography.Text>}
            {o.upstreams.length > 0 && (
              <ul style={{ listStyle: 'none', margin: 0, padding: 0 }}>
                {o.upstreams.map((u) => (
                  <li key={u.name} style={{ marginBottom: 4 }}>
                    <Link className="ts-text-link" to={`/servers/${encodeURIComponent(u.name)}`}>
                      {u.name}
                    </Link>{' '}
                    <Pill tone={statusTone(u.status as UpstreamStatus)}>{statusText(u.status as UpstreamStatus)}</Pill> <Typography.Text type="secondary">{u.tools} tools</Typography.Text>
                  </li>
                ))}
              </ul>
            )}
          </section>
        </Card>
      </Col>
    </Row>
  );
}

/** One labelled bar with its number in words beside it. */
function Bar({ label, value, percent, inner, colour = '#0958d9' }: { label: React.ReactNode; value: string; percent: number; inner?: number; colour?: string }) {
  return (
    <div style={{ marginBottom: 8 }}>
      <Space style={{ justifyContent: 'space-between', width: '100%' }}>
        <span>{label}</span>
        <Typography.Text type="secondary">{value}</Typography.Text>
      </Space>
      <div aria-hidden="true" style={{ position: 'relative', height: 8, background: 'rgba(128,128,128,.18)', borderRadius: 4 }}>
        <div style={{ position: 'absolute', inset: 0, width: `${percent}%`, background: colour, opacity: inner === undefined ? 1 : 0.45, borderRadius: 4 }} />
        {inner !== undefined && <div style={{ position: 'absolute', inset: 0, width: `${inner}%`, background: colour, borderRadius: 4 }} />}
      </div>
    </div>
  );
}

/** Calls per bucket, one line per outcome (uPlot), redrawn when the data or width change. */
function CallsChart({ o }: { o: Overview }) {
  const box = useRef<HTMLDivElement>(null);
  const dark = useDark();
  const { token } = theme.useToken();
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const axis = { stroke: token.colorTextSecondary, grid: { stroke: dark ? 'rgba(255,255,255,.08)' : 'rgba(0,0,0,.06)' }, ticks: { stroke: 'transparent' } };
    const opts: uPlot.Options = {
      width: Math.max(280, el.clientWidth),
      height: 220,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      axes: [axis, { ...axis, label: `calls per ${o.bucket_ms >= 3_600_000 ? `${o.bucket_ms / 3_600_000} h` : `${o.bucket_ms / 60_000} min`}` }],
      scales: { x: { time: true } },
      series: [{}, ...o.series.map((s, i) => ({ label: s.outcome, stroke: COLOURS[i % COLOURS.length], width: 2, points: { show: false } }))],
    };
    const data: uPlot.AlignedData = [o.buckets.map((b) => b / 1000), ...o.series.map((s) => s.counts)];
    const plot = new uPlot(opts, data, el);
    // Only a change of width redraws (a redraw must not feed back into another).
    let width = opts.width;
    const resize = new ResizeObserver(() => {
      const next = Math.max(280, el.clientWidth);
      if (next !== width) {
        width = next;
        plot.setSize({ width, height: 220 });
      }
    });
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [o, dark, token.colorTextSecondary]);
  return <div ref={box} aria-hidden="true" data-testid="calls-chart" />;
}
