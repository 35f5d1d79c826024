// The @lode chat participant and lode's models against the REAL `lode acp` (target/debug/lode,
// built by cargo before these tests in scripts/test.sh) whose model is lode's scripted LLM server
// (`lode llm-script`, fixtures/llm/vscode_chat.json). These tests run in plain node, so the
// `vscode` module is a small STAND-IN (../testSupport/vscodeStandin.ts: real files under its
// documents and WorkspaceEdits, and VS Code's rule that a chat request needs a model) and the
// chat response stream is a recorder; e2e/ runs the packaged extension in a real VS Code
// (code-server). Everything between the participant and lode is real: the ACP TypeScript SDK,
// stdio, lode's agent, its permission questions and its fs/write_text_file edits.
//
// Without the lode binary these tests say so and skip, except under CI, where they fail.

import * as standin from "../testSupport/vscodeStandin";
standin.install();

import { test } from "node:test";
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";
import type * as vscode from "vscode";

import { ANSWER_COMMAND, LodeChat, PARTICIPANT_ID, acpCommand, previousSession, promptBlocks } from "../chat/participant";
import { contextWindow, conversationPrompt, modelInformation, UNAVAILABLE_MODEL } from "../chat/models";
import { messageText, providerApi } from "../chat/lmApi";
import { oldVsCodeNotice, registerChat } from "../chat/register";

const repo = path.resolve(__dirname, "../../../..");
const lodeBinary = process.env.LODE_BIN ?? path.join(repo, "target/debug/lode");

function lodeMissing(): string | undefined {
  if (fs.existsSync(lodeBinary)) return undefined;
  const message = `${lodeBinary} is missing: build it with \`cargo build -p lode\` (scripts/test.sh does)`;
  assert.equal(process.env.CI, undefined, message);
  return message;
}

// The extension's manifest, which the stand-in checks provider registrations against.
standin.state.manifest = require("../../package.json");

/** `lode llm-script` serving a fixture of fixtures/llm; its OpenAI-style base URL. */
async function llmServer(children: ChildProcess[], fixture = "vscode_chat.json"): Promise<string> {
  const child = spawn(lodeBinary, ["llm-script", "--script", path.join(repo, "fixtures/llm", fixture)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const lines = readline.createInterface({ input: child.stdout! });
  const first: string = await new Promise((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code) => reject(new Error(`lode llm-script exited with ${code}`)));
  });
  lines.close();
  const url = first.trim().replace(/^listening on /, "");
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/, first);
  return `${url}/v1`;
}

interface Harness {
  root: string;
  main: string;
  chat: LodeChat;
  participant: (...args: unknown[]) => unknown;
  cleanup(): void;
}

/**
 * A project (src/main.rs says hello) opened in the stand-in. Its model is the scripted server
 * (provider "scripted"); `models: "two"` adds a provider "second" with a script of its own
 * (fixtures/llm/vscode_models.json), `models: "none"` configures no provider.
 */
