// What every TypeScript SDK client script under tests/ shares: the step
// protocol the Rust tests read (one JSON object per line on stdout, tagged
// "step"), the watchdog, the endpoint from the environment, the bearer
// header, and the list-changed scenario. It imports no SDK package, so the
// v1 (tests/sdk-client) and v2 (tests/sdk-client-v2) scripts can both use it.
//
// Exit codes: 0 = all steps ran, 1 = unexpected failure, 2 = global timeout.

import { createInterface } from "node:readline";

export const emit = (obj) => console.log(JSON.stringify(obj));

export function fail(message, code) {
  emit({ step: "error", message });
  process.exit(code);
}

// Never hang the Rust test: give up after 30 s whatever we are waiting on.
const watchdog = setTimeout(() => fail("timeout", 2), 30_000);

// MCP_URL (the endpoint, e.g. http://127.0.0.1:PORT/mcp) and MCP_BEARER
// (the bearer text, without "Bearer ").
export const url = process.env.MCP_URL;
export const bearer = process.env.MCP_BEARER;
if (!url || bearer === undefined) fail("MCP_URL and MCP_BEARER must be set", 1);

// The transport options of every script: a static bearer header on every
// request (POSTs, the GET stream, DELETE). The SDK's OAuth machinery
// (authProvider) is deliberately not used, so a 401 is not retried.
export const transportOptions = {
  requestInit: { headers: { Authorization: "Bearer " + bearer } },
};

// Background transport errors never reject a request by themselves; log
// them to stderr so a failing test has something to show.
export function logErrors(client) {
  client.onerror = (err) => console.error("transport error:", err?.message ?? err);
}

// Resolves with the first line on stdin; rejects if stdin closes first.
export function readLine() {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: process.stdin });
    let got = false;
    rl.once("line", (line) => { got = true; rl.close(); resolve(line); });
    rl.once("close", () => { if (!got) reject(new Error("stdin closed before revoke signal")); });
  });
}

// Emits "done" and exits successfully.
export function done() {
  clearTimeout(watchdog);
  emit({ step: "done" });
  process.exit(0);
}

// The ClientOptions.listChanged of the list-changed scenario, and the
// promise of the tools the SDK re-listed on its own after a change.
export function followTools() {
  let relisted;
  const changed = new Promise((resolve) => { relisted = resolve; });
  const listChanged = {
    tools: {
      autoRefresh: true,
      onChanged: (error, tools) => {
        if (error) fail("re-listing failed: " + String(error?.message ?? error), 1);
        relisted(tools);
      },
    },
  };
  return { listChanged, changed };
}

// The list-changed scenario against the gated_tools example, on a client
// built with followTools().listChanged and already connected: list, end the
// interview (which changes the list), wait for the SDK's own re-listing,
// call the tool that appeared.
export async function listChangedScenario(client, changed) {
  try {
    const { tools } = await client.listTools();
    emit({ step: "tools", names: tools.map((t) => t.name) });
    const ended = await client.callTool({ name: "end_interview", arguments: {} });
    emit({ step: "end_interview", isError: ended.isError ?? false, content: ended.content });
    const now = await changed;
    emit({ step: "relisted", names: now.map((t) => t.name) });
    const verdict = await client.callTool({ name: "submit_verdict", arguments: { verdict: "hire" } });
    emit({
      step: "submit_verdict",
      isError: verdict.isError ?? false,
      structuredContent: verdict.structuredContent ?? null,
    });
  } catch (err) {
    fail(String(err?.message ?? err), 1);
  }
  try { await client.close(); } catch { /* nothing useful to report */ }
  done();
}

// What a media block's bytes are, decoded by Node (not by the host): the
// length, whether the base64 was canonical, and the header fields a PNG or
// WAV carries, so the Rust test can check the bytes themselves.
function describeMedia(block) {
  const bytes = Buffer.from(block.data, "base64");
  const facts = {
    type: block.type,
    mimeType: block.mimeType,
    length: bytes.length,
    canonicalBase64: bytes.toString("base64") === block.data,
  };
  if (block.type === "image") {
    facts.signature = bytes.subarray(0, 8).toString("hex");
    facts.width = bytes.readUInt32BE(16);
    facts.height = bytes.readUInt32BE(20);
  } else {
    facts.riff = bytes.subarray(0, 4).toString("latin1");
    facts.riffSize = bytes.readUInt32LE(4);
    facts.wave = bytes.subarray(8, 12).toString("latin1");
  }
  return facts;
}

// The content scenario against the conformance_fixture example, on a
// connected client whose "notifications/message" handler pushes into
// `logs`: an image, an audio block, an embedded resource, mixed content,
// and a call that logs (`logMeta` is the call's extra `_meta`, which asks
// for logs in 2026-07-28).
export async function contentScenario(client, logs, logMeta) {
  try {
    const image = await client.callTool({ name: "test_image_content", arguments: {} });
    emit({ step: "image", blocks: image.content.map(describeMedia) });
    const audio = await client.callTool({ name: "test_audio_content", arguments: {} });
    emit({ step: "audio", blocks: audio.content.map(describeMedia) });
    const resource = await client.callTool({ name: "test_embedded_resource", arguments: {} });
    emit({ step: "resource", content: resource.content });
    const mixed = await client.callTool({ name: "test_multiple_content_types", arguments: {} });
    emit({ step: "mixed", types: mixed.content.map((block) => block.type) });
    const logged = await client.callTool({ name: "test_tool_with_logging", arguments: {}, _meta: logMeta });
    emit({ step: "logged", content: logged.content, logs: logs.map((n) => n.params) });
    const quiet = await client.callTool({ name: "test_logging_tool", arguments: {} });
    emit({ step: "quiet", content: quiet.content, logs: logs.length });
  } catch (err) {
    fail(String(err?.message ?? err), 1);
  }
  try { await client.close(); } catch { /* nothing useful to report */ }
  done();
}
