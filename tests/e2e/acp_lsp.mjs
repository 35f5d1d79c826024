// An editor's side of the ACP LSP extension, written with the official TypeScript SDK
// (@agentclientprotocol/sdk), driving the real `lode acp` on stdio for tests/e2e/acp_lsp.rs. Plain ESM
// JavaScript, run with Node 22.
//
//   node acp_lsp.mjs SDK_DIR LODE ROOT MODE
//
// SDK_DIR is the npm prefix the SDK was installed into (target/test-tools/acp-sdk); LODE the
// binary, started as `LODE --root ROOT acp` with this process's environment (the test sets
// LODE_CONFIG and friends). MODE says how the editor's language server answers lode's `_lsp/*`
// requests: `answer` (fixed answers, 1-based, as the shapes fixture's pyright would), `error`
// (every navigation request fails) or `hang` (no answer ever; lode's [acp.lsp] timeout_ms ends
// the wait).
//
// The client offers `"lsp": true` in `clientCapabilities._meta`, pushes `_lsp/publishDiagnostics`
// for shapes.py, sends three prompts (references, hover, diagnostics), then `_lsp/didSave` for
// main.py, and prints one JSON object per line: {"step": "initialize" | "prompt" | "requests" |
// "toolCalls" | "error", ...}. `requests` lists every `_lsp/*` request lode sent, with its params. It exits 0
// when the exchange finished, 2 when a request failed.

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, lode, root, mode] = process.argv.slice(2);
if (!["answer", "error", "hang"].includes(mode)) {
  console.error("usage: acp_lsp.mjs SDK_DIR LODE ROOT answer|error|hang");
  process.exit(64);
}

const require = createRequire(resolve(sdkDir, "package.json"));
const load = (specifier) => import(pathToFileURL(require.resolve(specifier)).href);
const acp = await load("@agentclientprotocol/sdk");

const emit = (object) => process.stdout.write(JSON.stringify(object) + "\n");
const uri = (relative) => pathToFileURL(resolve(root, relative)).href;
const range = (line, character, length) => ({
  start: { line, character },
  end: { line, character: character + length },
});

const child = spawn(lode, ["--root", root, "acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const requests = [];
let requestSeen = () => {};
const updates = [];

/** What the editor's language server answers, by method, in `answer` mode (1-based). */
const answers = {
  "_lsp/hover": {
    contents: "```python\n(method) def area(self: Circle) -> float\n```\nThe area of the circle.",
    server: "editor-pyright",
  },
  "_lsp/definition": [{ uri: uri("shapes.py"), range: range(7, 9, 4) }],
  "_lsp/references": [
    { uri: uri("shapes.py"), range: range(7, 9, 4) },
    { uri: uri("main.py"), range: range(7, 14, 4) },
    { uri: uri("main.py"), range: range(11, 24, 4) },
    // A location outside the workspace: lode lists it but must never read the file.
    { uri: "file:///etc/passwd", range: range(1, 1, 4) },
  ],
  "_lsp/diagnostics": [
    { range: range(2, 1, 4), severity: 2, message: "PULLED-AFTER-SAVE unused import", source: "editor-pyright" },
  ],
};

/** The editor side of one `_lsp/*` request. */
async function serve(method, params) {
  requests.push({ method, params });
  requestSeen();
  if (method === "_lsp/diagnostics") return answers[method];
  if (mode === "error") {
    throw new acp.RequestError(-32603, "the editor's language server crashed");
  }
  if (mode === "hang") {
    return await new Promise(() => {});
  }
  return answers[method] ?? null;
}

let app = acp
  .client({ name: "lode-lsp-extension-test" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, () => ({
    outcome: { outcome: "selected", optionId: "allow_once" },
  }));
for (const method of Object.keys(answers)) {
  app = app.onRequest(method, (params) => params, ({ params }) => serve(method, params));
}

const agentText = () =>
  updates
    .filter((u) => u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");

/** Waits (bounded, a safety net only) until `wanted()` holds. */
async function waitFor(wanted, patienceMs = 60000) {
  const deadline = Date.now() + patienceMs;
  while (!wanted()) {
    if (Date.now() > deadline) return false;
    await new Promise((done) => {
      requestSeen = done;
      setTimeout(done, 100);
    });
  }
  return true;
}

let exitCode = 0;
try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { _meta: { lsp: true } },
    });
    emit({ step: "initialize", ...init });
    const session = await ctx.request(acp.methods.agent.session.new, { cwd: root, mcpServers: [] });
    await ctx.notify("_lsp/publishDiagnostics", {
      uri: uri("shapes.py"),
      diagnostics: [
        { range: range(9, 16, 6), severity: 1, message: "PUSHED-BY-IDE r is not defined", code: "reportUndefinedVariable", source: "editor-pyright" },
      ],
    });
    for (const prompt of ["Who calls Circle.area?", "Hover the call of area in main.py", "Check shapes.py for problems"]) {
      const before = agentText().length;
      const answer = await ctx.request(acp.methods.agent.session.prompt, {
        sessionId: session.sessionId,
        prompt: [{ type: "text", text: prompt }],
      });
      emit({ step: "prompt", prompt, stopReason: answer.stopReason, text: agentText().slice(before) });
    }
    await ctx.notify("_lsp/didSave", { uri: uri("main.py") });
    await waitFor(() => requests.some((r) => r.method === "_lsp/diagnostics"));
    emit({ step: "requests", requests });
    emit({ step: "toolCalls", updates: updates.filter((u) => u.sessionUpdate.startsWith("tool_call")) });
  });
} catch (error) {
  emit({ step: "error", message: String(error?.message ?? error), code: error?.code, data: error?.data });
  exitCode = 2;
}
child.kill();
process.exit(exitCode);
