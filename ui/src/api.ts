// The REST client: every request goes to the server that served the page (/v1), with the
// token from sessionStorage as a bearer header. Failures become ApiError, carrying the
// server's code, message and details, so every page can show them plainly.

import type { Prompt, Resource, ResourceTemplate } from './offers';

export type Role = 'read' | 'call' | 'admin';

export interface WhoAmI {
  name: string;
  role: Role;
  auth_required: boolean;
  /** `token`, `jwt` or `none`. */
  kind?: string;
  /** The toolsets the caller is limited to (empty: every tool). */
  toolsets?: string[];
}

/** One selector of a toolset: every key given must match. */
export interface Selector {
  names?: string[];
  tags?: string[];
  kinds?: string[];
  servers?: string[];
  danger?: 'safe' | 'dangerous';
  /** Served prompt names (globs) of upstream servers. */
  prompts?: string[];
  /** Resource URIs and URI templates (globs) of upstream servers. */
  resources?: string[];
}

/** A toolset in catalog form. */
export interface ToolsetDef {
  name: string;
  description?: string;
  include: Selector | Selector[];
  exclude?: Selector | Selector[];
  discovery?: 'all' | 'search' | 'code';
}

export interface ToolsetSummary {
  name: string;
  description: string;
  version: number;
  discovery: 'all' | 'search' | 'code';
  members: number;
}

export interface ToolsetView {
  name: string;
  version: number;
  updated_at_ms: number;
  updated_by: string;
  definition: ToolsetDef;
  members: { name: string; why: string }[];
}

/** How an upstream MCP server is doing on this server. */
export interface ServerStatus {
  name: string;
  kind: 'stdio' | 'http';
  status: 'starting' | 'ready' | 'failed' | 'stopped';
  pid?: number;
  restarts: number;
  last_error?: string;
  tools: number;
  listed_at_ms?: number;
  up_ms?: number;
}

/** An upstream MCP server: its definition (secrets as ***), version and status. */
export interface ServerView {
  name: string;
  kind: 'stdio' | 'http';
  version: number;
  updated_at_ms: number;
  updated_by: string;
  definition: Record<string, unknown>;
  status?: ServerStatus;
  pending: number;
  problems: string[];
  tools?: string[];
  /** A server with `auth: oauth`: whether its shared connection has tokens; `per_user`:
   * each user connects their own account (`users` of them have). */
  oauth?: { connected: boolean; at_ms?: number; per_user?: boolean; users?: number };
}

/** The caller's own OAuth connections to per-user servers; with `all` (admin) every one made. */
export interface Connections {
  /** The name the caller's connections are kept under. */
  subject: string;
  servers: { server: string; connected: boolean; at_ms?: number }[];
  all?: { server: string; subject: string; at_ms: number }[];
}

/** An OAuth authorization begun: where the person consents. */
export interface ConnectStarted {
  server: string;
  authorization_url: string;
  redirect_uri: string;
  expires_in: number;
}

/** What starting a server definition apart showed (Test connection). */
export interface Probe {
  ok: boolean;
  error?: string;
  tools: { name: string; upstream: string; description: string; danger: string; excluded: boolean; problem?: string }[];
  log: string;
}

/** An entry of a client configuration file and the server it becomes. */
export interface ConfigEntry {
  entry: string;
  server?: Record<string, unknown>;
  skipped?: string;
}

/** A tool's calls and latency in the Overview's window. */
export interface ToolStats {
  tool: string;
  calls: number;
  errors: number;
  p50_ms: number;
  p95_ms: number;
}

/** The run log of the last hour or day, aggregated (`GET /v1/overview`). */
export interface Overview {
  window_ms: number;
  bucket_ms: number;
  buckets: number[];
  series: { outcome: string; counts: number[] }[];
  total: number;
  errors: number;
  busiest: ToolStats[];
  failing: ToolStats[];
  warm_cold: { warm: number; cold: number };
  upstreams: { name: string; status: string; tools: number }[];
  truncated: boolean;
}

/** What an OpenAPI import made (or, as a dry run, would make). */
export interface ImportAnswer {
  title: string;
  version: string;
  dry_run: boolean;
  tools: Record<string, unknown>[];
  created: string[];
  updated: string[];
  unchanged: string[];
  skipped: { operation: string; method: string; path: string; reason: string }[];
  notes: { tool: string; message: string }[];
  filtered: number;
}

/** A change an upstream made to one of its tools, held for a decision. */
export interface ChangeView {
  tool: string;
  kind: 'added' | 'changed' | 'removed';
  status: 'pending' | 'rejected';
  detected_at_ms: number;
  diff: Difference[];
  /** The approved definition, served now (absent for an added tool). */
  before?: Record<string, unknown>;
  now?: Record<string, unknown>;
  /** What the guardrail scanner finds in `now`, most severe first. */
  findings: Finding[];
}

