// Drives a running MCP host with the TypeScript SDK v2 client
// (@modelcontextprotocol/client) so the Rust integration tests can check
// that the stateless 2026-07-28 revision, and the fallback from it to the
// legacy initialize handshake, interoperate with a real third-party client.
//
// Inputs (environment): MCP_URL and MCP_BEARER (see ../sdk-shared/steps.mjs),
// and
//   MCP_MODE    "modern": pinned to 2026-07-28, no fallback (connect fails
//                         unless server/discover offers that revision)
//               "auto":   server/discover first, legacy initialize if the
//                         server gives no modern evidence
//
// Output and exit codes: see ../sdk-shared/steps.mjs.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { done, emit, fail, logErrors, readLine, transportOptions, url } from "../sdk-shared/steps.mjs";

const mode = process.env.MCP_MODE;
if (mode !== "modern" && mode !== "auto") fail('MCP_MODE must be "modern" or "auto"', 1);

// The v2 client's knob is ClientOptions.versionNegotiation.mode:
// 'legacy' (the default, plain initialize), 'auto', or { pin: '<revision>' }.
const versionNegotiation = mode === "modern" ? { mode: { pin: "2026-07-28" } } : { mode: "auto" };

const transport = new StreamableHTTPClientTransport(new URL(url), transportOptions);
const client = new Client(
  { name: "mcp-host-sdk-v2-test-client", version: "0.0.0" },
  { capabilities: {}, versionNegotiation },
);
logErrors(client);

try {
  // a. modern: server/discover only (no initialize, no session).
  //    auto: server/discover, then initialize + initialized if refused.
  //    Shows which era and revision the SDK settled on.
  await client.connect(transport);
  emit({
    step: "connected",
    mode,
    era: client.getProtocolEra() ?? null,
    protocolVersion: client.getNegotiatedProtocolVersion() ?? null,
    serverName: client.getServerVersion()?.name ?? null,
    capabilities: client.getServerCapabilities() ?? null,
  });

  // b. tools/list: the SDK must accept the host's tool descriptors (and, on
  //    2026-07-28, its resultType/ttlMs/cacheScope fields).
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
} catch (err) {
  fail(String(err?.message ?? err), 1);
}

// e. Hand control to the Rust test, which revokes the token and then writes
//    one line to our stdin.
emit({ step: "ready_to_revoke" });
try {
  await readLine();
} catch (err) {
  fail(String(err.message), 1);
}

// f. The same call must now be rejected at the HTTP layer (401). Without an
//    authProvider the SDK throws an SdkHttpError whose .status is the HTTP
//    status (its .code is a string SdkErrorCode, reported as sdkCode).
try {
  await client.callTool({ name: "echo", arguments: { text: "hello from the ts sdk" } });
  emit({ step: "after_revoke", failed: false });
} catch (err) {
  emit({
    step: "after_revoke",
    failed: true,
    message: String(err?.message ?? err),
    code: err?.status ?? err?.data?.status ?? null,
    sdkCode: err?.code ?? null,
  });
}

// g. Tidy up. terminateSession() sends DELETE only when a legacy session id
//    exists (auto mode after fallback); the host may answer 401 or 405, so
//    errors here are ignored.
try { await transport.terminateSession(); } catch { /* expected after revoke */ }
try { await client.close(); } catch { /* nothing useful to report */ }
done();
