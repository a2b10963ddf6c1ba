// Writes a .br and a .gz beside every text file of the build, so the server sends them
// precompressed. zlib's output depends only on its input and options, so the build stays
// reproducible (gzip's header carries no time or name here).
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = new URL('../../crates/toolsmith-server/ui-dist/', import.meta.url).pathname;
const text = /\.(html|js|mjs|css|svg|json|txt|ttf)$/;

function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      walk(path);
    } else if (text.test(name)) {
      const data = readFileSync(path);
      if (data.length < 1024) continue;
      writeFileSync(`${path}.gz`, gzipSync(data, { level: 9 }));
      writeFileSync(
        `${path}.br`,
        brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
      );
    }
  }
}
walk(root);
