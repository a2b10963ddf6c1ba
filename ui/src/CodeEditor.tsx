// A code editor (Monaco) with an accessible name, the app's theme, and Ctrl/⌘+S passed to the
// page. Loaded lazily: only pages that edit code pull in Monaco's chunk.

import './monaco';
import Editor, { DiffEditor } from '@monaco-editor/react';

interface Props {
  label: string;
  language: 'python' | 'yaml' | 'json' | 'plaintext' | 'shell' | 'javascript';
  value: string;
  onChange?: (value: string) => void;
  height?: number | string;
  dark: boolean;
  readOnly?: boolean;
  onSave?: () => void;
}

export default function CodeEditor({ label, language, value, onChange, height = 320, dark, readOnly, onSave }: Props) {
  return (
    <div role="group" aria-label={label} data-testid={`code-${label}`} style={{ border: '1px solid rgba(128,128,128,.35)', borderRadius: 6, overflow: 'hidden' }}>
      <Editor
        height={height}
        language={language}
        value={value}
        theme={dark ? 'vs-dark' : 'vs'}
        onChange={(v) => onChange?.(v ?? '')}
        onMount={(editor, m) => {
          if (onSave) editor.addCommand(m.KeyMod.CtrlCmd | m.KeyCode.KeyS, onSave);
        }}
        options={{
          readOnly,
          minimap: { enabled: false },
          fontSize: 13,
          scrollBeyondLastLine: false,
          tabSize: language === 'python' ? 4 : 2,
          automaticLayout: true,
          // The last line's number at full contrast ('dimmed' falls below 4.5:1).
          renderFinalNewline: 'on',
          ariaLabel: label,
        }}
      />
    </div>
  );
}

export function TextDiff({ left, right, dark, labels, language = 'yaml' }: { left: string; right: string; dark: boolean; labels: [string, string]; language?: string }) {
  return (
    <div role="group" aria-label={`Text difference: ${labels[0]} and ${labels[1]}`} style={{ border: '1px solid rgba(128,128,128,.35)', borderRadius: 6, overflow: 'hidden' }}>
      <DiffEditor
        height={420}
        language={language}
        original={left}
        // Unmounting would otherwise dispose the models before the widget lets go of them
        // (a console error in @monaco-editor/react 4.7).
        keepCurrentOriginalModel
        keepCurrentModifiedModel
        modified={right}
        theme={dark ? 'vs-dark' : 'vs'}
        options={{ readOnly: true, renderSideBySide: true, minimap: { enabled: false }, automaticLayout: true, originalAriaLabel: labels[0], modifiedAriaLabel: labels[1] }}
      />
    </div>
  );
}
