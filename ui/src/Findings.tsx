// What the guardrail scanner found in a definition: each finding's severity, rule and place,
// and the exact span marked in its context. The server sends the text with every hidden
// character spelled out (⟨U+200B⟩, ⟨ESC⟩, ⟨tags:"…"⟩), so what a model would read and a
// reviewer would not see is on the screen.

import { Typography } from 'antd';
import type { Finding } from './api';
import { Pill } from './Pill';

/** Whether any finding keeps the definition out of service until allowed. */
export function holds(findings: Finding[] | undefined): boolean {
  return (findings ?? []).some((f) => f.severity === 'hold');
}

export function Findings({ findings, label = 'Guardrail findings' }: { findings: Finding[] | undefined; label?: string }) {
  if (!findings || findings.length === 0) return null;
  return (
    <section aria-label={label} style={{ margin: '8px 0' }}>
      <Typography.Text strong>{label} ({findings.length})</Typography.Text>
      <ul style={{ margin: '4px 0 0', paddingLeft: 18 }}>
        {findings.map((f, i) => (
          <li key={`${f.rule}-${f.path}-${f.start}-${i}`} aria-label={`${f.rule} at ${f.path || '/'}`} style={{ marginBottom: 6 }}>
            <Pill tone={f.severity === 'hold' ? 'danger' : 'warn'}>{f.severity}</Pill> <Typography.Text code>{f.rule}</Typography.Text>{' '}
            <Typography.Text type="secondary">
              at {f.path || '/'} ({f.part}, characters {f.start}–{f.end})
            </Typography.Text>
            <pre style={{ margin: '2px 0', whiteSpace: 'pre-wrap', fontFamily: 'monospace' }}>
              {f.before}
              <mark title={f.why}>{f.matched}</mark>
              {f.after}
            </pre>
            <Typography.Text type="secondary" style={{ fontSize: 12 }}>
              {f.why}
            </Typography.Text>
          </li>
        ))}
      </ul>
    </section>
  );
}
