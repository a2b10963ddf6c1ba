import { describe, expect, it } from 'vitest';
import type { ToolResult } from './api';
import { bytes, duration, guardrailsText, omittedBytes, streamsOf, structuredData, summary } from './result';

const meta = { tool: 't', version: 1, duration_ms: 12.34 };

describe('results', () => {
  it('says what the result guardrails did, never a value', () => {
    expect(guardrailsText(undefined)).toBe('—');
    expect(guardrailsText({ scrubbed: { aws_access_key: 2, tool_secret: 1 } })).toBe('scrubbed aws_access_key ×2, tool_secret ×1');
    expect(guardrailsText({ cut: { from_bytes: 52428800, to_bytes: 1048000, max_result_bytes: 1048576 } })).toBe(
      'cut 50.0 MiB → 1023.4 KiB (max_result_bytes 1048576)',
    );
  });

  it('finds the output streams of a command, and of a failed process', () => {
    const ok: ToolResult = { success: true, data: { stdout: 'hi\n', stderr: '', exit_code: 0 }, meta };
    expect(streamsOf(ok)).toEqual({ stdout: 'hi\n', stderr: '' });
    expect(structuredData(ok)).toBeUndefined();
    const failed = {
      success: false,
      error: { kind: 'exit_status', message: 'exited with status 3', output: { stdout: 'x', stderr: 'oops' } },
      meta,
    } as ToolResult;
    expect(streamsOf(failed)).toEqual({ stdout: 'x', stderr: 'oops' });
    expect(summary(failed)).toBe('exit_status after 12.3 ms');
  });

  it('shows structured data of scripts as data', () => {
    const r: ToolResult = { success: true, data: { words: 3, top: [{ w: 'a' }] }, meta };
    expect(streamsOf(r)).toBeUndefined();
    expect(structuredData(r)).toEqual({ words: 3, top: [{ w: 'a' }] });
    expect(summary(r)).toBe('ok in 12.3 ms');
  });

  it('reads the truncation marker', () => {
    expect(omittedBytes('abc\n…[1048576 bytes omitted]…\nxyz')).toBe(1048576);
    expect(omittedBytes('nothing cut')).toBeUndefined();
  });

  it('formats sizes and durations', () => {
    expect(bytes(512)).toBe('512 B');
    expect(bytes(2048)).toBe('2.0 KiB');
    expect(bytes(3 * 1024 * 1024)).toBe('3.0 MiB');
    expect(duration(1500)).toBe('1.50 s');
    expect(duration(undefined)).toBe('—');
  });
});
