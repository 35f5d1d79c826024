// The ACP side of the @lode chat participant, with no `vscode` import: spawns `lode acp` over
// stdio and talks to it through the official TypeScript SDK (@agentclientprotocol/sdk). The
// participant (participant.ts) supplies the editor's half through `ClientHooks`.
//
// The SDK is an ES module and this extension is CommonJS, so it is loaded with `import()`.

import { spawn, type ChildProcess } from "node:child_process";
import { Readable, Writable } from "node:stream";

import type {
  ClientConnection,
  ContentBlock,
  InitializeResponse,
  ReadTextFileRequest,
  RequestPermissionRequest,
  RequestPermissionResponse,
  SessionConfigOption,
  SessionUpdate,
  StopReason,
  WriteTextFileRequest,
} from "@agentclientprotocol/sdk" with { "resolution-mode": "import" };

export type { ContentBlock, RequestPermissionRequest, RequestPermissionResponse, SessionUpdate, StopReason };

/** One of lode's configured models: a value of the session's `model` config option. */
export interface ModelChoice {
  /** What `session/set_config_option` takes (lode: the provider's `name`). */
  value: string;
  name: string;
  /** lode: "MODEL (Nk context)". */
  description?: string;
}

/** A session's `model` config option (category `model`): the choices and the one in use. */
export interface ModelOption {
  configId: string;
  current: string;
  choices: ModelChoice[];
}

/**
 * The `model` option among a session's config options, or undefined when lode offers none (no
 * provider configured). Grouped options are flattened.
 */
export function modelOption(options: ReadonlyArray<SessionConfigOption> | null | undefined): ModelOption | undefined {
  for (const option of options ?? []) {
    if (option.category !== "model" || option.type !== "select") continue;
    const choices: ModelChoice[] = [];
    for (const entry of option.options) {
      const members = "group" in entry ? entry.options : [entry];
      for (const choice of members) {
        choices.push({ value: choice.value, name: choice.name, description: choice.description ?? undefined });
      }
    }
    return { configId: option.id, current: option.currentValue, choices };
  }
  return undefined;
}

/** What the editor answers for lode: updates, permission questions and file access. */
export interface ClientHooks {
  /** A `session/update` for `sessionId`. */
  onUpdate(sessionId: string, update: SessionUpdate): void;
  /** A permission question; `signal` aborts when lode withdraws it (the turn ended). */
  requestPermission(request: RequestPermissionRequest, signal: AbortSignal): Promise<RequestPermissionResponse>;
  /** `fs/write_text_file`: the whole new content of an absolute path. */
  writeTextFile(request: WriteTextFileRequest): Promise<void>;
  /** `fs/read_text_file`: the text (unsaved edits included), from `line` (1-based) for `limit` lines. */
  readTextFile(request: ReadTextFileRequest): Promise<string>;
  /** A line for the output channel (lode's stderr, lifecycle). */
  log(line: string): void;
}

export interface AgentCommand {
  command: string;
  args: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
}

/** `lode acp` on stdio and the ACP connection to it. */
export class LodeAcpClient {
  private child: ChildProcess | undefined;
  private connection: ClientConnection | undefined;
  private initialized: InitializeResponse | undefined;
  /** Sessions this process knows (created or resumed on it), with their `model` option. */
  private readonly known = new Map<string, ModelOption | undefined>();
  private exited: string | undefined;
  /** The start under way, if any. */
  private starting: Promise<InitializeResponse> | undefined;
  /** Bumped by every `dispose()`: a start of an older generation is abandoned. */
  private generation = 0;

  constructor(
    private readonly agent: AgentCommand,
    private readonly hooks: ClientHooks,
  ) {}

  /**
   * Starts lode and runs `initialize`, once; again after the process exited. Callers that come
   * while a start is under way share it (the model listing and a first request often overlap).
   */
  start(): Promise<InitializeResponse> {
    if (this.connection && this.initialized && this.exited === undefined) {
      return Promise.resolve(this.initialized);
    }
    if (!this.starting) {
      this.dispose();
      const generation = this.generation;
      this.starting = this.launch(generation).finally(() => {
        if (this.generation === generation) this.starting = undefined;
      });
    }
    return this.starting;
  }

