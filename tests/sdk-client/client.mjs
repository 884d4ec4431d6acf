// Drives a running MCP host with the official TypeScript SDK so the Rust
// integration tests can check that a real third-party client interoperates.
//
// Inputs, output and exit codes: see ../sdk-shared/steps.mjs.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { done, emit, fail, logErrors, readLine, transportOptions, url } from "../sdk-shared/steps.mjs";

const transport = new StreamableHTTPClientTransport(new URL(url), transportOptions);
const client = new Client({ name: "mcp-host-sdk-test-client", version: "0.0.0" }, { capabilities: {} });
logErrors(client);

try {
  // a. initialize -> notifications/initialized -> (fire-and-forget) GET probe.
  //    Proves the handshake works and shows what the host negotiated.
  await client.connect(transport);
  emit({
    step: "connected",
    protocolVersion: transport.protocolVersion ?? null,
    serverName: client.getServerVersion()?.name ?? null,
    capabilities: client.getServerCapabilities() ?? null,
  });

  // b. tools/list: the SDK must accept the host's tool descriptors.
  const { tools } = await client.listTools();
  emit({ step: "tools", names: tools.map((t) => t.name) });

  // c. A successful call round-trips arguments and content.
  const echo = await client.callTool({ name: "echo", arguments: { text: "hello from the ts sdk" } });
  emit({ step: "echo", isError: echo.isError ?? false, content: echo.content });

  // d. A refused call must come back as a tool result with isError, not a
  //    protocol error (a protocol error would throw and land in the catch).
  const refuse = await client.callTool({ name: "refuse", arguments: {} });
  emit({
    step: "refuse",
    isError: refuse.isError ?? false,
    content: refuse.content,
    structuredContent: refuse.structuredContent ?? null,
  });

  // d2. Progress: with onprogress the SDK sends a progressToken, and the host
  //     answers on an SSE stream whose notifications/progress events reach
  //     the callback before the result.
  const progress = [];
  const counted = await client.callTool({ name: "count", arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  emit({ step: "progress", events: progress, content: counted.content });
} catch (err) {
  fail(String(err?.message ?? err), 1);
}

// d3. Cancellation: aborting the request makes the SDK send
//     notifications/cancelled; the Rust side checks the host dropped the
//     tool's future. The aborted call itself rejects here.
try {
  const controller = new AbortController();
  const pending = client.callTool({ name: "hang", arguments: {} }, undefined, { signal: controller.signal });
  setTimeout(() => controller.abort("the test gave up"), 300);
  await pending;
  emit({ step: "aborted", rejected: false });
} catch (err) {
  emit({ step: "aborted", rejected: true, message: String(err?.message ?? err) });
}

// e. Hand control to the Rust test, which revokes the session/token and then
//    writes one line to our stdin.
emit({ step: "ready_to_revoke" });
try {
  await readLine();
} catch (err) {
  fail(String(err.message), 1);
}

// f. The same call must now be rejected at the HTTP layer (401). Without an
//    authProvider the SDK surfaces that as a thrown StreamableHTTPError whose
//    .code is the HTTP status.
try {
  await client.callTool({ name: "echo", arguments: { text: "hello from the ts sdk" } });
  emit({ step: "after_revoke", failed: false });
} catch (err) {
  emit({ step: "after_revoke", failed: true, message: String(err && err.message), code: err?.code ?? null });
}

// g. Tidy up. transport.close() alone only aborts local streams; the DELETE
//    comes from terminateSession(). The host may answer it 401 (token gone)
//    or 405, so errors here are ignored.
try { await transport.terminateSession(); } catch { /* expected after revoke */ }
try { await client.close(); } catch { /* nothing useful to report */ }
done();