async function project(options: { models?: "one" | "two" | "none"; providerApi?: boolean } = {}): Promise<Harness> {
  standin.state.reset();
  standin.state.providerApi = options.providerApi ?? true;
  const children: ChildProcess[] = [];
  const models = options.models ?? "one";
  const baseUrl = models === "none" ? "" : await llmServer(children);
  const secondUrl = models === "two" ? await llmServer(children, "vscode_models.json") : "";
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "lode-vscode-chat-")));
  fs.mkdirSync(path.join(root, ".git"));
  fs.mkdirSync(path.join(root, "src"));
  fs.mkdirSync(path.join(root, ".lode"));
  const main = path.join(root, "src/main.rs");
  fs.writeFileSync(main, 'fn main() {\n    println!("hello");\n}\n');
  const config = path.join(root, ".lode/config.toml");
  const provider = (name: string, url: string, model: string) =>
    `[[llm.providers]]\nname = "${name}"\nkind = "openai"\nbase_url = "${url}"\nmodel = "${model}"\ncontext_window = 32000\n`;
  fs.writeFileSync(
    config,
    (baseUrl ? provider("scripted", baseUrl, "scripted-1") : "") + (secondUrl ? provider("second", secondUrl, "second-1") : ""),
  );
  // The config the user names in $LODE_CONFIG applies without `lode trust`; no user config.
  process.env.LODE_CONFIG = config;
  process.env.XDG_CONFIG_HOME = path.join(root, ".no-user-config");
  // No provider from the environment either (lode's zero-config would take one).
  for (const name of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "LODE_MODEL"]) delete process.env[name];
  standin.state.folders.push({ uri: standin.Uri.file(root), name: "project", index: 0 });
  standin.state.settings.set("lode.path", lodeBinary);
  standin.state.settings.set("lode.chat.extraArgs", ["--no-watch"]);
  const output = { appendLine: (line: string) => process.stderr.write(`[lode] ${line}\n`) };
  const context = { subscriptions: [] as { dispose(): unknown }[] };
  const chat = registerChat(context as unknown as vscode.ExtensionContext, output);
  const participant = standin.state.participants.get(PARTICIPANT_ID);
  assert.ok(participant, "the participant is registered");
  return {
    root,
    main,
    chat,
    participant,
    cleanup() {
      for (const disposable of context.subscriptions) disposable.dispose();
      for (const child of children) child.kill();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

type Part =
  | { kind: "markdown"; value: string }
  | { kind: "progress"; value: string }
  | { kind: "anchor"; value: standin.Uri | standin.Location; title?: string }
  | { kind: "reference"; value: standin.Uri | standin.Location }
  | { kind: "button"; value: { command: string; title: string; arguments?: unknown[] } };

/** A ChatResponseStream that records every part and lets a test react to each. */
class RecordingStream {
  readonly parts: Part[] = [];
  constructor(private readonly onPart: (part: Part) => void = () => {}) {}
  private push(part: Part): void {
    this.parts.push(part);
    this.onPart(part);
  }
  markdown(value: string | { value: string }): void {
    this.push({ kind: "markdown", value: typeof value === "string" ? value : value.value });
  }
  progress(value: string): void {
    this.push({ kind: "progress", value });
  }
  anchor(value: standin.Uri | standin.Location, title?: string): void {
    this.push({ kind: "anchor", value, title });
  }
  reference(value: standin.Uri | standin.Location): void {
    this.push({ kind: "reference", value });
  }
  button(value: { command: string; title: string; arguments?: unknown[] }): void {
    this.push({ kind: "button", value });
  }
  text(): string {
    return this.parts
      .filter((p): p is { kind: "markdown"; value: string } => p.kind === "markdown")
      .map((p) => p.value)
      .join("");
  }
  of<K extends Part["kind"]>(kind: K): Extract<Part, { kind: K }>[] {
    return this.parts.filter((p): p is Extract<Part, { kind: K }> => p.kind === kind);
  }
}

interface Turn {
  prompt: string;
  stream: RecordingStream;
  result: vscode.ChatResult;
}

/** One chat request through the participant, with `history` as VS Code would pass it. */
async function ask(
  harness: Harness,
  prompt: string,
  history: unknown[],
  onPart?: (part: Part, cancel: () => void) => void,
): Promise<Turn> {
  const source = new standin.CancellationTokenSource();
  const stream = new RecordingStream((part) => onPart?.(part, () => source.cancel()));
  const started = Date.now();
  assert.equal(standin.state.participants.get(PARTICIPANT_ID), harness.participant, "the harness's participant answers");
  // Through the stand-in's chat panel, which attaches a model as VS Code does (or refuses).
  const result = (await standin.chat.sendRequest(
    PARTICIPANT_ID,
    { prompt, references: [], command: undefined },
    { history },
    stream,
    source.token,
  )) as vscode.ChatResult;
  process.stderr.write(`turn "${prompt}": ${Date.now() - started} ms, ${stream.parts.length} parts\n`);
  return { prompt, stream, result };
}

/** The history VS Code passes after `turns`: a request turn and a response turn each. */
function historyOf(turns: Turn[]): unknown[] {
  return turns.flatMap((turn) => [
    { prompt: turn.prompt, participant: PARTICIPANT_ID, references: [] },
    { participant: PARTICIPANT_ID, result: turn.result, response: [] },
  ]);
}

/** Presses the button of `optionId` whenever lode asks. */
function pressing(optionId: string) {
  return (part: Part) => {
    if (part.kind !== "button" || part.value.arguments?.[1] !== optionId) return;
    const args = part.value.arguments;
    setImmediate(() => void standin.commands.executeCommand(part.value.command, ...args));
  };
}

function fsPathOf(value: standin.Uri | standin.Location): string {
  return value instanceof standin.Location ? value.uri.fsPath : value.fsPath;
}

test("an allowed edit: streamed markdown, anchors, buttons, a WorkspaceEdit; then more turns in the same session", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project();
  try {
    const first = await ask(harness, "Please say goodbye instead", [], pressing("allow_once"));
    assert.equal(first.result.errorDetails, undefined, JSON.stringify(first.result));
    const metadata = first.result.metadata as { lodeSessionId: string; stopReason: string };
    assert.equal(metadata.stopReason, "end_turn");
    assert.match(metadata.lodeSessionId, /\S/);

    // Streamed markdown, in order, around the permission question.
    const text = first.stream.text();
    assert.ok(text.startsWith("Changing the **greeting**."), text);
    assert.ok(text.includes("**lode asks to run:**"), text);
    assert.ok(text.endsWith("The greeting now says goodbye."), text);
    // The markdown came in pieces, as lode streamed it.
    assert.ok(first.stream.of("markdown").length > 3, JSON.stringify(first.stream.of("markdown")));

    // The tool call: a progress line and an anchor to the file it edits.
    assert.ok(first.stream.of("progress").length >= 1);
    const anchors = first.stream.of("anchor").map((a) => fsPathOf(a.value));
    assert.ok(anchors.includes(harness.main), JSON.stringify(anchors));

    // The permission question as buttons, one per option lode offered.
    const buttons = first.stream.of("button").map((b) => b.value);
    assert.deepEqual(
      buttons.map((b) => b.arguments?.[1]),
      ["allow_once", "allow_always", "reject_once", "reject_always"],
    );
    assert.ok(buttons.every((b) => b.command === ANSWER_COMMAND));

    // The edit arrived as a WorkspaceEdit of src/main.rs, and is on disk.
    const edits = standin.state.appliedEdits.flatMap((edit) => edit.entries);
    const replaced = edits.filter((e) => e.kind === "replace" && e.uri.fsPath === harness.main);
    assert.equal(replaced.length, 1, JSON.stringify(edits));
    assert.ok(replaced[0].kind === "replace" && replaced[0].text.includes('println!("goodbye")'));
    assert.equal(fs.readFileSync(harness.main, "utf8"), 'fn main() {\n    println!("goodbye");\n}\n');
    // The finished edit is referenced.
    assert.ok(first.stream.of("reference").some((r) => fsPathOf(r.value) === harness.main));

    // The second turn of the conversation reuses the session.
    const second = await ask(harness, "what did you change?", historyOf([first]));
    assert.equal(second.stream.text(), "I replaced hello with goodbye in src/main.rs.");
    assert.equal((second.result.metadata as { lodeSessionId: string }).lodeSessionId, metadata.lodeSessionId);

    // lode restarts (settings changed): the conversation resumes the same stored session.
    standin.state.settings.set("lode.chat.extraArgs", ["--no-watch", "--exclude", "target/**"]);
    const third = await ask(harness, "are you still there?", historyOf([first, second]));
    assert.equal(third.stream.text(), "Yes, same conversation.");
    assert.equal((third.result.metadata as { lodeSessionId: string }).lodeSessionId, metadata.lodeSessionId);

    // A new conversation (no history) gets a session of its own.
    const fresh = await ask(harness, "what did you change?", []);
    assert.equal(fresh.stream.text(), "I replaced hello with goodbye in src/main.rs.");
    assert.notEqual((fresh.result.metadata as { lodeSessionId: string }).lodeSessionId, metadata.lodeSessionId);
  } finally {
    harness.cleanup();
  }
});

test("a denied edit: lode is told no, nothing is edited", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project();
  try {
    const turn = await ask(harness, "Please say goodbye instead", [], pressing("reject_once"));
    assert.equal(turn.result.errorDetails, undefined, JSON.stringify(turn.result));
    const text = turn.stream.text();
    const reject = turn.stream.of("button").find((b) => b.value.arguments?.[1] === "reject_once");
    assert.ok(reject && text.includes(`*${reject.value.title}*`), text);
    assert.ok(text.endsWith("I was not allowed to edit src/main.rs."), text);
    assert.equal(standin.state.appliedEdits.length, 0);
    assert.equal(fs.readFileSync(harness.main, "utf8"), 'fn main() {\n    println!("hello");\n}\n');
  } finally {
    harness.cleanup();
  }
});