/** One guardrail finding: the rule, where, and the span with its context (hidden characters spelled out). */
export interface Finding {
  rule: string;
  severity: 'warn' | 'hold';
  path: string;
  part: 'key' | 'value';
  start: number;
  end: number;
  matched: string;
  before: string;
  after: string;
  why: string;
}

export interface ToolSummary {
  name: string;
  title: string | null;
  description: string;
  version: number;
  enabled: boolean;
  danger: 'safe' | 'dangerous';
  executor: 'command' | 'script' | 'builtin';
  tags: string[];
}

export interface ToolList {
  tools: ToolSummary[];
  next_cursor: string | null;
}

/** A parameter as the catalog form writes it (SPEC §3). */
export interface ParameterDef {
  name?: string;
  type?: string;
  description?: string;
  required?: boolean;
  default?: unknown;
  nullable?: boolean;
  values?: unknown[];
  items?: ParameterDef | string;
  properties?: ParameterDef[];
  additional_properties?: boolean;
  inject_as?: string;
  /** http tools: the name in the request, when not the parameter's. */
  http_name?: string;
  option_name?: string;
  option_style?: string;
  boolean_style?: string;
  array_style?: string;
  separator?: string;
  env_name?: string;
  secret?: boolean;
  workspace_path?: boolean;
  [constraint: string]: unknown;
}

/** A tool definition in catalog form (secrets as "***"). */
export interface Definition {
  name: string;
  title?: string;
  description: string;
  danger?: 'safe' | 'dangerous';
  annotations?: Record<string, boolean>;
  tags?: string[];
  enabled?: boolean;
  timeout_ms?: number;
  command?: string[];
  script?: { interpreter?: string; source?: string; warm?: boolean };
  builtin?: string;
  /** An upstream MCP server's tool: the server and the tool's name there. */
  mcp?: { server: string; tool: string };
  /** An HTTP API's operation: the request, built from the parameters. */
  http?: { method?: string; url: string; headers?: Record<string, string>; auth?: Record<string, unknown>; body?: 'whole'; max_response_bytes?: number; allow_hosts?: string[] };
  /** An upstream tool's JSON Schema, as the upstream gave it. */
  input_schema?: JsonSchema;
  parameters?: ParameterDef[];
  config_schema?: ParameterDef[];
  config?: Record<string, unknown>;
  limits?: Record<string, number>;
  env_allowlist?: string[];
  env?: Record<string, string>;
  working_dir?: string;
  output?: string;
  output_schema?: unknown;
  end_of_options?: string;
  max_concurrency?: number;
  strict_arguments?: boolean;
  [key: string]: unknown;
}

export interface ToolView {
  name: string;
  version: number;
  updated_at_ms: number;
  updated_by: string;
  definition: Definition;
  input_schema: JsonSchema;
  /** For tools that start processes: the policy and what this server's kernel enforces. */
  sandbox?: SandboxReport;
  /** What the guardrail scanner finds in the definition as a model sees it (absent: nothing). */
  findings?: Finding[];
}

/** `meta.sandbox`: a policy and what the kernel enforced of it. */
export interface SandboxReport {
  policy: string | Record<string, unknown>;
  enforced: boolean;
  filesystem?: string;
  network?: string;
  signals?: string;
  landlock_abi?: number;
  seccomp?: boolean;
  capabilities?: string;
  missing?: string[];
}

export interface JsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  default?: unknown;
  additionalProperties?: boolean | JsonSchema;
  [keyword: string]: unknown;
}

export interface VersionView {
  version: number;
  created_at_ms: number;
  author: string;
  summary: string;
  definition?: Definition;
}

export interface Difference {
  path: string;
  from: unknown;
  to: unknown;
}

export interface Problem {
  pointer: string;
  message: string;
}

/** One generated stub module (`GET /v1/code/stubs`). */
export interface StubModule {
  module: string;
  path: string;
  source: string;
}

/** One tool call a program made (`POST /v1/code/run`'s `calls`). */
export interface InnerCall {
  tool: string;
  /** `ok`, or the error's kind. */
  outcome: string;
  duration_ms: number;
  /** The call's id in the run log, when it ran. */
  call_id?: string;
}

/** A program's run (`POST /v1/code/run`). */
export interface CodeRun {
  result: ToolResult;
  calls: InnerCall[];
}

export interface ToolResult {
  success: boolean;
  data?: unknown;
  error?: { kind: string; message: string; details?: Problem[] };
  meta: {
    tool: string;
    version: number;
    coerced?: string[];
    duration_ms?: number;
    exit_code?: number | null;
    truncated?: boolean;
    stdout_bytes?: number;
    stderr_bytes?: number;
    lossy?: boolean;
    /** The call's id in the execution log. */
    call_id?: string;
    guardrails?: Guardrails;
  };
}

