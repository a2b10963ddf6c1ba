// What a server page shows of an upstream's resources and prompts, as pure functions (tested
// in offers.test.ts): a read resource's contents and a rendered prompt's messages as parts a
// person can read — text as it is, binary data as its type and size, never the base64.

/** An MCP `Resource`, as the upstream listed it. */
export interface Resource {
  uri: string;
  name?: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
}

/** An MCP `ResourceTemplate`. */
export interface ResourceTemplate {
  uriTemplate: string;
  name?: string;
  title?: string;
  description?: string;
  mimeType?: string;
}

/** An MCP `Prompt`, under its served name. */
export interface Prompt {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; title?: string; description?: string; required?: boolean }[];
}

/** One readable part of an answer: text, or binary data described. */
export type Part =
  | { kind: 'text'; label: string; text: string }
  | { kind: 'binary'; label: string; text: string };

type Json = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** How many bytes a base64 text stands for. */
export function base64Bytes(data: string): number {
  const clean = data.replace(/\s/g, '');
  const padding = clean.endsWith('==') ? 2 : clean.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((clean.length * 3) / 4) - padding);
}

/** "1.5 KiB" and the like. */
export function byteSize(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Binary data described: its type and size. */
function binary(label: string, mime: string | undefined, data: string): Part {
  return { kind: 'binary', label, text: `${mime ?? 'binary data'}, ${byteSize(base64Bytes(data))}` };
}

/** One `ResourceContents` (of a read, or embedded in a prompt) as a part. */
function contentsPart(c: Json, label: string): Part {
  const text = str(c.text);
  if (text !== undefined) return { kind: 'text', label, text };
  return binary(label, str(c.mimeType), str(c.blob) ?? '');
}

/** A `ReadResourceResult`'s contents as parts, each labelled with its URI and type. */
export function readParts(result: unknown): Part[] {
  const contents = (result as Json | undefined)?.contents;
  if (!Array.isArray(contents)) return [];
  return (contents as Json[]).map((c) => contentsPart(c, [str(c.uri), str(c.mimeType)].filter(Boolean).join(' · ')));
}

/** A `GetPromptResult`'s messages as parts, each labelled with its role (and what it is). */
export function promptParts(result: unknown): Part[] {
  const messages = (result as Json | undefined)?.messages;
  if (!Array.isArray(messages)) return [];
  return (messages as Json[]).flatMap((m) => {
    const role = str(m.role) ?? 'message';
    const contents = Array.isArray(m.content) ? (m.content as Json[]) : [m.content as Json];
    return contents.filter(Boolean).map((c): Part => {
      switch (c.type) {
        case 'text':
          return { kind: 'text', label: role, text: str(c.text) ?? '' };
        case 'image':
        case 'audio':
          return binary(`${role} · ${String(c.type)}`, str(c.mimeType), str(c.data) ?? '');
        case 'resource':
          return contentsPart((c.resource as Json | undefined) ?? {}, `${role} · resource ${str((c.resource as Json | undefined)?.uri) ?? ''}`.trim());
        case 'resource_link':
          return { kind: 'text', label: `${role} · link`, text: [str(c.name), str(c.uri)].filter(Boolean).join(' → ') };
        default:
          return { kind: 'text', label: `${role} · ${String(c.type)}`, text: JSON.stringify(c, null, 2) };
      }
    });
  });
}

/** The arguments a prompt's form sends: those filled in, and every required one (even empty). */
export function promptArguments(prompt: Prompt, values: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of prompt.arguments ?? []) {
    const v = values[a.name] ?? '';
    if (v !== '' || a.required) out[a.name] = v;
  }
  return out;
}

/** The required arguments of `prompt` left empty in `values`. */
export function missingArguments(prompt: Prompt, values: Record<string, string>): string[] {
  return (prompt.arguments ?? []).filter((a) => a.required && !(values[a.name] ?? '').trim()).map((a) => a.name);
}
