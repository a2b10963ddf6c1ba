// The test panel: arguments through a form made from the tool's schema, or as raw JSON text
// (pasted from a model, sloppy text included: the server repairs it as it would a model's);
// Preview shows what would run; Run calls the tool, after a confirmation that shows the
// exact command for a dangerous one. The last arguments per tool are kept in localStorage.

import { useCallback, useEffect, useMemo, useState } from 'react';
import { Alert, Button, Descriptions, Input, Modal, Space, Tabs, Typography } from 'antd';
import { useMutation } from '@tanstack/react-query';
import { allows, api, type ToolResult, type ToolView } from './api';
import { useMe } from './context';
import { ResultView } from './ResultView';
import { SchemaForm } from './SchemaForm';
import { argumentsFromValues, fieldOfPointer, fieldsFromSchema, valuesFromArguments } from './schemaForm';
import { Pill } from './Pill';

type Mode = 'form' | 'json';

interface Saved {
  mode: Mode;
  values?: Record<string, unknown>;
  text?: string;
}

const storageKey = (name: string) => `toolsmith.args.${name}`;

function load(name: string): Saved | undefined {
  try {
    const raw = localStorage.getItem(storageKey(name));
    return raw ? (JSON.parse(raw) as Saved) : undefined;
  } catch {
    return undefined;
  }
}

/** The plan's data: what would run. */
interface Plan {
  arguments?: unknown;
  argv?: string[];
  stdin?: string | null;
  env?: Record<string, string>;
  builtin?: string;
}

