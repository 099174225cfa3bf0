// The reference SDK's MCP client for test_mcp_sdk.py, through the proxy: argv is the proxy's
// port, the server's URL (streamable HTTP, or the older HTTP+SSE transport for a URL ending in
// /sse), then steps as JSON ({"call": name, "args": {...}} or {"list": true}).
// Node's fetch ignores HTTP_PROXY, so the transport gets a fetch whose undici Agent opens each
// connection with CONNECT through the proxy (plain HTTP inside the tunnel, as undici's own
// ProxyAgent does). Prints one JSON list: {"ok": result} or {"error": {code, message}} per step.
'use strict';
// Node 18 (Debian 12) has no global Web Crypto, which the SDK uses (crypto.randomUUID).
if (!globalThis.crypto) globalThis.crypto = require('node:crypto').webcrypto;
const net = require('node:net');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { SSEClientTransport } = require('@modelcontextprotocol/sdk/client/sse.js');

const [proxyPort, serverUrl, ...steps] = process.argv.slice(2);

function connectThroughProxy(opts, cb) {
  const port = opts.port || 80;
  const sock = net.connect(+proxyPort, '127.0.0.1');
  let head = '';
  const fail = (e) => cb(e);
  sock.once('error', fail);
  sock.on('connect', () => sock.write(
      `CONNECT ${opts.hostname}:${port} HTTP/1.1\r\nHost: ${opts.hostname}:${port}\r\n\r\n`));
  const onData = (d) => {
    head += d.toString('latin1');
    if (head.indexOf('\r\n\r\n') < 0) return;
    sock.removeListener('data', onData);
    sock.removeListener('error', fail);
    sock.pause();
    if (!/^HTTP\/1\.[01] 200/.test(head)) {
      sock.destroy();
      return cb(new Error('CONNECT answered ' + head.split('\r\n')[0]));
    }
    cb(null, sock);
  };
  sock.on('data', onData);
}

(async () => {
  // fetch's undici Agent class is reachable once fetch has made its global dispatcher.
  try { await fetch('http://127.0.0.1:1/'); } catch (e) {}
  const Agent = globalThis[Symbol.for('undici.globalDispatcher.1')].constructor;
  const dispatcher = new Agent({ connect: connectThroughProxy });
  const proxiedFetch = (url, init) => fetch(url, { ...init, dispatcher });
  // A URL ending in /sse: the older HTTP+SSE transport (answers come on the GET stream).
  const url = new URL(serverUrl);
  const transport = url.pathname.endsWith('/sse')
    ? new SSEClientTransport(url, { fetch: proxiedFetch })
    : new StreamableHTTPClientTransport(url, { fetch: proxiedFetch });
  const client = new Client({ name: 'airlock-test-client', version: '1.0.0' });
  const out = [];
  try {
    await client.connect(transport);
    for (const s of steps) {
      const step = JSON.parse(s);
      try {
        if (step.list) out.push({ ok: await client.listTools() });
        else out.push({ ok: await client.callTool({ name: step.call, arguments: step.args || {} }) });
      } catch (e) {
        out.push({ error: { code: e.code, message: String(e.message) } });
      }
    }
  } catch (e) {
    out.push({ connect_error: { code: e.code, message: String(e.message) } });
  }
  console.log(JSON.stringify(out));
  await client.close().catch(() => {});
  await dispatcher.close();
})();