test("cancelling the request sends session/cancel; the conversation goes on in the same session", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project();
  try {
    let cancelled = false;
    const story = await ask(harness, "tell me a long story", [], (part, cancel) => {
      if (part.kind === "markdown" && !cancelled) {
        cancelled = true;
        cancel();
      }
    });
    const metadata = story.result.metadata as { lodeSessionId: string; stopReason: string };
    assert.equal(metadata.stopReason, "cancelled", JSON.stringify(story.result));
    const full =
      "Once upon a time there was a very long story that streamed slowly, word by word, and nobody ever heard its end because the reader cancelled it.";
    const heard = story.stream.text();
    assert.ok(heard.length > 0 && heard.length < full.length && full.startsWith(heard), heard);

    const again = await ask(harness, "hello again", historyOf([story]));
    assert.equal(again.stream.text(), "Still here after the cancel.");
    assert.equal((again.result.metadata as { lodeSessionId: string }).lodeSessionId, metadata.lodeSessionId);
  } finally {
    harness.cleanup();
  }
});

test("answers to questions that are not open, or with options lode did not offer, do nothing", async () => {
  standin.state.reset();
  const chat = new LodeChat({ appendLine: () => {} });
  assert.equal(chat.answer("q1", "allow_once"), false);
  assert.equal(chat.answer(42, "allow_once"), false);
  assert.equal(chat.answer(undefined, undefined), false);
  assert.deepEqual(standin.state.messages, [
    "lode: that question is no longer open",
    "lode: that question is no longer open",
    "lode: that question is no longer open",
  ]);
  // An open question: an unknown option is ignored, the question stays open for a real answer.
  const stream = new RecordingStream();
  const turns = (chat as unknown as { turns: Map<string, unknown> }).turns;
  turns.set("s1", { stream, thinking: false, titles: new Map() });
  const abort = new AbortController();
  const answer = chat.requestPermission(
    {
      sessionId: "s1",
      toolCall: { toolCallId: "t1", title: "Edit `src/main.rs`" },
      options: [
        { optionId: "allow_once", name: "Allow", kind: "allow_once" },
        { optionId: "reject_once", name: "Reject", kind: "reject_once" },
      ],
    },
    abort.signal,
  );
  const questionId = stream.of("button")[0].value.arguments?.[0];
  assert.equal(chat.answer(questionId, "allow_always"), false);
  assert.equal(chat.answer(questionId, "x".repeat(100_000)), false);
  assert.equal(chat.answer(questionId, "reject_once"), true);
  assert.deepEqual(await answer, { outcome: { outcome: "selected", optionId: "reject_once" } });
  assert.equal(chat.answer(questionId, "allow_once"), false, "answered once only");
  assert.ok(stream.text().includes("Edit \\`src/main.rs\\`"), stream.text());

  // A question lode withdraws (its turn ended) resolves as cancelled.
  const withdrawn = chat.requestPermission(
    { sessionId: "s1", toolCall: { toolCallId: "t2" }, options: [{ optionId: "allow_once", name: "Allow", kind: "allow_once" }] },
    abort.signal,
  );
  abort.abort();
  assert.deepEqual(await withdrawn, { outcome: { outcome: "cancelled" } });
  // A question for a session with no turn running is refused at once.
  assert.deepEqual(
    await chat.requestPermission({ sessionId: "nope", toolCall: { toolCallId: "t3" }, options: [] }, new AbortController().signal),
    { outcome: { outcome: "cancelled" } },
  );
});

