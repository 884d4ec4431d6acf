// Drives the gated_tools example with the TypeScript SDK v1 client (legacy
// era) with its list-changed handling on: after the interview ends, the
// client must receive notifications/tools/list_changed on its GET stream,
// re-list on its own, and call the tool that appeared (see
// ../sdk-shared/steps.mjs for the steps and the environment).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { emit, fail, followTools, listChangedScenario, logErrors, transportOptions, url } from "../sdk-shared/steps.mjs";

const { listChanged, changed } = followTools();
const transport = new StreamableHTTPClientTransport(new URL(url), transportOptions);
const client = new Client({ name: "mcp-host-sdk-list-changed", version: "0.0.0" }, { capabilities: {}, listChanged });
logErrors(client);
try {
  await client.connect(transport);
  emit({ step: "connected", capabilities: client.getServerCapabilities() ?? null });
} catch (err) {
  fail(String(err?.message ?? err), 1);
}
await listChangedScenario(client, changed);