function shellQuote(argv: string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

export function PlanView({ plan, coerced }: { plan: Plan; coerced?: string[] }) {
  return (
    <Descriptions size="small" column={1} bordered>
      {plan.builtin ? (
        <Descriptions.Item label="Built-in">{plan.builtin} (runs inside toolsmith)</Descriptions.Item>
      ) : (
        <Descriptions.Item label="argv">
          <Typography.Text code copyable style={{ whiteSpace: 'pre-wrap', wordBreak: 'break-all' }} data-testid="plan-argv">
            {shellQuote(plan.argv ?? [])}
          </Typography.Text>
        </Descriptions.Item>
      )}
      <Descriptions.Item label="stdin">
        {plan.stdin ? <pre style={{ margin: 0, whiteSpace: 'pre-wrap', wordBreak: 'break-all', fontFamily: 'monospace' }}>{plan.stdin}</pre> : '(empty)'}
      </Descriptions.Item>
      <Descriptions.Item label="Environment">
        {plan.env && Object.keys(plan.env).length > 0 ? (
          <pre style={{ margin: 0, fontFamily: 'monospace' }}>
            {Object.entries(plan.env)
              .map(([k, v]) => `${k}=${v}`)
              .join('\n')}
          </pre>
        ) : (
          'only the allowlisted variables'
        )}
      </Descriptions.Item>
      <Descriptions.Item label="Arguments">
        <pre style={{ margin: 0, whiteSpace: 'pre-wrap', fontFamily: 'monospace' }}>{JSON.stringify(plan.arguments, null, 2)}</pre>
      </Descriptions.Item>
      <Descriptions.Item label="Coerced">
        {coerced && coerced.length ? coerced.map((c) => <Pill key={c} tone="info">{c}</Pill>) : 'nothing'}
      </Descriptions.Item>
    </Descriptions>
  );
}

export function TestPanel({ tool, initialArguments }: { tool: ToolView; initialArguments?: unknown }) {
  const me = useMe();
  const canCall = allows(me?.role, 'call');
  const fields = useMemo(() => fieldsFromSchema(tool.input_schema), [tool.input_schema]);
  const saved = useMemo(() => load(tool.name), [tool.name]);
  const [mode, setMode] = useState<Mode>(initialArguments !== undefined ? 'form' : (saved?.mode ?? 'form'));
  const [values, setValues] = useState<Record<string, unknown>>(() =>
    initialArguments !== undefined ? valuesFromArguments(fields, initialArguments) : (saved?.values ?? {}),
  );
  const [text, setText] = useState<string>(() =>
    initialArguments !== undefined ? JSON.stringify(initialArguments, null, 2) : (saved?.text ?? '{}'),
  );
  const [preview, setPreview] = useState<ToolResult | undefined>();
  const [result, setResult] = useState<ToolResult | undefined>();
  const [confirming, setConfirming] = useState<ToolResult | undefined>();

  useEffect(() => {
    localStorage.setItem(storageKey(tool.name), JSON.stringify({ mode, values, text } satisfies Saved));
  }, [tool.name, mode, values, text]);

  /** What is sent: the form's arguments, or the raw text (as a JSON string, for the server to read). */
  const args = useCallback(() => (mode === 'form' ? argumentsFromValues(fields, values) : text), [mode, fields, values, text]);

  const plan = useMutation({ mutationFn: () => api.plan(tool.name, args()), onSuccess: (r) => setPreview(r) });
  const call = useMutation({
    mutationFn: (confirm: boolean) => api.call(tool.name, args(), confirm),
    onSuccess: (r) => setResult(r),
  });
  const dangerous = tool.definition.danger === 'dangerous';

  const run = useCallback(async () => {
    if (!canCall || call.isPending) return;
    if (dangerous) {
      // Show exactly what would run before anything runs.
      const p = await api.plan(tool.name, args()).catch(() => undefined);
      if (p && !p.success) {
        setResult(p);
        return;
      }
      setConfirming(p);
      return;
    }
    call.mutate(false);
  }, [canCall, call, dangerous, tool.name, args]);

  // Ctrl/Cmd+Enter runs.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        void run();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [run]);

  const shown = result ?? preview;
  const problems: Record<string, string[]> = {};
  for (const p of shown?.error?.details ?? []) {
    const f = fieldOfPointer(p.pointer);
    if (f) (problems[f] ??= []).push(p.message);
  }

  const switchMode = (next: Mode) => {
    if (next === mode) return;
    if (next === 'json') {
      setText(JSON.stringify(argumentsFromValues(fields, values), null, 2));
    } else {
      try {
        setValues(valuesFromArguments(fields, JSON.parse(text)));
      } catch {
        // Text that is not JSON stays in the JSON tab; the form starts from what it had.
      }
    }
    setMode(next);
  };

  return (
    <div>
      {!canCall && (
        <Alert type="info" showIcon title="Your role can look but not run" description="A token with the call or admin role can run tools." style={{ marginBottom: 12 }} />
      )}
      <Tabs
        activeKey={mode}
        onChange={(k) => switchMode(k as Mode)}
        items={[
          {
            key: 'form',
            label: 'Form',
            children: <SchemaForm fields={fields} values={values} onChange={setValues} problems={problems} />,
          },
          {
            key: 'json',
            label: 'JSON',
            children: (
              <div>
                <label htmlFor="args-json">
                  <Typography.Text strong>Arguments (JSON)</Typography.Text>{' '}
                  <Typography.Text type="secondary">— sent as text, repaired as a model's would be</Typography.Text>
                </label>
                <Input.TextArea
                  id="args-json"
                  aria-label="Arguments (JSON)"
                  value={text}
                  onChange={(e) => setText(e.target.value)}
                  autoSize={{ minRows: 6, maxRows: 24 }}
                  style={{ fontFamily: 'monospace', marginTop: 4 }}
                  spellCheck={false}
                />
              </div>
            ),
          },
        ]}
      />
      <Space style={{ margin: '12px 0' }} wrap>
        <Button onClick={() => plan.mutate()} loading={plan.isPending}>
          Preview
        </Button>
        <Button type="primary" onClick={() => void run()} loading={call.isPending} disabled={!canCall}>
          Run
        </Button>
        <Typography.Text type="secondary">Ctrl/⌘+Enter runs</Typography.Text>
      </Space>
      {(plan.error || call.error) && (
        <Alert type="error" showIcon title="The request failed" description={(plan.error ?? call.error)?.message} style={{ marginBottom: 12 }} />
      )}
      <section aria-label="Result">
        {preview && (
          <div style={{ marginBottom: 16 }}>
            <Typography.Title level={5}>Preview: what would run</Typography.Title>
            {preview.success ? <PlanView plan={preview.data as Plan} coerced={preview.meta.coerced} /> : <ResultView result={preview} />}
          </div>
        )}
        {result && (
          <div>
            <Typography.Title level={5}>Result</Typography.Title>
            <ResultView result={result} />
          </div>
        )}
      </section>
      <Modal
        open={confirming !== undefined}
        title={`Run the dangerous tool ${tool.name}?`}
        onCancel={() => setConfirming(undefined)}
        footer={[
          <Button key="cancel" onClick={() => setConfirming(undefined)}>
            Cancel
          </Button>,
          <Button
            key="run"
            type="primary"
            onClick={() => {
              setConfirming(undefined);
              call.mutate(true);
            }}
          >
            Run
          </Button>,
        ]}
      >
        <Typography.Paragraph>{tool.definition.description}</Typography.Paragraph>
        <Typography.Paragraph>This is what will run:</Typography.Paragraph>
        {confirming?.data ? <PlanView plan={confirming.data as Plan} coerced={confirming.meta.coerced} /> : <Typography.Text type="secondary">(the plan could not be shown)</Typography.Text>}
      </Modal>
    </div>
  );
}
