import { describe, expect, it } from 'vitest';
import { base64Bytes, byteSize, missingArguments, promptArguments, promptParts, readParts } from './offers';

describe('offers', () => {
  it('counts the bytes of base64 data, padding included', () => {
    expect(base64Bytes('')).toBe(0);
    expect(base64Bytes('YQ==')).toBe(1);
    expect(base64Bytes('YWI=')).toBe(2);
    expect(base64Bytes('YWJj')).toBe(3);
    expect(base64Bytes('YWJj\nZGVm')).toBe(6);
    expect(byteSize(3)).toBe('3 bytes');
    expect(byteSize(1536)).toBe('1.5 KiB');
    expect(byteSize(3 * 1024 * 1024)).toBe('3.0 MiB');
  });

  it('shows a read text as it is and a blob as its type and size', () => {
    const parts = readParts({
      contents: [
        { uri: 'demo://a', mimeType: 'text/plain', text: 'hello' },
        { uri: 'demo://b', mimeType: 'image/png', blob: 'AAAA' },
      ],
    });
    expect(parts).toEqual([
      { kind: 'text', label: 'demo://a · text/plain', text: 'hello' },
      { kind: 'binary', label: 'demo://b · image/png', text: 'image/png, 3 bytes' },
    ]);
    expect(readParts({})).toEqual([]);
    expect(readParts(undefined)).toEqual([]);
  });

  it('shows each message of a prompt with its role, whatever its content', () => {
    const parts = promptParts({
      messages: [
        { role: 'user', content: { type: 'text', text: 'Say hello to Ada.' } },
        { role: 'user', content: { type: 'image', mimeType: 'image/png', data: 'YWJj' } },
        { role: 'assistant', content: { type: 'resource', resource: { uri: 'demo://r', text: 'inside' } } },
        { role: 'user', content: { type: 'resource_link', uri: 'demo://l', name: 'linked' } },
        { role: 'user', content: { type: 'video', src: 'x' } },
      ],
    });
    expect(parts.map((p) => [p.kind, p.label, p.text])).toEqual([
      ['text', 'user', 'Say hello to Ada.'],
      ['binary', 'user · image', 'image/png, 3 bytes'],
      ['text', 'assistant · resource demo://r', 'inside'],
      ['text', 'user · link', 'linked → demo://l'],
      ['text', 'user · video', '{\n  "type": "video",\n  "src": "x"\n}'],
    ]);
  });

  it('sends the filled arguments and every required one, and names the required ones left empty', () => {
    const prompt = { name: 'p', arguments: [{ name: 'who', required: true }, { name: 'tone' }, { name: 'lang' }] };
    expect(promptArguments(prompt, { tone: 'warm', lang: '' })).toEqual({ who: '', tone: 'warm' });
    expect(missingArguments(prompt, { who: '  ' })).toEqual(['who']);
    expect(missingArguments(prompt, { who: 'Ada' })).toEqual([]);
    expect(missingArguments({ name: 'q' }, {})).toEqual([]);
  });
});
