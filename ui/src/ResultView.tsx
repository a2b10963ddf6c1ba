// A ToolResult as people read it: outcome, output streams (monospace, scrollable, with the
// truncation marker called out), exit code, JSON data as a tree, meta, and each problem with
// its pointer. Everything a tool printed is shown as text, never as HTML.

import { Alert, Descriptions, List, Space, Typography } from 'antd';
import type { ToolResult } from './api';
import { bytes, duration, guardrailsText, omittedBytes, streamsOf, structuredData, summary } from './result';
import { Pill } from './Pill';

const pre: React.CSSProperties = {
  fontFamily: 'monospace',
  fontSize: 12,
  whiteSpace: 'pre-wrap',
  wordBreak: 'break-all',
  maxHeight: 360,
  overflow: 'auto',
  padding: 8,
  margin: 0,
  border: '1px solid rgba(128,128,128,.3)',
  borderRadius: 6,
};

export function JsonTree({ value, name, depth = 0 }: { value: unknown; name?: string; depth?: number }) {
  const label = name !== undefined ? <span style={{ fontFamily: 'monospace' }}>{name}: </span> : null;
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    const brackets = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
    return (
      <details open={depth < 2} style={{ marginLeft: depth ? 16 : 0 }}>
        <summary style={{ cursor: 'pointer', fontFamily: 'monospace' }}>
          {label}
          {brackets[0]}
          {entries.length} {Array.isArray(value) ? 'items' : 'keys'}
          {brackets[1]}
        </summary>
        {entries.map(([k, v]) => (
          <JsonTree key={k} name={k} value={v} depth={depth + 1} />
        ))}
      </details>
    );
  }
  return (
    <div style={{ marginLeft: depth ? 16 : 0, fontFamily: 'monospace', whiteSpace: 'pre-wrap' }}>
      {label}
      <span>{JSON.stringify(value)}</span>
    </div>
  );
}

function Stream({ label, text, total }: { label: string; text: string; total: number | undefined }) {
  const cut = omittedBytes(text);
  return (
    <div>
      <Typography.Text strong>{label}</Typography.Text>{' '}
      <Typography.Text type="secondary">{bytes(total ?? text.length)}</Typography.Text>
      {cut !== undefined && (
        <Pill tone="warn">
          truncated: {bytes(cut)} omitted in the middle
        </Pill>
      )}
      <pre style={pre} aria-label={label} tabIndex={0}>
        {text === '' ? <Typography.Text type="secondary">(empty)</Typography.Text> : text}
      </pre>
    </div>
  );
}

export function ResultView({ result }: { result: ToolResult }) {
  const streams = streamsOf(result);
  const data = structuredData(result);
  const m = result.meta;
  return (
    <Space direction="vertical" style={{ width: '100%' }}>
      <Alert
        type={result.success ? 'success' : 'error'}
        showIcon
        title={<span data-testid="result-summary">{summary(result)}</span>}
        description={result.error?.message}
      />
      {result.error?.details && result.error.details.length > 0 && (
        <List
          size="small"
          header={<Typography.Text strong>Problems</Typography.Text>}
          dataSource={result.error.details}
          renderItem={(p) => (
            <List.Item>
              <Typography.Text code>{p.pointer || '(arguments)'}</Typography.Text> {p.message}
            </List.Item>
          )}
        />
      )}
      {data !== undefined && (
        <div>
          <Typography.Text strong>Data</Typography.Text>
          <div style={{ ...pre, whiteSpace: 'normal' }} tabIndex={0} role="group" aria-label="Data">
            <JsonTree value={data} />
          </div>
        </div>
      )}
      {streams && (
        <>
          <Stream label="stdout" text={streams.stdout} total={m.stdout_bytes} />
          <Stream label="stderr" text={streams.stderr} total={m.stderr_bytes} />
        </>
      )}
      <Descriptions size="small" column={{ xs: 1, sm: 2, md: 3 }} bordered>
        <Descriptions.Item label="Tool">
          {m.tool} (version {m.version})
        </Descriptions.Item>
        <Descriptions.Item label="Duration">{duration(m.duration_ms)}</Descriptions.Item>
        <Descriptions.Item label="Exit code">{m.exit_code ?? '—'}</Descriptions.Item>
        <Descriptions.Item label="Coerced">
          {m.coerced && m.coerced.length > 0 ? (
            <Space size={[0, 4]} wrap>
              {m.coerced.map((c) => (
                <Pill key={c} tone="info">{c}</Pill>
              ))}
            </Space>
          ) : (
            'nothing'
          )}
        </Descriptions.Item>
        <Descriptions.Item label="Truncated">{m.truncated ? 'yes' : 'no'}</Descriptions.Item>
        {m.guardrails && <Descriptions.Item label="Guardrails">{guardrailsText(m.guardrails)}</Descriptions.Item>}
        {m.call_id && <Descriptions.Item label="Call id">{m.call_id}</Descriptions.Item>}
        {m.lossy && <Descriptions.Item label="Lossy">non-UTF-8 bytes were replaced</Descriptions.Item>}
      </Descriptions>
    </Space>
  );
}
