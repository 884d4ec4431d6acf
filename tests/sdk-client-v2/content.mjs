// Drives the conformance_fixture example with the TypeScript SDK v2 client
// pinned to 2026-07-28: it must read an image, an audio block and an
// embedded resource, and receive a tool's log messages when the call's
// `_meta` asks for them, and none when it does not (see
// ../sdk-shared/steps.mjs for the steps and the environment).

import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { contentScenario, emit, fail, logErrors, transportOptions, url } from "../sdk-shared/steps.mjs";

const logs = [];
const transport = new StreamableHTTPClientTransport(new URL(url), transportOptions);
const client = new Client(
  { name: "mcp-host-sdk-v2-content", version: "0.0.0" },
  { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } } },
);
client.setNotificationHandler("notifications/message", (notification) => logs.push(notification));
logErrors(client);
try {
  await client.connect(transport, { timeout: 10_000 });
  emit({
    step: "connected",
    era: client.getProtocolEra() ?? null,
    capabilities: client.getServerCapabilities() ?? null,
  });
} catch (err) {
  fail(String(err?.message ?? err), 1);
}
await contentScenario(client, logs, { "io.modelcontextprotocol/logLevel": "info" });
