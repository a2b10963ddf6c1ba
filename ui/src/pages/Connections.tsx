// My connections: the servers that connect each user's own account (`connection: per_user`)
// and whether you connected each — Connect opens the server's consent page in a tab of its
// own (it comes back to toolsmith's callback; this page follows until it is connected),
// Disconnect forgets your tokens only. An admin also sees every connection made (whose, and
// when; never a token).

import { useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Alert, Button, Space, Table, Typography, App as AntApp } from 'antd';
import { allows, api, type Connections } from '../api';

type Mine = Connections['servers'][number];
import { useMe } from '../context';
import { Pill } from '../Pill';

/** How often the list is read again while a consent is awaited. */
const WAITING_MS = 1000;

export default function ConnectionsPage() {
  const me = useMe();
  const canCall = allows(me?.role, 'call');
  const admin = allows(me?.role, 'admin') && (me?.toolsets ?? []).length === 0;
  const client = useQueryClient();
  const { message } = AntApp.useApp();
  // The server whose consent is awaited, and where it is given.
  const [waiting, setWaiting] = useState<{ server: string; url: string } | undefined>();
  const list = useQuery({
    queryKey: ['connections', admin],
    queryFn: () => api.connections(admin),
    refetchInterval: waiting ? WAITING_MS : false,
  });
  const done = waiting && list.data?.servers.some((s) => s.server === waiting.server && s.connected);
  const connect = useMutation({
    mutationFn: (server: string) => api.connectMine(server),
    onSuccess: (started) => {
      setWaiting({ server: started.server, url: started.authorization_url });
      window.open(started.authorization_url, '_blank', 'noopener');
    },
  });
  const disconnect = useMutation({
    mutationFn: (server: string) => api.disconnectMine(server),
    onSuccess: (_, server) => {
      setWaiting(undefined);
      void message.success(`${server}: your tokens are forgotten`);
      void client.invalidateQueries({ queryKey: ['connections'] });
    },
  });
  const failure = list.error ?? connect.error ?? disconnect.error;
  return (
    <main>
      <Typography.Title level={2} style={{ marginTop: 0 }}>
        My connections
      </Typography.Title>
      <Typography.Paragraph type="secondary">
        Servers that connect each user&apos;s own account: your calls of their tools reach them as you, with your own token
        {list.data ? <> (kept under the name <Typography.Text code>{list.data.subject}</Typography.Text>)</> : null}. Until you connect one, its tools answer that you need to.
      </Typography.Paragraph>
      {failure && <Alert type="error" showIcon title="The server did not take that" description={failure.message} style={{ marginBottom: 12 }} />}
      {waiting && !done && (
        <Alert
          type="info"
          showIcon
          style={{ marginBottom: 12 }}
          title={`Waiting for your consent to ${waiting.server}`}
          description={
            <>
              Consent in the tab that opened (or <Typography.Link href={waiting.url} target="_blank" rel="noopener">open the consent page</Typography.Link>); this page shows it connected once it comes back.
            </>
          }
        />
      )}
      <Table
        rowKey="server"
        size="small"
        loading={list.isPending}
        dataSource={list.data?.servers ?? []}
        pagination={false}
        scroll={{ x: true }}
        columns={[
          { title: 'Server', dataIndex: 'server', render: (n: string) => <Link to={`/servers/${encodeURIComponent(n)}`}>{n}</Link> },
          {
            title: 'Your connection',
            key: 'connected',
            render: (_: unknown, s: Mine) =>
              s.connected ? <Pill tone="ok">{`connected ${s.at_ms ? new Date(s.at_ms).toLocaleString() : ''}`}</Pill> : <Pill tone="warn">not connected</Pill>,
          },
          {
            title: 'Actions',
            key: 'actions',
            render: (_: unknown, s: Mine) => (
              <Space>
                <Button
                  size="small"
                  type={s.connected ? 'default' : 'primary'}
                  onClick={() => connect.mutate(s.server)}
                  loading={connect.isPending && connect.variables === s.server}
                  disabled={!canCall}
                  aria-label={`${s.connected ? 'Connect again' : 'Connect'} ${s.server}`}
                  title={canCall ? 'Authorize with your own account (opens its consent page)' : 'Your role cannot call tools'}
                >
                  {s.connected ? 'Connect again' : 'Connect'}
                </Button>
                {s.connected && (
                  <Button size="small" onClick={() => disconnect.mutate(s.server)} loading={disconnect.isPending && disconnect.variables === s.server} disabled={!canCall} aria-label={`Disconnect ${s.server}`}>
                    Disconnect
                  </Button>
                )}
              </Space>
            ),
          },
        ]}
        locale={{ emptyText: 'No server here connects each user’s own account (an OAuth server with connection: per_user).' }}
        style={{ marginBottom: 24 }}
      />
      {admin && list.data?.all && (
        <section aria-labelledby="all-connections">
          <Typography.Title level={4} id="all-connections">
            Every connection made
          </Typography.Title>
          <Typography.Paragraph type="secondary">Whose connections exist, and since when; their tokens are never shown.</Typography.Paragraph>
          <Table
            rowKey={(c) => `${c.server}\u0000${c.subject}`}
            size="small"
            dataSource={list.data.all}
            pagination={false}
            columns={[
              { title: 'Server', dataIndex: 'server' },
              { title: 'Whose', dataIndex: 'subject', render: (s: string) => (s === '' ? <Typography.Text type="secondary">shared (the server&apos;s own)</Typography.Text> : s) },
              { title: 'Connected or refreshed', dataIndex: 'at_ms', render: (t: number) => new Date(t).toLocaleString() },
            ]}
          />
        </section>
      )}
    </main>
  );
}
