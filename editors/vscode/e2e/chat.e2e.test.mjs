// The packaged extension in a REAL VS Code: code-server (VS Code in the browser, from npm) in
// Debian's Chromium, driven by Playwright (playwright-core from npm, no browser download), with
// no other extension installed (no Copilot) and the real `lode acp` (target/debug/lode) whose
// models are two scripted LLM servers (`lode llm-script`, fixtures/llm/vscode_chat.json and
// vscode_models.json). It checks what a user sees in the chat panel:
//   - the model picker lists lode's models (VS Code needs a model before it hands @lode a request);
//   - a plain `@lode` question is answered;
//   - an edit asks first, shows the tool call naming the file, and after the confirmation
//     button the edit is on disk;
//   - the model picked in the picker is the one lode uses.
// Screenshots of each step go to target/vscode-e2e/.
//
// editors/vscode/e2e/run.sh runs it (scripts/test.sh does, after the build); it needs the tools
// of scripts/install-test-tools.sh in target/test-tools/vscode ($LODE_VSCODE_TOOLS), the lode
// binary and the packaged extension (.vsix). Without them it says so and skips, except under CI,
// where it fails.

import { test, before, after } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../../..");
const tools = process.env.LODE_VSCODE_TOOLS ?? path.join(repo, "target/test-tools/vscode");
const lode = process.env.LODE_BIN ?? path.join(repo, "target/debug/lode");
const manifest = JSON.parse(fs.readFileSync(path.join(repo, "editors/vscode/package.json"), "utf8"));
const vsix = path.join(repo, "editors/vscode", `${manifest.name}-${manifest.version}.vsix`);
const codeServer = path.join(tools, "app/node_modules/.bin/code-server");
const nodeBin = path.join(tools, "bin");
const chromiumPath = process.env.LODE_CHROMIUM ?? "/usr/bin/chromium";
const out = path.join(repo, "target/vscode-e2e");

// The flags that keep Chromium off the network and quiet in a container.
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
// Deadlines for what a real editor does (start, activate, answer); polling, not timing.
const PAGE_LOAD_MS = 180_000;
const ANSWER_MS = 120_000;

/** Why the test cannot run here, or undefined. Under CI a missing piece is a failure. */
function missingPiece() {
  const needs = [
    [lode, "build lode first (cargo build -p lode)"],
    [vsix, "package the extension first (cd editors/vscode && npm run package)"],
    [codeServer, "install the VS Code tools first (scripts/install-test-tools.sh)"],
    [path.join(tools, "driver/node_modules/playwright-core/package.json"), "install the VS Code tools first (scripts/install-test-tools.sh)"],
    [chromiumPath, "install Debian's chromium (scripts/install-test-tools.sh does, as root)"],
  ];
  for (const [file, fix] of needs) {
    if (!fs.existsSync(file)) {
      const message = `${file} is missing: ${fix}`;
      assert.equal(process.env.CI, undefined, message);
      return message;
    }
  }
  return undefined;
}

const children = [];
let work;
let workspace;
let profile;
let browser;
let page;
let skipped;

/** `lode llm-script` serving a fixture; its OpenAI-style base URL. */
async function llmServer(fixture) {
  const child = spawn(lode, ["llm-script", "--script", path.join(repo, "fixtures/llm", fixture)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const lines = readline.createInterface({ input: child.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`lode llm-script exited with ${code}`)));
  });
  lines.close();
  const url = first.trim().replace(/^listening on /, "");
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, first);
  return `${url}/v1`;
}

async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value; fails with `what` after `ms`. */
async function until(what, check, ms = ANSWER_MS) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) {
      await shot(`timeout-${what.replace(/[^a-z0-9]+/gi, "-").slice(0, 60)}`);
      assert.fail(`timed out waiting for ${what} (screenshots in ${out})`);
    }
    await sleep(500);
  }
}

async function shot(name) {
  await page?.screenshot({ path: path.join(out, `${name}.png`) }).catch(() => {});
}

/** The chat panel's text: the conversation and the input. */
async function chatText() {
  return (await page.locator(".interactive-session").first().innerText().catch(() => "")) ?? "";
}

/** Types a request into the chat input (cleared first) and sends it. */
async function send(prompt) {
  const input = page.locator(".interactive-input-part .monaco-editor").first();
  await input.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Backspace");
  await page.keyboard.type(prompt, { delay: 10 });
  await sleep(300);
  // The @-suggestion list may be open; Escape closes it without leaving the input.
  await page.keyboard.press("Escape");
  await page.keyboard.press("Enter");
}

