// Monaco, from the server's own bundle: the editor core, Python/YAML/JSON, and its workers
// built by Vite. Without `loader.config({ monaco })`, @monaco-editor/react would fetch Monaco
// from a CDN — which this UI never does. Imported only by the editor's lazy chunk.

import * as monaco from 'monaco-editor/editor';
import 'monaco-editor/features/register.all';
import 'monaco-editor/languages/definitions/python/register';
import 'monaco-editor/languages/definitions/yaml/register';
import 'monaco-editor/languages/features/json/register';
import EditorWorker from 'monaco-editor/editor/editor.worker?worker';
import JsonWorker from 'monaco-editor/languages/features/json/json.worker?worker';
import { loader } from '@monaco-editor/react';

self.MonacoEnvironment = {
  getWorker: (_id: string, label: string) => (label === 'json' ? new JsonWorker() : new EditorWorker()),
};
loader.config({ monaco });

export { monaco };
