// The application shell: theme (light/dark, following the system until switched), the query
// cache, the token prompt when the server asks for one, the header with navigation and who
// you are, live updates, keyboard shortcuts, and the routes (pages load lazily).

import { lazy, Suspense, useEffect, useMemo, useState, useContext } from 'react';
import { Link, Navigate, Outlet, RouterProvider, createBrowserRouter, useLocation, useNavigate } from 'react-router';
import { QueryClient, QueryClientProvider, useQuery, useQueryClient } from '@tanstack/react-query';
import { App as AntApp, Alert, Button, ConfigProvider, Form, Input, Layout, Menu, Space, Spin, Switch, Typography, theme } from 'antd';
import { ApiError, api, token } from './api';
import { MeContext, ThemeContext } from './context';
import { useRegistryEvents } from './live';
import { ToolsPage } from './pages/Tools';
import { Pill } from './Pill';

const ToolPage = lazy(() => import('./pages/Tool'));
const EditorPage = lazy(() => import('./pages/Editor'));
const RunsPage = lazy(() => import('./pages/Runs'));
const ExportPage = lazy(() => import('./pages/Export'));
const ToolsetsPage = lazy(() => import('./pages/Toolsets'));
const ServersPage = lazy(() => import('./pages/Servers'));
const ConnectionsPage = lazy(() => import('./pages/Connections'));
const AddServerPage = lazy(() => import('./pages/AddServer'));
const ImportOpenApiPage = lazy(() => import('./pages/ImportOpenApi'));
const OverviewPage = lazy(() => import('./pages/Overview'));

const DARK_KEY = 'toolsmith.dark';

function useDarkMode(): [boolean, (dark: boolean) => void] {
  const media = typeof window !== 'undefined' ? window.matchMedia?.('(prefers-color-scheme: dark)') : undefined;
  const stored = localStorage.getItem(DARK_KEY);
  const [system, setSystem] = useState(media?.matches ?? false);
  const [chosen, setChosen] = useState<boolean | null>(stored === null ? null : stored === 'true');
  useEffect(() => {
    if (!media) return;
    const on = (e: MediaQueryListEvent) => setSystem(e.matches);
    media.addEventListener('change', on);
    return () => media.removeEventListener('change', on);
  }, [media]);
  const set = (dark: boolean) => {
    localStorage.setItem(DARK_KEY, String(dark));
    setChosen(dark);
  };
  return [chosen ?? system, set];
}

