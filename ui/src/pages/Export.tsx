// Export: every enabled tool (or those with a tag) in one provider's format, to copy or
// download.

import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Alert, Button, Checkbox, Input, Select, Space, Typography } from 'antd';
import { api } from '../api';
import { CopyButton, renderedText } from './Tool';
import { useDebounced } from './Tools';

const FORMATS = ['openai', 'openai-responses', 'anthropic', 'gemini', 'mcp', 'xml'];

export default function ExportPage() {
  const [format, setFormat] = useState('openai');
  const [strict, setStrict] = useState(false);
  const [tag, setTag] = useState('');
  const t = useDebounced(tag.trim(), 300);
  const out = useQuery({
    queryKey: ['export', format, strict, t],
    queryFn: () => api.export({ format, strict, tag: t || undefined }),
  });
  const text = out.data === undefined ? '' : renderedText(out.data);
  const download = () => {
    const xml = format === 'xml';
    const blob = new Blob([text], { type: xml ? 'application/xml' : 'application/json' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `tools.${format}${xml ? '.xml' : '.json'}`;
    a.click();
    URL.revokeObjectURL(a.href);
  };
  return (
    <main>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        Export
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        The enabled tools as a provider's <code>tools</code> field (or an XML block for prompt-based models).
      </Typography.Paragraph>
      <Space wrap style={{ marginBottom: 12 }}>
        <Select aria-label="Format" value={format} onChange={setFormat} options={FORMATS.map((f) => ({ value: f, label: f }))} style={{ width: 200 }} />
        <Checkbox checked={strict} onChange={(e) => setStrict(e.target.checked)} disabled={!format.startsWith('openai')}>
          OpenAI strict mode
        </Checkbox>
        <Input aria-label="Only tools with this tag" placeholder="Tag" allowClear value={tag} onChange={(e) => setTag(e.target.value)} style={{ width: 160 }} />
        <CopyButton text={text} />
        <Button onClick={download} disabled={!text}>
          Download
        </Button>
      </Space>
      {out.error ? (
        <Alert type="error" showIcon title="The export failed" description={out.error.message} />
      ) : (
        <pre tabIndex={0} aria-label="Exported tools" style={{ fontFamily: 'monospace', whiteSpace: 'pre-wrap', wordBreak: 'break-all', maxHeight: '70vh', overflow: 'auto', border: '1px solid rgba(128,128,128,.3)', padding: 8, borderRadius: 6 }}>
          {out.isPending ? 'rendering…' : text}
        </pre>
      )}
    </main>
  );
}