test("edits and reads outside the workspace folders are refused", async () => {
  standin.state.reset();
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "lode-vscode-fs-")));
  try {
    standin.state.folders.push({ uri: standin.Uri.file(root), name: "p", index: 0 });
    const chat = new LodeChat({ appendLine: () => {} });
    for (const outside of ["/etc/passwd", path.join(root, "../elsewhere.txt"), "relative.txt", root]) {
      await assert.rejects(chat.writeTextFile({ path: outside, content: "x" }), /not a file in an open workspace folder/);
      await assert.rejects(chat.readTextFile({ path: outside }), /not a file in an open workspace folder/);
    }
    assert.equal(standin.state.appliedEdits.length, 0);
    // A new file inside is created through the WorkspaceEdit; reads honour line and limit.
    const created = path.join(root, "notes/new.txt");
    await chat.writeTextFile({ path: created, content: "one\ntwo\nthree\n" });
    assert.deepEqual(
      standin.state.appliedEdits[0].entries.map((e) => e.kind),
      ["create", "insert"],
    );
    assert.equal(fs.readFileSync(created, "utf8"), "one\ntwo\nthree\n");
    assert.equal(await chat.readTextFile({ path: created, line: 2, limit: 1 }), "two");
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("the conversation's session, the command line and the prompt come from VS Code's request", () => {
  assert.deepEqual(acpCommand(undefined, undefined), { command: "lode", args: ["acp"] });
  assert.deepEqual(acpCommand(" /opt/lode ", ["--no-watch", 3]), { command: "/opt/lode", args: ["acp", "--no-watch"] });
  assert.equal(previousSession([]), undefined);
  const history = [
    { prompt: "a", participant: PARTICIPANT_ID },
    { participant: PARTICIPANT_ID, result: { metadata: { lodeSessionId: "s1" } } },
    { participant: "other.participant", result: { metadata: { lodeSessionId: "s9" } } },
    { participant: PARTICIPANT_ID, result: { errorDetails: { message: "no" } } },
  ];
  assert.equal(previousSession(history), "s1");
  assert.deepEqual(promptBlocks({ prompt: "fix it", references: [{ id: "f", value: standin.Uri.file("/w/a.rs") }] } as never), [
    { type: "text", text: "fix it" },
    { type: "resource_link", uri: "file:///w/a.rs", name: "a.rs" },
  ]);
  const manifest = require("../../package.json");
  assert.deepEqual(
    manifest.contributes.chatParticipants.map((p: { id: string }) => p.id),
    [PARTICIPANT_ID],
  );
  assert.ok(manifest.dependencies["@agentclientprotocol/sdk"], "the official ACP SDK is a pinned dependency");
});

test("lode's models are in VS Code's model picker, and the picked one answers @lode", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project({ models: "two" });
  try {
    // What the picker lists: both configured providers, as `lode acp`'s model option names them.
    const listed = await standin.availableModels();
    assert.deepEqual(
      listed.map((m) => [m.identifier, m.model.name, m.model.detail, m.model.maxInputTokens]),
      [
        ["lode/scripted", "lode: scripted", "scripted-1 (32k context)", 32000],
        ["lode/second", "lode: second", "second-1 (32k context)", 32000],
      ],
    );
    assert.ok(listed.every((m) => m.model.capabilities.toolCalling), "offered in VS Code's Agent mode too");

    // The picked model becomes the lode session's model: the second script answers.
    standin.state.pickedModel = "lode/second";
    const turn = await ask(harness, "which model are you?", []);
    assert.equal(turn.result.errorDetails, undefined, JSON.stringify(turn.result));
    assert.equal(turn.stream.text(), "This is the second model speaking.");
    // Back to the first model in the same conversation: lode switches the session back.
    standin.state.pickedModel = "lode/scripted";
    const back = await ask(harness, "what did you change?", historyOf([turn]));
    assert.equal(back.stream.text(), "I replaced hello with goodbye in src/main.rs.");
    assert.equal(
      (back.result.metadata as { lodeSessionId: string }).lodeSessionId,
      (turn.result.metadata as { lodeSessionId: string }).lodeSessionId,
    );
  } finally {
    harness.cleanup();
  }
});

