// Drives the gated_tools example with the TypeScript SDK v2 client pinned to
// 2026-07-28, with its list-changed handling on: connect() sends
// server/discover and, since the host advertises tools.listChanged, opens
// subscriptions/listen; after the interview ends, the client must receive
// notifications/tools/list_changed on its subscription, re-list on its own,
// and call the tool that appeared (see ../sdk-shared/steps.mjs for the
// steps and the environment).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { emit, fail, followTools, listChangedScenario, logErrors, transportOptions, url } from "../sdk-shared/steps.mjs";

const { listChanged, changed } = followTools();
const transport = new StreamableHTTPClientTransport(new URL(url), transportOptions);
const client = new Client(
  { name: "mcp-host-sdk-v2-list-changed", version: "0.0.0" },
  { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } }, listChanged },
);
logErrors(client);
try {
  // A missing acknowledgement would hold connect() for the SDK's default
  // 60 s; fail well before the watchdog instead.
  await client.connect(transport, { timeout: 10_000 });
  emit({
    step: "connected",
    era: client.getProtocolEra() ?? null,
    capabilities: client.getServerCapabilities() ?? null,
  });
} catch (err) {
  fail(String(err?.message ?? err), 1);
}
await listChangedScenario(client, changed);
