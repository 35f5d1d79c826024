// A small STAND-IN for the `vscode` module, for the plain-node tests of the @lode chat
// participant (the real VS Code test is e2e/, in code-server). It implements only the part of the
// API the participant uses, with real files underneath: text documents are read from disk,
// `applyEdit` applies a `WorkspaceEdit` to them in memory (and records it), and `save` writes
// them back. `install()` makes `require("vscode")` return it.
//
// It keeps VS Code's rule that a chat request needs a language model: `chat.sendRequest` (what
// the chat panel does when the user sends) attaches the model picked in the picker, else the
// first one the registered language-model providers list, and fails with VS Code's own
// "Language model unavailable" when there is none, before the participant is called. A provider
// registers only for a vendor the extension's package.json declares in
// `languageModelChatProviders`, as in VS Code. `state.providerApi = false` is a VS Code older
// than the provider API (1.95 to 1.103: the rule, but no `lm.registerLanguageModelChatProvider`).

import * as fs from "node:fs";
import * as path from "node:path";

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(file: string): Uri {
    return new Uri("file", path.resolve(file));
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class Location {
  constructor(
    readonly uri: Uri,
    readonly range: Position | Range,
  ) {}
}

export type EditEntry =
  | { kind: "create"; uri: Uri; options?: { overwrite?: boolean; ignoreIfExists?: boolean } }
  | { kind: "replace"; uri: Uri; range: Range; text: string }
  | { kind: "insert"; uri: Uri; position: Position; text: string };

export class WorkspaceEdit {
  readonly entries: EditEntry[] = [];
  replace(uri: Uri, range: Range, text: string): void {
    this.entries.push({ kind: "replace", uri, range, text });
  }
  insert(uri: Uri, position: Position, text: string): void {
    this.entries.push({ kind: "insert", uri, position, text });
  }
  createFile(uri: Uri, options?: { overwrite?: boolean; ignoreIfExists?: boolean }): void {
    this.entries.push({ kind: "create", uri, options });
  }
}

export class TextDocument {
  isDirty = false;
  constructor(
    readonly uri: Uri,
    private text: string,
  ) {}
  getText(): string {
    return this.text;
  }
  positionAt(offset: number): Position {
    const before = this.text.slice(0, Math.max(0, Math.min(offset, this.text.length))).split("\n");
    return new Position(before.length - 1, before[before.length - 1].length);
  }
  offsetAt(position: Position): number {
    const lines = this.text.split("\n");
    let offset = 0;
    for (let i = 0; i < Math.min(position.line, lines.length); i++) offset += lines[i].length + 1;
    return Math.min(offset + position.character, this.text.length);
  }
  async save(): Promise<boolean> {
    fs.mkdirSync(path.dirname(this.uri.fsPath), { recursive: true });
    fs.writeFileSync(this.uri.fsPath, this.text);
    this.isDirty = false;
    return true;
  }
  /** @internal the stand-in's applyEdit */
  splice(start: number, end: number, text: string): void {
    this.text = this.text.slice(0, start) + text + this.text.slice(end);
    this.isDirty = true;
  }
}

export class EventEmitter<T> {
  private listeners: ((value: T) => void)[] = [];
  readonly event = (listener: (value: T) => void) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class LanguageModelTextPart {
  constructor(readonly value: string) {}
}

/** What a registered provider lists (the fields the picker and the tests look at). */
export interface StandinModel {
  id: string;
  name: string;
  family: string;
  detail?: string;
  tooltip?: string;
  maxInputTokens: number;
  capabilities: { toolCalling?: boolean | number };
}

interface StandinProvider {
  onDidChangeLanguageModelChatInformation?: (listener: () => void) => { dispose(): void };
  provideLanguageModelChatInformation(options: { silent: boolean }, token: unknown): Promise<StandinModel[]>;
  provideLanguageModelChatResponse(
    model: StandinModel,
    messages: { role: number; content: unknown[]; name: string | undefined }[],
    options: unknown,
    progress: { report(part: unknown): void },
    token: unknown,
  ): Promise<void>;
  provideTokenCount(model: StandinModel, text: string, token: unknown): Promise<number>;
}

export class CancellationTokenSource {
  private listeners: (() => void)[] = [];
  private cancelled = false;
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: (listener: () => void) => {
      this.listeners.push(listener);
      return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
    },
  };
  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.token.isCancellationRequested = true;
    for (const listener of this.listeners) listener();
  }
}

/** What the tests look at and set. */
export const state = {
  documents: new Map<string, TextDocument>(),
  appliedEdits: [] as WorkspaceEdit[],
  settings: new Map<string, unknown>(),
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  participants: new Map<string, (...args: unknown[]) => unknown>(),
  messages: [] as string[],
  folders: [] as { uri: Uri; name: string; index: number }[],
  /** The extension's package.json, whose contributions VS Code checks registrations against. */
  manifest: {} as { contributes?: { languageModelChatProviders?: { vendor: string }[] } },
  providers: new Map<string, StandinProvider>(),
  /** False: a VS Code without `lm.registerLanguageModelChatProvider`. */
  providerApi: true as boolean,
  /** The model the user picked in the chat panel's picker (`vendor/id`), if any. */
  pickedModel: undefined as string | undefined,
  reset(): void {
    this.providers.clear();
    this.providerApi = true;
    this.pickedModel = undefined;
    this.documents.clear();
    this.appliedEdits.length = 0;
    this.settings.clear();
    this.commands.clear();
    this.participants.clear();
    this.messages.length = 0;
    this.folders.length = 0;
  },
};

