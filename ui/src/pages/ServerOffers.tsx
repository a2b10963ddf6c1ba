// A server page's resources and prompts: what the upstream offers besides tools, as this
// caller is served it (GET /v1/resources?server=, /v1/prompts?server=), with a test panel —
// a listed resource or a filled-in template read, a prompt rendered with its arguments — and
// the answer shown as text, binary parts as their type and size. Reading and rendering need
// the call role (an upstream may act on them).

import { useState } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Alert, Button, Input, Space, Table, Typography } from 'antd';
import { api } from '../api';
import { Pill } from '../Pill';
import { missingArguments, promptArguments, promptParts, readParts, type Part, type Prompt, type ResourceTemplate } from '../offers';

/** How often the lists are read again while the page shows them. */
const LIVE_MS = 3000;

/** What the test panel shows: what was asked, and the answer's parts. */
interface Answer {
  asked: string;
  parts: Part[];
}

export function ServerOffers({ name, canCall }: { name: string; canCall: boolean }) {
  const resources = useQuery({ queryKey: ['servers', name, 'resources'], queryFn: () => api.resources(name), refetchInterval: LIVE_MS });
  const prompts = useQuery({ queryKey: ['servers', name, 'prompts'], queryFn: () => api.prompts(name), refetchInterval: LIVE_MS });
  const [answer, setAnswer] = useState<Answer | null>(null);
  const read = useMutation({
    mutationFn: (uri: string) => api.readResource(uri),
    onMutate: () => setAnswer(null),
    onSuccess: (r, uri) => setAnswer({ asked: `Read ${uri}`, parts: readParts(r) }),
  });
  const render = useMutation({
    mutationFn: ({ prompt, args }: { prompt: string; args: Record<string, string> }) => api.getPrompt(prompt, args),
    onMutate: () => setAnswer(null),
    onSuccess: (r, { prompt }) => setAnswer({ asked: `Rendered ${prompt}`, parts: promptParts(r) }),
  });
  const why = canCall ? undefined : 'Your role cannot read resources or render prompts';
  const listed = resources.data?.resources ?? [];
  const templates = resources.data?.resource_templates ?? [];
  const failed = read.error ?? render.error;
  return (
    <section aria-label="Resources and prompts" style={{ marginBottom: 16 }}>
      <Typography.Title level={4}>Its resources</Typography.Title>
      {resources.error && <Alert type="error" showIcon title="The resources could not be read" description={resources.error.message} style={{ marginBottom: 8 }} />}
      {listed.length === 0 && !resources.isPending && <Typography.Paragraph type="secondary">It lists no resources (or none you may see).</Typography.Paragraph>}
      {listed.length > 0 && (
      <Table
        rowKey="uri"
        size="small"
        aria-label="Its resources"
        dataSource={listed}
        pagination={listed.length > 10 ? { pageSize: 10, size: 'small' } : false}
        scroll={{ x: true }}
        columns={[
          { title: 'URI', dataIndex: 'uri', render: (u: string) => <Typography.Text code>{u}</Typography.Text> },
          { title: 'Name', key: 'name', render: (_: unknown, r) => r.title ?? r.name ?? '' },
          { title: 'Type', dataIndex: 'mimeType', render: (m?: string) => m ?? '—' },
          { title: 'Description', dataIndex: 'description', render: (d?: string) => <Typography.Text type="secondary">{d ?? ''}</Typography.Text> },
          {
            title: '',
            key: 'read',
            render: (_: unknown, r) => (
              <Button size="small" aria-label={`Read ${r.uri}`} disabled={!canCall} title={why} loading={read.isPending && read.variables === r.uri} onClick={() => read.mutate(r.uri)}>
                Read
              </Button>
            ),
          },
        ]}
        style={{ marginBottom: 12 }}
      />
      )}
      {templates.length > 0 && (
        <>
          <Typography.Title level={5}>Resource templates</Typography.Title>
          {templates.map((t) => (
            <TemplateRow key={t.uriTemplate} template={t} disabled={!canCall} why={why} onRead={(uri) => read.mutate(uri)} />
          ))}
        </>
      )}
      <Typography.Title level={4}>Its prompts</Typography.Title>
      {prompts.error && <Alert type="error" showIcon title="The prompts could not be read" description={prompts.error.message} style={{ marginBottom: 8 }} />}
      {(prompts.data?.prompts ?? []).length === 0 && !prompts.isPending && (
        <Typography.Paragraph type="secondary">It lists no prompts (or none you may see).</Typography.Paragraph>
      )}
      {(prompts.data?.prompts ?? []).map((p) => (
        <PromptForm key={p.name} prompt={p} disabled={!canCall} why={why} busy={render.isPending && render.variables?.prompt === p.name} onRender={(args) => render.mutate({ prompt: p.name, args })} />
      ))}
      {failed && <Alert type="error" showIcon title="The server did not answer that" description={failed.message} style={{ marginTop: 8 }} />}
      {answer && <AnswerView answer={answer} />}
    </section>
  );
}