/** What the result guardrails did: credentials scrubbed by rule (how many), the result cut. */
export interface Guardrails {
  scrubbed?: Record<string, number>;
  cut?: { from_bytes: number; to_bytes: number; max_result_bytes: number };
}

export interface CheckResult {
  valid: boolean;
  problems: { path: string; message: string }[];
  input_schema?: JsonSchema;
  rendered?: unknown;
  plan?: ToolResult;
}

export interface RunRecord {
  id: number;
  tool: string;
  version: number;
  caller: string;
  arguments: unknown;
  kind: string;
  duration_ms: number;
  exit_code: number | null;
  truncated: boolean;
  started_at_ms: number;
  /** The upstream MCP server the call went to (absent for toolsmith's own tools). */
  upstream?: string;
  /** What the kernel enforced of the call's sandbox (calls that started a process). */
  sandbox?: SandboxReport;
  /** The call's id (a result's `meta.call_id`). */
  call_id?: string;
  /** The code-mode program that made this call: its run's `call_id`. */
  parent_call_id?: string;
  guardrails?: Guardrails;
}

export interface RunList {
  runs: RunRecord[];
  next_cursor: string | null;
}

/** A request the server refused: its status and the error body's code, message and details. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: unknown[];
  readonly currentVersion: number | undefined;

  constructor(status: number, code: string, message: string, details: unknown[] = [], currentVersion?: number) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.currentVersion = currentVersion;
  }

  /** The server wants a token, or a better one. */
  get needsToken(): boolean {
    return this.status === 401;
  }
}

const TOKEN_KEY = 'toolsmith.token';

export const token = {
  get(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  set(value: string | null): void {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
};

export function authHeaders(): Record<string, string> {
  const t = token.get();
  return t ? { authorization: `Bearer ${t}` } : {};
}

/** Reads a failed response into an ApiError. */
export async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '');
  try {
    const body = JSON.parse(text) as {
      error?: { code?: string; message?: string; details?: unknown[]; current_version?: number };
    };
    if (body.error) {
      return new ApiError(
        response.status,
        body.error.code ?? 'error',
        body.error.message ?? response.statusText,
        body.error.details ?? [],
        body.error.current_version,
      );
    }
  } catch {
    // not JSON: fall through
  }
  return new ApiError(response.status, 'error', text.trim() || `${response.status} ${response.statusText}`);
}

/** One request to the API; resolves with the parsed JSON body (or text for non-JSON). */
export async function request<T>(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`/v1${path}`, {
      method,
      headers: {
        ...authHeaders(),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, 'unreachable', `the server cannot be reached (${String(e)})`);
  }
  if (!response.ok) throw await errorOf(response);
  const type = response.headers.get('content-type') ?? '';
  if (response.status === 204) return undefined as T;
  return (type.includes('json') ? response.json() : response.text()) as Promise<T>;
}