/** Waits for `answer` in the panel; fails at once on VS Code's "Language model unavailable". */
async function answered(answer) {
  return until(`the answer "${answer}"`, async () => {
    const text = await chatText();
    assert.ok(!text.includes("Language model unavailable"), `VS Code refused the request:\n${text}`);
    return text.includes(answer) ? text : undefined;
  });
}

/** The chat input's model picker, opened and searched for `search`: its visible lode entries. */
async function pickerEntries(search = "lode") {
  await page.locator(".interactive-input-part").getByRole("button", { name: /lode: / }).first().click();
  const searchBox = page.getByPlaceholder("Search models");
  await searchBox.waitFor({ timeout: 30_000 });
  await searchBox.fill(search);
  const rows = page.locator(".monaco-list-row", { hasText: "lode: " });
  await until("lode's entries in the model picker", async () => (await rows.count()) > 0, 30_000);
  await sleep(500);
  const entries = [];
  for (const row of await rows.all()) {
    if (await row.isVisible()) entries.push((await row.innerText()).replace(/\s+/g, " ").trim());
  }
  return entries;
}

before(async () => {
  skipped = missingPiece();
  if (skipped) return;
  fs.mkdirSync(out, { recursive: true });
  for (const file of fs.readdirSync(out)) fs.rmSync(path.join(out, file), { force: true });
  work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "lode-vscode-e2e-")));

  // The workspace: src/main.rs says hello; its config names both scripted models. $LODE_CONFIG
  // (inherited by code-server's extension host and so `lode acp`) applies without `lode trust`.
  const chatModel = await llmServer("vscode_chat.json");
  const secondModel = await llmServer("vscode_models.json");
  workspace = path.join(work, "project");
  fs.mkdirSync(path.join(workspace, "src"), { recursive: true });
  fs.mkdirSync(path.join(workspace, ".git"));
  fs.mkdirSync(path.join(workspace, ".lode"));
  fs.writeFileSync(path.join(workspace, "src/main.rs"), 'fn main() {\n    println!("hello");\n}\n');
  const provider = (name, url, model) =>
    `[[llm.providers]]\nname = "${name}"\nkind = "openai"\nbase_url = "${url}"\nmodel = "${model}"\ncontext_window = 32000\n`;
  const config = path.join(workspace, ".lode/config.toml");
  fs.writeFileSync(config, provider("scripted", chatModel, "scripted-1") + provider("second", secondModel, "second-1"));

  // A fresh profile: only lode's extension, lode.path pointing at the binary under test.
  // lode.path and lode.chat.extraArgs are machine-scoped (a workspace must not name the program
  // lode runs): code-server is a remote window, so they are read from the machine's settings,
  // where a user of code-server or Remote-SSH sets them too, not from the user's.
  profile = path.join(work, "profile");
  fs.mkdirSync(path.join(profile, "User"), { recursive: true });
  fs.mkdirSync(path.join(profile, "Machine"), { recursive: true });
  fs.writeFileSync(
    path.join(profile, "User/settings.json"),
    JSON.stringify({
      "workbench.startupEditor": "none",
      "telemetry.telemetryLevel": "off",
      "extensions.autoUpdate": false,
      "extensions.autoCheckUpdates": false,
    }),
  );
  fs.writeFileSync(
    path.join(profile, "Machine/settings.json"),
    JSON.stringify({ "lode.path": lode, "lode.chat.extraArgs": ["--no-watch"] }),
  );
  const env = { ...process.env, PATH: `${nodeBin}:${process.env.PATH}`, LODE_CONFIG: config, XDG_CONFIG_HOME: path.join(work, "xdg") };
  for (const name of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "LODE_MODEL"]) delete env[name];
  const dirs = ["--user-data-dir", profile, "--extensions-dir", path.join(profile, "extensions")];
  const install = spawnSync(codeServer, [...dirs, "--install-extension", vsix], { env, encoding: "utf8" });
  assert.equal(install.status, 0, `code-server --install-extension failed:\n${install.stdout}\n${install.stderr}`);
  const installed = fs.readdirSync(path.join(profile, "extensions")).filter((name) => !name.endsWith(".json"));
  assert.deepEqual(installed, [`${manifest.publisher}.${manifest.name}-${manifest.version}`], "lode is the only extension");

  const port = await freePort();
  const log = fs.openSync(path.join(out, "code-server.log"), "w");
  const server = spawn(
    codeServer,
    ["--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-workspace-trust", "--disable-update-check", ...dirs, workspace],
    { env, stdio: ["ignore", log, log], detached: true },
  );
  children.push(server);
  await until("code-server to answer", async () => {
    const answer = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
    return answer?.ok;
  }, 60_000);

  const require = createRequire(path.join(tools, "driver/"));
  const { chromium } = require("playwright-core");
  browser = await chromium.launch({ executablePath: chromiumPath, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`, { timeout: PAGE_LOAD_MS });
  await page.waitForSelector(".monaco-workbench", { timeout: PAGE_LOAD_MS });
  // Open the chat view through the command palette (the same command whatever the layout).
  await page.keyboard.press("Control+Shift+P");
  await page.locator(".quick-input-widget input").first().waitFor({ timeout: 30_000 });
  await page.keyboard.type("Chat: Open Chat", { delay: 10 });
  await until("the palette's Chat: Open Chat", async () => (await page.locator(".quick-input-list .monaco-list-row").first().innerText().catch(() => "")).startsWith("Chat: Open Chat"), 30_000);
  await page.keyboard.press("Enter");
  await page.locator(".interactive-input-part .monaco-editor").first().waitFor({ timeout: 60_000 });
  await shot("1-chat-open");
});

after(async () => {
  await browser?.close().catch(() => {});
  for (const child of children) {
    try {
      // code-server runs in a process group of its own (its extension host, lode lsp and acp).
      if (child.spawnargs.includes("--auth")) process.kill(-child.pid, "SIGTERM");
      else child.kill();
    } catch {
      // already gone
    }
  }
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

test("the model picker lists lode's models (no Copilot, no other model)", async (t) => {
  if (skipped) return t.skip(skipped);
  // The picker fills once lode's extension has listed `lode acp`'s model option.
  await until("lode's model in the chat input's picker", async () =>
    (await page.locator(".interactive-input-part").getByRole("button", { name: /lode: / }).count()) > 0,
  );
  const entries = await pickerEntries();
  await shot("2-model-picker");
  await page.keyboard.press("Escape");
  assert.ok(entries.some((e) => e.includes("lode: scripted")), JSON.stringify(entries));
  assert.ok(entries.some((e) => e.includes("lode: second")), JSON.stringify(entries));
});

test("a plain @lode question is answered", async (t) => {
  if (skipped) return t.skip(skipped);
  await send("@lode what did you change");
  await answered("I replaced hello with goodbye in src/main.rs.");
  await shot("3-plain-answer");
});

test("an edit through the panel's confirmation: the tool call names the file, the edit is on disk", async (t) => {
  if (skipped) return t.skip(skipped);
  const main = path.join(workspace, "src/main.rs");
  await send("@lode Please say goodbye instead");
  const allow = page.locator(".interactive-list").getByRole("button", { name: "Allow once", exact: true }).last();
  await until("the confirmation button", async () => (await allow.count()) > 0 && (await allow.isVisible()));
  const asking = await chatText();
  await shot("4-edit-confirmation");
  // The question names the tool call and its file; nothing is written before the click.
  assert.match(asking, /lode asks to run:.*main\.rs/s, asking);
  assert.ok(
    (await page.locator(".interactive-list .chat-inline-anchor-widget", { hasText: "main.rs" }).count()) > 0,
    "an anchor to src/main.rs in the answer",
  );
  assert.equal(fs.readFileSync(main, "utf8"), 'fn main() {\n    println!("hello");\n}\n');
  await allow.click();
  await answered("The greeting now says goodbye.");
  await shot("5-edit-done");
  await until("the edit on disk", async () => fs.readFileSync(main, "utf8").includes('println!("goodbye")'));
  assert.equal(fs.readFileSync(main, "utf8"), 'fn main() {\n    println!("goodbye");\n}\n');
});

test("the model picked in the picker is the one lode answers with", async (t) => {
  if (skipped) return t.skip(skipped);
  await pickerEntries("lode: second");
  await page.locator(".monaco-list-row", { hasText: "lode: second" }).first().click();
  await until("the picker showing lode: second", async () =>
    (await page.locator(".interactive-input-part").getByRole("button", { name: /lode: second/ }).count()) > 0,
  30_000);
  await send("@lode which model are you?");
  await answered("This is the second model speaking.");
  await shot("6-second-model");
});