/** A template with the URI to read, begun as the template itself. */
function TemplateRow({ template, disabled, why, onRead }: { template: ResourceTemplate; disabled: boolean; why?: string; onRead: (uri: string) => void }) {
  const [uri, setUri] = useState(template.uriTemplate);
  const filled = !/[{}]/.test(uri);
  return (
    <Space wrap style={{ marginBottom: 8 }}>
      <Typography.Text type="secondary">{template.title ?? template.name ?? ''}</Typography.Text>
      <Input aria-label={`URI of ${template.uriTemplate}`} value={uri} onChange={(e) => setUri(e.target.value)} style={{ width: 360, fontFamily: 'monospace' }} />
      <Button size="small" disabled={disabled || !filled} title={why ?? (filled ? undefined : 'Fill in the {…} parts first')} onClick={() => onRead(uri)}>
        Read
      </Button>
    </Space>
  );
}

/** A prompt with a field per argument and Render. */
function PromptForm({ prompt, disabled, why, busy, onRender }: { prompt: Prompt; disabled: boolean; why?: string; busy: boolean; onRender: (args: Record<string, string>) => void }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const missing = missingArguments(prompt, values);
  return (
    <article aria-label={`Prompt ${prompt.name}`} style={{ border: '1px solid rgba(128,128,128,.3)', borderRadius: 6, padding: 12, marginBottom: 8 }}>
      <div style={{ marginBottom: 8 }}>
        <Typography.Text strong>{prompt.name}</Typography.Text>
        {prompt.title && <Typography.Text> · {prompt.title}</Typography.Text>}
        {prompt.description && <Typography.Text type="secondary"> — {prompt.description}</Typography.Text>}
      </div>
      <div style={{ display: 'flex', flexWrap: 'wrap', alignItems: 'flex-end', gap: 12 }}>
        {(prompt.arguments ?? []).map((a) => (
          <label key={a.name} title={a.description} style={{ display: 'flex', flexDirection: 'column', gap: 2 }}>
            <Typography.Text type="secondary">
              {a.name}
              {a.required ? ' *' : ''}
            </Typography.Text>
            <Input aria-label={a.name} value={values[a.name] ?? ''} placeholder={a.description} onChange={(e) => setValues({ ...values, [a.name]: e.target.value })} />
          </label>
        ))}
        <Button
          type="primary"
          disabled={disabled || missing.length > 0}
          title={why ?? (missing.length > 0 ? `Fill in ${missing.join(', ')}` : undefined)}
          loading={busy}
          onClick={() => onRender(promptArguments(prompt, values))}
        >
          Render
        </Button>
      </div>
    </article>
  );
}

/** The test panel's answer: each part with its label, text as it is. */
function AnswerView({ answer }: { answer: Answer }) {
  return (
    <section aria-label="Answer" style={{ border: '1px solid rgba(128,128,128,.3)', borderRadius: 6, padding: 12, marginTop: 8 }}>
      <Typography.Text strong>{answer.asked}</Typography.Text>
      {answer.parts.length === 0 && <Typography.Paragraph type="secondary">The answer has nothing in it.</Typography.Paragraph>}
      {answer.parts.map((p, i) => (
        <div key={i} style={{ marginTop: 8 }}>
          <Typography.Text type="secondary">{p.label}</Typography.Text>
          {p.kind === 'text' ? (
            <pre tabIndex={0} style={{ fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-all', margin: '4px 0 0', maxHeight: 320, overflow: 'auto' }}>
              {p.text}
            </pre>
          ) : (
            <div>
              <Pill tone="info">{p.text}</Pill>
            </div>
          )}
        </div>
      ))}
    </section>
  );
}
