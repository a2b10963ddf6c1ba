// Live updates: the server's `GET /v1/events` stream says when the registry changed (here,
// in another process, on another replica); every query of registry data is then refetched.
// Read with fetch, not EventSource, so the bearer token can be sent.

import { useEffect } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { authHeaders } from './api';

/** Calls `onEvent` with the name of each server-sent event found in `chunk`; returns the rest. */
export function splitEvents(buffer: string, onEvent: (name: string, data: string) => void): string {
  const blocks = buffer.replace(/\r\n/g, '\n').split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    let name = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
    }
    if (data.length > 0 || name !== 'message') onEvent(name, data.join('\n'));
  }
  return rest;
}

export function useRegistryEvents(enabled: boolean): void {
  const client = useQueryClient();
  useEffect(() => {
    if (!enabled) return;
    const stop = new AbortController();
    let connections = 0;
    const refetch = () => void client.invalidateQueries({ predicate: (q) => q.queryKey[0] !== 'whoami' });
    const run = async () => {
      while (!stop.signal.aborted) {
        try {
          const response = await fetch('/v1/events', { headers: authHeaders(), signal: stop.signal });
          if (!response.ok || !response.body) throw new Error(String(response.status));
          const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = '';
          let hello = true;
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer = splitEvents(buffer + value, (name) => {
              if (name !== 'changed') return;
              // The first event of a stream says where it starts: after a reconnection
              // changes may have been missed, so everything is refetched once.
              if (hello) {
                hello = false;
                if (connections++ > 0) refetch();
                return;
              }
              refetch();
            });
          }
        } catch {
          if (stop.signal.aborted) return;
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    };
    void run();
    return () => stop.abort();
  }, [client, enabled]);
}