  /** One start; a `dispose()` meanwhile (a restart) ends it, and the process it spawned. */
  private async launch(generation: number): Promise<InitializeResponse> {
    const superseded = () => new Error("lode acp was restarted while it started");
    this.exited = undefined;
    const acp = await import("@agentclientprotocol/sdk");
    if (this.generation !== generation) throw superseded();
    const child = spawn(this.agent.command, this.agent.args, {
      cwd: this.agent.cwd,
      env: this.agent.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", () => resolve());
      child.once("error", (error) => reject(error));
    });
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      for (const line of chunk.split("\n")) {
        if (line.trim()) this.hooks.log(line);
      }
    });
    child.once("exit", (code, signal) => {
      this.exited = signal ? `signal ${signal}` : `exit code ${code}`;
      this.hooks.log(`lode acp ended (${this.exited})`);
      this.known.clear();
    });
    await spawned;
    if (this.generation !== generation) {
      child.kill();
      throw superseded();
    }
    if (!child.stdin || !child.stdout) {
      throw new Error("lode acp started without its stdio pipes");
    }
    const stream = acp.ndJsonStream(
      Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
      Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
    );
    const app = acp
      .client({ name: "lode-vscode" })
      .onNotification(acp.methods.client.session.update, ({ params }) => {
        if (params.update.sessionUpdate === "config_option_update" && this.known.has(params.sessionId)) {
          this.known.set(params.sessionId, modelOption(params.update.configOptions));
        }
        this.hooks.onUpdate(params.sessionId, params.update);
      })
      .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) =>
        this.hooks.requestPermission(params, signal),
      )
      .onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
        await this.hooks.writeTextFile(params);
        return {};
      })
      .onRequest(acp.methods.client.fs.readTextFile, async ({ params }) => ({
        content: await this.hooks.readTextFile(params),
      }));
    this.connection = app.connect(stream);
    this.initialized = await this.connection.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
      clientInfo: { name: "lode-vscode", version: "0.1.0" },
    });
    return this.initialized;
  }

  /**
   * The ACP session for a conversation: `previous` (the id an earlier turn of the same chat
   * conversation used) when there is one, resumed when this process does not know it yet (lode
   * keeps sessions on disk, so a restarted lode picks the conversation up); else a new one.
   */
  async session(previous: string | undefined): Promise<string> {
    await this.start();
    const agent = this.agentContext();
    if (previous !== undefined) {
      if (this.known.has(previous)) return previous;
      try {
        const resumed = await agent.request("session/resume", { sessionId: previous, cwd: this.agent.cwd, mcpServers: [] });
        this.known.set(previous, modelOption(resumed.configOptions));
        return previous;
      } catch (error) {
        this.hooks.log(`could not resume session ${previous} (${String(error)}); starting a new one`);
      }
    }
    const created = await agent.request("session/new", { cwd: this.agent.cwd, mcpServers: [] });
    this.known.set(created.sessionId, modelOption(created.configOptions));
    return created.sessionId;
  }

  /** The `model` option of a session this process knows: lode's models and the one in use. */
  modelOf(sessionId: string): ModelOption | undefined {
    return this.known.get(sessionId);
  }

  /** `session/set_config_option` (e.g. `mode` or `model`); the session's options follow the answer. */
  async setConfigOption(sessionId: string, configId: string, value: string): Promise<void> {
    const answer = await this.agentContext().request("session/set_config_option", { sessionId, configId, value });
    if (this.known.has(sessionId)) this.known.set(sessionId, modelOption(answer.configOptions));
  }

  /** `session/delete`: lode forgets the session (its stored history too). */
  async deleteSession(sessionId: string): Promise<void> {
    this.known.delete(sessionId);
    await this.agentContext().request("session/delete", { sessionId });
  }

  /** One turn; resolves with lode's stop reason. */
  async prompt(sessionId: string, prompt: ContentBlock[]): Promise<StopReason> {
    const answer = await this.agentContext().request("session/prompt", { sessionId, prompt });
    return answer.stopReason;
  }

  /** `session/cancel`: lode stops the turn, which then answers `cancelled`. */
  async cancel(sessionId: string): Promise<void> {
    await this.agentContext().notify("session/cancel", { sessionId });
  }

  dispose(): void {
    this.generation++;
    this.starting = undefined;
    this.connection?.close();
    this.connection = undefined;
    this.initialized = undefined;
    this.known.clear();
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill();
    }
    this.child = undefined;
  }

  private agentContext(): ClientConnection["agent"] {
    if (!this.connection) {
      throw new Error("lode acp is not running");
    }
    return this.connection.agent;
  }
}