test("a lode model picked for VS Code's own chat answers through lode's agent", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project();
  try {
    const provider = standin.state.providers.get("lode");
    assert.ok(provider, "lode's provider is registered");
    const [model] = await provider.provideLanguageModelChatInformation({ silent: true }, undefined);
    const parts: unknown[] = [];
    await provider.provideLanguageModelChatResponse(
      model,
      [{ role: 1, content: [new standin.LanguageModelTextPart("what did you change?")], name: undefined }],
      { toolMode: 1 },
      { report: (part) => parts.push(part) },
      new standin.CancellationTokenSource().token,
    );
    assert.ok(parts.every((p) => p instanceof standin.LanguageModelTextPart), "text parts");
    assert.equal(parts.map((p) => (p as standin.LanguageModelTextPart).value).join(""), "I replaced hello with goodbye in src/main.rs.");
    assert.ok((await provider.provideTokenCount(model, "12345678", undefined)) === 2);
  } finally {
    harness.cleanup();
  }
});

test("with no provider configured, the picker names the problem and @lode answers with lode's fix", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project({ models: "none" });
  try {
    const listed = await standin.availableModels();
    assert.deepEqual(
      listed.map((m) => m.identifier),
      [`lode/${UNAVAILABLE_MODEL}`],
    );
    assert.match(listed[0].model.tooltip ?? "", /no model configured/);
    // The request reaches lode (not VS Code's "Language model unavailable"): lode's
    // auth_required message, naming the config it looked for, is the answer in the panel.
    const turn = await ask(harness, "hello?", []);
    assert.match(turn.result.errorDetails?.message ?? "", /llm\.providers/, JSON.stringify(turn.result));
  } finally {
    harness.cleanup();
  }
});