export const workspace = {
  get workspaceFolders() {
    return state.folders.length ? state.folders : undefined;
  },
  get textDocuments() {
    return [...state.documents.values()];
  },
  async openTextDocument(uri: Uri): Promise<TextDocument> {
    const open = state.documents.get(uri.fsPath);
    if (open) return open;
    const document = new TextDocument(uri, fs.readFileSync(uri.fsPath, "utf8"));
    state.documents.set(uri.fsPath, document);
    return document;
  },
  async applyEdit(edit: WorkspaceEdit): Promise<boolean> {
    state.appliedEdits.push(edit);
    for (const entry of edit.entries) {
      if (entry.kind === "create") {
        const exists = state.documents.has(entry.uri.fsPath) || fs.existsSync(entry.uri.fsPath);
        if (exists && !entry.options?.overwrite && !entry.options?.ignoreIfExists) return false;
        if (!exists || entry.options?.overwrite) {
          state.documents.set(entry.uri.fsPath, new TextDocument(entry.uri, ""));
        }
        continue;
      }
      const document = await workspace.openTextDocument(entry.uri);
      if (entry.kind === "replace") {
        document.splice(document.offsetAt(entry.range.start), document.offsetAt(entry.range.end), entry.text);
      } else {
        const at = document.offsetAt(entry.position);
        document.splice(at, at, entry.text);
      }
    }
    return true;
  },
  getConfiguration(section: string) {
    return { get: (key: string) => state.settings.get(`${section}.${key}`) };
  },
};

export const commands = {
  registerCommand(id: string, handler: (...args: unknown[]) => unknown) {
    state.commands.set(id, handler);
    return { dispose: () => state.commands.delete(id) };
  },
  async executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
    const handler = state.commands.get(id);
    if (!handler) throw new Error(`command ${id} not found`);
    return handler(...args);
  },
};

export const version = "1.139.1";

/** The models every registered provider lists, as `vendor/id` with the entry. */
export async function availableModels(): Promise<{ identifier: string; vendor: string; model: StandinModel }[]> {
  const models: { identifier: string; vendor: string; model: StandinModel }[] = [];
  for (const [vendor, provider] of state.providers) {
    for (const model of await provider.provideLanguageModelChatInformation({ silent: true }, new CancellationTokenSource().token)) {
      models.push({ identifier: `${vendor}/${model.id}`, vendor, model });
    }
  }
  return models;
}

export const chat = {
  createChatParticipant(id: string, handler: (...args: unknown[]) => unknown) {
    state.participants.set(id, handler);
    return { dispose: () => state.participants.delete(id) };
  },
  /**
   * What the chat panel does when the user sends a request to a participant: attach a model
   * (VS Code's rule: the picked one, else the first listed; none is "Language model
   * unavailable", and the participant is never called), then call the participant's handler.
   */
  async sendRequest(
    participantId: string,
    request: { prompt: string; references: unknown[]; command: string | undefined },
    context: { history: unknown[] },
    stream: unknown,
    token: unknown,
  ): Promise<unknown> {
    const handler = state.participants.get(participantId);
    if (!handler) throw new Error(`no chat participant ${participantId}`);
    const models = await availableModels();
    const picked = models.find((m) => m.identifier === state.pickedModel) ?? models[0];
    if (!picked) throw new Error("Language model unavailable");
    const model = { vendor: picked.vendor, id: picked.model.id, name: picked.model.name, family: picked.model.family };
    return handler({ ...request, model }, context, stream, token);
  },
};

/** `vscode.lm`: the provider registration exists only while `state.providerApi` is true. */
export const lm = {
  /** The models of the registered providers (of `vendor`), as LanguageModelChat-like entries. */
  async selectChatModels(selector: { vendor?: string } = {}) {
    return (await availableModels())
      .filter((m) => selector.vendor === undefined || m.vendor === selector.vendor)
      .map((m) => ({ vendor: m.vendor, id: m.model.id, name: m.model.name, family: m.model.family }));
  },
} as {
  selectChatModels(selector?: { vendor?: string }): Promise<{ vendor: string; id: string; name: string; family: string }[]>;
  registerLanguageModelChatProvider?: (vendor: string, provider: StandinProvider) => { dispose(): void };
};
Object.defineProperty(lm, "registerLanguageModelChatProvider", {
  enumerable: true,
  get() {
    if (!state.providerApi) return undefined;
    return (vendor: string, provider: StandinProvider) => {
      const declared = state.manifest.contributes?.languageModelChatProviders ?? [];
      if (!declared.some((entry) => entry.vendor === vendor)) {
        throw new Error(`the language model chat provider ${vendor} is not declared in package.json (languageModelChatProviders)`);
      }
      if (state.providers.has(vendor)) throw new Error(`a language model chat provider for ${vendor} is already registered`);
      state.providers.set(vendor, provider);
      return { dispose: () => state.providers.delete(vendor) };
    };
  },
});

export const window = {
  async showInformationMessage(message: string) {
    state.messages.push(message);
    return undefined;
  },
  async showWarningMessage(message: string, ..._items: string[]) {
    state.messages.push(message);
    return undefined;
  },
};

/** Makes `require("vscode")` (from the code under test) return this module. */
export function install(): void {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Module = require("node:module") as { _load: (request: string, ...rest: unknown[]) => unknown };
  const load = Module._load;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const self = require("./vscodeStandin");
  Module._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") return self;
    return load.call(this, request, ...rest);
  };
}