function query(params: Record<string, string | number | boolean | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '' && v !== false) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const api = {
  whoami: () => request<WhoAmI>('GET', '/whoami'),
  tools: (p: { q?: string; tag?: string; limit?: number; cursor?: string | null; include_disabled?: boolean }) =>
    request<ToolList>('GET', `/tools${query(p)}`),
  tool: (name: string) => request<ToolView>('GET', `/tools/${encodeURIComponent(name)}`),
  setEnabled: (name: string, enabled: boolean) =>
    request<ToolView>('POST', `/tools/${encodeURIComponent(name)}/${enabled ? 'enable' : 'disable'}`),
  versions: (name: string) =>
    request<{ versions: VersionView[] }>('GET', `/tools/${encodeURIComponent(name)}/versions`),
  version: (name: string, v: number) =>
    request<VersionView>('GET', `/tools/${encodeURIComponent(name)}/versions/${v}`),
  diff: (name: string, from: number, to: number) =>
    request<{ from: number; to: number; changes: Difference[] }>(
      'GET',
      `/tools/${encodeURIComponent(name)}/diff${query({ from, to })}`,
    ),
  plan: (name: string, args: unknown) =>
    request<ToolResult>('POST', `/tools/${encodeURIComponent(name)}/plan`, { arguments: args }),
  call: (name: string, args: unknown, confirm: boolean, version?: number) =>
    request<ToolResult>('POST', `/tools/${encodeURIComponent(name)}/call`, {
      arguments: args,
      confirm,
      ...(version ? { version } : {}),
    }),
  create: (definition: Definition, summary?: string) =>
    request<ToolView>('POST', `/tools${query({ summary })}`, definition),
  update: (name: string, definition: Definition, base: number, summary?: string) =>
    request<ToolView>('PUT', `/tools/${encodeURIComponent(name)}${query({ summary })}`, definition, { 'if-match': String(base) }),
  remove: (name: string) => request<void>('DELETE', `/tools/${encodeURIComponent(name)}`),
  restore: (name: string, v: number) => request<ToolView>('POST', `/tools/${encodeURIComponent(name)}/restore/${v}`),
  check: (body: { definition: Definition; format?: string; strict?: boolean; arguments?: unknown }) =>
    request<CheckResult>('POST', '/check', body),
  toolsets: () => request<{ toolsets: ToolsetSummary[] }>('GET', '/toolsets'),
  toolset: (name: string) => request<ToolsetView>('GET', `/toolsets/${encodeURIComponent(name)}`),
  createToolset: (def: ToolsetDef) => request<ToolsetView>('POST', '/toolsets', def),
  updateToolset: (name: string, def: ToolsetDef, base: number) =>
    request<ToolsetView>('PUT', `/toolsets/${encodeURIComponent(name)}`, def, { 'if-match': String(base) }),
  removeToolset: (name: string) => request<void>('DELETE', `/toolsets/${encodeURIComponent(name)}`),
  servers: () => request<{ servers: ServerView[] }>('GET', '/servers'),
  overview: (window: '1h' | '24h') => request<Overview>('GET', `/overview?window=${window}`),
  importOpenApi: (body: Record<string, unknown>) => request<ImportAnswer>('POST', '/openapi/import', body),
  createServer: (definition: Record<string, unknown>) => request<ServerView>('POST', '/servers', definition),
  checkServer: (definition: Record<string, unknown>) => request<Probe>('POST', '/check/server', definition),
  readMcpConfig: (doc: unknown) => request<{ entries: ConfigEntry[] }>('POST', '/check/mcp-config', doc),
  server: (name: string) => request<ServerView>('GET', `/servers/${encodeURIComponent(name)}`),
  updateServer: (name: string, baseVersion: number, definition: Record<string, unknown>) =>
    request<ServerView>('PUT', `/servers/${encodeURIComponent(name)}?base_version=${baseVersion}`, definition),
  serverLog: (name: string) => request<{ log: string }>('GET', `/servers/${encodeURIComponent(name)}/log`),
  serverChanges: (name: string) => request<{ changes: ChangeView[] }>('GET', `/servers/${encodeURIComponent(name)}/changes`),
  resources: (server?: string) =>
    request<{ resources: Resource[]; resource_templates: ResourceTemplate[] }>('GET', `/resources${query({ server })}`),
  readResource: (uri: string) => request<unknown>('GET', `/resources/read${query({ uri })}`),
  prompts: (server?: string) => request<{ prompts: Prompt[] }>('GET', `/prompts${query({ server })}`),
  getPrompt: (name: string, args: Record<string, string>) =>
    request<unknown>('POST', `/prompts/${encodeURIComponent(name)}/get`, { arguments: args }),
  refreshServer: (name: string) => request<{ asked: boolean }>('POST', `/servers/${encodeURIComponent(name)}/refresh`),
  restartServer: (name: string) => request<{ restarted: boolean }>('POST', `/servers/${encodeURIComponent(name)}/restart`),
  connectServer: (name: string) => request<ConnectStarted>('POST', `/servers/${encodeURIComponent(name)}/connect`),
  disconnectServer: (name: string) => request<{ disconnected: boolean }>('DELETE', `/servers/${encodeURIComponent(name)}/connect`),
  connections: (all = false) => request<Connections>('GET', `/connections${all ? '?all=true' : ''}`),
  connectMine: (server: string) => request<ConnectStarted>('POST', `/connections/${encodeURIComponent(server)}`),
  disconnectMine: (server: string) => request<{ disconnected: boolean }>('DELETE', `/connections/${encodeURIComponent(server)}`),
  decide: (name: string, decision: 'approve' | 'reject', tools: string[], allow = false) =>
    request<{ tools: string[] }>('POST', `/servers/${encodeURIComponent(name)}/${decision}`, allow ? { tools, allow } : { tools }),
  runs: (p: { tool?: string; kind?: string; caller?: string; call_id?: string; parent?: string; limit?: number; cursor?: string | null }) =>
    request<RunList>('GET', `/runs${query(p)}`),
  codeStubs: (toolset: string) => request<{ modules: StubModule[] }>('GET', `/code/stubs${query({ toolset })}`),
  runCode: (toolset: string, body: { code: string; confirm: string[] }) => request<CodeRun>('POST', `/code/run${query({ toolset })}`, body),
  export: (p: { format: string; strict?: boolean; tag?: string; name?: string }) =>
    request<unknown>('GET', `/export${query(p)}`),
};

/** Whether `role` may do what needs `needed`. */
export function allows(role: Role | undefined, needed: Role): boolean {
  const rank: Record<Role, number> = { read: 0, call: 1, admin: 2 };
  return role !== undefined && rank[role] >= rank[needed];
}