test("an older VS Code, without the model-provider API: VS Code refuses @lode, and the user is told what to do", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project({ providerApi: false });
  try {
    assert.equal(standin.state.providers.size, 0);
    // VS Code's rule: no model, no request; the participant is never called.
    await assert.rejects(ask(harness, "what did you change?", []), /Language model unavailable/);
    // What the user sees instead of silence: the notice, naming both ways out.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(standin.state.messages, [oldVsCodeNotice(standin.version)]);
    assert.match(standin.state.messages[0], /VS Code 1\.104 or later/);
    assert.match(standin.state.messages[0], /ACP client extension/);
  } finally {
    harness.cleanup();
  }
});

test("a provider registers only for the vendor package.json declares (as in VS Code)", () => {
  standin.state.reset();
  const saved = standin.state.manifest;
  try {
    standin.state.manifest = { contributes: {} };
    const context = { subscriptions: [] as { dispose(): unknown }[] };
    assert.throws(
      () => registerChat(context as unknown as vscode.ExtensionContext, { appendLine: () => {} }),
      /not declared in package.json/,
    );
    for (const disposable of context.subscriptions) disposable.dispose();
  } finally {
    standin.state.manifest = saved;
  }
});

test("model entries, prompts and message text from VS Code's shapes", () => {
  assert.equal(contextWindow("scripted-1 (200k context)"), 200000);
  assert.equal(contextWindow("no size here"), 32000);
  assert.equal(contextWindow(undefined), 32000);
  const unavailable = modelInformation({ models: [], problem: "lode acp did not start: spawn nope ENOENT" });
  assert.deepEqual(
    unavailable.map((m) => [m.id, m.name, m.tooltip]),
    [[UNAVAILABLE_MODEL, "lode (no model)", "lode acp did not start: spawn nope ENOENT"]],
  );
  const text = (value: string) => new standin.LanguageModelTextPart(value);
  assert.equal(messageText({ role: 1, content: [text("a"), "b", { callId: "c1", name: "grep", input: {} }], name: undefined }), "ab[tool call grep]");
  assert.equal(
    messageText({ role: 1, content: [{ callId: "c1", content: [text("found it")] }, 42, null], name: undefined }),
    "[tool result] found it",
  );
  assert.equal(conversationPrompt([{ role: 1, content: [text("only this")], name: undefined }]), "only this");
  assert.equal(
    conversationPrompt([
      { role: 3, content: [text("be brief")], name: undefined },
      { role: 1, content: [text("hi")], name: undefined },
      { role: 2, content: [text("hello")], name: undefined },
      { role: 1, content: [text("and?")], name: undefined },
    ]),
    "Instructions: be brief\n\nUser: hi\n\nAssistant: hello\n\nUser: and?",
  );
  // The API is found only where VS Code has it.
  assert.equal(providerApi({ lm: {} } as never), undefined);
  assert.equal(providerApi({} as never), undefined);
  assert.ok(providerApi(standin as never));
});

test("a wrong lode.path: the picker's entry and @lode's answer say lode did not start", async (t) => {
  const missing = lodeMissing();
  if (missing) return t.skip(missing);
  const harness = await project();
  try {
    standin.state.settings.set("lode.path", path.join(harness.root, "no-such-lode"));
    const listed = await standin.availableModels();
    assert.deepEqual(
      listed.map((m) => m.identifier),
      [`lode/${UNAVAILABLE_MODEL}`],
    );
    assert.match(listed[0].model.tooltip ?? "", /lode acp did not start: .*ENOENT/);
    const turn = await ask(harness, "hello?", []);
    assert.match(turn.result.errorDetails?.message ?? "", /lode acp did not start: .*set lode\.path/, JSON.stringify(turn.result));
    // Fixed: the next listing finds lode's model again.
    standin.state.settings.set("lode.path", lodeBinary);
    assert.deepEqual(
      (await standin.availableModels()).map((m) => m.identifier),
      ["lode/scripted"],
    );
  } finally {
    harness.cleanup();
  }
});
