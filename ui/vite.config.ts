/// <reference types="vitest/config" />
// The UI's build: written into the server crate (committed there and embedded with
// rust-embed), vendor code in named chunks so that a change to the app rewrites only the
// app's own small chunks, no sourcemaps, no inline scripts (the server's CSP forbids them).
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

export default defineConfig({
  base: '/ui/',
  plugins: [react()],
  build: {
    outDir: '../crates/toolsmith-server/ui-dist',
    emptyOutDir: true,
    sourcemap: false,
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1500,
    rolldownOptions: {
      output: {
        codeSplitting: {
          groups: [
            // Vite's helper for lazy imports, kept out of the vendor chunks (it would otherwise
            // pull the chunk it lands in into the first load).
            { name: 'preload', test: /preload-helper/ },
            { name: 'react', test: /node_modules[\\/](react|react-dom|scheduler|react-router|@tanstack)[\\/]/ },
            { name: 'antd', test: /node_modules[\\/](antd|@ant-design|@rc-component|rc-[a-z-]+|@babel|dayjs|@emotion|stylis|classnames|throttle-debounce|compute-scroll-into-view|scroll-into-view-if-needed|json2mq|string-convert|resize-observer-polyfill)[\\/]/ },
            // Monaco (4 MB) loads only on pages that edit code.
            { name: 'monaco', test: /node_modules[\\/](monaco-editor|@monaco-editor|dompurify|marked)[\\/]/ },
            { name: 'yaml', test: /node_modules[\\/]yaml[\\/]/ },
            // The Overview's charts (uPlot, 22 KiB gzip) load only with that page.
            { name: 'uplot', test: /node_modules[\\/]uplot[\\/]/ },
            { name: 'vendor', test: /node_modules[\\/]/ },
          ],
        },
      },
    },
  },
  server: {
    // `npm run dev` talks to a `toolsmith serve` on the default port; start it with
    // --allow-origin http://localhost:5173 if the browser goes to Vite directly.
    proxy: { '/v1': { target: 'http://127.0.0.1:7700', changeOrigin: true } },
  },
  test: {
    environment: 'happy-dom',
    include: ['src/**/*.test.ts', 'src/**/*.test.tsx'],
  },
});
