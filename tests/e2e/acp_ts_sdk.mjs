// An ACP client written with the official TypeScript SDK (@agentclientprotocol/sdk), driving
// `lode acp --http` for tests/e2e/acp_ts_sdk.rs. Plain ESM JavaScript, run with Node 22.
//
//   LODE_ACP_TOKEN=T ACP_EXPECT_TEXT=S node acp_ts_sdk.mjs SDK_DIR TRANSPORT URL CWD PROMPT
//
// SDK_DIR is the npm prefix the SDK was installed into (target/test-tools/acp-sdk); TRANSPORT is
// `http` (the SDK's experimental/http-client: POST + SSE) or `ws` (its experimental/ws-client over
// Node 22's built-in WebSocket). `LODE_ACP_TOKEN`, when set, is sent as `Authorization: Bearer`;
// `ACP_EXPECT_TEXT` is the answer text to wait for after the prompt returns. The client offers no fs or terminal methods, answers every
// permission question with `allow_once`, and prints one JSON object per line on stdout:
// {"step": "initialize" | "session/new" | "session/request_permission" | "session/prompt" |
// "updates" | "error", ...}. It exits 0 when the exchange finished, 2 when a request failed.

import { createRequire } from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, transport, url, cwd, prompt] = process.argv.slice(2);
const token = process.env.LODE_ACP_TOKEN;
const expectText = process.env.ACP_EXPECT_TEXT ?? "";
if (!prompt || !["http", "ws"].includes(transport)) {
  console.error("usage: acp_ts_sdk.mjs SDK_DIR http|ws URL CWD PROMPT");
  process.exit(64);
}

// Resolve through the package's own `exports` map, from where it is installed.
const require = createRequire(resolve(sdkDir, "package.json"));
const load = (specifier) => import(pathToFileURL(require.resolve(specifier)).href);
const acp = await load("@agentclientprotocol/sdk");
const { createHttpStream } = await load("@agentclientprotocol/sdk/experimental/http-client");
const { createWebSocketStream } = await load("@agentclientprotocol/sdk/experimental/ws-client");

const emit = (object) => process.stdout.write(JSON.stringify(object) + "\n");
const headers = token ? { Authorization: `Bearer ${token}` } : {};

// Node's built-in WebSocket takes headers in its init object; the SDK passes them as a third
// constructor argument (the `ws` package's shape), so adapt one to the other.
class HeaderWebSocket extends WebSocket {
  constructor(address, protocols, options) {
    super(address, { protocols: protocols ?? [], headers: options?.headers ?? {} });
  }
}

const stream =
  transport === "http"
    ? createHttpStream(url, { headers })
    : createWebSocketStream(url, { headers, WebSocket: HeaderWebSocket });

const updates = [];
let updateSeen = () => {};
const app = acp
  .client({ name: "lode-ts-sdk-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
    updateSeen();
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    emit({
      step: "session/request_permission",
      sessionId: params.sessionId,
      toolCall: params.toolCall,
      options: params.options.map((option) => option.optionId),
    });
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  });

/** Waits (bounded, a safety net only) until an update satisfies `wanted`. */
async function waitForUpdate(wanted, patienceMs = 60000) {
  const deadline = Date.now() + patienceMs;
  while (!updates.some(wanted)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => {
      updateSeen = resolve;
      setTimeout(resolve, 200);
    });
  }
  return true;
}

const agentText = () =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    emit({ step: "initialize", ...init });
    const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    emit({ step: "session/new", ...session });
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: prompt }],
    });
    emit({ step: "session/prompt", ...answer });
    // Over HTTP the updates travel on the session's SSE stream and may trail the response.
    await waitForUpdate(
      (u) => u.sessionUpdate === "tool_call_update" && ["completed", "failed"].includes(u.status),
    );
    await waitForUpdate(() => agentText().endsWith(expectText));
    emit({
      step: "updates",
      kinds: updates.map((u) => u.sessionUpdate),
      text: agentText(),
      toolCalls: updates.filter((u) => u.sessionUpdate.startsWith("tool_call")),
    });
  });
} catch (error) {
  emit({
    step: "error",
    name: error?.name,
    message: String(error?.message ?? error),
    code: error?.code,
    data: error?.data,
  });
  process.exit(2);
}
process.exit(0);
