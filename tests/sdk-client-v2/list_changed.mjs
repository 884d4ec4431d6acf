// Drives the gated_tools example with the TypeScript SDK v2 client pinned to
// 2026-07-28, with its list-changed handling on: connect() sends
// server/discover and, since the host advertises tools.listChanged, opens
// subscriptions/listen; the client lists the tools, ends the interview
// (which changes the list), must then receive notifications/tools/list_changed
// on its subscription and re-list on its own, and calls the tool that
// appeared.
//
// Inputs (environment): MCP_URL, MCP_BEARER (as client.mjs).
// Output: one JSON object per line on stdout, tagged with "step".
// Exit codes: 0 = all steps ran, 1 = unexpected failure, 2 = global timeout.

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const emit = (obj) => console.log(JSON.stringify(obj));

function fail(message, code) {
  emit({ step: "error", message });
  process.exit(code);
}

const watchdog = setTimeout(() => fail("timeout", 2), 30_000);

const url = process.env.MCP_URL;
const bearer = process.env.MCP_BEARER;
if (!url || bearer === undefined) fail("MCP_URL and MCP_BEARER must be set", 1);

let relisted;
const changed = new Promise((resolve) => { relisted = resolve; });

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer " + bearer } },
});
const client = new Client(
  { name: "mcp-host-sdk-v2-list-changed", version: "0.0.0" },
  {
    capabilities: {},
    versionNegotiation: { mode: { pin: "2026-07-28" } },
    listChanged: {
      tools: {
        autoRefresh: true,
        onChanged: (error, tools) => {
          if (error) fail("re-listing failed: " + String(error?.message ?? error), 1);
          relisted(tools);
        },
      },
    },
  },
);
client.onerror = (err) => console.error("transport error:", err?.message ?? err);

try {
  // A missing acknowledgement would hold connect() for the SDK's default
  // 60 s; fail well before the watchdog instead.
  await client.connect(transport, { timeout: 10_000 });
  emit({
    step: "connected",
    era: client.getProtocolEra() ?? null,
    capabilities: client.getServerCapabilities() ?? null,
  });
  const { tools } = await client.listTools();
  emit({ step: "tools", names: tools.map((t) => t.name) });
  const ended = await client.callTool({ name: "end_interview", arguments: {} });
  emit({ step: "end_interview", isError: ended.isError ?? false, content: ended.content });
  const now = await changed;
  emit({ step: "relisted", names: now.map((t) => t.name) });
  const verdict = await client.callTool({ name: "submit_verdict", arguments: { verdict: "hire" } });
  emit({ step: "submit_verdict", isError: verdict.isError ?? false, structuredContent: verdict.structuredContent ?? null });
} catch (err) {
  fail(String(err?.message ?? err), 1);
}
try { await client.close(); } catch { /* nothing useful to report */ }
clearTimeout(watchdog);
emit({ step: "done" });
process.exit(0);
