// A header-adding forwarder for the conformance suite, which cannot send a
// bearer. It listens on 127.0.0.1 (a port of its own) and passes every
// request to the host unchanged, except:
//
// - it adds `Authorization: Bearer …` (the host's own session bearer);
// - a `Host` or `Origin` that names *the forwarder itself* is rewritten to
//   name the host at the same hostname (`localhost:F` → `localhost:H`), so
//   the suite's "this server's own address" requests stay exactly that;
//   every other `Host`/`Origin` (`evil.example.com`, …) passes untouched, so
//   the host's own DNS-rebinding checks are what the suite tests.
//
// Responses, SSE included, are streamed back as they arrive.
import http from 'node:http';

/** Starts the forwarder; resolves with its port once it is listening. */
export function startForwarder({ upstream, authorization }) {
  const target = new URL(upstream);
  const upstreamPort = Number(target.port);
  let ownPort = 0;
  const rename = (authority) => {
    // `authority` is `name:port`; only the forwarder's own port is renamed.
    const match = /^(.*):(\d+)$/.exec(authority ?? '');
    if (match && Number(match[2]) === ownPort) return `${match[1]}:${upstreamPort}`;
    return authority;
  };
  const server = http.createServer((req, res) => {
    const headers = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i];
      let value = req.rawHeaders[i + 1];
      const lower = name.toLowerCase();
      if (lower === 'authorization') continue; // the suite never sends one
      if (lower === 'host') value = rename(value);
      if (lower === 'origin') {
        const m = /^(https?:\/\/)(.*)$/i.exec(value);
        if (m) value = m[1] + rename(m[2]);
      }
      headers.push(name, value);
    }
    headers.push('Authorization', authorization);
    const forwarded = http.request({
      host: target.hostname,
      port: upstreamPort,
      method: req.method,
      path: req.url,
      headers,
      setHost: false,
    });
    forwarded.on('response', (answer) => {
      res.writeHead(answer.statusCode, answer.rawHeaders);
      res.flushHeaders();
      answer.pipe(res);
    });
    forwarded.on('error', () => res.destroy());
    res.on('close', () => forwarded.destroy());
    req.pipe(forwarded);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      ownPort = server.address().port;
      resolve({ port: ownPort, close: () => server.close() });
    });
  });
}
