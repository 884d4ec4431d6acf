// Drives the conformance_fixture example with the TypeScript SDK v1 client
// (legacy era): it must read an image, an audio block and an embedded
// resource, and receive a tool's log messages after
// `logging/setLevel` (see ../sdk-shared/steps.mjs for the steps and the
// environment).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LoggingMessageNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { contentScenario, emit, fail, logErrors, transportOptions, url } from "../sdk-shared/steps.mjs";

const logs = [];
const transport = new StreamableHTTPClientTransport(new URL(url), transportOptions);
const client = new Client({ name: "mcp-host-sdk-content", version: "0.0.0" }, { capabilities: {} });
client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => logs.push(notification));
logErrors(client);
try {
  await client.connect(transport);
  await client.setLoggingLevel("info");
  emit({ step: "connected", capabilities: client.getServerCapabilities() ?? null });
} catch (err) {
  fail(String(err?.message ?? err), 1);
}
await contentScenario(client, logs, undefined);
