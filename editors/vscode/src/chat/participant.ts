// The @lode chat participant (VS Code's Chat API): each request is a turn of an ACP session in
// `lode acp` (acpClient.ts). lode's answer streams as markdown, its tool calls as progress lines
// with anchors to the files they touch, its permission questions as buttons that run
// `lode.chat.answerPermission`, and its edits (ACP `fs/write_text_file`) land as a
// `WorkspaceEdit`. Cancelling the request sends `session/cancel`. One ACP session per chat
// conversation: a turn's result carries its session id, and the next request of the same
// conversation finds it in `context.history`. The model VS Code attached to the request, when it
// is one of lode's (models.ts puts them in VS Code's model picker), becomes the session's model.
// The same `lode acp` also lists lode's models and answers for them (`listModels`, `complete`).

import * as path from "node:path";
import * as vscode from "vscode";

import {
  type AgentCommand,
  type ClientHooks,
  type ContentBlock,
  LodeAcpClient,
  type ModelChoice,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionUpdate,
  type StopReason,
} from "./acpClient";

export const PARTICIPANT_ID = "lode.chat";
export const ANSWER_COMMAND = "lode.chat.answerPermission";
/** The vendor of lode's models in VS Code (package.json's `languageModelChatProviders`). */
export const MODEL_VENDOR = "lode";

/** What a turn's `ChatResult.metadata` holds. */
export interface LodeChatMetadata {
  lodeSessionId?: string;
  stopReason?: StopReason;
}

/** `lode acp` and the arguments after it, from the settings. */
export function acpCommand(configuredPath: unknown, extraArgs: unknown): { command: string; args: string[] } {
  const command = typeof configuredPath === "string" && configuredPath.trim() !== "" ? configuredPath.trim() : "lode";
  const extra = Array.isArray(extraArgs) ? extraArgs.filter((a): a is string => typeof a === "string") : [];
  return { command, args: ["acp", ...extra] };
}

/** The session an earlier turn of this conversation used, newest first. */
export function previousSession(history: ReadonlyArray<unknown>): string | undefined {
  for (let i = history.length - 1; i >= 0; i--) {
    const turn = history[i] as { participant?: unknown; result?: { metadata?: LodeChatMetadata } };
    if (turn?.participant !== PARTICIPANT_ID || turn.result === undefined) continue;
    const id = turn.result.metadata?.lodeSessionId;
    if (typeof id === "string" && id !== "") return id;
  }
  return undefined;
}

/** Where a turn's updates go: the chat panel's response stream, or a model answer's text. */
export type TurnSink = Pick<vscode.ChatResponseStream, "markdown" | "progress" | "anchor" | "reference" | "button">;

interface ActiveTurn {
  stream: TurnSink;
  thinking: boolean;
  titles: Map<string, string>;
  /** False for a model answer (`complete`): nobody can press a button, so permission is refused. */
  asks?: boolean;
}

/** lode's models as `lode acp` reports them, or why there are none. */
export interface ModelListing {
  models: ModelChoice[];
  /** Why lode has no model to offer (no folder, no provider configured, lode did not start). */
  problem?: string;
}

/** The model VS Code attached to a chat request (`ChatRequest.model`, VS Code 1.95+). */
interface RequestModel {
  vendor?: unknown;
  id?: unknown;
}

interface PendingQuestion {
  sessionId: string;
  options: { optionId: string; name: string }[];
  settle: (answer: RequestPermissionResponse) => void;
}

const CANCELLED: RequestPermissionResponse = { outcome: { outcome: "cancelled" } };

export class LodeChat implements ClientHooks, vscode.Disposable {
  private client: LodeAcpClient | undefined;
  private clientKey = "";
  private readonly turns = new Map<string, ActiveTurn>();
  private readonly questions = new Map<string, PendingQuestion>();
  private nextQuestion = 0;
  private listing: { key: string; models: Promise<ModelListing> } | undefined;
  private readonly modelsChanged = new vscode.EventEmitter<void>();
  /** Fires when lode's models may have changed (settings, a session reporting other models). */
  readonly onDidChangeModels = this.modelsChanged.event;

  constructor(private readonly output: { appendLine(line: string): void }) {}