/** A `#token=...` in the address (as `serve` may print it) moves into sessionStorage. */
function takeTokenFromFragment(): void {
  const m = /[#&]token=([^&]+)/.exec(window.location.hash);
  if (m?.[1]) {
    token.set(decodeURIComponent(m[1]));
    history.replaceState(null, '', window.location.pathname + window.location.search);
  }
}

export function App() {
  takeTokenFromFragment();
  const [dark, setDark] = useDarkMode();
  const client = useMemo(
    () =>
      new QueryClient({
        defaultOptions: {
          queries: {
            retry: (n, e) => !(e instanceof ApiError && e.status >= 400 && e.status < 500) && n < 2,
            refetchOnWindowFocus: false,
          },
        },
      }),
    [],
  );
  useEffect(() => {
    document.documentElement.style.colorScheme = dark ? 'dark' : 'light';
    document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  }, [dark]);
  return (
    <ConfigProvider
      theme={{
        algorithm: dark ? theme.darkAlgorithm : theme.defaultAlgorithm,
        // Contrast of at least 4.5:1 for text (WCAG AA): Ant Design's defaults for the primary
        // colour and secondary text fall short on white.
        // Hover and pressed shades are set too: derived ones are lighter (a hovered primary
        // button 4.16:1, a hovered link 2.67:1).
        token: dark
          ? { colorPrimary: '#4096ff', colorPrimaryHover: '#69b1ff', colorPrimaryActive: '#91caff', colorLink: '#69b1ff', colorLinkHover: '#91caff', colorLinkActive: '#bae0ff', colorTextLightSolid: '#000', colorError: '#e86062', colorTextSecondary: 'rgba(255,255,255,0.72)', colorTextDescription: 'rgba(255,255,255,0.72)', colorTextTertiary: 'rgba(255,255,255,0.65)', colorTextPlaceholder: 'rgba(255,255,255,0.62)' }
          : { colorPrimary: '#0958d9', colorPrimaryHover: '#003eb3', colorPrimaryActive: '#002c8c', colorLink: '#0958d9', colorLinkHover: '#003eb3', colorLinkActive: '#002c8c', colorError: '#cf1322', colorTextSecondary: 'rgba(0,0,0,0.68)', colorTextDescription: 'rgba(0,0,0,0.68)', colorTextTertiary: 'rgba(0,0,0,0.6)', colorTextPlaceholder: 'rgba(0,0,0,0.6)' },
      }}
    >
      <AntApp>
        <QueryClientProvider client={client}>
          <ThemeContext.Provider value={{ dark, setDark }}>
            <RouterProvider router={theRouter()} />
          </ThemeContext.Provider>
        </QueryClientProvider>
      </AntApp>
    </ConfigProvider>
  );
}

function Shell({ dark, setDark }: { dark: boolean; setDark: (d: boolean) => void }) {
  const me = useQuery({ queryKey: ['whoami'], queryFn: api.whoami });
  const client = useQueryClient();
  const { token: colors } = theme.useToken();
  useRegistryEvents(me.isSuccess);
  useShortcuts();
  const location = useLocation();
  const section = location.pathname.split('/')[1] || 'tools';

  // The page renders at once, asking who you are in parallel with its own data: the
  // controls a role may not use stay disabled until the answer arrives.
  const needsToken = me.error instanceof ApiError && me.error.needsToken;
  if (needsToken) {
    return <TokenPrompt rejected={token.get() !== null} onToken={() => void client.invalidateQueries()} />;
  }
  return (
    <MeContext.Provider value={me.data}>
      <Layout style={{ minHeight: '100vh' }}>
        <Layout.Header
          style={{ display: 'flex', alignItems: 'center', gap: 16, background: colors.colorBgContainer, borderBottom: `1px solid ${colors.colorBorderSecondary}`, paddingInline: 16, flexWrap: 'wrap', height: 'auto', minHeight: 64 }}
        >
          <Link to="/tools" style={{ fontWeight: 700, fontSize: 18, color: colors.colorText }}>
            toolsmith
          </Link>
          <nav aria-label="Sections" style={{ flex: 1, minWidth: 200 }}>
            <Menu
              mode="horizontal"
              selectedKeys={[section]}
              // Every section stays reachable on a narrow window: the items wrap instead of
              // folding into a "…" submenu (whose hidden copies axe rightly refuses).
              disabledOverflow
              style={{ borderBottom: 'none', background: 'transparent', flexWrap: 'wrap' }}
              items={[
                { key: 'overview', label: <Link to="/overview">Overview</Link> },
                { key: 'tools', label: <Link to="/tools">Tools</Link> },
                { key: 'toolsets', label: <Link to="/toolsets">Toolsets</Link> },
                { key: 'servers', label: <Link to="/servers">Servers</Link> },
                { key: 'connections', label: <Link to="/connections">My connections</Link> },
                { key: 'import', label: <Link to="/import">Import OpenAPI</Link> },
                { key: 'runs', label: <Link to="/runs">Runs</Link> },
                { key: 'export', label: <Link to="/export">Export</Link> },
              ]}
            />
          </nav>
          <Space wrap>
            {me.data && (
              <span>
                <Typography.Text type="secondary">Signed in as </Typography.Text>
                <Typography.Text strong>{me.data.name}</Typography.Text> <Pill>{me.data.role}</Pill>
              </span>
            )}
            {me.data?.auth_required && (
              <Button
                size="small"
                onClick={() => {
                  token.set(null);
                  void client.invalidateQueries();
                }}
              >
                Sign out
              </Button>
            )}
            <label>
              <Space size={4}>
                <Switch size="small" checked={dark} onChange={setDark} aria-label="Dark mode" />
                Dark
              </Space>
            </label>
          </Space>
        </Layout.Header>
        <Layout.Content style={{ padding: 16, maxWidth: 1400, width: '100%', margin: '0 auto' }}>
          {me.error && !needsToken && !me.isPending && (
            <Alert type="error" showIcon title="The server could not be asked who you are" description={me.error.message} style={{ marginBottom: 16 }} />
          )}
          <Suspense fallback={<Spin />}>
            <Outlet />
          </Suspense>
        </Layout.Content>
      </Layout>
    </MeContext.Provider>
  );
}


function ShellFromContext() {
  const t = useContext(ThemeContext);
  return <Shell dark={t.dark} setDark={t.setDark} />;
}

/** The routes, made once (a data router, so the editor can ask before leaving with unsaved
 * changes). */
let router: ReturnType<typeof createBrowserRouter> | undefined;
function theRouter() {
  router ??= createBrowserRouter(
    [
      {
        path: '/',
        element: <ShellFromContext />,
        children: [
          { index: true, element: <Landing /> },
          { path: 'overview', element: <OverviewPage /> },
          { path: 'tools', element: <ToolsPage /> },
          { path: 'new', element: <EditorPage /> },
          { path: 'tools/:name', element: <ToolPage /> },
          { path: 'tools/:name/edit', element: <EditorPage /> },
          { path: 'toolsets', element: <ToolsetsPage /> },
          { path: 'toolsets/:name', element: <ToolsetsPage /> },
          { path: 'servers', element: <ServersPage /> },
          { path: 'new-server', element: <AddServerPage /> },
          { path: 'import', element: <ImportOpenApiPage /> },
          { path: 'servers/:name', element: <ServersPage /> },
          { path: 'connections', element: <ConnectionsPage /> },
          { path: 'runs', element: <RunsPage /> },
          { path: 'export', element: <ExportPage /> },
          { path: '*', element: <NotFound /> },
        ],
      },
    ],
    { basename: '/ui' },
  );
  return router;
}

/** The landing page: the Overview once there is traffic, else the tool list. */
function Landing() {
  const o = useQuery({ queryKey: ['overview', '1h'], queryFn: () => api.overview('1h') });
  if (o.isPending) return <Spin />;
  return <Navigate to={o.data && o.data.total > 0 ? '/overview' : '/tools'} replace />;
}

function NotFound() {
  return (
    <Alert
      type="warning"
      showIcon
      title="No such page"
      description={
        <span>
          Go to the <Link to="/tools">tool list</Link>.
        </span>
      }
    />
  );
}

/** `/` focuses the tool search (from any page). */
function useShortcuts() {
  const navigate = useNavigate();
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const target = e.target as HTMLElement | null;
      const typing = target && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
      if (e.key === '/' && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
        e.preventDefault();
        const search = document.getElementById('tool-search');
        if (search) search.focus();
        else navigate('/tools', { state: { focusSearch: true } });
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [navigate]);
}

function TokenPrompt({ rejected, onToken }: { rejected: boolean; onToken: () => void }) {
  const [value, setValue] = useState('');
  return (
    <Layout style={{ minHeight: '100vh', alignItems: 'center', justifyContent: 'center', padding: 16 }}>
      <main style={{ width: 'min(420px, 100%)' }}>
        <Typography.Title level={2}>toolsmith</Typography.Title>
        <Typography.Paragraph>
          This server asks for a token. Paste one its operator gave you; it is kept in this tab only.
        </Typography.Paragraph>
        <Typography.Paragraph type="secondary">
          Started it yourself without a token? Then open the address `toolsmith serve` printed
          (it carries this machine&apos;s local admin token), or paste the token from
          local-admin.token in toolsmith&apos;s data folder.
        </Typography.Paragraph>
        {rejected && (
          <Alert type="error" showIcon title="That token was not accepted" description="Check it and try again, or ask the server's operator for one." style={{ marginBottom: 16 }} />
        )}
        <Form
          layout="vertical"
          onFinish={() => {
            token.set(value.trim());
            onToken();
          }}
        >
          <Form.Item label="Token" htmlFor="token-input" required>
            <Input.Password id="token-input" value={value} onChange={(e) => setValue(e.target.value)} autoFocus autoComplete="off" />
          </Form.Item>
          <Button type="primary" htmlType="submit" disabled={value.trim() === ''}>
            Sign in
          </Button>
        </Form>
      </main>
    </Layout>
  );
}