  /** The participant's request handler. */
  async handle(
    request: vscode.ChatRequest,
    context: vscode.ChatContext,
    stream: vscode.ChatResponseStream,
    token: vscode.CancellationToken,
  ): Promise<vscode.ChatResult> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      const message = "Open a folder first: @lode works in the workspace's project.";
      stream.markdown(message);
      return { errorDetails: { message } };
    }
    let client: LodeAcpClient;
    let sessionId: string;
    try {
      client = this.clientFor(folder.uri.fsPath);
      sessionId = await client.session(previousSession(context.history));
    } catch (error) {
      const message = `lode acp did not start: ${errorText(error)} (set lode.path; see the lode output)`;
      this.log(message);
      return { errorDetails: { message } };
    }
    this.noticeModels(client.modelOf(sessionId)?.choices ?? []);
    try {
      await this.useRequestModel(client, sessionId, (request as { model?: RequestModel }).model);
    } catch (error) {
      const message = `lode could not switch to the picked model: ${errorText(error)}`;
      this.log(message);
      return { errorDetails: { message }, metadata: { lodeSessionId: sessionId } };
    }
    const turn: ActiveTurn = { stream, thinking: false, titles: new Map() };
    this.turns.set(sessionId, turn);
    const onCancel = token.onCancellationRequested(() => {
      this.withdrawQuestions(sessionId);
      client.cancel(sessionId).catch((error) => this.log(`session/cancel failed: ${errorText(error)}`));
    });
    try {
      const stopReason = await client.prompt(sessionId, promptBlocks(request));
      const metadata: LodeChatMetadata = { lodeSessionId: sessionId, stopReason };
      if (stopReason === "refusal") {
        return { errorDetails: { message: "lode refused this request." }, metadata };
      }
      return { metadata };
    } catch (error) {
      const metadata: LodeChatMetadata = { lodeSessionId: sessionId };
      if (token.isCancellationRequested) {
        return { metadata: { ...metadata, stopReason: "cancelled" } };
      }
      return { errorDetails: { message: errorText(error) }, metadata };
    } finally {
      onCancel.dispose();
      this.withdrawQuestions(sessionId);
      if (this.turns.get(sessionId) === turn) this.turns.delete(sessionId);
    }
  }

  /**
   * `lode.chat.answerPermission(questionId, optionId)`: the button a permission question showed.
   * False (and nothing happens) for a question that is no longer open or an option it did not
   * offer.
   */
  answer(questionId: unknown, optionId: unknown): boolean {
    const question = typeof questionId === "string" ? this.questions.get(questionId) : undefined;
    if (!question) {
      void vscode.window.showInformationMessage("lode: that question is no longer open");
      return false;
    }
    const option = question.options.find((o) => o.optionId === optionId);
    if (!option) {
      this.log(`ignored an answer with an option lode did not offer: ${String(optionId).slice(0, 80)}`);
      return false;
    }
    this.questions.delete(questionId as string);
    this.turns.get(question.sessionId)?.stream.markdown(`\n\n*${escapeMarkdown(option.name)}*\n\n`);
    question.settle({ outcome: { outcome: "selected", optionId: option.optionId } });
    return true;
  }

  onUpdate(sessionId: string, update: SessionUpdate): void {
    const turn = this.turns.get(sessionId);
    if (!turn) return;
    const stream = turn.stream;
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        if (update.content.type === "text") stream.markdown(update.content.text);
        break;
      case "agent_thought_chunk":
        if (!turn.thinking) {
          turn.thinking = true;
          stream.progress("Thinking…");
        }
        break;
      case "tool_call": {
        turn.titles.set(update.toolCallId, update.title);
        stream.progress(update.title);
        for (const location of update.locations ?? []) {
          const uri = vscode.Uri.file(location.path);
          if (typeof location.line === "number" && location.line > 0) {
            const position = new vscode.Position(location.line - 1, 0);
            stream.anchor(new vscode.Location(uri, position), `${path.basename(location.path)}:${location.line}`);
          } else {
            stream.anchor(uri, path.basename(location.path));
          }
        }
        break;
      }
      case "tool_call_update": {
        const title = update.title ?? turn.titles.get(update.toolCallId) ?? "a tool call";
        if (update.status === "failed") {
          stream.markdown(`\n\n> ${escapeMarkdown(title)} failed\n\n`);
        }
        if (update.status === "completed") {
          for (const content of update.content ?? []) {
            if (content.type === "diff") stream.reference(vscode.Uri.file(content.path));
          }
        }
        break;
      }
      case "plan":
        stream.progress(`Plan: ${update.entries.map((e) => e.content).join("; ")}`);
        break;
      default:
        break;
    }
  }

  requestPermission(request: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse> {
    const turn = this.turns.get(request.sessionId);
    if (!turn || turn.asks === false || signal.aborted) return Promise.resolve(CANCELLED);
    const questionId = `q${++this.nextQuestion}`;
    const title = request.toolCall.title ?? turn.titles.get(request.toolCall.toolCallId) ?? "a tool call";
    turn.stream.markdown(`\n\n**lode asks to run:** ${escapeMarkdown(title)}\n\n`);
    for (const location of request.toolCall.locations ?? []) {
      turn.stream.anchor(vscode.Uri.file(location.path), path.basename(location.path));
    }
    for (const option of request.options) {
      turn.stream.button({ command: ANSWER_COMMAND, title: option.name, arguments: [questionId, option.optionId] });
    }
    return new Promise((resolve) => {
      const settle = (answer: RequestPermissionResponse) => {
        signal.removeEventListener("abort", onAbort);
        resolve(answer);
      };
      const onAbort = () => {
        this.questions.delete(questionId);
        settle(CANCELLED);
      };
      signal.addEventListener("abort", onAbort);
      this.questions.set(questionId, {
        sessionId: request.sessionId,
        options: request.options.map((o) => ({ optionId: o.optionId, name: o.name })),
        settle,
      });
    });
  }

  /** lode's edit, as one `WorkspaceEdit` (undoable; the document is saved so lode's commands see it). */
  async writeTextFile(request: { path: string; content: string }): Promise<void> {
    const uri = this.workspaceUri(request.path);
    const edit = new vscode.WorkspaceEdit();
    const document = await openDocument(uri);
    if (document) {
      const end = document.positionAt(document.getText().length);
      edit.replace(uri, new vscode.Range(new vscode.Position(0, 0), end), request.content);
    } else {
      edit.createFile(uri, { ignoreIfExists: true });
      edit.insert(uri, new vscode.Position(0, 0), request.content);
    }
    if (!(await vscode.workspace.applyEdit(edit))) {
      throw new Error(`VS Code did not apply the edit to ${request.path}`);
    }
    const edited = await openDocument(uri);
    if (edited && !(await edited.save())) {
      throw new Error(`VS Code applied the edit to ${request.path} but could not save it`);
    }
  }

  /** The editor's text of a file (unsaved edits included), `limit` lines from `line` (1-based). */
  async readTextFile(request: { path: string; line?: number | null; limit?: number | null }): Promise<string> {
    const uri = this.workspaceUri(request.path);
    const document = await openDocument(uri);
    if (!document) throw new Error(`no such file: ${request.path}`);
    const text = document.getText();
    if (request.line == null && request.limit == null) return text;
    const lines = text.split("\n");
    const start = Math.max((request.line ?? 1) - 1, 0);
    const end = request.limit == null ? lines.length : start + Math.max(request.limit, 0);
    return lines.slice(start, end).join("\n");
  }

  /**
   * lode's models, from the `model` config option of a session `lode acp` opens for the first
   * workspace folder (and deletes again). Kept until the settings or the folder change.
   */
  listModels(): Promise<ModelListing> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      return Promise.resolve({ models: [], problem: "Open a folder first: lode works in the workspace's project." });
    }
    let client: LodeAcpClient;
    try {
      client = this.clientFor(folder.uri.fsPath);
    } catch (error) {
      return Promise.resolve({ models: [], problem: `lode acp did not start: ${errorText(error)}` });
    }
    if (this.listing?.key === this.clientKey) return this.listing.models;
    const entry: { key: string; models: Promise<ModelListing> } = { key: this.clientKey, models: Promise.resolve({ models: [] }) };
    entry.models = (async (): Promise<ModelListing> => {
      try {
        const sessionId = await client.session(undefined);
        const option = client.modelOf(sessionId);
        await client.deleteSession(sessionId).catch((error) => this.log(`session/delete failed: ${errorText(error)}`));
        if (!option || option.choices.length === 0) {
          return {
            models: [],
            problem: "lode has no model configured: add an [[llm.providers]] entry (see `lode config --check`).",
          };
        }
        return { models: option.choices };
      } catch (error) {
        // Asked again next time (a newer listing, after a restart, is left alone).
        if (this.listing === entry) this.listing = undefined;
        const message = `lode acp did not start: ${errorText(error)} (set lode.path; see the lode output)`;
        this.log(message);
        return { models: [], problem: message };
      }
    })();
    this.listing = entry;
    return entry.models;
  }

  /**
   * One answer of lode's agent for VS Code's own chat (a lode model picked there): a session of
   * its own in lode's read-only `ask` mode with `model`, the conversation as its prompt, the
   * answer's text to `onText`. lode's tools run as in any session (permission questions are
   * refused: nobody can answer them here); the session is deleted afterwards.
   */
  async complete(model: string | undefined, prompt: string, onText: (text: string) => void, token: vscode.CancellationToken): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) throw new Error("Open a folder first: lode works in the workspace's project.");
    const client = this.clientFor(folder.uri.fsPath);
    const sessionId = await client.session(undefined);
    const ignore = (): void => {};
    const turn: ActiveTurn = {
      stream: { markdown: (value) => onText(typeof value === "string" ? value : value.value), progress: ignore, anchor: ignore, reference: ignore, button: ignore },
      thinking: false,
      titles: new Map(),
      asks: false,
    };
    const onCancel = token.onCancellationRequested(() => {
      client.cancel(sessionId).catch((error) => this.log(`session/cancel failed: ${errorText(error)}`));
    });
    try {
      await client.setConfigOption(sessionId, "mode", "ask");
      const option = client.modelOf(sessionId);
      if (model !== undefined && option && option.current !== model) {
        await client.setConfigOption(sessionId, option.configId, model);
      }
      this.turns.set(sessionId, turn);
      const stopReason = await client.prompt(sessionId, [{ type: "text", text: prompt }]);
      if (stopReason === "refusal") throw new Error("lode refused this request.");
    } finally {
      onCancel.dispose();
      this.turns.delete(sessionId);
      await client.deleteSession(sessionId).catch((error) => this.log(`session/delete failed: ${errorText(error)}`));
    }
  }

  log(line: string): void {
    this.output.appendLine(line);
  }

  dispose(): void {
    for (const id of [...this.questions.keys()]) this.questions.get(id)?.settle(CANCELLED);
    this.questions.clear();
    this.client?.dispose();
    this.client = undefined;
    this.modelsChanged.dispose();
  }

  /** The request's model, when it is one of lode's, becomes the session's model. */
  private async useRequestModel(client: LodeAcpClient, sessionId: string, model: RequestModel | undefined): Promise<void> {
    if (model?.vendor !== MODEL_VENDOR || typeof model.id !== "string") return;
    const option = client.modelOf(sessionId);
    if (!option || option.current === model.id || !option.choices.some((c) => c.value === model.id)) return;
    await client.setConfigOption(sessionId, option.configId, model.id);
  }

  /** A session reported lode's models: when they differ from the listing, VS Code asks again. */
  private noticeModels(choices: ModelChoice[]): void {
    const listing = this.listing;
    if (!listing || listing.key !== this.clientKey) return;
    void listing.models.then((known) => {
      if (this.listing !== listing) return;
      const same = known.models.length === choices.length && known.models.every((m, i) => m.value === choices[i].value);
      if (!same) {
        this.listing = undefined;
        this.modelsChanged.fire();
      }
    });
  }

  private clientFor(cwd: string): LodeAcpClient {
    const settings = vscode.workspace.getConfiguration("lode");
    const { command, args } = acpCommand(settings.get("path"), settings.get("chat.extraArgs"));
    const key = JSON.stringify([command, args, cwd]);
    if (!this.client || key !== this.clientKey) {
      this.client?.dispose();
      const agent: AgentCommand = { command, args, cwd };
      this.client = new LodeAcpClient(agent, this);
      const restarted = this.clientKey !== "";
      this.clientKey = key;
      this.log(`@lode: ${command} ${args.join(" ")} in ${cwd}`);
      if (restarted) {
        this.listing = undefined;
        this.modelsChanged.fire();
      }
    }
    return this.client;
  }

  /** An absolute path inside an open workspace folder, else an error (lode never needs more). */
  private workspaceUri(file: string): vscode.Uri {
    const folders = vscode.workspace.workspaceFolders ?? [];
    const resolved = path.resolve(file);
    const inside = folders.some((folder) => {
      const relative = path.relative(folder.uri.fsPath, resolved);
      return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative);
    });
    if (!path.isAbsolute(file) || !inside) {
      throw new Error(`${file} is not a file in an open workspace folder`);
    }
    return vscode.Uri.file(resolved);
  }

  private withdrawQuestions(sessionId: string): void {
    for (const [id, question] of [...this.questions]) {
      if (question.sessionId !== sessionId) continue;
      this.questions.delete(id);
      question.settle(CANCELLED);
    }
  }
}

/** The prompt: the user's text, and the files they attached (#file) as resource links. */
export function promptBlocks(request: Pick<vscode.ChatRequest, "prompt" | "references">): ContentBlock[] {
  const blocks: ContentBlock[] = [{ type: "text", text: request.prompt }];
  for (const reference of request.references ?? []) {
    const value = reference.value as { scheme?: string; fsPath?: string; uri?: { scheme?: string; fsPath?: string } };
    const uri = value?.uri ?? value;
    if (uri?.scheme === "file" && typeof uri.fsPath === "string") {
      blocks.push({ type: "resource_link", uri: `file://${uri.fsPath}`, name: path.basename(uri.fsPath) });
    }
  }
  return blocks;
}

async function openDocument(uri: vscode.Uri): Promise<vscode.TextDocument | undefined> {
  try {
    return await vscode.workspace.openTextDocument(uri);
  } catch {
    return undefined;
  }
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_[\]<>]/g, (c) => `\\${c}`);
}

function errorText(error: unknown): string {
  if (error && typeof error === "object" && "message" in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}
